"""Payload identification against a hidden simulated payload: a 2 kg
box with an offset centre of mass on the UR10's tool0, from joint torques (the sim's
noise, 0.3 N.m, config/sim_ur10.yaml) and from a wrist sensor (0.5 N / 0.02 N.m).  The
measurements are simulated without the payload regressor: RNEA of a model whose last
body carries the payload, and the Newton-Euler wrench of pinocchio's spatial inertia."""
from __future__ import annotations

import os

import numpy as np
import pinocchio as pin
import pytest
import yaml

from figaroh_ros.cli.main import main
from figaroh_ros.errors import ConfigError, DataError, ModelError
from figaroh_ros.excitation.payload import plan_payload_excitation
from figaroh_ros.identification.parameters import DriveOptions, parameter_layout
from figaroh_ros.identification.payload import identify_payload
from figaroh_ros.identification.regressor import joint_torques_from_parameters
from figaroh_ros.io.bags import typestore
from figaroh_ros.io.segmented_bag import SegmentedBagWriter
from figaroh_ros.model import load_model
from figaroh_ros.model.robot import example_robot_urdf
from figaroh_ros.sim.dynamics import perturbed_parameters
from figaroh_ros.tasks.payload import run as run_payload

URDF = "example-robot-data:ur_description/urdf/ur10_joint_limited_robot.urdf"
TOOL = "tool0"
MASS, COM = 2.0, np.array([0.03, -0.02, 0.06])
BOX = np.diag([0.0045, 0.0061, 0.0082])          # a 0.2 x 0.15 x 0.1 m box, kg m^2
Q_HOLD = np.array([0.0, -1.2, 1.5, -1.9, -1.57, 0.0])
TORQUE_STD, FORCE_STD, MOMENT_STD = 0.3, 0.5, 0.02


@pytest.fixture(scope="module")
def robot():
    return load_model(URDF)


def with_payload(robot):
    """The pinocchio model whose tool0 body carries the hidden payload."""
    m = robot.model.copy()
    f = m.frames[m.getFrameId(TOOL)]
    m.inertias[f.parentJoint] = m.inertias[f.parentJoint] + f.placement.act(
        pin.Inertia(MASS, COM, BOX))
    return m


def payload_torques(robot, Q, dQ, ddQ):
    """Torques of the payload alone: RNEA with it minus RNEA without."""
    m = with_payload(robot)
    d1, d2 = robot.model.createData(), m.createData()
    X = zip(robot.full_configuration(Q), robot.full_velocity(dQ), robot.full_velocity(ddQ))
    return np.array([pin.rnea(m, d2, *x) - pin.rnea(robot.model, d1, *x)
                     for x in X])[:, robot.idx_v]


def sensor_wrench(robot, Q, dQ, ddQ):
    """The wrench the sensor applies to the payload, in tool0: I (a - g) + v x* I v."""
    model, data = robot.model, robot.model.createData()
    fid, I = model.getFrameId(TOOL), pin.Inertia(MASS, COM, BOX)
    out = []
    X = zip(robot.full_configuration(Q), robot.full_velocity(dQ), robot.full_velocity(ddQ))
    for q, v, a in X:
        pin.forwardKinematics(model, data, q, v, a)
        pin.updateFramePlacement(model, data, fid)
        vf = pin.getFrameVelocity(model, data, fid, pin.LOCAL)
        af = pin.getFrameAcceleration(model, data, fid, pin.LOCAL)
        g = data.oMf[fid].rotation.T @ model.gravity.linear
        F = I * pin.Motion(af.linear - g, af.angular) + vf.cross(I * vf)
        out.append(F.vector)
    return np.array(out)


@pytest.fixture(scope="module")
def torque_motion(robot):
    return plan_payload_excitation(robot, TOOL, Q_HOLD, 10.0, kind="torque")


def test_torque_payload_within_targets(robot, torque_motion):
    """Robot dynamics known (the sim's true inertias and friction), torques with 0.3 N.m
    noise: mass within 2 %, centre of mass within 5 mm, errors within 4 std."""
    t, Q, dQ, ddQ = torque_motion
    drive = DriveOptions()
    layout = parameter_layout(robot, drive)
    phi = perturbed_parameters(robot, layout, seed=5)

    def own(q, dq, ddq):
        return joint_torques_from_parameters(robot, layout, drive, phi, q, dq, ddq)
    rng = np.random.default_rng(11)
    tau = own(Q, dQ, ddQ) + payload_torques(robot, Q, dQ, ddQ) \
        + TORQUE_STD * rng.normal(size=Q.shape)
    res = identify_payload(robot, Q, dQ, ddQ, tool_frame=TOOL, tau=tau,
                           robot_parameters=own, noise=TORQUE_STD)
    assert abs(res.mass - MASS) < 0.02 * MASS
    assert np.linalg.norm(res.com - COM) < 5e-3
    assert abs(res.mass - MASS) < 4 * res.mass_std + 1e-6
    assert np.all(np.abs(res.com - COM) < 4 * res.com_std + 1e-6)
    assert np.all(np.linalg.eigvalsh(res.inertia) > 0)
    assert np.allclose(list(res.residual_rms.values()), TORQUE_STD, rtol=0.15)
    assert res.to_ur()["mass"] == pytest.approx(res.mass)
    assert res.to_franka()["load_inertia"][1] == pytest.approx(res.inertia[1, 0])


def test_wrench_payload_within_targets(robot):
    """Wrist sensor with an unknown offset and 0.5 N / 0.02 N.m noise."""
    t, Q, dQ, ddQ = plan_payload_excitation(robot, TOOL, Q_HOLD, 8.0, kind="wrench",
                                            starts=2)
    offset = np.array([1.5, -2.0, 3.0, 0.1, -0.05, 0.2])
    rng = np.random.default_rng(12)
    w = sensor_wrench(robot, Q, dQ, ddQ) + offset \
        + rng.normal(size=(len(t), 6)) * np.repeat([FORCE_STD, MOMENT_STD], 3)
    res = identify_payload(robot, Q, dQ, ddQ, tool_frame=TOOL, wrench=w,
                           noise=(FORCE_STD, MOMENT_STD))
    assert abs(res.mass - MASS) < 0.02 * MASS
    assert np.linalg.norm(res.com - COM) < 5e-3
    assert np.allclose(res.offset, offset, atol=4 * res.offset_std.max() + 0.05)
    assert np.allclose(res.inertia, BOX, atol=2e-3)


def test_unexciting_motion_refused_naming_parameters(robot):
    """Only the shoulder lift moving (the tool turns about one axis): the rotational
    inertia cannot be identified, and the refusal says which parameters."""
    with pytest.raises(DataError, match="unobservable parameters: .*I(xy|xz|yz|zz)"):
        plan_payload_excitation(robot, TOOL, Q_HOLD, 6.0, joints=["shoulder_lift_joint"],
                                starts=1)
    Q = np.tile(Q_HOLD, (50, 1))
    with pytest.raises(DataError, match="unobservable parameters: .*(mx|my|mz|Ixx)"):
        identify_payload(robot, Q, 0 * Q, 0 * Q, tool_frame=TOOL, tau=np.zeros_like(Q))


def test_centre_of_mass_box_is_enforced(robot, torque_motion):
    """A box excluding the true centre of mass (z <= 4 cm): the constrained estimate lies
    on its face, consistent, and the mass is still found (SDP, Clarabel)."""
    t, Q, dQ, ddQ = torque_motion
    rng = np.random.default_rng(16)
    tau = payload_torques(robot, Q, dQ, ddQ) + TORQUE_STD * rng.normal(size=Q.shape)
    own = (lambda q, dq, ddq: np.zeros_like(q))
    res = identify_payload(robot, Q, dQ, ddQ, tool_frame=TOOL, tau=tau, robot_parameters=own,
                           com_box=([-0.1, -0.1, 0.0], [0.1, 0.1, 0.04]))
    assert res.constrained and res.com[2] == pytest.approx(0.04, abs=1e-5)
    assert res.pi_unconstrained[3] / res.pi_unconstrained[0] > 0.055
    assert abs(res.mass - MASS) < 0.02 * MASS
    assert np.linalg.eigvalsh(res.inertia).min() > -1e-7


def test_bad_input(robot, torque_motion):
    t, Q, dQ, ddQ = torque_motion
    tau = payload_torques(robot, Q[:50], dQ[:50], ddQ[:50])
    Qn = Q[:50].copy()
    Qn[7, 2] = np.nan
    with pytest.raises(DataError, match="q: non-finite value nan at sample 7, joint elbow"):
        identify_payload(robot, Qn, dQ[:50], ddQ[:50], tool_frame=TOOL, tau=tau)
    with pytest.raises(DataError, match=r"tau: expected 50 x 6 values, got shape \(50, 5\)"):
        identify_payload(robot, Q[:50], dQ[:50], ddQ[:50], tool_frame=TOOL, tau=tau[:, :5])
    with pytest.raises(DataError, match="noise: every std must be positive"):
        identify_payload(robot, Q[:50], dQ[:50], ddQ[:50], tool_frame=TOOL, tau=tau,
                         noise=-0.3)
    with pytest.raises(ModelError, match="tool_frame: no frame 'flange'"):
        identify_payload(robot, Q[:50], dQ[:50], ddQ[:50], tool_frame="flange", tau=tau)
    with pytest.raises(DataError, match="com_box: lower corner"):
        identify_payload(robot, Q[:50], dQ[:50], ddQ[:50], tool_frame=TOOL, tau=tau,
                         com_box=([0, 0, 0.1], [0.1, 0.1, 0.0]))
    with pytest.raises(DataError, match="either tau .* or wrench"):
        identify_payload(robot, Q[:50], dQ[:50], ddQ[:50], tool_frame=TOOL)


GAINS = np.array([13.26, 13.26, 9.31, 4.60, 4.60, 4.60])      # N.m per A (sim_ur10.yaml)


def write_case(tmp_path, robot, torque_motion, **payload):
    t, Q, dQ, ddQ = torque_motion
    rng = np.random.default_rng(13)
    X = zip(robot.full_configuration(Q), robot.full_velocity(dQ), robot.full_velocity(ddQ))
    m = with_payload(robot)
    d = m.createData()
    tau = np.array([pin.rnea(m, d, *x) for x in X])[:, robot.idx_v] \
        + TORQUE_STD * rng.normal(size=Q.shape)
    names = robot.active_joints
    header = ",".join(["t"] + [f"q_{j}" for j in names] + [f"tau_{j}" for j in names])
    np.savetxt(tmp_path / "payload.csv", np.column_stack([t, Q, tau / GAINS]), delimiter=",",
               header=header, comments="")
    cfg = {"robot": {"name": "ur10", "urdf": example_robot_urdf(
        "ur_description/urdf/ur10_joint_limited_robot.urdf"), "joints": names},
        "payload": {"tool_frame": TOOL, "data": "payload.csv",
                    "torque_per_effort": GAINS.tolist(), **payload}}
    (tmp_path / "payload.yaml").write_text(yaml.safe_dump(cfg))
    return str(tmp_path / "payload.yaml")


def test_cli_writes_driver_files(tmp_path, robot, torque_motion, capsys):
    """CSV of positions and motor currents (URDF robot + payload, torques / the UR's
    torque per ampere) -> the three YAML files."""
    config = write_case(tmp_path, robot, torque_motion,
                        com_box={"lo": [-0.1, -0.1, 0.0], "hi": [0.1, 0.1, 0.2]})
    out = tmp_path / "out"
    assert main(["identify-payload", config, "--out", str(out)]) == 0
    ur = yaml.safe_load((out / "ur_payload.yaml").read_text())
    franka = yaml.safe_load((out / "franka_load.yaml").read_text())
    result = yaml.safe_load((out / "result.yaml").read_text())
    assert abs(ur["mass"] - MASS) < 0.02 * MASS
    cog = np.array([ur["center_of_gravity"][k] for k in "xyz"])
    assert np.linalg.norm(cog - COM) < 5e-3
    assert franka["F_x_Cload"] == pytest.approx(cog.tolist())
    assert len(franka["load_inertia"]) == 9 and result["measurements"] == "torque"
    assert "mass 2" in capsys.readouterr().out


def test_cli_refuses_bad_config(tmp_path, robot, torque_motion, capsys):
    config = write_case(tmp_path, robot, torque_motion, torque_noise=[-0.3])
    with pytest.raises(ConfigError, match="payload.torque_noise"):
        run_payload(config, out=str(tmp_path / "out"))
    assert not os.path.exists(tmp_path / "out")
    assert main(["identify-payload", config, "--out", str(tmp_path / "out")]) == 2
    assert "torque_noise" in capsys.readouterr().err


def write_wrench_bag(path, robot, t, Q, W):
    """/joint_states and a WrenchStamped topic, stamped by the robot's clock."""
    store = typestore()
    topics = {"/joint_states": "sensor_msgs/msg/JointState", "/ft": "geometry_msgs/msg/"
              "WrenchStamped"}
    w = SegmentedBagWriter(str(path), topics, store, "mcap", 0.0)
    S = store.types
    H, T, V = S["std_msgs/msg/Header"], S["builtin_interfaces/msg/Time"], \
        S["geometry_msgs/msg/Vector3"]
    rng = np.random.default_rng(14)
    for k in range(len(t)):
        ns = 10**18 + int(round(t[k] * 1e9))
        h = H(stamp=T(sec=ns // 10**9, nanosec=ns % 10**9), frame_id=TOOL)
        js = S["sensor_msgs/msg/JointState"](
            header=h, name=robot.active_joints, position=Q[k] + rng.normal(0, 1e-5, 6),
            velocity=np.zeros(0), effort=np.zeros(6))      # UR: currents, unused here
        f, m = W[k, :3], W[k, 3:]
        ws = S["geometry_msgs/msg/WrenchStamped"](header=h, wrench=S[
            "geometry_msgs/msg/Wrench"](force=V(x=f[0], y=f[1], z=f[2]),
                                        torque=V(x=m[0], y=m[1], z=m[2])))
        w.write("/joint_states", ns, store.serialize_cdr(js, "sensor_msgs/msg/JointState"))
        w.write("/ft", ns, store.serialize_cdr(ws, "geometry_msgs/msg/WrenchStamped"))
    w.close()


def test_cli_from_a_bag_with_a_wrist_sensor(tmp_path, robot):
    """A rosbag2 of joint states and the sensor's WrenchStamped (offset and noise): the
    same targets through the whole command (filter, differentiation, decimation)."""
    t, Q, dQ, ddQ = plan_payload_excitation(robot, TOOL, Q_HOLD, 8.0, kind="wrench",
                                            starts=1, seed=3)
    rng = np.random.default_rng(15)
    W = sensor_wrench(robot, Q, dQ, ddQ) + np.array([2.0, 1.0, -4.0, 0.2, 0.1, -0.1]) \
        + rng.normal(size=(len(t), 6)) * np.repeat([FORCE_STD, MOMENT_STD], 3)
    write_wrench_bag(tmp_path / "bag", robot, t, Q, -W)      # the payload's on the sensor
    cfg = {"robot": {"name": "ur10", "urdf": URDF, "joints": robot.active_joints},
           "payload": {"tool_frame": TOOL, "measurements": "wrench", "wrench_topic": "/ft",
                       "decimation": 2, "wrench_sign": -1}}
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(cfg))
    out = tmp_path / "out"
    assert main(["identify-payload", str(tmp_path / "p.yaml"), "--bag",
                 str(tmp_path / "bag"), "--out", str(out)]) == 0
    res = yaml.safe_load((out / "result.yaml").read_text())
    assert abs(res["mass"] - MASS) < 0.02 * MASS
    assert np.linalg.norm(np.array(res["com"]) - COM) < 5e-3
    assert res["measurements"] == "wrench"
    assert np.allclose(res["sensor_offset"], [2.0, 1.0, -4.0, 0.2, 0.1, -0.1], atol=0.1)


def test_cli_refuses_a_recording_that_cannot_identify_the_payload(tmp_path, robot, capsys):
    """Only the shoulder lift moved: refused naming the parameters, nothing written."""
    t = np.arange(0.0, 6.0, 0.01)
    Q = np.tile(Q_HOLD, (len(t), 1))
    Q[:, 1] += 0.3 * np.sin(2 * np.pi * t / 6.0)
    config = write_case(tmp_path, robot, (t, Q, 0 * Q, 0 * Q))
    assert main(["identify-payload", config, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "unobservable parameters" in err and "Iyz" in err
    assert not os.path.exists(tmp_path / "out")


def test_cli_names_the_field_of_a_bad_recording_setting(tmp_path, robot, torque_motion,
                                                        capsys):
    """A cut-off above the recording's Nyquist frequency, or a noise per joint of the wrong
    length: refused naming the field, nothing written."""
    for payload, words in (({"cutoff_hz": 80.0}, ["payload.cutoff_hz", "Nyquist"]),
                           ({"torque_noise": [0.3, 0.3]}, ["payload.torque_noise", "got 2"])):
        config = write_case(tmp_path, robot, torque_motion, **payload)
        assert main(["identify-payload", config, "--out", str(tmp_path / "out")]) == 2
        err = capsys.readouterr().err
        assert all(w in err for w in words), err
        assert not os.path.exists(tmp_path / "out")


def assert_within_limits(robot, t, Q, dQ, ddQ, q_hold, *, velocity_scale=0.5,
                         acceleration_limit=4.0, joint_margin=0.05, amplitude_rad=1.2):
    """Positions inside the limits less the margin and within the amplitude of the held
    posture, speeds within ``velocity_scale`` of the URDF's, accelerations within the
    limit; the derivatives those of the positions; at rest at ``q_hold`` at both ends."""
    lo, hi = robot.position_limits()
    assert np.all(Q >= lo + joint_margin - 1e-12) and np.all(Q <= hi - joint_margin + 1e-12)
    assert np.all(np.abs(Q - q_hold) <= amplitude_rad + 1e-12)
    vmax = velocity_scale * robot.velocity_limits()
    assert np.all(np.abs(dQ) <= vmax + 1e-12), (np.abs(dQ).max(axis=0), vmax)
    assert np.all(np.abs(ddQ) <= acceleration_limit + 1e-12), np.abs(ddQ).max(axis=0)
    step = t[1] - t[0]
    # the limits hold for the positions' own derivatives (trapezoid rule, one step)
    assert np.allclose(np.diff(Q, axis=0), 0.5 * (dQ[1:] + dQ[:-1]) * step, atol=1e-4)
    assert np.allclose(np.diff(dQ, axis=0), 0.5 * (ddQ[1:] + ddQ[:-1]) * step, atol=1e-3)
    assert np.allclose(Q[[0, -1]], q_hold, atol=1e-12)
    assert np.allclose(dQ[[0, -1]], 0, atol=1e-12) and np.allclose(ddQ[[0, -1]], 0,
                                                                    atol=1e-9)
    assert step > 0 and np.all(np.diff(t) > 0)


@pytest.mark.parametrize("kind, q_hold, options", [
    ("torque", Q_HOLD, {}),
    ("wrench", Q_HOLD, {}),
    # near the wrist limits (+-2 pi on the joint-limited UR10: +-pi here) and tighter limits
    ("torque", np.array([0.3, -1.0, 1.2, -2.9, 2.9, -3.0]),
     {"velocity_scale": 0.2, "acceleration_limit": 1.5, "joint_margin": 0.1}),
    ("wrench", np.array([0.0, -1.57, 1.0, -1.0, -1.57, 3.0]),
     {"amplitude_rad": 0.6, "duration": 6.0, "harmonics": 5, "seed": 7}),
])
def test_planned_excitation_stays_within_the_limits(robot, kind, q_hold, options):
    opts = dict(options)
    duration = opts.pop("duration", 10.0)
    harmonics, seed = opts.pop("harmonics", 3), opts.pop("seed", 0)
    t, Q, dQ, ddQ = plan_payload_excitation(robot, TOOL, q_hold, duration, kind=kind,
                                            harmonics=harmonics, seed=seed, **opts)
    assert_within_limits(robot, t, Q, dQ, ddQ, q_hold, **opts)
    moving = np.ptp(Q, axis=0) > 1e-9
    assert moving.tolist() == [False, False, False, True, True, True]
    assert np.all(Q[:, :3] == q_hold[:3]) and not np.any(dQ[:, :3]) and not np.any(ddQ[:, :3])


def test_plan_payload_cli_writes_what_the_executor_plays(tmp_path, robot, capsys):
    """``figaroh-ros plan-payload``: the planned excitation as a trajectory file; read back
    by the executor's reader (times, joint columns, end at rest, limits) it is the planned
    motion, within the limits, and it can identify the payload."""
    from figaroh_ros.io.experiment_files import (check_limits, read_trajectory,
                                                 trajectory_velocities)
    cfg = {"robot": {"name": "ur10", "urdf": URDF, "joints": robot.active_joints},
           "payload": {"tool_frame": TOOL, "measurements": "wrench"}}
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(cfg))
    out = tmp_path / "plan" / "payload.csv"
    hold = [str(v) for v in Q_HOLD]
    assert main(["plan-payload", str(tmp_path / "p.yaml"), "--hold", *hold, "--out",
                 str(out), "--duration", "8", "--seed", "3"]) == 0
    printed = capsys.readouterr().out
    assert "wrench payload excitation of wrist_1_joint, wrist_2_joint, wrist_3_joint" in \
        printed and str(out) in printed
    names, times, Q = read_trajectory(str(out), robot.active_joints)
    assert names == robot.active_joints
    V = trajectory_velocities(times, Q)                     # the executor's own checks
    lo, hi = robot.position_limits()
    vlim = robot.velocity_limits()
    check_limits(names, Q, {n: (lo[k], hi[k]) for k, n in enumerate(names)}, V,
                 {n: vlim[k] for k, n in enumerate(names)})
    t, Qp, dQ, ddQ = plan_payload_excitation(robot, TOOL, Q_HOLD, 8.0, kind="wrench", seed=3)
    assert np.allclose(times, t - t[0], atol=1e-9) and np.allclose(Q, Qp, atol=1e-8)
    assert_within_limits(robot, t, Qp, dQ, ddQ, Q_HOLD)
    # finite differences of the file as the executor and the controller see them
    A = np.gradient(V, times, axis=0)
    assert np.all(np.abs(V) <= 0.5 * vlim * 1.01) and np.all(np.abs(A) <= 4.0 * 1.05)
    assert np.all(Q >= lo + 0.05 - 1e-8) and np.all(Q <= hi - 0.05 + 1e-8)
    result = yaml.safe_load((tmp_path / "plan" / "result.yaml").read_text())
    assert result["trajectory"] == str(out) and result["condition_number"] < 1e4
    assert result["peak_velocity_of_limit"] <= 0.5 + 1e-12
    assert result["moving_joints"] == robot.active_joints[3:]


def test_plan_payload_cli_refusals_write_nothing(tmp_path, robot, capsys):
    """Only the shoulder lift moved (the payload's rotational inertia is unobservable) and
    a held posture of the wrong size: exit 2, the reason named, nothing written."""
    cfg = {"robot": {"name": "ur10", "urdf": URDF, "joints": robot.active_joints},
           "payload": {"tool_frame": TOOL}}
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(cfg))
    out = tmp_path / "plan" / "payload.csv"
    hold = [str(v) for v in Q_HOLD]
    for extra, words in ((["--joints", "shoulder_lift_joint", "--duration", "6"],
                          ["unobservable parameters", "I"]),
                         (["--hold", "0", "1"], ["q_hold", "expected 6"])):
        args = ["plan-payload", str(tmp_path / "p.yaml"), "--hold", *hold, "--out", str(out)]
        assert main(args + extra) == 2
        err = capsys.readouterr().err
        assert all(w in err for w in words), err
        assert os.listdir(tmp_path) == ["p.yaml"]


def _identified_folder(tmp_path, robot, layout, phi) -> str:
    """A ``figaroh-ros identify`` result folder holding ``phi`` (every standard parameter
    as its own base parameter: a perfect identification)."""
    folder = tmp_path / "ur10_identified"
    folder.mkdir()
    (folder / "result.yaml").write_text(yaml.safe_dump({
        "robot": "ur10", "joints": list(robot.active_joints),
        "base_parameters": [{"name": n, "value": float(v)}
                            for n, v in zip(layout.names, phi)]}))
    return str(folder)


def test_cli_subtracts_the_identified_friction(tmp_path, robot, torque_motion, capsys):
    """Torques of a robot with friction, rotor inertia and offsets (the hidden truth, its
    held joints at rest): ``robot.dynamics``'s result.yaml gives those drive terms, and the
    payload is found within the targets; the URDF's inertias alone are not enough."""
    t, Q, dQ, ddQ = torque_motion
    drive = DriveOptions()
    layout = parameter_layout(robot, drive)
    phi = perturbed_parameters(robot, layout, seed=5)
    rng = np.random.default_rng(21)
    tau = joint_torques_from_parameters(robot, layout, drive, phi, Q, dQ, ddQ) \
        + payload_torques(robot, Q, dQ, ddQ) + TORQUE_STD * rng.normal(size=Q.shape)
    Qn = Q + rng.normal(0, 1e-5, Q.shape)                  # encoder noise on held joints
    names = robot.active_joints
    header = ",".join(["t"] + [f"q_{j}" for j in names] + [f"tau_{j}" for j in names])
    np.savetxt(tmp_path / "payload.csv", np.column_stack([t, Qn, tau]), delimiter=",",
               header=header, comments="")
    found = {}
    for dynamics in (_identified_folder(tmp_path, robot, layout, phi), None):
        cfg = {"robot": {"name": "ur10", "urdf": URDF, "joints": names,
                         "dynamics": dynamics},
               "payload": {"tool_frame": TOOL, "data": str(tmp_path / "payload.csv")}}
        (tmp_path / "p.yaml").write_text(yaml.safe_dump(cfg))
        out = tmp_path / f"out_{dynamics is None}"
        assert main(["identify-payload", str(tmp_path / "p.yaml"), "--out", str(out)]) == 0
        found[dynamics is None] = yaml.safe_load((out / "result.yaml").read_text())
    res, urdf_only = found[False], found[True]
    print("with the identified drive terms:", res["mass"], res["com"],
          "URDF only:", urdf_only["mass"], urdf_only["com"])
    assert abs(res["mass"] - MASS) < 0.02 * MASS
    assert np.linalg.norm(np.array(res["com"]) - COM) < 5e-3
    assert abs(urdf_only["mass"] - MASS) > 0.02 * MASS or \
        np.linalg.norm(np.array(urdf_only["com"]) - COM) > 5e-3


def test_cli_refuses_a_robot_held_still(tmp_path, robot, capsys):
    """A recording of the robot held still: the differentiated encoder noise passes the
    condition number, but the centre of mass along gravity and the inertia stay unknown:
    refused naming them, nothing written."""
    t = np.arange(0.0, 4.0, 0.004)
    Q = np.tile(Q_HOLD, (len(t), 1)) + np.random.default_rng(22).normal(0, 1e-5,
                                                                        (len(t), 6))
    config = write_case(tmp_path, robot, (t, Q, 0 * Q, 0 * Q))
    assert main(["identify-payload", config, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "unobservable parameters" in err and "Ixx" in err and "plan-payload" in err, err
    assert not os.path.exists(tmp_path / "out")

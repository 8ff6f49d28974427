"""Residual sanity of the phenomena and gains fits: a fit whose residual
is far above the noise of its own measurements (estimated from repeated samples: the
samples at rest, or successive samples) is refused with the likely causes, unless
``accept_poor_fit``.  Each case is a simulated truth measured honestly, then with one
plausible mistake of a user:

* gains (TLS, UR10, hidden drive gains, 0.5 % current noise): honest fit well under
  the limit (a swapped-column recording makes the TLS refinement run for minutes: not
  tested here);
* backlash (TIAGo arm, play operator): the link encoders of the two joints swapped;
* suspension (TIAGo base, hidden stiffness and damping): the plate's x and y axes
  swapped.
"""
import dataclasses

import numpy as np
import pinocchio as pin
import pytest
import yaml
from conftest import SHARED
from test_suspension import faded_motion, hidden_parameters, plate_and_mocap

from figaroh_ros.cli.main import main
from figaroh_ros.errors import DataError
from figaroh_ros.excitation.fourier import fourier_trajectory
from figaroh_ros.identification import DriveOptions, parameter_layout
from figaroh_ros.identification.gains import GainsExperiment, Payload, identify_gains
from figaroh_ros.identification.parameters import PIN_TO_STD
from figaroh_ros.identification.regressor import standard_regressor
from figaroh_ros.io.bags import typestore
from figaroh_ros.io.segmented_bag import SegmentedBagWriter
from figaroh_ros.model.robot import load_urdf_model
from figaroh_ros.phenomena import sweep_trajectory
from figaroh_ros.sim.dynamics import perturbed_parameters
from figaroh_ros.sim.phenomena import JointPlay, PlayTracker
from figaroh_ros.tasks import backlash
from figaroh_ros.tasks.gains import residual_sanity
from figaroh_ros.tasks.gate import require_sane_fit

JS = "sensor_msgs/msg/JointState"


def _header(store, ns):
    T = store.types
    return T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](
        sec=ns // 10**9, nanosec=ns % 10**9), frame_id="")


# ------------------------------------------------------------------ gains
def gains_experiments(ur10, swap: bool = False):
    """Unloaded and loaded runs: currents = joint torque / hidden gain + 0.5 % noise;
    ``swap``: the columns of joints 2 and 3 exchanged (a wrong column template)."""
    drive = DriveOptions(rotor_inertia=True, torque_offset=False)
    layout = parameter_layout(ur10, drive)
    phi = perturbed_parameters(ur10, layout, seed=11)
    gains = np.random.default_rng(12).uniform(5.0, 15.0, ur10.n_joints)
    last = layout.inertial_cols[max(layout.inertial_cols)]
    payload = pin.Inertia(4.0, np.array([0.02, -0.01, 0.06]),
                          np.diag([0.012, 0.015, 0.008])).toDynamicParameters()[PIN_TO_STD]
    out = []
    for seed, load in ((13, 0.0), (14, 1.0)):
        tr = fourier_trajectory(ur10, 20.0, 100, harmonics=5, amplitude=0.6, seed=seed)
        W = standard_regressor(ur10, layout, drive, tr.q, tr.dq, tr.ddq)
        tau = (W @ phi + load * W[:, last] @ payload).reshape(ur10.n_joints, -1).T
        i = tau / gains
        i += 0.005 * np.abs(i).max(axis=0) * np.random.default_rng(seed).normal(size=i.shape)
        if swap:
            i[:, [1, 2]] = i[:, [2, 1]]
        out.append(GainsExperiment(tr.t, tr.q, currents=i))
    return out, drive


def test_gains_residual_against_the_current_noise(ur10):
    exps, drive = gains_experiments(ur10, swap=False)
    g = identify_gains(ur10, *exps, Payload(4.0), drive=drive)
    check = residual_sanity(g, exps)
    assert check.passed and check.value < 1.0, check            # measured 0.2-0.4
    assert require_sane_fit(check, False, "gains") == []
    with pytest.raises(DataError, match="likely causes: a cause"):
        require_sane_fit(dataclasses.replace(check, passed=False), False, "gains",
                         ("a cause",))


# ------------------------------------------------------------------ backlash
def test_backlash_with_swapped_link_encoders_is_refused(tmp_path):
    """Two TIAGo arm joints with play; the link encoders published under each other's
    names (the discrepancy of a joint then follows the other joint's motion)."""
    urdf = f"{SHARED}/data/tiago/urdf/tiago_48_schunk.urdf"
    joints = ["arm_1_joint", "arm_2_joint"]
    robot = load_urdf_model(urdf, joints)
    traj = sweep_trajectory(robot, joints, duration=24.0, rate_hz=200.0, periods=(5.0, 7.0))
    tracker = PlayTracker([JointPlay(0.004, 0.002, 0.5, 1e-4),
                           JointPlay(0.006, 0.0015, -1.0, 2e-4)], traj.q[0])
    data, rng, store = robot.model.createData(), np.random.default_rng(3), typestore()
    w = SegmentedBagWriter(str(tmp_path / "bag"), {"/joint_states": JS, "/link_encoders": JS},
                           store, "mcap", 0.0)
    for k, q in enumerate(traj.q):
        tau = pin.computeGeneralizedGravity(robot.model, data,
                                            robot.full_configuration(q[None])[0])[robot.idx_v]
        link = tracker.update(q, tau)
        ns = 10**18 + int(round(traj.t[k] * 1e9))
        for topic, pos, names in (("/joint_states", q, joints),
                                  ("/link_encoders", link, joints[::-1])):   # swapped
            msg = store.types[JS](header=_header(store, ns), name=names,
                                  position=pos + rng.normal(0, 1e-4, 2),
                                  velocity=np.zeros(0), effort=np.zeros(0))
            w.write(topic, ns, store.serialize_cdr(msg, JS))
    w.close()
    cfg = tmp_path / "backlash.yaml"
    cfg.write_text(yaml.safe_dump({"robot": {"name": "tiago", "urdf": urdf},
                                   "backlash": {"joints": joints, "max_degree": 3}}))
    with pytest.raises(DataError, match="does not explain its data") as exc:
        backlash.run(str(cfg), bag=str(tmp_path / "bag"), out=str(tmp_path / "out"))
    assert "encoder topics swapped" in str(exc.value)
    ratio = float(str(exc.value).split("residual RMS ")[1].split(" x")[0])
    assert ratio > 10.0                          # honest bag of test_backlash: 3.9
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------ suspension
def write_suspension_bag(path, wrench, pose, t):
    store = typestore()
    T = store.types
    topics = {"/force_plate/wrench": "geometry_msgs/msg/WrenchStamped",
              "/mocap/base_pose": "geometry_msgs/msg/PoseStamped"}
    w = SegmentedBagWriter(str(path), topics, store, "mcap", 0.0)
    V, Q = T["geometry_msgs/msg/Vector3"], T["geometry_msgs/msg/Quaternion"]
    for k, tk in enumerate(t):
        ns = 10**18 + int(round(tk * 1e9))
        msg = T["geometry_msgs/msg/WrenchStamped"](header=_header(store, ns), wrench=T[
            "geometry_msgs/msg/Wrench"](force=V(*wrench[k, :3]), torque=V(*wrench[k, 3:])))
        w.write("/force_plate/wrench", ns, store.serialize_cdr(msg, topics[
            "/force_plate/wrench"]))
        p = pose[k]
        msg = T["geometry_msgs/msg/PoseStamped"](header=_header(store, ns), pose=T[
            "geometry_msgs/msg/Pose"](position=T["geometry_msgs/msg/Point"](*p[:3]),
                                      orientation=Q(*p[3:])))
        w.write("/mocap/base_pose", ns, store.serialize_cdr(msg, topics["/mocap/base_pose"]))
    w.close()


def test_suspension_with_the_plate_axes_swapped_is_refused(tmp_path, capsys):
    rng = np.random.default_rng(6)
    _, P = hidden_parameters(rng)
    t, X, dX = faded_motion(rng, T=40.0, freqs=(0.1, 0.8))
    wrench, pose = plate_and_mocap(rng, P, X, dX, mocap_noise=(1e-4, 5e-4))
    wrench = wrench[:, [1, 0, 2, 4, 3, 5]]              # x and y of the plate exchanged
    write_suspension_bag(tmp_path / "bag", wrench, pose, t)
    cfg = tmp_path / "suspension.yaml"
    cfg.write_text(yaml.safe_dump({"robot": {"name": "tiago"}, "suspension": {}}))
    out = tmp_path / "out"
    assert main(["identify-suspension", str(cfg), "--bag", str(tmp_path / "bag"),
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "does not explain its data" in err and "axes or sign of the plate" in err
    assert not out.exists()
    assert main(["identify-suspension", str(cfg), "--bag", str(tmp_path / "bag"),
                 "--out", str(out), "--accept-poor-fit"]) == 0
    res = yaml.safe_load((out / "result.yaml").read_text())
    assert not res["residual_vs_noise"]["passed"] and res["residual_vs_noise"]["value"] > 10
    assert res["warnings"][0].startswith("POOR FIT ACCEPTED")

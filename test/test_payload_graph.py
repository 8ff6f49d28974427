"""The IdentifyPayload action end to end on a ROS graph: a simulated UR10
carrying a hidden 2 kg payload with an offset centre of mass on tool0 (its joint torques
and its wrist force-torque sensor see it); the executor plays a planned 10 s excitation of
the wrist joints, the recorder records it, and the calibration node's IdentifyPayload goal
on that bag finds the mass within 2 % and the centre of mass within 5 mm, with their std,
and writes the values ur_robot_driver's set_payload takes.  The same bag again from the
joint currents alone (ur_robot_driver's /joint_states effort times the torque per ampere),
the robot's own dynamics (inertias, friction, rotor inertia, offsets) given by an
identification result: the same targets.  A goal without a bag is refused at acceptance,
a bag of the robot held still fails naming the parameters it cannot identify; neither
writes anything.  The simulator's payload model is checked first against
an independent computation (pinocchio's spatial inertia, Newton-Euler)."""
import os
import time

import numpy as np
import pinocchio as pin
import pytest
import yaml
from conftest import ROOT, accepted_goal, goal_result, sim_ur10_graph

from figaroh_ros.errors import INVALID_GOAL, SUCCESSFUL

rclpy = pytest.importorskip("rclpy")
pytestmark = pytest.mark.xdist_group("ros_graph_2")   # the second worker's graphs

MASS, COM, MOMENTS = 2.0, [0.03, -0.02, 0.06], [0.0045, 0.0061, 0.0082]
Q_HOLD = np.array([0.0, -1.2, 1.5, -1.9, -1.57, 0.0])
URDF = "example-robot-data:ur_description/urdf/ur10_joint_limited_robot.urdf"
GAINS = [13.26, 13.26, 9.31, 4.60, 4.60, 4.60]      # N.m per A: config/sim_ur10.yaml's driver
JOINTS = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint",
          "wrist_2_joint", "wrist_3_joint"]


def _sim_config(tmp_path) -> str:
    with open(os.path.join(ROOT, "config", "sim_ur10.yaml")) as f:
        cfg = yaml.safe_load(f)
    cfg["truth"]["payload"] = {"frame": "tool0", "mass": MASS, "com": COM,
                               "inertia": MOMENTS}
    cfg.setdefault("noise", {})["plate_moment_nm"] = 0.02     # a wrist sensor's noise
    path = tmp_path / "sim_ur10_payload.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def test_the_simulated_payload_is_newton_euler(tmp_path):
    """TrueRobot's payload torques and wrench against a direct computation: the payload's
    wrench carried to the joints by the tool frame's Jacobian (J^T f), at rest and moving."""
    from figaroh_ros.sim.truth import TrueRobot, load_sim_config
    truth = TrueRobot(load_sim_config(_sim_config(tmp_path)))
    r = truth.robot
    rng = np.random.default_rng(3)
    q, dq = Q_HOLD + rng.normal(0, 0.3, 6), np.zeros(6)
    w = truth.payload_wrench(q, dq, dq)
    assert w[:3] @ w[:3] == pytest.approx((MASS * 9.81) ** 2, rel=1e-3)
    m, d = r.model, r.model.createData()
    fid = m.getFrameId("tool0")
    qf = r.full_configuration(q[None])[0]
    J = pin.computeFrameJacobian(m, d, qf, fid, pin.LOCAL)[:, r.idx_v]
    assert np.allclose(truth.payload_torques(q[None], dq[None], dq[None])[0], J.T @ w,
                       atol=1e-9)
    ddq = rng.normal(0, 1.0, 6)
    moving = truth.payload_torques(q[None], (dq + 0.5)[None], ddq[None])[0]
    assert not np.allclose(moving, J.T @ w, atol=1e-3)        # inertial terms present


@pytest.fixture(scope="module")
def payload_graph(tmp_path_factory):
    work = tmp_path_factory.mktemp("payload")
    # joint states at 125 Hz, half the simulator's CPU (test_ros_graph.JOINT_STATES_HZ)
    with sim_ur10_graph(work, "figaroh_payload_test", joint_states_hz=125,
                        sim_config=_sim_config(work), preflight_config="") as (g, node):
        yield {"graph": g, "node": node, "work": work}


def _goal(node, action_type, name, goal, timeout=300.0):
    from rclpy.action import ActionClient
    ac = ActionClient(node, action_type, name)
    assert ac.wait_for_server(timeout_sec=60.0), name
    handle = accepted_goal(node, ac, goal)
    if handle is None:
        return None
    return goal_result(node, handle, timeout)


@pytest.fixture(scope="module")
def payload_bag(payload_graph):
    """The planned 10 s excitation of the wrist joints played by the executor and recorded
    (joint states with the driver's currents in effort, the wrist sensor)."""
    from figaroh_ros.action import RunExperiment
    from figaroh_ros.excitation.payload import plan_payload_excitation
    from figaroh_ros.model import load_model
    node, work = payload_graph["node"], payload_graph["work"]
    t, Q, _, _ = plan_payload_excitation(load_model(URDF), "tool0", Q_HOLD, 10.0,
                                         kind="wrench")
    traj = work / "payload_trajectory.csv"
    with open(traj, "w") as f:
        f.write(",".join(["t"] + JOINTS) + "\n")
        for ti, qi in zip(t, Q):
            f.write(",".join(repr(float(v)) for v in [ti, *qi]) + "\n")
    bag = str(work / "bags" / "payload")
    ran = _goal(node, RunExperiment, "/figaroh/run_experiment",
                RunExperiment.Goal(trajectory_file=str(traj), bag_path=bag))
    assert ran.error_code == SUCCESSFUL, ran.message
    return bag


def test_identify_payload_over_ros(payload_graph, payload_bag):
    from figaroh_ros.action import IdentifyPayload
    node, work, bag = payload_graph["node"], payload_graph["work"], payload_bag
    with open(os.path.join(ROOT, "config", "ur10_payload.yaml")) as f:
        cfg = yaml.safe_load(f)
    cfg["payload"].update(measurements="wrench", force_noise=0.5, moment_noise=0.02)
    config = work / "payload.yaml"
    config.write_text(yaml.safe_dump(cfg))
    t0 = time.monotonic()
    res = _goal(node, IdentifyPayload, "/figaroh/identify_payload",
                IdentifyPayload.Goal(bag=bag, config=str(config)))
    assert res.error_code == SUCCESSFUL, res.message
    assert abs(res.mass_kg - MASS) < 0.02 * MASS, res.message
    assert np.linalg.norm(np.array(res.com_m) - COM) < 5e-3, res.message
    assert 0 < res.mass_std_kg < 0.02 * MASS and all(0 < s < 5e-3 for s in res.com_std_m)
    assert res.physically_consistent
    with open(res.ur_payload_path) as f:
        ur = yaml.safe_load(f)
    assert ur["mass"] == pytest.approx(res.mass_kg)
    assert [ur["center_of_gravity"][k] for k in "xyz"] == pytest.approx(list(res.com_m))
    assert os.path.isfile(res.franka_load_path) and time.monotonic() - t0 < 300

    runs = sorted(os.listdir(work / "cal"))
    refused = _goal(node, IdentifyPayload, "/figaroh/identify_payload",
                    IdentifyPayload.Goal(bag=str(work / "bags" / "none"), config=str(config)))
    assert refused is None or (refused.error_code == INVALID_GOAL
                               and "not a rosbag2 bag" in refused.message), refused
    assert sorted(os.listdir(work / "cal")) == runs


def _truth_dynamics(work) -> str:
    """An identification result folder of the simulated robot's own dynamics: its hidden
    inertias and drive terms (friction, rotor inertia, offset) as base parameters, as a
    perfect ``figaroh-ros identify`` would give them."""
    from figaroh_ros.sim.truth import TrueRobot, load_sim_config
    truth = TrueRobot(load_sim_config(str(work / "sim_ur10_payload.yaml")))
    assert truth.drive.coulomb_model == "sign"
    folder = work / "ur10_identified"
    folder.mkdir(exist_ok=True)
    (folder / "result.yaml").write_text(yaml.safe_dump({
        "robot": "ur10", "joints": list(truth.robot.active_joints),
        "base_parameters": [{"name": n, "value": float(v)}
                            for n, v in zip(truth.layout.names, truth.phi)]}))
    return str(folder)


def _torque_config(work, dynamics: str | None) -> str:
    """config/ur10_payload.yaml reading the driver's currents (/joint_states effort, A)
    times the UR10's torque per ampere, the robot's own dynamics from ``dynamics``."""
    with open(os.path.join(ROOT, "config", "ur10_payload.yaml")) as f:
        cfg = yaml.safe_load(f)
    cfg["robot"]["dynamics"] = dynamics
    cfg["payload"].update(measurements="torque", torque_topic="/joint_states",
                          torque_per_effort=GAINS, torque_noise=[0.3])
    path = work / "payload_torque.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def test_identify_payload_from_joint_currents_over_ros(payload_graph, payload_bag):
    """The same recording, the payload from the joint currents alone (ur_robot_driver's
    /joint_states effort) and the robot's identified dynamics: the same targets."""
    from figaroh_ros.action import IdentifyPayload
    node, work = payload_graph["node"], payload_graph["work"]
    config = _torque_config(work, _truth_dynamics(work))
    res = _goal(node, IdentifyPayload, "/figaroh/identify_payload",
                IdentifyPayload.Goal(bag=payload_bag, config=config))
    print("torque path:", res.message, res.mass_kg, list(res.com_m))
    assert res.error_code == SUCCESSFUL, res.message
    assert abs(res.mass_kg - MASS) < 0.02 * MASS, res.message
    assert np.linalg.norm(np.array(res.com_m) - COM) < 5e-3, res.message
    assert 0 < res.mass_std_kg < 0.02 * MASS and all(0 < s < 5e-3 for s in res.com_std_m)
    with open(res.result_path) as f:
        result = yaml.safe_load(f)
    assert result["measurements"] == "torque"
    print("torque path std: mass", result["mass_std"], "com", result["com_std"], "inertia",
          result["inertia_std"])
    with open(res.ur_payload_path) as f:
        assert yaml.safe_load(f)["mass"] == pytest.approx(res.mass_kg)


def _held_still_bag(path, seconds: float = 4.0, rate: float = 250.0) -> None:
    """A rosbag2 of the robot held at Q_HOLD: /joint_states with the driver's currents
    (the gravity torques of the robot and its payload over the torque per ampere)."""
    from figaroh_ros.io.bags import typestore
    from figaroh_ros.io.segmented_bag import SegmentedBagWriter
    from figaroh_ros.sim.truth import TrueRobot, load_sim_config
    truth = TrueRobot(load_sim_config(str(path.parent.parent / "sim_ur10_payload.yaml")))
    zero = np.zeros((1, 6))
    current = truth.joint_torques(Q_HOLD[None], zero, zero)[0] / np.array(GAINS)
    store = typestore()
    w = SegmentedBagWriter(str(path), {"/joint_states": "sensor_msgs/msg/JointState"}, store,
                           "mcap", 0.0)
    S, rng = store.types, np.random.default_rng(4)
    for k in range(int(seconds * rate)):
        ns = 10**18 + int(round(k / rate * 1e9))
        js = S["sensor_msgs/msg/JointState"](
            header=S["std_msgs/msg/Header"](stamp=S["builtin_interfaces/msg/Time"](
                sec=ns // 10**9, nanosec=ns % 10**9), frame_id=""), name=JOINTS,
            position=Q_HOLD + rng.normal(0, 1e-5, 6), velocity=np.zeros(6),
            effort=current + rng.normal(0, 0.3, 6) / np.array(GAINS))
        w.write("/joint_states", ns, store.serialize_cdr(js, "sensor_msgs/msg/JointState"))
    w.close()


def test_unexciting_bag_refused_over_ros(payload_graph):
    """A bag of the robot held still cannot identify the payload: the goal fails naming the
    unidentifiable parameters, and no result folder is written."""
    from figaroh_ros.action import IdentifyPayload
    node, work = payload_graph["node"], payload_graph["work"]
    bag = work / "bags" / "held_still"
    bag.parent.mkdir(exist_ok=True)
    _held_still_bag(bag)
    config = _torque_config(work, _truth_dynamics(work))
    os.makedirs(work / "cal", exist_ok=True)
    runs = sorted(os.listdir(work / "cal"))
    res = _goal(node, IdentifyPayload, "/figaroh/identify_payload",
                IdentifyPayload.Goal(bag=str(bag), config=config))
    print("held still:", res.error_code, res.message)
    assert res.error_code != SUCCESSFUL
    assert "unobservable parameters" in res.message and "Ixx" in res.message, res.message
    assert res.result_path == "" and res.ur_payload_path == ""
    assert sorted(os.listdir(work / "cal")) == runs

"""The simulated TIAGo as a real graph (launch/sim_tiago.launch.yaml, every node in its own
process over DDS): torso and arm on two controllers, as on the robot.  A module of its own:
the UR10 graph of test_ros_graph.py is not running beside it.

The simulator impersonates PAL's TIAGo drivers (config/sim_tiago.yaml's ``driver``
section, the one of config/robot_tiago.yaml): the same graph's bag proves the profile end
to end against the simulator's hidden truth."""
import os

import numpy as np
import pytest
import yaml
from conftest import ROOT, ros_graph_environment

pytest.importorskip("rclpy")
pytestmark = pytest.mark.xdist_group("ros_graph_2")   # the second worker's graphs
SIM = os.path.join(ROOT, "config", "sim_tiago.yaml")
ROBOT = os.path.join(ROOT, "config", "robot_tiago.yaml")
JS, WRENCH, POSE = "/joint_states", "/ft_sensor_controller/wrench", "/mocap/pose"


def _stamp(msg) -> float:
    return msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec


def _read(bag: str):
    """The bag's topics, and per topic its (stamp, message) list."""
    from figaroh_ros.io.bags import open_bag
    reader = open_bag([bag], {JS: "sensor_msgs/msg/JointState",
                              WRENCH: "geometry_msgs/msg/WrenchStamped",
                              POSE: "geometry_msgs/msg/PoseStamped"})
    try:
        topics = {c.topic for c in reader.connections}
        conns = [c for c in reader.connections if c.topic in (JS, WRENCH, POSE)]
        out = {JS: [], WRENCH: [], POSE: []}
        for conn, _, raw in reader.messages(connections=conns):
            msg = reader.deserialize(raw, conn.msgtype)
            out[conn.topic].append((_stamp(msg), msg))
    finally:
        reader.close()
    return topics, out


def _rate(stamps) -> float:
    t = np.asarray(stamps)
    return float((len(t) - 1) / (t[-1] - t[0]))


def _at_rest(joint_msgs, joints):
    """Positions and efforts (config order) of the joint states where every joint is still
    (the simulator's published velocity is exactly 0 only when holding: then its
    acceleration is 0 too)."""
    Q, E = [], []
    for _, m in joint_msgs:
        idx = [list(m.name).index(j) for j in joints]
        v = np.asarray(m.velocity, float)[idx]
        if np.all(v == 0.0):
            Q.append(np.asarray(m.position, float)[idx])
            E.append(np.asarray(m.effort, float)[idx])
    return np.array(Q), np.array(E)


def _torque_residuals(E, tau, gains):
    """Per joint: RMS and mean of effort x gain - true torque."""
    r = E * np.asarray(gains, float) - tau
    return np.sqrt(np.mean(r ** 2, axis=0)), np.mean(r, axis=0)


def _profile_holds(rms, mean, noise) -> bool:
    """The efforts times the gains are the true torques within the drives' noise."""
    return bool(np.all(rms <= 1.25 * noise) and np.all(rms >= 0.8 * noise)
                and np.all(np.abs(mean) <= 0.3 * noise))


def test_tiago_torso_and_arm_on_two_controllers(tmp_path):
    """The demo loop on the simulated TIAGo: every posture is split between the torso and
    the arm controllers; the published model beats the nominal one by >= 80 %.  Its bag
    holds what PAL's TIAGo publishes (config/robot_tiago.yaml): joint states at 50 Hz
    whose efforts times the hidden torque_per_effort are the true joint torques at the
    held postures, the wrist wrench in wrist_ft_link, the mocap pose best effort."""
    from figaroh_ros.config.robot import load_robot_config
    from figaroh_ros.io.bag_metadata import offered_qos
    from figaroh_ros.ros import demo
    from figaroh_ros.sim.truth import TrueRobot, load_sim_config
    # the simulator's driver section is the robot's, its hidden gains besides
    sim, robot = load_robot_config(SIM).driver, load_robot_config(ROBOT).driver
    assert sim.profile == robot.profile == "pal_tiago"
    assert sim.joint_states.model_dump(exclude={"torque_per_effort"}) \
        == robot.joint_states.model_dump(exclude={"torque_per_effort"})
    assert [m.model_dump() for m in sim.recorded()] == [m.model_dump()
                                                       for m in robot.recorded()]

    work = tmp_path / "tiago"
    out = demo.run(str(work), "tiago", n_postures=14, domain=ros_graph_environment())
    assert out["result"].published
    assert out["calibrated_mm"] <= 0.2 * out["nominal_mm"], out

    bag = str(work / "bags" / "tiago_calibration")
    cfg = load_sim_config(SIM)
    topics, msgs = _read(bag)
    # what a real TIAGo's recording holds: no torque topic of the simulator's own
    assert topics == {JS, WRENCH, POSE, "/figaroh/posture_events", "/robot_description"}, \
        topics
    numbers = {}

    # joint states at 50 Hz (the driver's stamps)
    numbers["joint_states_hz"] = rate = round(_rate([t for t, _ in msgs[JS]]), 2)
    assert 45.0 <= rate <= 55.0, rate

    # effort = current: times the hidden gains, the true torques at the held postures
    joints, gains = cfg.joints, cfg.driver.joint_states.torque_per_effort
    Q, E = _at_rest(msgs[JS], joints)
    assert len(Q) >= 100, len(Q)
    tau = TrueRobot(cfg).joint_torques(Q, np.zeros_like(Q), np.zeros_like(Q))
    noise = float(cfg.noise.current_a)
    rms, mean = _torque_residuals(E, tau, gains)
    numbers.update(rest_samples=len(Q),
                   torque_rms=dict(zip(joints, rms.round(4).tolist())),
                   torque_mean=dict(zip(joints, mean.round(4).tolist())),
                   current_a=dict(zip(joints, np.abs(E).mean(axis=0).round(3).tolist())))
    assert _profile_holds(rms, mean, noise), numbers
    # the check sees a wrong profile: torques in effort (gain 1), a joint's sign flipped
    assert not _profile_holds(*_torque_residuals(E, tau, np.ones(len(joints))), noise)
    for j in range(len(joints)):
        flipped = np.array(gains, float)
        flipped[j] = -flipped[j]
        assert not _profile_holds(*_torque_residuals(E, tau, flipped), noise), joints[j]
    # efforts are currents, not torques: of the torques' size divided by the gains
    assert np.abs(E).max() < np.abs(tau).max() / 10.0

    # every move within each joint's URDF velocity limit: the torso's 0.07 m/s while the
    # arm's joints go at the launch file's max_velocity (1.5 rad/s)
    from figaroh_ros.model.robot import load_urdf_model
    V = np.abs([np.asarray(m.velocity, float)[[list(m.name).index(j) for j in joints]]
                for _, m in msgs[JS]]).max(axis=0)
    speed = np.minimum(load_urdf_model(cfg.urdf, joints).velocity_limits(), 1.5)
    numbers["peak_speed"] = dict(zip(joints, V.round(3).tolist()))
    assert np.all(V <= 1.05 * speed) and V[0] > 0.5 * speed[0], numbers["peak_speed"]

    # the Schunk wrist sensor: on ft_sensor_controller/wrench in wrist_ft_link, with the
    # joint states; no payload simulated: its noise alone
    W = np.array([[m.wrench.force.x, m.wrench.force.y, m.wrench.force.z,
                   m.wrench.torque.x, m.wrench.torque.y, m.wrench.torque.z]
                  for _, m in msgs[WRENCH]])
    assert {m.header.frame_id for _, m in msgs[WRENCH]} == {"wrist_ft_link"}
    numbers["wrench_hz"] = rate = round(_rate([t for t, _ in msgs[WRENCH]]), 2)
    assert 45.0 <= rate <= 55.0, rate
    sd = np.r_[[cfg.noise.plate_force_n] * 3, [cfg.noise.plate_moment_nm] * 3]
    numbers["wrench_std"] = W.std(axis=0).round(4).tolist()
    assert np.all(np.abs(W.std(axis=0) / sd - 1.0) < 0.2), numbers
    assert np.all(np.abs(W.mean(axis=0)) < 0.2 * sd), W.mean(axis=0)

    # the mocap pose, published best effort (the bag's offered profiles say so)
    numbers["mocap_hz"] = rate = round(_rate([t for t, _ in msgs[POSE]]), 2)
    assert rate >= 50.0, rate
    with open(os.path.join(bag, "metadata.yaml")) as f:
        meta = yaml.safe_load(f)["rosbag2_bagfile_information"]
    offered = {t["topic_metadata"]["name"]: offered_qos(t["topic_metadata"])
               for t in meta["topics_with_message_count"]}
    assert {p["reliability"] for p in offered[POSE]} == {"best_effort"}, offered[POSE]
    print(f"PAL TIAGo profile: {numbers}")

"""The simulator impersonates PAL's TALOS drivers.

config/sim_talos.yaml publishes like config/robot_talos.yaml's ``pal_talos`` profile: the
recorder, given the SHIPPED robot config, records exactly the profile's topics, the joint
states carry every controlled joint with the effort in the drivers' own unit (the torque
divided by the simulator's hidden ``torque_per_effort``), the mocap pose is best effort.
"""
import os
import subprocess
import sys
import time

import numpy as np
import pinocchio as pin
import pytest
import rclpy
import yaml
from conftest import ROOT, ros_graph_environment, stop_processes
from rclpy.executors import SingleThreadedExecutor
from test_recorder_qos import _call, _received

from figaroh_ros.config.robot import load_robot_config
from figaroh_ros.io.bag_metadata import offered_qos
from figaroh_ros.io.bags import open_bag
from figaroh_ros.sim.truth import TrueRobot, load_sim_config
from figaroh_ros.srv import RecorderControl

pytestmark = pytest.mark.xdist_group("ros_graph_2")   # the second worker's graphs

SIM = os.path.join(ROOT, "config", "sim_talos.yaml")
ROBOT = os.path.join(ROOT, "config", "robot_talos.yaml")
JS, POSE = "sensor_msgs/msg/JointState", "geometry_msgs/msg/PoseStamped"


def test_the_sim_config_impersonates_the_shipped_profile():
    """Same controllers and driver section as the robot config; only the simulator's
    hidden gains are added."""
    sim, robot = load_sim_config(SIM), load_robot_config(ROBOT)
    raw = yaml.safe_load(open(ROBOT))
    assert sim.controllers == raw["controllers"]
    drop = {"joint_states": {"torque_per_effort"}}
    assert sim.driver.model_dump(exclude=drop) == robot.driver.model_dump(exclude=drop)
    assert sim.driver.profile == "pal_talos" and sim.driver.joint_states.effort == "unscaled"
    assert len(sim.driver.joint_states.torque_per_effort) == len(sim.joints)


@pytest.fixture()
def graph(tmp_path):
    """The simulator on sim_talos.yaml and the recorder on the shipped robot_talos.yaml, in
    a ROS domain of this test's own; (node, executor) of the test."""
    before = dict(os.environ)
    ros_graph_environment()
    env = dict(os.environ)
    logs = {n: open(tmp_path / f"{n}.log", "w") for n in ("sim", "recorder")}
    procs = []
    context = rclpy.Context()
    try:
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "figaroh_ros.ros.sim_robot", "--ros-args",
             "-p", f"config:={SIM}"], cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
            stderr=logs["sim"]))
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "figaroh_ros.ros.recorder", "--ros-args",
             "-p", f"config:={ROBOT}", "-p", f"bag_dir:={tmp_path / 'bags'}",
             "-p", "start_timeout:=15.0"], cwd=tmp_path, env=env,
            stdout=subprocess.DEVNULL, stderr=logs["recorder"]))
        rclpy.init(context=context)
        node = rclpy.create_node("talos_profile_test", context=context)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)
        yield node, executor
        node.destroy_node()
    finally:
        stop_processes(procs)
        if context.ok():
            rclpy.shutdown(context=context)
        for f in logs.values():
            f.close()
        os.environ.clear()
        os.environ.update(before)


def test_the_recorder_on_the_shipped_talos_profile_records_the_simulated_talos(graph):
    node, executor = graph
    cfg = load_sim_config(SIM)
    truth = TrueRobot(cfg)
    profile = load_robot_config(ROBOT).driver
    client = node.create_client(RecorderControl, "/figaroh/recorder/control")
    started = _call(node, executor, client, "start")
    # the driver's topics all publish (only the executor's marks have no publisher here)
    assert "/joint_states" not in started.message and "/mocap/pose" not in started.message, \
        started.message
    deadline, t0 = time.monotonic() + 15.0, time.monotonic()
    while (time.monotonic() - t0 < 2.0
           or min(_received(node, executor, client, t) for t in
                  ("/joint_states", "/mocap/pose")) < 100) \
            and time.monotonic() < deadline:
        t1 = time.monotonic()
        while time.monotonic() - t1 < 0.2:
            executor.spin_once(timeout_sec=0.01)
    _call(node, executor, client, "stop")
    bag = started.bag_path

    # the topics: exactly the profile's (and the model), none of the simulator's others
    with open(os.path.join(bag, "metadata.yaml")) as f:
        meta = yaml.safe_load(f)["rosbag2_bagfile_information"]
    entries = {t["topic_metadata"]["name"]: t for t in meta["topics_with_message_count"]}
    named = {"/" + m.topic.lstrip("/") for m in profile.recorded()} | {"/robot_description"}
    recorded = {t for t, e in entries.items() if e["message_count"] > 0}
    assert recorded == {"/joint_states", "/mocap/pose", "/robot_description"}, entries
    assert set(entries) <= named, sorted(entries)
    for other in ("/motor_currents", "/force_plate/wrench", "/tf"):
        assert other not in entries
    offered = offered_qos(entries["/mocap/pose"]["topic_metadata"])
    assert offered and offered[0]["reliability"] == "best_effort", offered

    reader = open_bag([bag], {"/joint_states": JS, "/mocap/pose": POSE})
    states, poses = [], []
    for c, _, raw in reader.messages():
        if c.topic in ("/joint_states", "/mocap/pose"):
            (states if c.topic == "/joint_states" else poses).append(
                reader.deserialize(raw, c.msgtype))
    reader.close()
    assert len(states) >= 100 and len(poses) >= 100, (len(states), len(poses))

    # every controlled joint of the shipped profile, in the joint states
    controlled = [j for js in yaml.safe_load(open(ROBOT))["controllers"].values() for j in js]
    assert all(list(m.name) == controlled for m in states), states[0].name
    q = np.mean([m.position for m in states], axis=0)
    assert np.allclose(q, 0.0, atol=1e-4), q            # the simulator starts at rest, q = 0
    effort = np.array([m.effort for m in states])

    # effort x the hidden gains = the true torques at rest, within the drive noise
    zero = np.zeros(len(controlled))
    tau = truth.joint_torques(q, zero, zero)[0]
    gains = np.asarray(cfg.driver.joint_states.torque_per_effort)
    sigma = float(cfg.noise.current_a)
    measured = effort * gains
    tol = 6.0 * sigma / np.sqrt(len(states))
    assert np.all(np.abs(measured.mean(axis=0) - tau) < tol), (measured.mean(axis=0), tau)
    assert np.allclose(measured.std(axis=0), sigma, rtol=0.3), measured.std(axis=0)
    # the test can fail: the effort read as a torque (a gain of 1) does not match
    assert np.max(np.abs(effort.mean(axis=0) - tau)) > 20 * tol, (effort.mean(axis=0), tau)

    # the mocap body: the hidden marker pose at rest, within the mocap noise
    T = truth.marker_pose(truth.chain_positions(cfg.joints, zero))
    p = np.mean([[m.pose.position.x, m.pose.position.y, m.pose.position.z] for m in poses],
                axis=0)
    assert np.linalg.norm(p - T.translation) < 1e-4, (p, T.translation)   # 0.1 mm noise
    o = poses[0].pose.orientation
    R = pin.Quaternion(o.w, o.x, o.y, o.z).toRotationMatrix()
    assert np.linalg.norm(pin.log3(R.T @ T.rotation)) < 5e-3

"""The recorder hears best-effort and latched publishers (ros/qos.py).

A RELIABLE subscription never matches a BEST_EFFORT publisher (vrpn_mocap, most sensor
drivers): before the recorder adapted its QoS it recorded 0 messages of such a topic.
"""
import contextlib
import os
import subprocess
import sys
import time

import pytest
import rclpy
import yaml
from conftest import ros_graph_environment
from geometry_msgs.msg import PoseStamped
from rclpy.duration import Duration
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import DurabilityPolicy as D, QoSProfile, ReliabilityPolicy as R
from std_msgs.msg import Header

from figaroh_ros.io.bag_metadata import offered_qos
from figaroh_ros.io.bags import open_bag
from figaroh_ros.ros.qos import bag_qos, subscription_qos
from figaroh_ros.srv import RecorderControl

pytestmark = pytest.mark.xdist_group("ros_graph")   # with the UR10 graphs (balances the groups)

POSE = "geometry_msgs/msg/PoseStamped"


@pytest.mark.parametrize("offered, reliability, durability", [
    ([], R.RELIABLE, D.VOLATILE),
    ([(R.RELIABLE, D.VOLATILE)], R.RELIABLE, D.VOLATILE),
    ([(R.BEST_EFFORT, D.VOLATILE)], R.BEST_EFFORT, D.VOLATILE),
    ([(R.RELIABLE, D.VOLATILE), (R.BEST_EFFORT, D.VOLATILE)], R.BEST_EFFORT, D.VOLATILE),
    ([(R.RELIABLE, D.TRANSIENT_LOCAL)], R.RELIABLE, D.TRANSIENT_LOCAL),
    ([(R.RELIABLE, D.TRANSIENT_LOCAL)] * 2, R.RELIABLE, D.TRANSIENT_LOCAL),
    ([(R.RELIABLE, D.TRANSIENT_LOCAL), (R.RELIABLE, D.VOLATILE)], R.RELIABLE, D.VOLATILE),
    ([(R.BEST_EFFORT, D.TRANSIENT_LOCAL)], R.BEST_EFFORT, D.VOLATILE),
])
def test_the_subscription_asks_no_more_than_every_publisher_offers(offered, reliability,
                                                                  durability):
    qos = subscription_qos(offered, 42)
    assert (qos.reliability, qos.durability, qos.depth) == (reliability, durability, 42)


def test_offered_profiles_convert_to_bag_metadata():
    q = bag_qos(QoSProfile(depth=7, reliability=R.BEST_EFFORT, durability=D.TRANSIENT_LOCAL))
    assert (q.depth, q.reliability.name, q.durability.name) == (7, "BEST_EFFORT",
                                                               "TRANSIENT_LOCAL")


@contextlib.contextmanager
def _recorder(tmp_path, parameters: list[str], name: str):
    """A ROS domain of this test's own: (node, executor), and the recorder in a child
    process started with ``parameters``."""
    before = dict(os.environ)
    ros_graph_environment()
    env = dict(os.environ)
    # bags go where the tests put them: a start's bag_path must be inside bag_dir
    args = [a for p in [f"bag_dir:={tmp_path}", *parameters] for a in ("-p", p)]
    recorder = subprocess.Popen(
        [sys.executable, "-m", "figaroh_ros.ros.recorder", "--ros-args", *args],
        cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node(name, context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    try:
        yield node, executor
    finally:
        recorder.terminate()
        recorder.wait(timeout=20)
        node.destroy_node()
        rclpy.shutdown(context=context)
        os.environ.clear()
        os.environ.update(before)


@pytest.fixture()
def ros(tmp_path):
    """The recorder recording a best-effort and a latched PoseStamped topic."""
    with _recorder(tmp_path, [f"topics:=['/mocap/pose:{POSE}', '/fixture/pose:{POSE}']",
                              "start_timeout:=5.0"], "recorder_qos_test") as graph:
        yield graph


def _call(node, executor, client, command, bag_path=""):
    assert client.wait_for_service(timeout_sec=20.0), "no recorder service"
    future = client.call_async(RecorderControl.Request(command=command, bag_path=bag_path))
    executor.spin_until_future_complete(future, timeout_sec=20.0)
    assert future.done() and future.result().success, future.result()
    return future.result()


def _received(node, executor, client, topic) -> int:
    status = _call(node, executor, client, "status")
    return dict(zip(status.topics, status.counts)).get(topic, 0)


def test_best_effort_and_latched_publishers_are_recorded(ros, tmp_path):
    node, executor = ros
    mocap = node.create_publisher(PoseStamped, "/mocap/pose", QoSProfile(
        depth=10, reliability=R.BEST_EFFORT))
    fixture = node.create_publisher(PoseStamped, "/fixture/pose", QoSProfile(
        depth=1, durability=D.TRANSIENT_LOCAL))
    fixture.publish(PoseStamped())                 # once, long before the bag starts
    node.create_timer(0.01, lambda: mocap.publish(PoseStamped()))        # 100 Hz
    client = node.create_client(RecorderControl, "/figaroh/recorder/control")
    bag = str(tmp_path / "bag")
    started = _call(node, executor, client, "start", bag)
    assert "no publisher" not in started.message, started.message
    deadline = time.monotonic() + 15.0          # a loaded machine publishes late
    while _received(node, executor, client, "/mocap/pose") < 50 \
            and time.monotonic() < deadline:
        t0 = time.monotonic()
        while time.monotonic() - t0 < 0.2:
            executor.spin_once(timeout_sec=0.01)
    _call(node, executor, client, "stop")
    reader = open_bag([bag], {"/mocap/pose": POSE, "/fixture/pose": POSE})
    counts = {c.topic: c.msgcount for c in reader.connections}
    reader.close()
    assert counts["/mocap/pose"] >= 50, counts               # 0 before the fix
    assert counts["/fixture/pose"] == 1, counts
    with open(os.path.join(bag, "metadata.yaml")) as f:
        meta = yaml.safe_load(f)["rosbag2_bagfile_information"]
    offered = {t["topic_metadata"]["name"]: offered_qos(t["topic_metadata"])
               for t in meta["topics_with_message_count"]}
    assert offered["/mocap/pose"][0]["reliability"] == "best_effort", offered
    assert offered["/fixture/pose"][0]["durability"] == "transient_local", offered


@pytest.fixture()
def driven(tmp_path):
    """The recorder started on a robot YAML whose driver section lists the topics: joint
    states required, a mocap pose forced best effort, an optional extra topic."""
    from conftest import ROOT
    robot = yaml.safe_load(open(os.path.join(ROOT, "config", "robot_ur10.yaml")))
    robot["driver"] = {
        "profile": "generic",
        "joint_states": {"topic": "/arm/joint_states"},
        "pose": {"topic": "/vrpn_mocap/tool/pose", "type": POSE,
                 "reliability": "best_effort"},
        "extra": [{"topic": "/camera/pose", "type": POSE, "required": False}]}
    config = tmp_path / "robot.yaml"
    config.write_text(yaml.safe_dump(robot))
    with _recorder(tmp_path, [f"config:={config}", "start_timeout:=3.0"],
                   "recorder_driver_test") as graph:
        yield graph


def test_the_driver_section_names_the_topics_and_a_silent_required_one_refuses_start(
        driven, tmp_path):
    """No publisher on the required joint states: start fails naming the topic and writes
    no bag.  Once the driver publishes (the pose best effort), start records both; the
    optional topic without publisher does not stop it."""
    from sensor_msgs.msg import JointState
    node, executor = driven
    client = node.create_client(RecorderControl, "/figaroh/recorder/control")
    assert client.wait_for_service(timeout_sec=20.0), "no recorder service"
    refused = tmp_path / "refused"
    future = client.call_async(RecorderControl.Request(command="start",
                                                       bag_path=str(refused)))
    executor.spin_until_future_complete(future, timeout_sec=30.0)
    res = future.result()
    assert not res.success and "/arm/joint_states" in res.message, res.message
    assert "/camera/pose" not in res.message.split("required topics")[-1].split("]")[0]
    assert not refused.exists()
    js = node.create_publisher(JointState, "/arm/joint_states", 10)
    pose = node.create_publisher(PoseStamped, "/vrpn_mocap/tool/pose",
                                 QoSProfile(depth=10, reliability=R.BEST_EFFORT))
    node.create_timer(0.01, lambda: (js.publish(JointState(name=["a"], position=[0.0])),
                                     pose.publish(PoseStamped())))
    bag = str(tmp_path / "bag")
    _call(node, executor, client, "start", bag)
    deadline = time.monotonic() + 15.0
    while min(_received(node, executor, client, t) for t in
              ("/arm/joint_states", "/vrpn_mocap/tool/pose")) < 30 \
            and time.monotonic() < deadline:
        t0 = time.monotonic()
        while time.monotonic() - t0 < 0.2:
            executor.spin_once(timeout_sec=0.01)
    _call(node, executor, client, "stop")
    reader = open_bag([bag], {"/arm/joint_states": "sensor_msgs/msg/JointState",
                              "/vrpn_mocap/tool/pose": POSE})
    counts = {c.topic: c.msgcount for c in reader.connections}
    reader.close()
    assert counts["/arm/joint_states"] >= 30 and counts["/vrpn_mocap/tool/pose"] >= 30, counts


def test_an_advertised_but_silent_required_topic_refuses_start(driven, tmp_path):
    """Publishers on every required topic, but the joint states' never publishes: start
    fails within start_timeout naming that topic (not the pose, which publishes), and no
    bag folder is left: a publisher alone does not let the start go on to an empty bag."""
    from sensor_msgs.msg import JointState
    node, executor = driven
    js = node.create_publisher(JointState, "/arm/joint_states", 10)      # advertised only
    pose = node.create_publisher(PoseStamped, "/vrpn_mocap/tool/pose",
                                 QoSProfile(depth=10, reliability=R.BEST_EFFORT))
    timer = node.create_timer(0.01, lambda: pose.publish(PoseStamped()))
    client = node.create_client(RecorderControl, "/figaroh/recorder/control")
    assert client.wait_for_service(timeout_sec=20.0), "no recorder service"
    refused = tmp_path / "bags" / "refused"
    future = client.call_async(RecorderControl.Request(command="start",
                                                       bag_path=str(refused)))
    executor.spin_until_future_complete(future, timeout_sec=30.0)
    res = future.result()
    assert not res.success and "no message on" in res.message, res.message
    named = res.message.split("required topics")[-1].split("]")[0]
    assert "/arm/joint_states" in named and "/vrpn_mocap/tool/pose" not in named, named
    assert not (tmp_path / "bags").exists()
    node.destroy_timer(timer)
    node.create_timer(0.01, lambda: (js.publish(JointState(name=["a"], position=[0.0])),
                                     pose.publish(PoseStamped())))
    started = _call(node, executor, client, "start", str(refused))     # the driver speaks
    assert started.bag_path == str(refused), started
    _call(node, executor, client, "stop")


def _recording_poses(node, executor, tmp_path):
    """A reliable /mocap/pose publisher of ``node`` (5000 kept), the recorder's client, and
    the bag it records into, once the recorder's subscription has matched."""
    mocap = node.create_publisher(PoseStamped, "/mocap/pose", QoSProfile(depth=5000))
    client = node.create_client(RecorderControl, "/figaroh/recorder/control")
    bag = str(tmp_path / "bag")
    _call(node, executor, client, "start", bag)
    deadline = time.monotonic() + 15.0
    while not node.get_subscriptions_info_by_topic("/mocap/pose") and \
            time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)                              # the recorder's subscription matched
    return mocap, client, bag


def _frame_ids(bag: str) -> list[str]:
    reader = open_bag([bag], {"/mocap/pose": POSE})
    try:
        return [reader.deserialize(raw, c.msgtype).header.frame_id
                for c, _, raw in reader.messages()]
    finally:
        reader.close()


def test_a_burst_published_just_before_stop_is_in_the_bag_whole(ros, tmp_path):
    """A recorder behind a fast topic (a loaded machine: 250 Hz joint states) still has
    messages queued when ``stop`` arrives: all of them are in the bag, none after it.
    Before the drain, the executor served the stop after one queued message per topic and
    the last hold window of an experiment lost its joint states."""
    node, executor = ros
    mocap, client, bag = _recording_poses(node, executor, tmp_path)
    for k in range(3000):
        mocap.publish(PoseStamped(header=Header(frame_id=str(k))))
    assert mocap.wait_for_all_acked(Duration(seconds=20)), "burst not delivered"
    _call(node, executor, client, "stop")
    mocap.publish(PoseStamped(header=Header(frame_id="after")))
    frames = _frame_ids(bag)
    assert frames == [str(k) for k in range(3000)], (len(frames), frames[-3:])


def test_what_was_measured_before_the_stop_and_arrives_after_it_is_in_the_bag(ros, tmp_path):
    """A recorder behind its robot (a loaded machine, a reliable sample's repair): the
    poses stamped in the 0.6 s before the stop reach it 0.3 s after the stop request.
    The stop waits for them (``ros/catch_up.py``): all are in the bag.  A stop that wrote
    only what had arrived could leave the last hold window of an experiment with no joint
    state in its bag."""
    node, executor = ros
    mocap, client, bag = _recording_poses(node, executor, tmp_path)
    clock = node.get_clock()

    def pose(k):
        return PoseStamped(header=Header(frame_id=str(k), stamp=clock.now().to_msg()))
    for k in range(100):                         # 1 s on time
        mocap.publish(pose(k))
        time.sleep(0.01)
    held = []
    for k in range(100, 160):                    # measured, not delivered yet
        held.append(pose(k))
        time.sleep(0.01)
    stop = client.call_async(RecorderControl.Request(command="stop"))
    time.sleep(0.3)
    for msg in held:
        mocap.publish(msg)
    for k in range(160, 200):                    # on time again, after the stop
        mocap.publish(pose(k))
        executor.spin_once(timeout_sec=0.01)
    executor.spin_until_future_complete(stop, timeout_sec=20.0)
    assert stop.done() and stop.result().success, stop.result()
    frames = _frame_ids(bag)
    assert frames[:160] == [str(k) for k in range(160)], (len(frames), frames[95:105])
    # the reply counts what the bag holds, the messages the stop waited for included
    with open(os.path.join(bag, "metadata.yaml")) as f:
        total = yaml.safe_load(f)["rosbag2_bagfile_information"]["message_count"]
    assert stop.result().message == f"wrote {total} messages into {bag}", (
        stop.result().message, total)


def test_a_required_topic_published_with_another_type_refuses_start(tmp_path):
    """The driver section says the wrist wrench is a WrenchStamped; the robot publishes a
    PoseStamped under that name (a driver profile that does not match the robot): start
    fails at once naming the topic and both types, and writes no bag (DDS never matches
    the two types: left to it, the start would wait the whole start_timeout to report "a
    publisher is there but sent nothing")."""
    from conftest import ROOT
    from sensor_msgs.msg import JointState
    robot = yaml.safe_load(open(os.path.join(ROOT, "config", "robot_ur10.yaml")))
    robot["driver"] = {"profile": "generic", "joint_states": {"topic": "/arm/joint_states"},
                       "wrench": {"topic": "/ft/wrench",
                                  "type": "geometry_msgs/msg/WrenchStamped"}}
    config = tmp_path / "robot.yaml"
    config.write_text(yaml.safe_dump(robot))
    with _recorder(tmp_path, [f"config:={config}", "start_timeout:=10.0"],
                   "recorder_type_test") as (node, executor):
        js = node.create_publisher(JointState, "/arm/joint_states", 10)
        wrong = node.create_publisher(PoseStamped, "/ft/wrench", 10)
        node.create_timer(0.01, lambda: (js.publish(JointState(name=["a"], position=[0.0])),
                                         wrong.publish(PoseStamped())))
        client = node.create_client(RecorderControl, "/figaroh/recorder/control")
        assert client.wait_for_service(timeout_sec=20.0), "no recorder service"
        refused = tmp_path / "bags" / "refused"
        t0 = time.monotonic()
        future = client.call_async(RecorderControl.Request(command="start",
                                                           bag_path=str(refused)))
        executor.spin_until_future_complete(future, timeout_sec=30.0)
        took = time.monotonic() - t0
        res = future.result()
    assert not res.success, res.message
    for words in ("/ft/wrench", "geometry_msgs/msg/WrenchStamped",
                  "geometry_msgs/msg/PoseStamped"):
        assert words in res.message, res.message
    assert "/arm/joint_states" not in res.message, res.message
    assert took < 10.0, f"refused after {took:.1f} s: the whole start_timeout"
    assert not (tmp_path / "bags").exists()

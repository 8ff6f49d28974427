"""An idle recorder costs nothing: it subscribes to the recorded
topics when a recording starts and destroys the subscriptions once the bag is closed.
Receiving every recorded topic all the time and dropping the messages while no bag is open
would cost a third of a core next to the simulated UR10.

The graph is asked which nodes subscribe to the recorded topics (discovery, no timing
assertion): none named recorder before a start, one during the recording, none after the
stop; the bag has every message published after the start returned up to the stop."""
import os
import time

import pytest
import yaml
from conftest import ROOT
from geometry_msgs.msg import PoseStamped
from rclpy.duration import Duration
from rclpy.qos import QoSProfile
from sensor_msgs.msg import JointState
from std_msgs.msg import Header
from test_recorder_qos import _call, _received, _recorder

from figaroh_ros.io.bags import open_bag
from figaroh_ros.srv import RecorderControl

pytestmark = pytest.mark.xdist_group("ros_graph")   # the first worker's graphs (balance)

JS, POSE = "/arm/joint_states", "/camera/pose"
TYPES = {JS: "sensor_msgs/msg/JointState", POSE: "geometry_msgs/msg/PoseStamped"}


def _recorder_subscribes(node, topic: str) -> bool:
    """Whether the recorder's process subscribes to ``topic``: the node itself (the latched
    robot_description) or its hidden node of polled subscriptions (the recorded topics,
    ``ros/polled.py``)."""
    return any(i.node_name in ("recorder", "_recorder_polled")
               for i in node.get_subscriptions_info_by_topic(topic))


def _spin_until(executor, done, seconds: float = 15.0) -> bool:
    """Spin the test node until ``done()`` (discovery news take a moment)."""
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() >= deadline:
            return False
        executor.spin_once(timeout_sec=0.05)
    return True


@pytest.fixture()
def driven(tmp_path):
    """The recorder on a driver section with required joint states and an optional pose
    nobody publishes yet."""
    robot = yaml.safe_load(open(os.path.join(ROOT, "config", "robot_ur10.yaml")))
    robot["driver"] = {"profile": "generic", "joint_states": {"topic": JS},
                       "extra": [{"topic": POSE, "type": TYPES[POSE], "required": False}]}
    config = tmp_path / "robot.yaml"
    config.write_text(yaml.safe_dump(robot))
    with _recorder(tmp_path, [f"config:={config}", "start_timeout:=10.0"],
                   "recorder_idle_test") as graph:
        yield graph


def _record(node, executor, client, bag: str, pose_during: bool):
    """One recording: joint states numbered in frame_id at 100 Hz from before the start;
    (``pose_during``) a pose publisher that appears during the recording.  The numbers
    published after the start returned and the last number published before the stop."""
    js = node.create_publisher(JointState, JS, QoSProfile(depth=5000))
    sent = [0]

    def tick():
        sent[0] += 1
        js.publish(JointState(header=Header(frame_id=str(sent[0])), name=["a"],
                              position=[0.0]))
    timer = node.create_timer(0.01, tick)
    started = _call(node, executor, client, "start", bag)
    assert started.bag_path == bag, started
    after_start = sent[0] + 1                   # published once the start had returned
    assert _spin_until(executor, lambda: _recorder_subscribes(node, JS)), \
        "the recording recorder does not subscribe to the joint states"
    pose = None
    if pose_during:
        pose = node.create_publisher(PoseStamped, POSE, 10)
        pose_timer = node.create_timer(0.02, lambda: pose.publish(PoseStamped()))
        assert _spin_until(executor, lambda: _received(node, executor, client, POSE) > 0), \
            "an optional topic's publisher that appeared during the recording is not recorded"
        node.destroy_timer(pose_timer)
    assert _spin_until(executor, lambda: sent[0] >= after_start + 50)
    node.destroy_timer(timer)
    assert js.wait_for_all_acked(Duration(seconds=20)), "joint states not delivered"
    _call(node, executor, client, "stop")
    node.destroy_publisher(js)
    if pose is not None:
        node.destroy_publisher(pose)
    return after_start, sent[0]


def _numbers(bag: str) -> tuple[list[int], dict[str, int]]:
    reader = open_bag([bag], TYPES)
    numbers = [int(reader.deserialize(raw, c.msgtype).header.frame_id)
               for c, _, raw in reader.messages() if c.topic == JS]
    counts = {c.topic: c.msgcount for c in reader.connections}
    reader.close()
    return numbers, counts


def test_an_idle_recorder_subscribes_to_no_recorded_topic(driven, tmp_path):
    node, executor = driven
    client = node.create_client(RecorderControl, "/figaroh/recorder/control")
    assert client.wait_for_service(timeout_sec=20.0), "no recorder service"
    # the recorder is discovered: its robot_description subscription, made before its
    # service, is seen (before, the recorded topics' subscriptions came before that too)
    assert _spin_until(executor, lambda: _recorder_subscribes(node, "/robot_description"))
    assert not _recorder_subscribes(node, JS) and not _recorder_subscribes(node, POSE)
    for k, pose_during in enumerate((True, False)):       # a second recording subscribes again
        bag = str(tmp_path / f"bag{k}")
        after_start, last = _record(node, executor, client, bag, pose_during)
        assert _spin_until(executor, lambda: not _recorder_subscribes(node, JS)
                           and not _recorder_subscribes(node, POSE)), \
            "the recorder still subscribes after stop"
        numbers, counts = _numbers(bag)
        assert numbers and numbers[0] <= after_start and numbers[-1] == last, \
            (after_start, last, numbers[:3], numbers[-3:])
        assert numbers == list(range(numbers[0], last + 1)), "joint states lost"
        assert (counts.get(POSE, 0) > 0) == pose_during, counts

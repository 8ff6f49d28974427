"""A publisher that appears after recording started: its QoS in the bag's metadata.

``ros2 bag record`` stores the QoS profiles it discovers for each topic, and ``ros2 bag
play`` offers them again.  A topic whose publisher appears once the bag is open (a mocap
system started late, an optional topic) must be recorded with that publisher's profile,
not with none: played back, a best-effort mocap stream is then best effort again.
"""
import os
import time

import pytest
import yaml
from geometry_msgs.msg import PoseStamped
from rclpy.qos import DurabilityPolicy as D, QoSProfile, ReliabilityPolicy as R
from rosbags.interfaces import (
    Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime
)
from std_msgs.msg import Header
from test_recorder_qos import _call, _received, _recorder

from figaroh_ros.io.bag_metadata import offered_qos
from figaroh_ros.io.bags import open_bag, typestore
from figaroh_ros.io.segmented_bag import SegmentedBagWriter

pytestmark = pytest.mark.xdist_group("ros_graph")

POSE = "geometry_msgs/msg/PoseStamped"


def _metadata_qos(bag: str) -> dict[str, list[dict]]:
    with open(os.path.join(bag, "metadata.yaml")) as f:
        meta = yaml.safe_load(f)["rosbag2_bagfile_information"]
    return {t["topic_metadata"]["name"]: offered_qos(t["topic_metadata"])
            for t in meta["topics_with_message_count"]}


def _frames(bag: str, topic: str) -> list[str]:
    reader = open_bag([bag], {topic: POSE})
    try:
        return [reader.deserialize(raw, c.msgtype).header.frame_id
                for c, _, raw in reader.messages() if c.topic == topic]
    finally:
        reader.close()


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_a_late_best_effort_and_a_late_latched_publisher_keep_their_qos(tmp_path, storage):
    """The bag opens with no publisher on either topic; then a best-effort mocap pose
    (100 Hz) and a latched fixture pose (one message) appear.  The metadata names
    best_effort and transient_local for them, and every message reads back (a reader
    matches a storage file's channels to the metadata by QoS)."""
    with _recorder(tmp_path, [f"topics:=['/mocap/pose:{POSE}', '/fixture/pose:{POSE}']",
                              "start_timeout:=5.0"], "recorder_late_qos_test") as (node, ex):
        from figaroh_ros.srv import RecorderControl
        client = node.create_client(RecorderControl, "/figaroh/recorder/control")
        bag = str(tmp_path / "bag")
        assert client.wait_for_service(timeout_sec=20.0), "no recorder service"
        future = client.call_async(RecorderControl.Request(command="start", bag_path=bag,
                                                           storage=storage))
        ex.spin_until_future_complete(future, timeout_sec=20.0)
        started = future.result()
        assert started.success and "no publisher yet on" in started.message, started
        mocap = node.create_publisher(PoseStamped, "/mocap/pose", QoSProfile(
            depth=10, reliability=R.BEST_EFFORT))
        fixture = node.create_publisher(PoseStamped, "/fixture/pose", QoSProfile(
            depth=1, durability=D.TRANSIENT_LOCAL))
        fixture.publish(PoseStamped(header=Header(frame_id="fixture")))
        sent = [0]

        def tick():
            sent[0] += 1
            mocap.publish(PoseStamped(header=Header(frame_id=str(sent[0]))))
        node.create_timer(0.01, tick)
        deadline = time.monotonic() + 20.0          # discovery on a loaded machine
        while (_received(node, ex, client, "/mocap/pose") < 50
               or _received(node, ex, client, "/fixture/pose") < 1) \
                and time.monotonic() < deadline:
            t0 = time.monotonic()
            while time.monotonic() - t0 < 0.2:
                ex.spin_once(timeout_sec=0.01)
        _call(node, ex, client, "stop")
    qos = _metadata_qos(bag)
    assert [(q["reliability"], q["durability"]) for q in qos["/mocap/pose"]] == [
        ("best_effort", "volatile")], qos
    assert [(q["reliability"], q["durability"]) for q in qos["/fixture/pose"]] == [
        ("reliable", "transient_local")], qos
    frames = _frames(bag, "/mocap/pose")
    assert len(frames) >= 50, len(frames)
    numbers = [int(f) for f in frames]                   # in publishing order, none twice
    assert numbers == sorted(set(numbers)), numbers[:20]
    assert _frames(bag, "/fixture/pose") == ["fixture"]


def _qos(reliability: int, durability: int, depth: int = 10) -> Qos:
    zero = QosTime(0, 0)
    return Qos(history=QosHistory(1), depth=depth, reliability=QosReliability(reliability),
               durability=QosDurability(durability), deadline=zero, lifespan=zero,
               liveliness=QosLiveliness(1), liveliness_lease_duration=zero,
               avoid_ros_namespace_conventions=False)


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_the_writer_takes_a_late_profile_until_the_topics_first_message(tmp_path, storage):
    """``offer``: recorded while the bag has no profile and no message of the topic, in
    every storage file after it; refused once fixed or once a message was written."""
    store = typestore()
    raw = bytes(store.serialize_cdr(store.types[POSE](
        header=store.types["std_msgs/msg/Header"](
            stamp=store.types["builtin_interfaces/msg/Time"](sec=1, nanosec=0),
            frame_id="x"),
        pose=store.types["geometry_msgs/msg/Pose"](
            position=store.types["geometry_msgs/msg/Point"](x=0.0, y=0.0, z=0.0),
            orientation=store.types["geometry_msgs/msg/Quaternion"](
                x=0.0, y=0.0, z=0.0, w=1.0))), POSE))
    bag = str(tmp_path / "bag")
    w = SegmentedBagWriter(bag, {"/late": POSE, "/early": POSE}, store, storage,
                           offered_qos={"/early": [_qos(1, 2)]})
    w.write("/early", 10, raw)
    assert not w.offer("/early", [_qos(2, 2)])           # fixed at the open
    assert not w.offer("/late", [])                      # nothing offered yet
    assert w.offer("/late", [_qos(2, 2, depth=5)])       # best effort, volatile
    assert not w.offer("/late", [_qos(1, 1)])            # fixed now
    w.write("/late", 20, raw)
    w.split()
    w.write("/late", 30, raw)
    w.close()
    qos = _metadata_qos(bag)
    assert [(q["reliability"], q["durability"], q["depth"]) for q in qos["/late"]] == [
        ("best_effort", "volatile", 5)], qos
    assert [q["reliability"] for q in qos["/early"]] == ["reliable"], qos
    reader = open_bag([bag], {"/late": POSE, "/early": POSE})
    try:
        times = sorted((c.topic, t) for c, t, _ in reader.messages())
    finally:
        reader.close()
    assert times == [("/early", 10), ("/late", 20), ("/late", 30)], times

    other = SegmentedBagWriter(str(tmp_path / "other"), {"/late": POSE}, store, storage)
    other.write("/late", 5, raw)                         # a message before any profile
    assert not other.offer("/late", [_qos(2, 2)])
    other.close()

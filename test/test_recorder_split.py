"""The recorder's ``split`` goes on in the next storage file of the SAME bag, like
``ros2 bag record``'s split request: it does not close the bag and open a new one
(``<bag>_1``), so an experiment split twice is one bag."""
import os
import time
from pathlib import Path

import pytest
import yaml
from geometry_msgs.msg import PoseStamped
from mcap_ros2.reader import read_ros2_messages
from rclpy.qos import QoSProfile
from rosbags.highlevel import AnyReader
from std_msgs.msg import Header
from test_recorder_qos import POSE, _call, _received, _recorder

from figaroh_ros.io.bags import typestore

pytestmark = pytest.mark.xdist_group("ros_graph_2")   # the second worker's graphs


def _publish(node, executor, client, pub, first: int, n: int) -> int:
    """Publish ``n`` poses numbered from ``first``; return once the recorder wrote them."""
    for k in range(first, first + n):
        pub.publish(PoseStamped(header=Header(frame_id=str(k))))
        time.sleep(0.002)
    deadline = time.monotonic() + 20.0          # a loaded machine delivers late
    while _received(node, executor, client, "/mocap/pose") < first + n \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    return first + n


def test_split_twice_is_one_bag_of_three_storage_files(tmp_path):
    with _recorder(tmp_path, [f"topics:=['/mocap/pose:{POSE}']", "start_timeout:=5.0"],
                   "recorder_split_test") as (node, executor):
        pub = node.create_publisher(PoseStamped, "/mocap/pose", QoSProfile(depth=5000))
        from figaroh_ros.srv import RecorderControl
        client = node.create_client(RecorderControl, "/figaroh/recorder/control")
        bag = str(tmp_path / "bag")
        _call(node, executor, client, "start", bag)
        deadline = time.monotonic() + 15.0
        while pub.get_subscription_count() < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)                             # the recorder's subscription matched
        k = _publish(node, executor, client, pub, 0, 200)
        replies = [_call(node, executor, client, "split")]
        k = _publish(node, executor, client, pub, k, 150)
        replies.append(_call(node, executor, client, "split"))
        k = _publish(node, executor, client, pub, k, 100)
        _call(node, executor, client, "stop")
    assert [r.bag_path for r in replies] == [bag, bag], replies
    assert sorted(os.listdir(tmp_path)) == ["bag"]                # one bag, no bag_1
    meta = yaml.safe_load(open(os.path.join(bag, "metadata.yaml")))[
        "rosbag2_bagfile_information"]
    files = meta["files"]
    assert meta["relative_file_paths"] == ["bag_0.mcap", "bag_1.mcap", "bag_2.mcap"]
    assert [f["path"] for f in files] == meta["relative_file_paths"]
    assert [f["message_count"] for f in files] == [200, 150, 100], files
    assert meta["message_count"] == k
    # every message once, in order: rosbags over the bag, mcap's reader file by file
    with AnyReader([Path(bag)], default_typestore=typestore()) as r:
        rows = [(t, r.deserialize(raw, c.msgtype).header.frame_id)
                for c, t, raw in r.messages()]
    assert [f for _, f in rows] == [str(i) for i in range(k)]
    by_file = []
    for f in files:
        got = [(m.log_time_ns, m.ros_msg.header.frame_id)
               for m in read_ros2_messages(os.path.join(bag, f["path"]))]
        start = f["starting_time"]["nanoseconds_since_epoch"]
        assert (got[0][0], got[-1][0]) == (start, start + f["duration"]["nanoseconds"])
        by_file += got
    assert by_file == rows
    assert meta["starting_time"]["nanoseconds_since_epoch"] == rows[0][0]
    assert meta["duration"]["nanoseconds"] == rows[-1][0] - rows[0][0]

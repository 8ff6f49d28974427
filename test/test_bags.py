"""Bags: the segmented writer (readable after a crash, standard multi-file rosbag2 layout)
and reading postures back."""
from pathlib import Path

import numpy as np
import pytest
from rosbags.highlevel import AnyReader

from figaroh_ros.errors import DataError
from figaroh_ros.io.bags import (
    read_bag_encoders, read_bag_postures, read_bag_samples_each, typestore
)
from figaroh_ros.io.segmented_bag import SegmentedBagWriter


def _joint_state(store, t_ns, q):
    JS = store.types["sensor_msgs/msg/JointState"]
    H = store.types["std_msgs/msg/Header"]
    T = store.types["builtin_interfaces/msg/Time"]
    msg = JS(header=H(stamp=T(sec=t_ns // 10**9, nanosec=t_ns % 10**9), frame_id=""),
             name=["a", "b"], position=np.array(q, float), velocity=np.zeros(0),
             effort=np.zeros(0))
    return store.serialize_cdr(msg, "sensor_msgs/msg/JointState")


def _pose(store, t_ns, xyz):
    P = store.types
    msg = P["geometry_msgs/msg/PoseStamped"](
        header=P["std_msgs/msg/Header"](stamp=P["builtin_interfaces/msg/Time"](
            sec=t_ns // 10**9, nanosec=t_ns % 10**9), frame_id="mocap"),
        pose=P["geometry_msgs/msg/Pose"](
            position=P["geometry_msgs/msg/Point"](x=xyz[0], y=xyz[1], z=xyz[2]),
            orientation=P["geometry_msgs/msg/Quaternion"](x=0.0, y=0.0, z=0.0, w=1.0)))
    return store.serialize_cdr(msg, "geometry_msgs/msg/PoseStamped")


def _event(store, t_ns, index, event):
    P = store.types
    msg = P["figaroh_ros/msg/PostureEvent"](
        header=P["std_msgs/msg/Header"](stamp=P["builtin_interfaces/msg/Time"](
            sec=t_ns // 10**9, nanosec=t_ns % 10**9), frame_id=""),
        index=index, event=event, joint_names=["a", "b"], positions=np.zeros(2), note="")
    return store.serialize_cdr(msg, "figaroh_ros/msg/PostureEvent")


TOPICS = {"/joint_states": "sensor_msgs/msg/JointState",
          "/mocap/pose": "geometry_msgs/msg/PoseStamped",
          "/figaroh/posture_events": "figaroh_ros/msg/PostureEvent"}


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_segments_make_one_readable_bag_even_without_close(tmp_path, storage):
    store = typestore()
    w = SegmentedBagWriter(str(tmp_path / "bag"), TOPICS, store, storage, 0.5)
    t0 = 10**18
    for k in range(250):                       # 2.5 s at 100 Hz
        w.write("/joint_states", t0 + k * 10**7, _joint_state(store, t0, [k, 0]))
    # "crash": never closed; the closed segments (2 s) are a complete bag
    with AnyReader([Path(tmp_path / "bag")], default_typestore=store) as r:
        n = sum(c.msgcount for c in r.connections)
        last = max(t for _, t, _ in r.messages())
    assert n == 200 and last == t0 + 199 * 10**7
    w.close()
    with AnyReader([Path(tmp_path / "bag")], default_typestore=store) as r:
        assert sum(c.msgcount for c in r.connections) == 250
        qs = [r.deserialize(raw, c.msgtype).position[0] for c, _, raw in r.messages()]
    assert qs == list(range(250))
    assert len(list((tmp_path / "bag").glob("bag_*"))) == 5


def test_postures_are_averaged_over_their_hold_windows(tmp_path):
    store = typestore()
    w = SegmentedBagWriter(str(tmp_path / "bag"), TOPICS, store, "mcap", 0.5)
    rng = np.random.default_rng(0)
    t = 10**18
    truth = [(np.array([0.1, 0.2]), np.array([1.0, 2.0, 3.0])),
             (np.array([-0.3, 0.5]), np.array([1.5, 2.5, 2.0]))]
    for i, (q, p) in enumerate(truth):
        t += 10**7
        w.write("/figaroh/posture_events", t, _event(store, t, i, 1))
        for k in range(50):
            t += 10**7
            w.write("/joint_states", t, _joint_state(store, t, q + rng.normal(0, 1e-4, 2)))
            w.write("/mocap/pose", t, _pose(store, t, p + rng.normal(0, 1e-4, 3)))
        t += 10**7
        w.write("/figaroh/posture_events", t, _event(store, t, i, 2))
        for k in range(20):                   # moving: outside any hold window
            t += 10**7
            w.write("/joint_states", t, _joint_state(store, t, [5.0, 5.0]))
    w.close()
    bp = read_bag_postures([str(tmp_path / "bag")], ["a", "b"], "/joint_states",
                           "/mocap/pose", "/figaroh/posture_events")
    assert bp.indices == [0, 1]
    for (q, p), qb, yb in zip(truth, bp.Q, bp.Y):
        assert np.abs(qb - q).max() < 1e-4 and np.abs(yb[:3] - p).max() < 1e-4
    with pytest.raises(DataError, match="no topic '/other'"):
        read_bag_postures([str(tmp_path / "bag")], ["a", "b"], "/joint_states", "/other",
                          "/figaroh/posture_events")
    with pytest.raises(DataError, match="joint 'c' missing"):
        read_bag_postures([str(tmp_path / "bag")], ["a", "c"], "/joint_states",
                          "/mocap/pose", "/figaroh/posture_events")


def test_a_bag_without_marks_gives_the_postures_where_the_joints_stay_still(tmp_path):
    """Recorded by another team's tool: no PostureEvent.  Three postures held 1 s each,
    reached by 1 s moves (with 1e-5 rad encoder noise); the stillness found from the joint
    states alone gives each posture's mean position and pose, the moves left out."""
    store = typestore()
    topics = {k: v for k, v in TOPICS.items() if k != "/figaroh/posture_events"}
    w = SegmentedBagWriter(str(tmp_path / "bag"), topics, store, "mcap", 0.0)
    rng = np.random.default_rng(1)
    targets = [np.array([0.0, 0.0]), np.array([0.4, -0.2]), np.array([-0.3, 0.6])]
    poses = [np.array([1.0, 0.0, 0.5]), np.array([1.2, 0.1, 0.6]), np.array([0.8, -0.2, 0.4])]
    t, q = 10**18, targets[0]
    for i, (target, p) in enumerate(zip(targets, poses)):
        for s in np.linspace(0.0, 1.0, 100) if i else []:          # a 1 s move at 100 Hz
            t += 10**7
            w.write("/joint_states", t, _joint_state(store, t, q + s * (target - q)))
        q = target
        for k in range(100):                                        # held 1 s
            t += 10**7
            w.write("/joint_states", t, _joint_state(store, t, q + rng.normal(0, 1e-5, 2)))
            w.write("/mocap/pose", t, _pose(store, t, p + rng.normal(0, 1e-4, 3)))
    w.close()
    bp = read_bag_postures([str(tmp_path / "bag")], ["a", "b"], "/joint_states",
                           "/mocap/pose", "")
    assert bp.indices == [0, 1, 2]
    assert np.abs(bp.Q - np.array(targets)).max() < 1e-4
    assert np.abs(bp.Y[:, :3] - np.array(poses)).max() < 1e-4
    with pytest.raises(DataError, match="set the events topic to ''"):
        read_bag_postures([str(tmp_path / "bag")], ["a", "b"], "/joint_states",
                          "/mocap/pose", "/figaroh/posture_events")


def test_a_posture_without_poses_refuses_the_bag_or_is_left_out(tmp_path):
    """Three holds, the middle one without a mocap pose (the marker occluded): refused by
    default; left out and listed with ``skip_unmeasured``; every posture without poses:
    refused either way."""
    store = typestore()
    w = SegmentedBagWriter(str(tmp_path / "bag"), TOPICS, store, "mcap", 0.5)
    t = 10**18
    for i in range(3):
        t += 10**7
        w.write("/figaroh/posture_events", t, _event(store, t, i, 1))
        for k in range(20):
            t += 10**7
            w.write("/joint_states", t, _joint_state(store, t, [0.1 * i, 0.0]))
            if i != 1 or k < 2:                      # two poses only: fewer than 3
                w.write("/mocap/pose", t, _pose(store, t, [1.0, 2.0, float(i)]))
        t += 10**7
        w.write("/figaroh/posture_events", t, _event(store, t, i, 2))
    w.close()
    args = ([str(tmp_path / "bag")], ["a", "b"], "/joint_states", "/mocap/pose",
            "/figaroh/posture_events")
    with pytest.raises(DataError, match=r"posture 1 of bag .*20 joint states and 2 poses"):
        read_bag_postures(*args)
    bp = read_bag_postures(*args, skip_unmeasured=True)
    assert bp.indices == [0, 2] and bp.samples == [20, 20] and len(bp.Q) == 2
    assert bp.dropped == [{"posture": 1, "joint_states": 20, "poses": 2}]
    assert np.allclose(bp.Y[:, 2], [0.0, 2.0]) and np.allclose(bp.Q[:, 0], [0.0, 0.2])
    with pytest.raises(DataError, match="no posture has 30 joint states"):
        read_bag_postures(*args, min_samples=30, skip_unmeasured=True)


def _state(store, t_ns, names, q, effort):
    JS = store.types["sensor_msgs/msg/JointState"]
    H = store.types["std_msgs/msg/Header"]
    T = store.types["builtin_interfaces/msg/Time"]
    msg = JS(header=H(stamp=T(sec=t_ns // 10**9, nanosec=t_ns % 10**9), frame_id=""),
             name=names, position=np.array(q, float), velocity=np.zeros(0),
             effort=np.array(effort, float))
    return store.serialize_cdr(msg, "sensor_msgs/msg/JointState")


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_every_message_of_every_topic_is_read_to_the_last(tmp_path, storage):
    """137 joint states and 137 samples of each of two torque topics at the same stamps,
    the marked window from the first to the last: every sample comes back, the last ones
    included, with its value; the motor and link encoders likewise (129 pairs)."""
    store = typestore()
    topics = {"/joint_states": "sensor_msgs/msg/JointState",
              "/currents": "sensor_msgs/msg/JointState",
              "/sensors": "sensor_msgs/msg/JointState",
              "/motor": "sensor_msgs/msg/JointState",
              "/figaroh/posture_events": "figaroh_ros/msg/PostureEvent"}
    w = SegmentedBagWriter(str(tmp_path / "bag"), topics, store, storage, 0.3)
    t0, n = 10**18, 137
    w.write("/figaroh/posture_events", t0, _event(store, t0, 0, 1))
    for k in range(n):
        t = t0 + k * 10**7
        w.write("/joint_states", t, _state(store, t, ["a", "b"], [k, -k], []))
        w.write("/currents", t, _state(store, t, ["b", "a"], [0, 0], [2.0 * k, k]))
        w.write("/sensors", t, _state(store, t, ["a", "b"], [0, 0], [0.5 * k, 3.0]))
        if k < 129:
            w.write("/motor", t, _state(store, t, ["a", "b"], [10.0 * k, 0.0], []))
    w.write("/figaroh/posture_events", t, _event(store, t, 0, 2))
    w.close()
    each = read_bag_samples_each([str(tmp_path / "bag")], ["a", "b"], "/joint_states",
                                 ["/currents", "/sensors"], "/figaroh/posture_events")
    k = np.arange(n)
    for topic, tau in (("/currents", np.column_stack([k, 2.0 * k])),
                       ("/sensors", np.column_stack([0.5 * k, np.full(n, 3.0)]))):
        t, q, e = each[topic]
        assert len(t) == n and t[-1] == pytest.approx(0.01 * (n - 1), abs=1e-9)
        assert q.tolist() == np.column_stack([k, -k]).tolist() and e.tolist() == tau.tolist()
    t, q_motor, q_link = read_bag_encoders([str(tmp_path / "bag")], ["a", "b"], "/motor",
                                           "/joint_states")
    assert len(t) == 129 and t[-1] == pytest.approx(1.28, abs=1e-9)
    assert q_motor[:, 0].tolist() == (10.0 * k[:129]).tolist()
    assert q_link[:, 0].tolist() == k[:129].tolist()


def test_a_hold_that_ends_the_bag_keeps_its_last_samples(tmp_path):
    """The last posture's HOLD_END written before the final joint state and pose, at their
    stamp: both are in the window (the bounds count), the exact count of poses reported."""
    store = typestore()
    w = SegmentedBagWriter(str(tmp_path / "bag"), TOPICS, store, "mcap", 0.5)
    t = 10**18
    for i in range(2):
        t += 10**7
        w.write("/figaroh/posture_events", t, _event(store, t, i, 1))
        for k in range(7):
            t += 10**7
            if k == 6:
                w.write("/figaroh/posture_events", t, _event(store, t, i, 2))
            w.write("/joint_states", t, _joint_state(store, t, [0.1 * i + (k == 6), 0.0]))
            w.write("/mocap/pose", t, _pose(store, t, [1.0, 2.0, float(i) + 7 * (k == 6)]))
    w.close()
    bp = read_bag_postures([str(tmp_path / "bag")], ["a", "b"], "/joint_states",
                           "/mocap/pose", "/figaroh/posture_events")
    assert bp.indices == [0, 1] and bp.samples == [7, 7]
    assert bp.Q[:, 0] == pytest.approx([1 / 7, 0.1 + 1 / 7], abs=1e-12)
    assert bp.Y[:, 2] == pytest.approx([1.0, 2.0], abs=1e-12)

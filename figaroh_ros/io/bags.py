"""rosbag2 bags (read with ``rosbags`` or the robot's ``rosbag2_py``: ``io/bag_backend.py``): types, and static postures from a bag.

No rclpy here: the offline command line reads bags on machines without ROS. A bag recorded
by our recorder during an experiment holds the joint states, the measurement topic (mocap
``PoseStamped``), the executor's ``figaroh_ros/msg/PostureEvent`` marks and the
``robot_description``.  Each posture is the average of its hold window (from HOLD_START to
HOLD_END of the same posture index), by the messages' header stamps.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin
from rosbags.typesys import Stores, get_types_from_msg, get_typestore

from figaroh_ros.calibration.rigid_fit import mean_rotation
from figaroh_ros.errors import ConfigError, DataError
from figaroh_ros.identification.signals import uniform_grid
from figaroh_ros.io.bag_backend import every_message, open_bag_reader
from figaroh_ros.io.bag_fields import (
    checked, decoded, header_or_received, joint_columns, joint_matrix, pose_of, stamp_ns, state_values,
    wrench_of
)
from figaroh_ros.io.bag_index import reader_paths
from figaroh_ros.io.share import share_directory
from figaroh_ros.io.stillness import still_windows

HOLD_START, HOLD_END = 1, 2


def mark_hold(windows: dict[int, list], msg, t: int) -> None:
    """Note the posture event ``msg`` at ``t`` in ``windows`` (posture index -> [start,
    end] of its hold)."""
    w = windows.setdefault(int(msg.index), [None, None])
    if msg.event == HOLD_START:
        w[0] = t
    elif msg.event == HOLD_END:
        w[1] = t


def complete_holds(windows: dict[int, list]) -> list[int]:
    """The postures of ``windows`` whose hold has both its start and its end, in order."""
    return sorted(i for i, (a, b) in windows.items() if a is not None and b is not None)


def _interface_dir() -> str | None:
    d = share_directory()
    return d if d is not None and os.path.isdir(os.path.join(d, "msg")) else None


def typestore():
    """A rosbags typestore with the Jazzy types plus ours (from msg/*.msg)."""
    store = get_typestore(Stores.ROS2_JAZZY)
    d = _interface_dir()
    if d is not None:
        types = {}
        for name in sorted(os.listdir(os.path.join(d, "msg"))):
            if name.endswith(".msg"):
                with open(os.path.join(d, "msg", name)) as f:
                    types.update(get_types_from_msg(f.read(), f"figaroh_ros/msg/{name[:-4]}"))
        store.register(types)
    return store


@dataclass
class BagPostures:
    Q: np.ndarray                  # N x n_chain, mean joint positions of each hold window
    Y: np.ndarray                  # N x 6: mean position, orientation as a rotation vector
    indices: list[int]             # posture numbers of the experiment
    samples: list[int]             # measurement messages averaged per posture
    robot_description: str | None
    dropped: list[dict] = field(default_factory=list)   # postures with too few messages


def open_bag(paths: list[str], wanted: dict[str, str]):
    """An open rosbags reader over the bags ``paths`` (folders with or without
    ``metadata.yaml``, or storage files: ``io/bag_index.py``) after checking that every
    topic of ``wanted`` (topic -> message type) is there with that type."""
    where = reader_paths(paths)       # a bag as published: no metadata.yaml needed
    try:
        reader = open_bag_reader(where, typestore())
    except ConfigError:
        raise
    except Exception as exc:
        raise DataError(f"cannot open bag {paths}: {exc}") from exc
    topics = {c.topic: c.msgtype for c in reader.connections}
    for topic, msgtype in wanted.items():
        problem = None
        if topic not in topics:
            problem = f"bag {paths} has no topic '{topic}' (topics: {sorted(topics)})"
        elif topics[topic] != msgtype:
            problem = f"topic '{topic}' of bag {paths} is {topics[topic]}, expected {msgtype}"
        if problem:
            reader.close()
            raise DataError(problem)
    return reader


def read_bag_postures(paths: list[str], joints: list[str], joint_topic: str,
                      pose_topic: str, events_topic: str, min_samples: int = 3,
                      skip_unmeasured: bool = False) -> BagPostures:
    """Static postures of the bags ``paths`` for the joints ``joints``: the hold windows
    the executor marked on ``events_topic``, or, with ``events_topic`` empty (a bag
    recorded without our executor), the stretches where the joints stay still
    (:func:`still_windows`).  A posture whose window holds fewer than ``min_samples``
    joint states or poses (a marker the cameras lost) refuses the bag, or with
    ``skip_unmeasured`` is left out and listed in ``dropped``."""

    wanted = {joint_topic: "sensor_msgs/msg/JointState",
              pose_topic: "geometry_msgs/msg/PoseStamped"}
    if events_topic:
        wanted[events_topic] = "figaroh_ros/msg/PostureEvent"
    try:
        reader = open_bag(paths, wanted)
    except DataError as exc:
        if events_topic and f"no topic '{events_topic}'" in str(exc):
            raise DataError(f"{exc}: a bag recorded without the executor's marks? set the "
                            "events topic to '' to take the stretches where the joints "
                            "stay still") from None
        raise
    try:
        conns = [c for c in reader.connections if c.topic in wanted
                 or c.topic == "/robot_description"]
        windows: dict[int, list] = {}
        joint_msgs, poses, description = [], [], None
        for conn, received, raw in every_message(reader, conns, paths):
            msg = decoded(reader, conn, raw, paths, received)
            # the robot's own stamps: a recorder that falls behind receives late and in
            # bursts, which would move samples out of their hold windows
            t = header_or_received(msg, received)
            if conn.topic == events_topic:
                mark_hold(windows, msg, t)
            elif conn.topic == joint_topic:
                joint_msgs.append((t, list(msg.name),
                                   state_values(msg, "position", joint_topic, paths, t)))
            elif conn.topic == pose_topic:
                poses.append((t, *pose_of(msg, pose_topic, paths, t)))
            else:
                description = msg.data
    finally:
        reader.close()
    if not events_topic:
        windows = dict(enumerate(still_windows(
            np.array([m[0] for m in joint_msgs], dtype=np.int64),
            joint_matrix(joint_msgs, joints, joint_topic, paths))))
    complete = complete_holds(windows)
    if not complete:
        raise DataError(f"bag {paths} holds no complete posture (HOLD_START..HOLD_END marks "
                        f"on '{events_topic}'; a bag recorded without the executor: set the "
                        "events topic to '' to take the stretches where the joints stay "
                        "still)" if events_topic else f"bag {paths}: the joints never stay "
                        f"still for {STILL_HOLD} s (speed <= {STILL_SPEED})")
    jt = np.array([m[0] for m in joint_msgs])
    pt = np.array([m[0] for m in poses])
    Q, Y, samples, kept, dropped = [], [], [], [], []
    for i in complete:
        a, b = windows[i]
        js = [m for m, t in zip(joint_msgs, jt) if a <= t <= b]
        ps = [m for m, t in zip(poses, pt) if a <= t <= b]
        if len(js) < min_samples or len(ps) < min_samples:
            if not skip_unmeasured:
                raise DataError(f"posture {i} of bag {paths}: {len(js)} joint states and "
                                f"{len(ps)} poses in its hold window (need {min_samples}; "
                                "bag.skip_unmeasured: true leaves such postures out)")
            dropped.append({"posture": i, "joint_states": len(js), "poses": len(ps)})
            continue
        q = np.zeros(len(joints))
        for k, name in enumerate(joints):
            vals = []
            for _, names, pos in js:
                if name not in names:
                    raise DataError(f"joint '{name}' missing from '{joint_topic}' in posture "
                                   f"{i} of bag {paths}")
                vals.append(pos[names.index(name)])
            q[k] = np.mean(checked(vals, f"positions of '{name}' in posture {i}",
                                    joint_topic, paths, a))
        R = mean_rotation([m[2] for m in ps])
        Q.append(q)
        Y.append(np.r_[np.mean([m[1] for m in ps], axis=0), pin.log3(R)])
        samples.append(len(ps))
        kept.append(i)
    if not Q:
        raise DataError(f"bag {paths}: no posture has {min_samples} joint states and poses "
                        f"in its hold window: {dropped}")
    return BagPostures(np.array(Q), np.array(Y), kept, samples, description, dropped)


class _Rows:
    """Stamped rows appended one message at a time into blocks of arrays: a long bag's
    samples without a Python object per message."""

    BLOCK = 65536

    def __init__(self):
        self.blocks, self.stamps, self.times, self.values, self.k = [], None, None, None, 0

    def append(self, stamp: int, t: int, row: np.ndarray) -> None:
        if self.values is None or self.k == self.BLOCK:
            self._flush()
            self.stamps, self.times = np.empty(self.BLOCK, np.int64), np.empty(self.BLOCK,
                                                                                np.int64)
            self.values = np.empty((self.BLOCK, len(row)))
        self.stamps[self.k], self.times[self.k], self.values[self.k] = stamp, t, row
        self.k += 1

    def _flush(self) -> None:
        if self.values is not None and self.k:
            self.blocks.append((self.stamps[:self.k], self.times[:self.k],
                                self.values[:self.k]))
        self.values, self.k = None, 0

    def arrays(self, width: int):
        """(stamps, times, values) with one row per stamp (the last message of a stamp
        repeated, as a later message replaces an earlier one), sorted by stamp."""
        self._flush()
        if not self.blocks:
            return np.empty(0, np.int64), np.empty(0, np.int64), np.empty((0, width))
        s, t, v = (np.concatenate(x) for x in zip(*self.blocks))
        self.blocks = []
        order = np.argsort(s, kind="stable")
        s = s[order]
        last = np.r_[s[1:] != s[:-1], True]
        return s[last], t[order[last]], v[order[last]]


def _ticker(progress, total: int):
    """``tick()`` called per message: a line to ``progress`` at most every second."""
    state = {"n": 0, "last": time.monotonic()}

    def tick():
        state["n"] += 1
        if progress is not None and state["n"] % 1000 == 0 \
                and time.monotonic() - state["last"] >= 1.0:
            state["last"] = time.monotonic()
            progress(f"bag: {state['n']} of {total} messages read")
    return tick


def _window(marks: list, paths, events_topic: str) -> tuple[int, int]:
    """First HOLD_START to last HOLD_END (ns) of the executor's marks."""
    starts = [t for t, e in marks if e == HOLD_START]
    ends = [t for t, e in marks if e == HOLD_END]
    if not starts or not ends:
        raise DataError(f"bag {paths}: no HOLD_START/HOLD_END marks on '{events_topic}'")
    return min(starts), max(ends)


def read_bag_samples(paths: list[str], joints: list[str], joint_topic: str,
                     torque_topic: str, events_topic: str | None = None,
                     wrench_topic: str | None = None, progress=None):
    """The samples of :func:`read_bag_recording` as recorded, before any resampling:
    (t [s from the first sample], q, tau or wrench).  ``progress(message)``: a line at
    most every second while the messages are read."""
    measured = wrench_topic or torque_topic
    return _read_samples(paths, joints, joint_topic, [measured], events_topic,
                         bool(wrench_topic), progress)[measured]


def read_bag_samples_each(paths: list[str], joints: list[str], joint_topic: str,
                          torque_topics: list[str], events_topic: str | None = None,
                          progress=None) -> dict[str, tuple]:
    """:func:`read_bag_samples` of each of several JointState topics measuring the joints'
    torques (an experiment's motor currents and sensor torques), in one pass over the
    bag: ``{topic: (t, q, tau)}``, each topic's samples paired with the joint states by
    stamp on its own."""
    return _read_samples(paths, joints, joint_topic, list(dict.fromkeys(torque_topics)),
                         events_topic, False, progress)


def _read_samples(paths, joints, joint_topic, measured: list[str], events_topic,
                  wrench: bool, progress) -> dict[str, tuple]:
    """One pass over the bag: the joint states, every ``measured`` topic (JointState
    efforts, or with ``wrench`` one WrenchStamped topic), the events; each measured topic
    paired with the joint states (:func:`_paired`)."""
    wanted = {topic: "geometry_msgs/msg/WrenchStamped" if wrench
              else "sensor_msgs/msg/JointState" for topic in measured}
    wanted[joint_topic] = "sensor_msgs/msg/JointState"
    if events_topic:
        wanted[events_topic] = "figaroh_ros/msg/PostureEvent"
    reader = open_bag(paths, wanted)
    try:
        conns = [c for c in reader.connections if c.topic in wanted]
        tick = _ticker(progress, sum(c.msgcount for c in conns))
        pos, eff, marks = _Rows(), {topic: _Rows() for topic in measured}, []
        for conn, received, raw in every_message(reader, conns, paths):
            tick()
            msg = decoded(reader, conn, raw, paths, received)
            # the robot's own stamps: a recorder that falls behind receives late and in
            # bursts, which would move samples out of their hold windows
            t = header_or_received(msg, received)
            if conn.topic == events_topic:
                marks.append((t, msg.event))
                continue
            stamp = stamp_ns(msg)
            if wrench and conn.topic in eff:
                eff[conn.topic].append(stamp, t, wrench_of(msg, conn.topic, paths, t))
                continue
            idx = joint_columns(msg, joints, conn.topic, paths)
            if conn.topic == joint_topic:
                pos.append(stamp, t, checked(state_values(msg, "position", joint_topic, paths,
                                                     t)[idx], f"positions of {joints}",
                                              joint_topic, paths, t))
            if conn.topic in eff:
                eff[conn.topic].append(stamp, t, checked(
                    state_values(msg, "effort", conn.topic, paths, t)[idx], f"efforts of {joints}",
                    conn.topic, paths, t))
    finally:
        reader.close()
    window = _window(marks, paths, events_topic) if events_topic else None
    positions = pos.arrays(len(joints))
    return {topic: _paired(positions, eff[topic].arrays(6 if wrench else len(joints)),
                           window, topic if wrench else None, paths)
            for topic in measured}


def _paired(positions, measured, window, wrench_topic, paths):
    """Joint states and one measured topic's samples at the same stamps (a wrench,
    another device's, interpolated at the joint states' stamps inside its time span),
    inside the marked ``window``: (t [s from the first sample], q, tau or wrench)."""
    ps, pt, Q = positions
    es, _, E = measured
    if wrench_topic:
        if len(es) < 2:
            raise DataError(f"bag {paths}: {len(es)} messages on '{wrench_topic}'")
        keep = (ps >= es[0]) & (ps <= es[-1])
        ps, pt, Q = ps[keep], pt[keep], Q[keep]
        T = np.column_stack([np.interp(ps - es[0], es - es[0], E[:, k]) for k in range(6)])
    else:
        ps, ip, ie = np.intersect1d(ps, es, assume_unique=True, return_indices=True)
        pt, Q, T = pt[ip], Q[ip], E[ie]
    if window is not None:
        keep = (pt >= window[0]) & (pt <= window[1])
        ps, Q, T = ps[keep], Q[keep], T[keep]
    if len(ps) < 100:
        raise DataError(f"bag {paths}: only {len(ps)} joint states with a "
                        f"{'wrench' if wrench_topic else 'torque'} sample at their stamp in "
                        "the window")
    return 1e-9 * (ps - ps[0]), Q, T


def read_bag_recording(paths: list[str], joints: list[str], joint_topic: str,
                       torque_topic: str, events_topic: str | None = None,
                       rate_hz: float | None = None, wrench_topic: str | None = None):
    """Joint positions and torques (the ``effort`` of ``torque_topic``, paired with the
    joint states by header stamp) over the marked window (first HOLD_START to last
    HOLD_END of ``events_topic``, if given), resampled onto a uniform time grid at
    ``rate_hz`` (default: the median rate) by linear interpolation, since filters and
    differentiation need constant sampling and real stamps jitter.
    With ``wrench_topic`` (a WrenchStamped topic, e.g. a force plate) its six components
    (force, then torque, in the sensor's frame) replace the torques: a plate and the
    joint encoders are different devices, so the wrench is interpolated at the joint
    states' stamps from its own, and only joint states inside the wrench's time span are
    kept.  Returns (t, q, tau or wrench) as arrays."""
    ts, Q, T = read_bag_samples(paths, joints, joint_topic, torque_topic, events_topic,
                                wrench_topic)
    grid, Qg, Tg, _ = uniform_grid(ts, Q, T, rate_hz=rate_hz)
    return grid, Qg, Tg


def read_bag_encoders(paths: list[str], joints: list[str], motor_topic: str,
                      link_topic: str):
    """Motor-side and link-side positions of ``joints`` (two JointState topics) paired by
    header stamp.  Returns (t [s, from the first pair], q_motor, q_link)."""
    wanted = {motor_topic: "sensor_msgs/msg/JointState",
              link_topic: "sensor_msgs/msg/JointState"}
    reader = open_bag(paths, wanted)
    side = {motor_topic: {}, link_topic: {}}
    try:
        conns = [c for c in reader.connections if c.topic in wanted]
        for conn, received, raw in every_message(reader, conns, paths):
            msg = decoded(reader, conn, raw, paths, received)
            t = stamp_ns(msg)
            side[conn.topic][t] = checked(
                state_values(msg, "position", conn.topic, paths, t)[
                    joint_columns(msg, joints, conn.topic, paths)],
                f"positions of {joints}", conn.topic, paths, t)
    finally:
        reader.close()
    stamps = sorted(set(side[motor_topic]) & set(side[link_topic]))
    if len(stamps) < 100:
        raise DataError(f"bag {paths}: only {len(stamps)} samples with both '{motor_topic}' "
                       f"and '{link_topic}'")
    t = (np.array(stamps) - stamps[0]) * 1e-9
    return (t, np.array([side[motor_topic][s] for s in stamps]),
            np.array([side[link_topic][s] for s in stamps]))


def read_bag_wrench_and_pose(paths: list[str], wrench_topic: str, pose_topic: str):
    """A WrenchStamped and a PoseStamped topic, each with its header stamps (s from the
    earliest): returns (t_wrench, wrench N x 6 [force, torque], t_pose, poses as N x 7
    [x y z qx qy qz qw])."""
    wanted = {wrench_topic: "geometry_msgs/msg/WrenchStamped",
              pose_topic: "geometry_msgs/msg/PoseStamped"}
    reader = open_bag(paths, wanted)
    tw, W, tp, P = [], [], [], []
    try:
        conns = [c for c in reader.connections if c.topic in wanted]
        for conn, received, raw in every_message(reader, conns, paths):
            msg = decoded(reader, conn, raw, paths, received)
            stamp = stamp_ns(msg)
            if conn.topic == wrench_topic:
                tw.append(stamp)
                W.append(wrench_of(msg, wrench_topic, paths, stamp))
            else:
                pose_of(msg, pose_topic, paths, stamp)
                p, o = msg.pose.position, msg.pose.orientation
                tp.append(stamp)
                P.append([p.x, p.y, p.z, o.x, o.y, o.z, o.w])
    finally:
        reader.close()
    if len(tw) < 100 or len(tp) < 100:
        raise DataError(f"bag {paths}: {len(tw)} wrenches on '{wrench_topic}' and {len(tp)} "
                       f"poses on '{pose_topic}': too few")
    t0 = min(tw[0], tp[0])
    return ((np.array(tw) - t0) * 1e-9, np.array(W), (np.array(tp) - t0) * 1e-9, np.array(P))


def measurement_frame_id(paths: list[str], topic: str) -> str:
    """The ``header.frame_id`` of the first PoseStamped on ``topic`` (the measurement
    frame: the mocap or camera driver's frame); DataError when absent or empty."""
    reader = open_bag(paths, {topic: "geometry_msgs/msg/PoseStamped"})
    try:
        conns = [c for c in reader.connections if c.topic == topic]
        for conn, received, raw in every_message(reader, conns, paths):
            frame = decoded(reader, conn, raw, paths, received).header.frame_id
            if frame:
                return frame
            break
    finally:
        reader.close()
    raise DataError(f"bag {paths}: no frame_id on the measurements of '{topic}'")

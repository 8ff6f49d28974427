"""The fields of recorded messages as checked arrays: header stamps, a JointState's
per-joint values found by name, poses and wrenches, each value finite and of a sane
magnitude, else a :class:`DataError` naming the topic, the message's time and the bag.
No rclpy here."""
from __future__ import annotations

import numpy as np
import pinocchio as pin

from figaroh_ros.errors import DataError

MAX_MAGNITUDE = 1e6            # |value| of a joint state, wrench or pose component
QUATERNION_TOLERANCE = 0.1     # |norm - 1| of a recorded orientation


def stamp_ns(msg) -> int:
    """The header stamp of ``msg`` in integer nanoseconds."""
    return int(msg.header.stamp.sec) * 10**9 + int(msg.header.stamp.nanosec)


def header_or_received(msg, received: int) -> int:
    """The header stamp of ``msg`` (ns), or the time the recorder received it when the
    message has no header or a zero stamp."""
    header = getattr(msg, "header", None)
    return stamp_ns(msg) if header is not None and (header.stamp.sec or header.stamp.nanosec) \
        else received


def decoded(reader, conn, raw, paths, t: int):
    """The message ``raw`` of ``conn`` deserialised; a DataError naming the topic, the time
    and the bag when its bytes are not of the type the bag declares (rosbags'
    ``AnyReaderError`` and struct errors otherwise)."""
    try:
        return reader.deserialize(raw, conn.msgtype)
    except Exception as exc:
        raise DataError(f"{message_at(conn.topic, paths, t)}: not a {conn.msgtype} "
                        f"({exc})") from None


def message_at(topic: str, paths, t: int) -> str:
    return f"'{topic}' message at {t * 1e-9:.3f} s in bag {paths}"


def state_values(msg, field: str, topic: str, paths, t: int) -> np.ndarray:
    """The ``field`` (position, velocity, effort) of a JointState: one value per name."""
    values = np.asarray(getattr(msg, field), float)
    if len(values) != len(msg.name):
        raise DataError(f"{message_at(topic, paths, t)}: {len(msg.name)} joint names but "
                        f"{len(values)} {field} values")
    return values


def checked(values: np.ndarray, what: str, topic: str, paths, t: int) -> np.ndarray:
    """``values`` if finite and of magnitude <= MAX_MAGNITUDE, else a :class:`DataError`."""
    values = np.asarray(values, float)
    with np.errstate(invalid="ignore"):
        bad = ~(np.abs(values) <= MAX_MAGNITUDE)
    if bad.any():
        raise DataError(f"{message_at(topic, paths, t)}: {what} {values.tolist()} (expected "
                        f"finite values of magnitude <= {MAX_MAGNITUDE:g})")
    return values


def pose_of(msg, topic: str, paths, t: int) -> tuple[np.ndarray, np.ndarray]:
    """(position, rotation matrix) of a PoseStamped whose orientation is a unit
    quaternion (a zero quaternion is an unset orientation, not a rotation)."""
    p, o = msg.pose.position, msg.pose.orientation
    xyz = checked([p.x, p.y, p.z], "position", topic, paths, t)
    q = checked([o.x, o.y, o.z, o.w], "orientation", topic, paths, t)
    norm = float(np.linalg.norm(q))
    if abs(norm - 1) > QUATERNION_TOLERANCE:
        raise DataError(f"{message_at(topic, paths, t)}: quaternion (x, y, z, w) = {q.tolist()} "
                        f"has norm {norm:.3g}, expected 1")
    return xyz, pin.Quaternion(q[3], q[0], q[1], q[2]).normalized().matrix()


def wrench_of(msg, topic: str, paths, t: int) -> np.ndarray:
    f, m = msg.wrench.force, msg.wrench.torque
    return checked([f.x, f.y, f.z, m.x, m.y, m.z], "wrench", topic, paths, t)


def joint_columns(msg, joints: list[str], topic: str, paths) -> list[int]:
    """Where each of ``joints`` sits in the JointState ``msg`` (DataError if absent)."""
    names = list(msg.name)
    missing = [j for j in joints if j not in names]
    if missing:
        raise DataError(f"joints {missing} missing from '{topic}' in bag {paths} (its "
                        f"messages name {names}; data.joint_map maps a recorded name to "
                        "the model's)")
    twice = sorted({j for j in joints if names.count(j) > 1})
    if twice:
        raise DataError(f"joints {twice} named twice in a '{topic}' message of bag "
                        f"{paths} ({names})")
    return [names.index(j) for j in joints]


def joint_matrix(joint_msgs, joints: list[str], topic: str, paths) -> np.ndarray:
    """The positions of ``joints`` in every joint state message (N x n)."""
    Q = np.empty((len(joint_msgs), len(joints)))
    for r, (_, names, pos) in enumerate(joint_msgs):
        missing = [j for j in joints if j not in names]
        if missing:
            raise DataError(f"joints {missing} missing from '{topic}' in bag {paths}")
        Q[r] = [pos[names.index(j)] for j in joints]
    return Q

"""What a node refuses from a subscribed topic before it turns a message into numbers.

A driver with a bug, a replayed bag of another robot or a hostile publisher can send NaN,
arrays whose lengths do not match the joint names, stamps that go back, or sizes far beyond
any robot.  A node's message -> numpy conversion asks :func:`problem` first; a message with
a problem is dropped, and :class:`Refusals` logs why, naming the topic, at most once per
``THROTTLE_S`` s for each topic and reason (a 500 Hz stream of bad messages does not flood
the log).
"""
from __future__ import annotations

import math
import re
import time

MAX_JOINTS = 1000        # more names than any robot has joints: refused unread
MAX_ABS = 1e9            # |value| beyond this (rad, m, N, N.m, s): not a measurement
THROTTLE_S = 5.0
QUATERNION_TOL = 0.01    # |norm - 1| tf2 accepts (it normalises what it keeps)


def _bad_numbers(name: str, values) -> str | None:
    for v in values:
        if not math.isfinite(v) or abs(v) > MAX_ABS:
            return f"{name} holds {v!r}"
    return None


def joint_state_problem(msg) -> str | None:
    """Why a ``sensor_msgs/JointState`` cannot be used, or None: more than ``MAX_JOINTS``
    names, names repeated, a filled position/velocity/effort array whose length is not the
    names', a value not finite or beyond ``MAX_ABS``."""
    n = len(msg.name)
    if n > MAX_JOINTS:
        return f"{n} joint names (more than {MAX_JOINTS})"
    if len(set(msg.name)) != n:
        return "a joint name repeated"
    for field in ("position", "velocity", "effort"):
        values = getattr(msg, field)
        if len(values) not in (0, n):
            return f"{len(values)} {field} values for {n} joint names"
        if why := _bad_numbers(field, values):
            return why
    return None


def _xyz(v) -> tuple[float, float, float]:
    return v.x, v.y, v.z


def pose_problem(msg) -> str | None:
    """Why a ``geometry_msgs/PoseStamped`` cannot be used: a coordinate not finite, or a
    quaternion whose norm is not 1 within ``QUATERNION_TOL`` (NaN, zero, unnormalised)."""
    return _bad_numbers("position", _xyz(msg.pose.position)) or \
        _quaternion_problem(msg.pose.orientation)


def _quaternion_problem(q) -> str | None:
    norm = math.sqrt(q.x * q.x + q.y * q.y + q.z * q.z + q.w * q.w)
    if not abs(norm - 1.0) <= QUATERNION_TOL:     # NaN compares false
        return f"quaternion of norm {norm!r}"
    return None


def transform_problem(tr) -> str | None:
    """Why a ``geometry_msgs/Transform`` (a TF edge) cannot be used: a translation not
    finite or beyond ``MAX_ABS``, a rotation quaternion of norm off 1 (tf2's rule)."""
    return _bad_numbers("translation", _xyz(tr.translation)) or \
        _quaternion_problem(tr.rotation)


def wrench_problem(msg) -> str | None:
    """Why a ``geometry_msgs/WrenchStamped`` cannot be used: a component not finite or
    beyond ``MAX_ABS``."""
    w = msg.wrench
    return _bad_numbers("force", _xyz(w.force)) or _bad_numbers("torque", _xyz(w.torque))


CHECKS = {"JointState": joint_state_problem, "PoseStamped": pose_problem,
          "WrenchStamped": wrench_problem}


def problem(msg) -> str | None:
    """:data:`CHECKS`' verdict on ``msg`` by its type's name (None for other types)."""
    check = CHECKS.get(type(msg).__name__)
    return None if check is None else check(msg)


class Refusals:
    """Drops logged by a node: ``refuse(topic, why)`` warns ``"<topic>: <why>: dropped"``
    (or what ``done`` says)
    at most once per ``THROTTLE_S`` s for each topic and kind of reason (its words without
    its numbers: one bad stream does not hide another kind's first line); ``count``: drops
    per topic."""

    def __init__(self, logger):
        self.logger, self.count, self.last = logger, {}, {}

    def refuse(self, topic: str, why: str, done: str = "dropped") -> None:
        self.count[topic] = self.count.get(topic, 0) + 1
        key = (topic, re.sub(r"\d+", "#", why.split(" holds ")[0].split(" of norm ")[0]))
        now = time.monotonic()
        if now - self.last.get(key, -math.inf) >= THROTTLE_S:
            self.last[key] = now
            self.logger.warning(f"{topic}: {why}: {done}")

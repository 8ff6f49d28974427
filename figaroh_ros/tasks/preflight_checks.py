"""The live checks of a pre-flight, from what a node measured.

Before anything moves, the Preflight action (``ros/preflight_action.py``) gathers from the
graph: whether each controller's action server answers, the arrival times of every topic
the robot's driver section names, the QoS its publishers offer, and the model.  These
functions turn them into :class:`figaroh_ros.tasks.gate.Check` entries with their numbers;
the identifiability of the planned postures comes from ``tasks.preflight``.  No rclpy here.

Rates: ``n`` messages arriving over a window give ``(n - 1) / (t_last - t_first)`` Hz (the
joint states' stamps of a stream that went back: over at least the time its messages took
to arrive, so that the few stamps it kept make no rate); a topic passes when it has a
message and, where the driver states a rate, reaches at least ``RATE_FRACTION`` of it.  QoS: a subscription asking for reliable delivery hears no
best-effort publisher, one asking for transient local hears no volatile publisher (the
DDS request-offer rule); ``auto`` adapts to the publishers and always matches.

Frames: the ``frame`` of a driver topic's readings must be a link of the robot's model or
reach one through the transforms heard on ``/tf`` and ``/tf_static`` (a sensor frame the
robot does not know cannot be used); a mocap or camera frame, which the calibration itself
estimates, may be unconnected (its check is optional).

Clock: a bag's holds are cut by marks stamped on this computer's clock, the joint states
by the robot's stamps; the two clocks must agree within ``clock_tolerance``.
"""
from __future__ import annotations

from collections import deque

import numpy as np

from figaroh_ros.tasks.gate import Check

RATE_FRACTION = 0.8


def measured_rate(arrivals: list[float], over: float = 0.0) -> float:
    """Hz from arrival times (s) over their span, or ``over`` s when that is longer (a
    burst of a few messages in a long window is not the window's rate); 0 with fewer than
    two messages."""
    t = np.sort(np.asarray(arrivals, float))
    if len(t) < 2 or not t[-1] > t[0]:
        return 0.0
    return float((len(t) - 1) / max(t[-1] - t[0], over))


def rate_check(topic: str, arrivals: list[float], window: float,
               expected_hz: float | None, required: bool = True, over: float = 0.0) -> Check:
    """The rate of ``arrivals`` heard over ``window`` s (``measured_rate`` over at least
    ``over`` s) against ``expected_hz``."""
    rate = measured_rate(arrivals, over)
    n = len(arrivals)
    if expected_hz:
        passed = n > 0 and rate >= RATE_FRACTION * expected_hz
        detail = (f"{n} messages in {window:.1f} s: {rate:.1f} Hz (driver: {expected_hz:g} Hz, "
                  f"at least {RATE_FRACTION * expected_hz:.1f})")
    else:
        passed = n > 0
        detail = f"{n} messages in {window:.1f} s: {rate:.1f} Hz"
    if not passed and not required:
        return Check(f"topic:{topic}", True, rate, None, detail + "; optional")
    return Check(f"topic:{topic}", passed, rate, expected_hz, detail)


def qos_check(topic: str, reliability: str, durability: str,
              offered: list[tuple[str, str]]) -> Check:
    """``reliability``/``durability`` asked by our subscription (``auto`` or a policy
    name); ``offered``: each publisher's (reliability, durability) as lower-case names."""
    bad = []
    for r, d in offered:
        if reliability == "reliable" and r == "best_effort":
            bad.append("reliable asked, best_effort offered")
        if durability == "transient_local" and d == "volatile":
            bad.append("transient_local asked, volatile offered")
    detail = (f"{len(offered)} publishers offering "
              f"{sorted(set(offered)) if offered else 'nothing'}; subscription "
              f"{reliability}/{durability}")
    return Check(f"qos:{topic}", not bad, float(len(offered)), None,
                 detail + (f": {'; '.join(sorted(set(bad)))}" if bad else ""))


def clock_check(topic: str, delays: list[float], tolerance: float) -> Check:
    """The robot's clock against this computer's, from ``delays``: each joint state's
    arrival (this computer's ROS clock, s) less its stamp.  The least delay is the fastest
    delivery plus the clocks' difference: beyond ``tolerance`` s either way (a negative
    delay: the robot's clock is ahead) the holds, cut in the bag on this computer's clock,
    would hold the wrong samples.  Unstamped states (stamp 0) are not judged."""
    stamped = [d for d in delays if np.isfinite(d)]
    if not stamped:
        return Check(f"clock:{topic}", True, None, tolerance,
                     f"no stamped message of {len(delays)}: not checked")
    least = float(min(stamped))
    passed = abs(least) <= tolerance
    side = "ahead of" if least < 0 else "behind"
    detail = (f"stamps {abs(least):.3f} s {side} this computer's clock at the fastest of "
              f"{len(stamped)} deliveries (clock_tolerance {tolerance:g} s)")
    if not passed:
        detail += ": synchronise the robot's clock (chrony, NTP) or raise clock_tolerance"
    return Check(f"clock:{topic}", passed, least, tolerance, detail)


def controller_check(name: str, answered: bool, joints: list[str], timeout: float) -> Check:
    return Check(f"controller:{name}", answered, None, None,
                 f"{name}/follow_joint_trajectory " + (
                     f"answers; joints {joints}" if answered else
                     f"did not answer within {timeout:g} s"))


def identifiability_summary(ident) -> dict:
    """Rank, parameter count and condition number of a postures' Identifiability."""
    return {"rank": len(ident.identified), "parameters": len(ident.structural),
            "condition_number": float(ident.condition_number)}


def frame_path(frame: str, links: set[str], edges: set[tuple[str, str]]) -> list[str] | None:
    """The frames from ``frame`` to the first model link reached through the TF edges
    ``(parent, child)`` (either direction); None when no link is reached."""
    near: dict[str, set[str]] = {}
    for a, b in edges:
        near.setdefault(a, set()).add(b)
        near.setdefault(b, set()).add(a)
    came, todo = {frame: None}, deque([frame])
    while todo:
        f = todo.popleft()
        if f in links:
            path = [f]
            while came[path[-1]] is not None:
                path.append(came[path[-1]])
            return path[::-1]
        for g in sorted(near.get(f, ())):
            if g not in came:
                came[g] = f
                todo.append(g)
    return None


def frame_check(topic: str, frame: str, links: set[str], edges: set[tuple[str, str]],
                required: bool) -> Check:
    """Whether the readings' ``frame`` of ``topic`` is tied to the robot's model through
    the TF ``edges`` heard (:func:`tf_check`'s verdict)."""
    return tf_check(topic, frame, frame_path(frame.lstrip("/"), links, edges), required,
                    f"{len(edges)} transforms heard")


def tf_check(topic: str, frame: str, path: list[str] | None, required: bool,
             tried: str) -> Check:
    """Whether the readings' ``frame`` of ``topic`` is tied to the robot's model: ``path``
    the frames from it to the model link a TF lookup reached (``[frame]``: a link itself;
    None: no lookup succeeded, ``tried`` saying how).  A required frame (a wrench's) must
    be tied, an optional one (mocap, estimated by the calibration) may not be."""
    if path is not None:
        how = "a link of the model" if len(path) == 1 else "TF " + " -> ".join(path)
        return Check(f"tf:{frame}", True, float(len(path) - 1), None, f"{topic}: {how}")
    detail = (f"{topic}: frame {frame!r} is no link of the model and no TF lookup "
              f"connects it to one ({tried})")
    if not required:
        return Check(f"tf:{frame}", True, None, None,
                     detail + "; estimated by the calibration")
    return Check(f"tf:{frame}", False, None, None, detail)


def model_check(provenance, joints: set[str], needed: dict[str, list[str]]) -> Check:
    """The model experiments are checked and played against: held (``provenance`` of the
    resolved model, None when none was received) and holding every joint ``needed`` by
    each of its users (the controllers, a config)."""
    if provenance is None:
        return Check("model", False, None, None, "no model: the robot description was not "
                     "received")
    where = f"{provenance.source} {provenance.location} (sha256 {provenance.sha256[:12]})"
    missing = {who: [j for j in js if j not in joints] for who, js in needed.items()}
    missing = {who: js for who, js in missing.items() if js}
    if missing:
        return Check("model", False, sum(map(len, missing.values())), 0, f"{where} lacks "
                     + "; ".join(f"the joints {js} of {who}" for who, js in missing.items()))
    return Check("model", True, None, None, where)

"""What a bag holds, for ``figaroh-ros bag info``: its storage, topics, types, message
counts, rates and gaps, and for every ``sensor_msgs/msg/JointState`` topic its joint
names (and whether their order changes), where its header stamps start, which joints
move, and what its efforts look like.

Whether efforts are joint torques or motor currents is a heuristic, stated here and in
the output:

* without a model: a topic whose name says ``current`` holds currents; otherwise the
  efforts are taken as what ``sensor_msgs/msg/JointState`` defines (N.m or N), unchecked;
* with a model (``figaroh-ros bag info BAG --config CONFIG``): on a recording of an arm,
  gravity loads the joints that carry links; the recorded effort of each joint whose
  model gravity torque ``g_j(q)`` varies over the recording by more than ``GRAVITY_SPAN``
  N.m and by ``GRAVITY_SHARE`` of the most loaded joint's span (where a light body the
  model describes wrongly, a hand or a payload, matters least) is fitted as
  ``k_j g_j + c_j``.  Gains ``k_j`` within ``TORQUE_GAINS`` with
  a correlation of at least ``MIN_CORRELATION`` on every such joint look like joint
  torques; other gains (a torque constant times a gear ratio is rarely 1) look like
  currents or a scaled effort, and the gains are shown.  Fast motions add inertial
  torques: the correlation says how much of the effort gravity explains.

No rclpy here.
"""
from __future__ import annotations

import datetime
import os
from array import array

import numpy as np
import pinocchio as pin

from figaroh_ros.errors import DataError
from figaroh_ros.io.bag_backend import every_message, open_bag_reader
from figaroh_ros.io.bag_index import locate
from figaroh_ros.io.bags import typestore

JS = "sensor_msgs/msg/JointState"
GAP_FACTOR = 5.0            # a step longer than 5 median steps is a gap (data.max_gap)
WALL_TIME_NS = 10**18       # stamps after 2001-09-09 are wall time
STILL_RANGE = 1e-6          # rad or m: a joint whose position spans less does not move
GRAVITY_SPAN = 1.0          # N.m: joints whose gravity torque varies more are compared,
GRAVITY_SHARE = 0.25        # ... and by at least this share of the most loaded joint's
TORQUE_GAINS = (0.7, 1.4)   # effort / gravity torque of joint torques
MIN_CORRELATION = 0.8


def _stamp(msg) -> int | None:
    h = getattr(msg, "header", None)
    return None if h is None else int(h.stamp.sec) * 10**9 + int(h.stamp.nanosec)


def _when(t_ns: int) -> str:
    if t_ns >= WALL_TIME_NS:
        return datetime.datetime.fromtimestamp(t_ns * 1e-9, datetime.timezone.utc) \
            .isoformat(timespec="milliseconds")
    return f"{t_ns * 1e-9:.6f} s (not wall time)"


def _timing(times: list[int]) -> dict:
    """Rate (median step), steps and gaps of one topic's receive times."""
    t = np.frombuffer(times, np.int64) if isinstance(times, array) else \
        np.asarray(times, np.int64)
    out = {"count": len(t)}
    if len(t) < 2:
        return out
    dt = np.diff(t) * 1e-9
    med = float(np.median(dt))
    out["rate_hz"] = round(1.0 / med, 3) if med > 0 else None
    out["step_s"] = {"min": round(float(dt.min()), 6), "median": round(med, 6),
                     "max": round(float(dt.max()), 6)}
    gaps = np.flatnonzero(dt > GAP_FACTOR * med) if med > 0 else np.empty(0, int)
    out["gaps"] = {"count": int(gaps.size), "longer_than_s": round(GAP_FACTOR * med, 6)}
    if gaps.size:
        i = int(gaps[np.argmax(dt[gaps])])
        out["gaps"]["longest"] = {"at_s": round(float(t[i] - t[0]) * 1e-9, 6),
                                  "length_s": round(float(dt[i]), 6)}
    return out


class _JointStates:
    """What the messages of one JointState topic say, accumulated one by one."""

    def __init__(self):
        self.orders, self.duplicates = {}, set()
        self.first_stamp, self.any_stamp = None, False     # header stamps: least, not 0
        self.rows: dict[tuple, array] = {}       # names -> positions then efforts, flat

    def add(self, msg):
        names = tuple(msg.name)
        self.orders[names] = self.orders.get(names, 0) + 1
        if len(set(names)) < len(names):
            self.duplicates.update(n for n in names if names.count(n) > 1)
        stamp = _stamp(msg)
        if stamp is not None:
            self.first_stamp = stamp if self.first_stamp is None else min(stamp,
                                                                          self.first_stamp)
            self.any_stamp = self.any_stamp or stamp != 0
        n = len(names)
        row = self.rows.setdefault(names, array("d"))
        for values in (msg.position, msg.effort):
            row.extend(values if len(values) == n else [np.nan] * n)

    def joints(self) -> list[str]:
        return list(max(self.orders, key=self.orders.get)) if self.orders else []

    def matrices(self, joints: list[str]):
        """Positions and efforts of ``joints`` in every message naming them all."""
        P, E = [np.empty((0, len(joints)))], [np.empty((0, len(joints)))]
        for names, flat in self.rows.items():
            if set(joints) <= set(names):
                idx = [names.index(j) for j in joints]
                rows = np.frombuffer(flat, float).reshape(-1, 2, len(names))
                P.append(rows[:, 0, idx])
                E.append(rows[:, 1, idx])
        return np.concatenate(P), np.concatenate(E)

    def summary(self, topic: str, robot=None, joint_map=None) -> dict:
        joints = self.joints()
        out = {"joints": joints}
        if len(self.orders) > 1:
            out["joint_order"] = f"varies: {len(self.orders)} orders of the names " \
                                 "(read by name)"
        if self.duplicates:
            out["duplicate_names"] = sorted(self.duplicates)
        if self.first_stamp is not None:
            out["header_stamps"] = f"from {_when(self.first_stamp)}" if self.any_stamp \
                else "all zero (unset)"
        P, E = self.matrices(joints)
        with np.errstate(invalid="ignore"):
            span = np.nanmax(P, 0) - np.nanmin(P, 0) if len(P) else np.zeros(len(joints))
        out["still_joints"] = [j for j, s in zip(joints, span) if not s > STILL_RANGE]
        out["effort"] = _effort_kind(topic, joints, P, E, robot, joint_map)
        return out


def _effort_kind(topic, joints, P, E, robot, joint_map) -> dict:
    """The stated heuristic of the module documentation."""
    if not len(E) or not np.isfinite(E).any() or not np.nanmax(np.abs(E)) > 0:
        return {"looks_like": "none recorded"}
    peak = {j: round(float(v), 6) for j, v in zip(joints, np.nanmax(np.abs(E), 0))}
    if "current" in topic.lower():
        return {"looks_like": "motor currents", "why": "the topic's name says so",
                "peak_abs": peak}
    if robot is None:
        return {"looks_like": "joint torques (unchecked)", "why": "sensor_msgs/JointState "
                "defines effort in N.m (N for a prismatic joint); give --config to compare "
                "it with the model's gravity torques", "peak_abs": peak}
    return dict(_gravity_check(joints, P, E, robot, joint_map or {}), peak_abs=peak)


def _gravity_check(joints, P, E, robot, joint_map) -> dict:
    model_names = [joint_map.get(j, j) for j in joints]
    missing = [m for m in robot.active_joints if m not in model_names]
    if missing:
        return {"looks_like": "undecided", "why": f"the model's joints {missing} are not "
                "recorded (a joint map: data.joint_map)"}
    cols = [model_names.index(m) for m in robot.active_joints]
    keep = np.isfinite(P[:, cols]).all(1) & np.isfinite(E[:, cols]).all(1)
    Q, T = P[keep][:, cols], E[keep][:, cols]
    data = robot.model.createData()
    G = np.array([pin.computeGeneralizedGravity(robot.model, data, q)[robot.idx_v]
                  for q in robot.full_configuration(Q)]).reshape(-1, len(cols))
    gains, verdicts = {}, []
    spans = np.ptp(G, 0) if len(G) >= 3 else np.zeros(len(cols))
    for k, name in enumerate(robot.active_joints):
        g, e = G[:, k], T[:, k]
        if spans[k] < max(GRAVITY_SPAN, GRAVITY_SHARE * spans.max()):
            continue
        gain, _ = np.polyfit(g, e, 1)
        corr = float(np.corrcoef(g, e)[0, 1])
        gains[name] = {"gain": round(float(gain), 4), "correlation": round(corr, 3)}
        verdicts.append(TORQUE_GAINS[0] <= gain <= TORQUE_GAINS[1]
                        and corr >= MIN_CORRELATION)
    if not gains:
        return {"looks_like": "undecided", "why": "no joint's gravity torque varies by "
                f"{GRAVITY_SPAN} N.m over the recording"}
    looks = "joint torques" if all(verdicts) else "motor currents or a scaled effort"
    return {"looks_like": looks, "why": f"effort = gain x model gravity torque + offset on "
            f"the most gravity-loaded joints: gains in {list(TORQUE_GAINS)} with correlation >= "
            f"{MIN_CORRELATION} are joint torques", "gravity_fit": gains}


def bag_summary(path: str, robot=None, joint_map: dict | None = None) -> dict:
    """Everything ``figaroh-ros bag info`` prints about the bag at ``path`` (folder or
    storage file, with or without metadata.yaml); ``robot`` (a ``RobotModel``) and
    ``joint_map`` (recorded -> model names) enable the gravity check of the efforts."""
    src = locate(path)
    try:
        reader = open_bag_reader(src.reader_paths(), typestore())
    except DataError:
        raise
    except Exception as exc:      # rosbags' and sqlite's errors on a damaged file
        raise DataError(f"{src.given}: cannot be read ({exc})") from None
    times: dict[str, array] = {}
    states: dict[str, _JointStates] = {}
    try:
        conns = list(reader.connections)
        types = {c.topic: c.msgtype for c in conns}
        for conn, t, raw in every_message(reader, conns, [src.given]):
            times.setdefault(conn.topic, array("q")).append(t)
            if conn.msgtype == JS:
                try:
                    msg = reader.deserialize(raw, conn.msgtype)
                except Exception as exc:
                    raise DataError(f"{src.given}: a '{conn.topic}' message at "
                                    f"{t * 1e-9:.6f} s is not a {JS} ({exc})") from None
                states.setdefault(conn.topic, _JointStates()).add(msg)
    except DataError:
        raise
    except Exception as exc:
        raise DataError(f"{src.given}: cannot be read ({exc})") from None
    finally:
        reader.close()
    first = min((v[0] for v in times.values()), default=None)
    last = max((v[-1] for v in times.values()), default=None)
    topics = {}
    for topic in sorted(types):
        entry = {"type": types[topic], **_timing(times.get(topic, []))}
        if topic in states:
            entry.update(states[topic].summary(topic, robot, joint_map))
        topics[topic] = entry
    return {"bag": src.given, "storage": src.storage,
            "files": [os.path.basename(f) for f in src.files],
            "metadata_yaml": "present" if src.indexed else
            "absent (read from the storage; `figaroh-ros bag reindex` writes it)",
            "start": None if first is None else _when(first),
            "duration_s": None if first is None else round((last - first) * 1e-9, 6),
            "messages": sum(len(v) for v in times.values()), "topics": topics}

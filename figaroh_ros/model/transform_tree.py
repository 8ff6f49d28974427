"""A tree of time-stamped frame transforms, looked up the way tf2 does (no ROS needed).

Each edge ``parent -> child`` holds ``T_parent_child`` either once (static) or as a time
series.  ``lookup(target, source, t)`` returns ``T_target_source`` (a point given in
``source`` expressed in ``target``): the path through the tree's common ancestor, each
dynamic edge interpolated at ``t`` (linear in translation, spherical linear in rotation,
as tf2 does) and never extrapolated beyond ``max_extrapolation`` ns past its samples.
``t = 0`` asks for the latest time every dynamic edge of the path covers.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from figaroh_ros.errors import DataError


@dataclass
class _Edge:
    parent: str
    static: bool
    stamps: list[int] = field(default_factory=list)
    poses: list[pin.SE3] = field(default_factory=list)


def interpolate(a: pin.SE3, b: pin.SE3, s: float) -> pin.SE3:
    """``a`` moved a fraction ``s`` towards ``b``: lerp of the translations, slerp of the
    rotations."""
    qa, qb = pin.Quaternion(a.rotation), pin.Quaternion(b.rotation)
    return pin.SE3(qa.slerp(s, qb).matrix(), (1 - s) * a.translation + s * b.translation)


class TransformTree:
    """Frames and their transforms; ``history`` ns of samples kept per dynamic edge."""

    def __init__(self, history_ns: int = 10 * 10**9, max_extrapolation_ns: int = 0):
        self.edges: dict[str, _Edge] = {}          # child -> its edge to the parent
        self.history, self.max_extrapolation = history_ns, max_extrapolation_ns

    def add(self, parent: str, child: str, stamp_ns: int, T: pin.SE3,
            static: bool = False) -> None:
        """Record ``T_parent_child`` at ``stamp_ns`` (or for ever when ``static``)."""
        if not parent or not child or parent == child:
            raise DataError(f"transform {parent!r} -> {child!r}: two different frame names")
        edge = self.edges.get(child)
        if edge is None or edge.parent != parent or edge.static != static:
            edge = self.edges[child] = _Edge(parent, static)
        if static:
            edge.stamps, edge.poses = [0], [T]
            return
        k = bisect.bisect(edge.stamps, stamp_ns)
        edge.stamps.insert(k, stamp_ns)
        edge.poses.insert(k, T)
        while edge.stamps[-1] - edge.stamps[0] > self.history:
            edge.stamps.pop(0)
            edge.poses.pop(0)

    def frames(self) -> list[str]:
        return sorted(set(self.edges) | {e.parent for e in self.edges.values()})

    def _chain(self, frame: str) -> list[str]:
        """``frame`` and its ancestors up to the root."""
        chain = [frame]
        while chain[-1] in self.edges:
            chain.append(self.edges[chain[-1]].parent)
            if len(chain) > len(self.edges) + 1:
                raise DataError(f"the frames around {frame!r} form a loop")
        return chain

    def _at(self, child: str, t: int) -> pin.SE3:
        edge = self.edges[child]
        if edge.static:
            return edge.poses[0]
        s = edge.stamps
        if t < s[0] or t > s[-1] + self.max_extrapolation:
            raise DataError(f"no transform {edge.parent!r} -> {child!r} at {t * 1e-9:.3f} s "
                            f"(known from {s[0] * 1e-9:.3f} to {s[-1] * 1e-9:.3f} s)")
        k = bisect.bisect_left(s, t)
        if k == len(s) or s[k] == t:
            return edge.poses[min(k, len(s) - 1)]
        a = (t - s[k - 1]) / (s[k] - s[k - 1])
        return interpolate(edge.poses[k - 1], edge.poses[k], a)

    def _latest_common(self, path: list[str]) -> int:
        ends = [self.edges[c].stamps[-1] for c in path if not self.edges[c].static]
        return min(ends) if ends else 0

    def lookup(self, target: str, source: str, t_ns: int = 0) -> pin.SE3:
        """``T_target_source`` at ``t_ns`` (0: the latest time the path covers)."""
        for f in (target, source):
            if f not in self.edges and f not in {e.parent for e in self.edges.values()}:
                raise DataError(f"unknown frame {f!r} (frames: {self.frames()})")
        up, down = self._chain(source), self._chain(target)
        common = next((f for f in up if f in down), None)
        if common is None:
            raise DataError(f"frames {target!r} and {source!r} are not connected "
                            f"(roots {up[-1]!r} and {down[-1]!r})")
        up, down = up[:up.index(common)], down[:down.index(common)]
        t = t_ns or self._latest_common(up + down)
        T_c_source = pin.SE3.Identity()
        for child in up:                       # source up to the common frame
            T_c_source = self._at(child, t) * T_c_source
        T_c_target = pin.SE3.Identity()
        for child in down:
            T_c_target = self._at(child, t) * T_c_target
        return T_c_target.inverse() * T_c_source


def pose_xyz_quat(T: pin.SE3) -> tuple[np.ndarray, np.ndarray]:
    """Translation and quaternion (x, y, z, w) of ``T``."""
    q = pin.Quaternion(T.rotation)
    return T.translation.copy(), np.array([q.x, q.y, q.z, q.w])

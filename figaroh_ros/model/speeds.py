"""How fast each joint may move: its velocity limit, at most a commanded speed."""
from __future__ import annotations

import numpy as np

from figaroh_ros.errors import ModelError


def joint_speeds(limits, max_velocity: float = np.inf) -> np.ndarray:
    """Each joint's speed in a move: its velocity limit, at most ``max_velocity``.  A
    limit a URDF leaves out (0, infinite or NaN) counts as ``max_velocity``, or when there
    is none as the fastest limit given (all missing: 1 each, every joint alike)."""
    v = np.array(limits, float, ndmin=1)
    v[~(np.isfinite(v) & (v > 0))] = np.inf
    v = np.minimum(v, max_velocity)
    known = np.isfinite(v)
    if not known.any():
        return np.ones_like(v)
    v[~known] = v[known].max()
    return v


MAX_MOVE_S = 600.0      # a posture move planned longer than this is refused


def move_duration(travel, speeds, names) -> float:
    """Seconds of one cubic move (peak speed 1.5 x the average) through ``travel`` (rad or m
    per joint) within each joint's ``speeds``, at least 0.5 s.  A ModelError naming the
    slowest joint when the move would last over ``MAX_MOVE_S`` (a URDF velocity limit of
    1e-300 asks for a goal no controller takes)."""
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):  # inf, NaN: refused
        t = 1.5 * np.abs(np.asarray(travel, float)) / np.asarray(speeds, float)
    if not np.all(t <= MAX_MOVE_S):
        j = int(np.nanargmax(np.where(np.isnan(t), np.inf, t)))
        raise ModelError(f"moving {names[j]} by {abs(float(travel[j])):.3g} at its speed "
                         f"{float(speeds[j]):.3g} (URDF velocity limit, at most max_velocity) "
                         f"would take over {MAX_MOVE_S:.0f} s: refused")
    return max(0.5, float(t.max(initial=0.0)))

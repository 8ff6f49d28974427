"""How fast each joint may move: its velocity limit, at most a commanded speed."""
from __future__ import annotations

import numpy as np


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

"""Postures held still, found in a recording without the executor's marks (a bag of
postures played by other means): the stretches where every joint's speed, measured over
``STILL_BASELINE`` s to stay above the encoders' noise, stays under ``STILL_SPEED``."""
from __future__ import annotations

import numpy as np

STILL_SPEED = 0.01      # rad/s (m/s): the fastest joint of a posture held still
STILL_HOLD = 0.3        # s: the shortest stillness taken for a posture
STILL_BASELINE = 0.1    # s between the positions a speed is measured over (noise)
STILL_TRIM = 0.05       # s left out at each end of a stillness


def still_windows(t: np.ndarray, Q: np.ndarray) -> list[tuple[int, int]]:
    """``(start, end)`` stamps (ns) of the stretches where every joint stays still, for a
    bag recorded without the executor's marks: speeds from positions ``STILL_BASELINE``
    apart (their noise divided accordingly), at most ``STILL_SPEED`` for at least
    ``STILL_HOLD`` s, ``STILL_TRIM`` s cut from both ends."""
    if len(t) < 3:
        return []
    k = max(1, int(np.searchsorted(t, t[0] + STILL_BASELINE * 1e9)))
    k = min(k, len(t) - 1)
    speed = np.max(np.abs(Q[k:] - Q[:-k]), axis=1) / ((t[k:] - t[:-k]) * 1e-9)
    still = np.r_[speed <= STILL_SPEED, np.zeros(k, bool)]      # sample i: [i, i + k]
    edges = np.flatnonzero(np.diff(np.r_[0, still.astype(int), 0]))
    out = []
    for a, b in zip(edges[::2], edges[1::2]):
        start, end = t[a] + STILL_TRIM * 1e9, t[min(b - 1 + k, len(t) - 1)] - STILL_TRIM * 1e9
        if end - start >= (STILL_HOLD - 2 * STILL_TRIM) * 1e9:
            out.append((int(start), int(end)))
    return out

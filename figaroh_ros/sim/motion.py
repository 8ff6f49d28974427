"""What the simulated robot does in time: its controllers' motion along a goal's trajectory
and the schedule of its sensor loops (``ros/sim_robot.py``)."""
from __future__ import annotations

import time

import numpy as np
from scipy.interpolate import CubicHermiteSpline


class Motion:
    """A trajectory of some joints, from the current positions, as cubic Hermite splines."""

    def __init__(self, idx, q0, times, positions, velocities):
        self.idx = idx
        t = np.r_[0.0, times]
        Pq = np.vstack([q0, positions])
        V = np.vstack([np.zeros(len(idx)), velocities])
        self.spline = CubicHermiteSpline(t, Pq, V, axis=0)
        self.end = float(t[-1])
        self.start = time.monotonic()
        self.done = False

    def at(self, now: float):
        """Positions, velocities, accelerations at ``now`` and whether the motion ended.
        A time before the start (read by a tick just before the motion was created) is
        the rest the motion starts from: its positions, zero velocity and acceleration
        (the spline is never extrapolated backwards)."""
        s = min(now - self.start, self.end)
        if s < 0.0:
            rest = np.zeros(len(self.idx))
            return self.spline(0.0), rest, rest.copy(), False
        return self.spline(s), self.spline(s, 1), self.spline(s, 2), s >= self.end


# s: the longest stall of the process after which the joint-rate sensors still publish the
# samples they missed (a driver's buffered readings); after a longer one (the process
# stopped, SIGSTOP) they resume from the present, as a robot switched back on
CATCH_UP = 2.0


def next_due(last: float, now: float, dt: float, catch_up: float) -> float:
    """The monotonic time of the step after the one due at ``last``, asked at ``now``:
    ``last + dt``, the regular grid (a step late by less than ``catch_up``, or than one
    period, keeps it: the next ones wait less, or not at all); further behind, ``now``
    (the missed steps dropped, not run in a burst)."""
    due = last + dt
    return now if now - due > max(catch_up, dt) else due


def shows_the_present(sampled_at: float, now: float, dt: float) -> bool:
    """Whether the joint-rate state sampled for the monotonic time ``sampled_at`` (every
    ``dt`` s) still stands for ``now``: at most two periods, or 20 ms, old.  While the
    joint-rate loop publishes the samples a stall missed, its state is of the past, and a
    frame of another sensor stamped ``now`` (the mocap loop) would show it at the wrong
    time: after stalls, mocap frames showed positions up to 2.7 s old under the
    present's stamp, and the suspension's held-out moments were fitted 5 times worse."""
    return now - sampled_at <= max(2.0 * dt, 0.02)


def frame_time(sampled: int, now: int, dt: float, last: int) -> int | None:
    """The stamp (ns) of a frame of another sensor (the mocap) showing the joint-rate state
    stamped ``sampled`` (every ``dt`` s), read at ``now`` (ns, the same clock): ``now``
    while the state shows the present (``shows_the_present``), else ``sampled`` itself
    (the loop catching up after a stall: the frame shows the past at the past's time, not
    a gap); None when that is not after the ``last`` frame's stamp (the same state again,
    a stamp going back, or no state yet: ``sampled`` 0).  Skipping every late frame
    instead left most of a loaded run's sweep without mocap (the suspension refused for
    gaps)."""
    t = now if shows_the_present(0.0, (now - sampled) * 1e-9, dt) else sampled
    return t if t > last else None

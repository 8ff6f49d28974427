"""How far a robot is from the trajectory it was commanded (the executor's path check).

A joint_trajectory_controller interpolates its goal's points with cubic Hermite splines
(positions and velocities at each point) from where the joints are when the goal starts.
The commanded positions are that spline; the tracking error of a measurement taken ``t`` s
after the start is its distance to the spline, allowing the measurement up to ``lag`` s of
delay (joint states cross a network and a loaded machine): the least distance to the
commanded positions over ``[t - lag, t]``.  A joint that stops following (blocked, a
collision, a controller fault) leaves that band at its commanded speed.  No rclpy here.
"""
from __future__ import annotations

import numpy as np
import scipy          # scipy.interpolate (0.5 s) loaded by the first reference, not at start

TRACKING_LAG = 0.3      # s of joint-state delay the tracking check allows
WINDOW_STEP = 0.005     # s between the commanded positions compared in the window


def reference(q0: np.ndarray, times: np.ndarray, Q: np.ndarray, V: np.ndarray):
    """The commanded positions as a function of time from the goal's start: the cubic
    Hermite spline through the current positions (at rest) and the trajectory points."""
    t = np.concatenate([[0.0], np.asarray(times, float)])
    return scipy.interpolate.CubicHermiteSpline(t, np.vstack([q0, Q]),
                                                np.vstack([np.zeros_like(q0), V]), axis=0)


def tracking_error(ref, t: float, q: np.ndarray, lag: float = TRACKING_LAG) -> np.ndarray:
    """Per joint, the distance of ``q`` (measured at ``t`` s after the start) to the
    commanded positions of the last ``lag`` seconds (of the trajectory's part of them,
    every ``WINDOW_STEP`` s: a long lag, a controller slow to accept its goal, misses no
    stretch of the motion)."""
    lo, hi = np.clip([t - lag, t], 0.0, ref.x[-1])
    steps = (hi - lo) / WINDOW_STEP if np.isfinite(hi - lo) else 0.0
    when = np.linspace(lo, hi, max(7, min(int(np.ceil(steps)) + 1, 20_000)))
    return np.min(np.abs(ref(when) - q), axis=0)


STALE_LIMIT = 2.0       # s a measurement's own time may precede its arrival


class MeasurementTimes:
    """When the joint states were measured, on this computer's monotonic clock, from the
    driver's stamps: ``stamp + offset``, the offset being the least ``arrival - stamp``
    seen (the fastest delivery; it also absorbs the two clocks' difference).  A state that
    reached the reader late (a loaded machine: the reader's DDS thread starved, a burst
    taken at once) is then compared with what was commanded when it was measured, not
    when it arrived.  The time never exceeds the arrival, nor precedes it by more than
    ``STALE_LIMIT`` s; a stamp of zero or one earlier than the last gives the arrival (the
    same state asked for again keeps its time)."""

    def __init__(self):
        self.offset, self.last_stamp = np.inf, -np.inf

    def measured(self, stamp: float, arrival: float) -> float:
        """The time a state stamped ``stamp`` (s, the driver's clock; 0: none) and taken
        at ``arrival`` (s, monotonic) was measured."""
        if stamp <= 0.0 or stamp < self.last_stamp:
            return arrival
        self.last_stamp = stamp
        self.offset = min(self.offset, arrival - stamp)
        return min(arrival, max(stamp + self.offset, arrival - STALE_LIMIT))

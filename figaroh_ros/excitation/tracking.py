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


def reference(q0: np.ndarray, times: np.ndarray, Q: np.ndarray, V: np.ndarray):
    """The commanded positions as a function of time from the goal's start: the cubic
    Hermite spline through the current positions (at rest) and the trajectory points."""
    t = np.concatenate([[0.0], np.asarray(times, float)])
    return scipy.interpolate.CubicHermiteSpline(t, np.vstack([q0, Q]),
                                                np.vstack([np.zeros_like(q0), V]), axis=0)


def tracking_error(ref, t: float, q: np.ndarray, lag: float = TRACKING_LAG) -> np.ndarray:
    """Per joint, the distance of ``q`` (measured at ``t`` s after the start) to the
    commanded positions of the last ``lag`` seconds."""
    when = np.clip(t - np.linspace(0.0, lag, 7), 0.0, ref.x[-1])
    return np.min(np.abs(ref(when) - q), axis=0)

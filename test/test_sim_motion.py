"""The simulated controllers' motion (ros/sim_robot.py ``Motion``): a sweep of 4000 points
10 ms apart, as the TIAGo phenomena test sends, read at times around its start and end."""
from __future__ import annotations

import numpy as np

from figaroh_ros.ros.sim_robot import Motion


def _sweep():
    t = np.arange(1, 4001) * 0.01
    P = 0.3 * np.sin(3.0 * np.outer(t, np.arange(1, 8) / 7))
    V = 0.9 * np.cos(3.0 * np.outer(t, np.arange(1, 8) / 7)) * np.arange(1, 8) / 7
    V[-1] = 0.0
    return Motion(list(range(7)), np.zeros(7), t, P, V), P


def test_a_tick_read_before_the_motion_began_sees_its_start():
    """A sensor tick reads its clock, then waits for the lock while a goal creates the
    motion: its time is before the start.  The joints are at the start, at rest; the
    spline extrapolated backwards put them 5 rad away at 250 rad/s 50 ms before, and the
    TIAGo sweep's tracking check (or the simulator) failed on a loaded machine."""
    motion, _ = _sweep()
    for early in (1e-4, 0.01, 0.05, 0.5):
        q, v, a, end = motion.at(motion.start - early)
        assert not end
        assert np.abs(q).max() == 0.0 and np.abs(v).max() == 0.0, (early, q, v)
        assert np.array_equal(a, motion.spline(0.0, 2)), (early, a)   # the start's own


def test_the_motion_follows_its_points_and_ends_at_the_last():
    motion, P = _sweep()
    q, _, _, end = motion.at(motion.start + 20.0)
    assert np.allclose(q, P[1999]) and not end
    q, v, a, end = motion.at(motion.start + 41.0)
    assert end and np.allclose(q, P[-1]) and np.abs(v).max() < 1e-12

"""The experiment of Nguyen et al. 2024 for the encoder discrepancy: every joint swept back and forth
across its range at a near-constant speed, reversing quickly (both directions of the play
seen at every angle and torque)."""
from __future__ import annotations

import numpy as np

from figaroh_ros.excitation.fourier import Trajectory, windowed
from figaroh_ros.model.robot import RobotModel


def _middle_and_half_range(robot: RobotModel):
    lo, hi = robot.position_limits()
    lo = np.where(np.isfinite(lo), lo, -np.pi)
    hi = np.where(np.isfinite(hi), hi, np.pi)
    return (lo + hi) / 2, (hi - lo) / 2


def _sharp_sine(t: np.ndarray, h: float, period: float, s: float):
    """``h asin(s sin(w t)) / asin(s)`` and its first two derivatives: a triangle wave
    with rounded reversals (``s`` -> 1: sharper)."""
    k = np.arcsin(s)
    w = 2 * np.pi / period
    x = s * np.sin(w * t)
    r = np.sqrt(1 - x * x)
    return (h * np.arcsin(x) / k, h / k * s * w * np.cos(w * t) / r,
            h / k * s * w * w * np.sin(w * t) * (s ** 2 - 1) / r ** 3)


def sweep_trajectory(robot: RobotModel, joints: list[str], duration: float = 40.0,
                     rate_hz: float = 100.0, half_range: float = 0.6,
                     periods=(6.0, 12.0), sharpness: float = 0.98) -> Trajectory:
    """Every joint of ``joints`` swept across ``half_range`` (at most 80 % of its half
    range) around the middle of its limits (``sharpness`` of the reversals: see
    ``_sharp_sine``; one period per joint, spread over ``periods``), faded in and out so
    that it starts and ends at rest.  The other active joints of ``robot`` stay at the
    middle of their range."""
    mid, half = _middle_and_half_range(robot)
    t = np.arange(0.0, duration, 1.0 / rate_hz)
    q = np.tile(mid, (len(t), 1))
    dq, ddq = np.zeros_like(q), np.zeros_like(q)
    for T, name in zip(np.linspace(periods[0], periods[1], max(len(joints), 1)), joints):
        j = robot.active_joints.index(name)
        x, dx, ddx = _sharp_sine(t, min(half_range, 0.8 * half[j]), T, sharpness)
        q[:, j], dq[:, j], ddq[:, j] = mid[j] + x, dx, ddx
    return windowed(Trajectory(t, q, dq, ddq))

"""Finite Fourier series excitation (Tröbinger et al. Eq. 12-13; Swevers 1997) with exact
derivatives, its fade-in/out window, and random states for structural base parameters."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from figaroh_ros.model.robot import RobotModel


@dataclass
class Trajectory:
    t: np.ndarray
    q: np.ndarray
    dq: np.ndarray
    ddq: np.ndarray


def fourier_trajectory(robot: RobotModel, duration: float, rate_hz: float,
                       harmonics: int = 5, base_freq_hz: float | None = None,
                       amplitude: float = 0.6, seed: int = 0) -> Trajectory:
    """Finite Fourier series per joint, q = q0 + sum_l a_l sin(l w t) + b_l cos(l w t),
    with exact analytic derivatives; scaled so that q stays in ``amplitude`` times the
    half range of each joint around its mid-range (limits of +-pi when unbounded)."""
    rng = np.random.default_rng(seed)
    n = robot.n_joints
    lo, hi = robot.position_limits()
    lo = np.where(np.isfinite(lo) & (lo > -10), lo, -np.pi)
    hi = np.where(np.isfinite(hi) & (hi < 10), hi, np.pi)
    mid, half = (lo + hi) / 2, (hi - lo) / 2
    wf = 2 * np.pi * (base_freq_hz or 1.0 / duration)
    t = np.arange(0.0, duration, 1.0 / rate_hz)
    q = np.tile(mid, (t.size, 1)); dq = np.zeros_like(q); ddq = np.zeros_like(q)
    for j in range(n):
        a = rng.normal(size=harmonics) / np.arange(1, harmonics + 1)
        b = rng.normal(size=harmonics) / np.arange(1, harmonics + 1)
        s = np.zeros(t.size); ds = np.zeros(t.size); dds = np.zeros(t.size)
        for l in range(1, harmonics + 1):
            w = l * wf
            s += a[l - 1] * np.sin(w * t) + b[l - 1] * np.cos(w * t)
            ds += w * (a[l - 1] * np.cos(w * t) - b[l - 1] * np.sin(w * t))
            dds += -w * w * (a[l - 1] * np.sin(w * t) + b[l - 1] * np.cos(w * t))
        k = amplitude * half[j] / max(np.abs(s).max(), 1e-12)
        q[:, j] += k * s; dq[:, j] = k * ds; ddq[:, j] = k * dds
    return Trajectory(t, q, dq, ddq)


def windowed(traj: Trajectory, ramp: float = 2.0) -> Trajectory:
    """The trajectory faded in and out around its first sample's mid-range posture, so
    that it starts and ends at rest: ``q = q_mid + w(t) (q(t) - q_mid)`` with a smoothstep
    ``w`` rising over ``ramp`` seconds at both ends (derivatives by the product rule)."""
    t = traj.t - traj.t[0]
    T = t[-1]

    def smooth(x):
        x = np.clip(x, 0.0, 1.0)
        return x * x * x * (10 - 15 * x + 6 * x * x), \
            30 * x * x * (1 - x) ** 2, 60 * x * (1 - x) * (1 - 2 * x)

    a, da, dda = smooth(t / ramp)
    b, db, ddb = smooth((T - t) / ramp)
    w = a * b
    dw = da / ramp * b - a * db / ramp
    ddw = dda / ramp ** 2 * b - 2 * da * db / ramp ** 2 + a * ddb / ramp ** 2
    mid = traj.q.mean(axis=0)
    d = traj.q - mid
    q = mid + w[:, None] * d
    dq = dw[:, None] * d + w[:, None] * traj.dq
    ddq = ddw[:, None] * d + 2 * dw[:, None] * traj.dq + w[:, None] * traj.ddq
    return Trajectory(traj.t, q, dq, ddq)



"""Simulated identification experiments with hidden true parameters.

Used by the ground-truth tests and the benchmarks: a finite Fourier series excitation
(seed 003 Eq. 12-13; Swevers 1997) kept inside the joint limits, a "true" robot whose
inertial and drive-chain parameters are perturbed from the URDF, and measured torques
computed by pinocchio's RNEA on that true robot plus white noise.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .model import RobotModel
from .parameters import DriveOptions, ParameterLayout, standard_parameters
from .regressor import joint_torques_from_parameters


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


def perturbed_parameters(robot: RobotModel, layout: ParameterLayout, seed: int = 1,
                         inertial_scale: float = 0.2, friction: tuple = (0.5, 3.0),
                         rotor: float = 0.3, offset: float = 0.5) -> np.ndarray:
    """A hidden 'true' standard parameter vector: URDF inertias perturbed physically
    (mass and inertia scaled, centre of mass shifted) and random drive-chain values."""
    import pinocchio as pin
    rng = np.random.default_rng(seed)
    phi = standard_parameters(robot, layout)
    from .parameters import PIN_TO_STD
    for jid, cols in layout.inertial_cols.items():
        I = robot.model.inertias[jid]
        if I.mass <= 0:
            continue
        m = I.mass * (1 + inertial_scale * rng.uniform(-1, 1))
        c = I.lever + inertial_scale * 0.1 * rng.uniform(-1, 1, 3)
        Ic = I.inertia * (1 + inertial_scale * rng.uniform(-1, 1))
        phi[cols] = pin.Inertia(m, c, Ic).toDynamicParameters()[PIN_TO_STD]
    for j in range(robot.n_joints):
        for col, lo_hi in ((layout.fv_col[j], friction), (layout.fs_col[j], friction),
                           (layout.ia_col[j], (0.0, rotor)),
                           (layout.off_col[j], (-offset, offset))):
            if col >= 0:
                phi[col] = rng.uniform(*lo_hi)
    for cols in layout.motor_cols.values():
        for col, lo_hi in zip(cols, ((0.0, rotor), friction, friction)):
            if col >= 0:
                phi[col] = rng.uniform(*lo_hi)
    return phi


def measured_torques(robot: RobotModel, layout: ParameterLayout, drive: DriveOptions,
                     phi_true: np.ndarray, traj: Trajectory, noise_std: np.ndarray | float,
                     seed: int = 2) -> np.ndarray:
    """Torques of the true robot along ``traj`` plus Gaussian noise (per joint std)."""
    tau = joint_torques_from_parameters(robot, layout, drive, phi_true,
                                        traj.q, traj.dq, traj.ddq)
    rng = np.random.default_rng(seed)
    return tau + rng.normal(size=tau.shape) * np.broadcast_to(noise_std, (tau.shape[1],))


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


def write_trajectory_csv(path: str, joints: list[str], traj: Trajectory):
    """``t`` and one column per joint: the trajectory file the executor plays."""
    import os
    tmp = path + ".tmp"
    header = ",".join(["t"] + list(joints))
    np.savetxt(tmp, np.column_stack([traj.t, traj.q]), delimiter=",", header=header,
               comments="", fmt="%.9g")
    os.replace(tmp, path)


def random_states(robot: RobotModel, rng: np.random.Generator, samples: int):
    """Random positions within the joint limits (+-pi where unbounded), velocities in
    [-1, 1] rad/s and accelerations in [-3, 3] rad/s^2 (N x n each): what a rich excitation
    visits, for structural base parameters."""
    lo, hi = robot.position_limits()
    lo = np.where(np.isfinite(lo) & (lo > -1e3), lo, -np.pi)
    hi = np.where(np.isfinite(hi) & (hi < 1e3), hi, np.pi)
    n = robot.n_joints
    return (rng.uniform(lo, hi, (samples, n)), rng.uniform(-1, 1, (samples, n)),
            rng.uniform(-3, 3, (samples, n)))

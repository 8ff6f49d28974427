"""A short exciting motion of the last joints for payload identification (Tröbinger et al.
Eq. 12-13: a finite Fourier series per joint, faded in and out at the held posture),
inside the position, velocity and acceleration limits, and the pre-check that it can
identify the payload (condition number of the payload regressor, ``payload_regressor``).

Among ``starts`` random series the best conditioned is kept; the other joints stay at
``q_hold``.
"""
from __future__ import annotations

import numpy as np

from figaroh_ros.errors import DataError
from figaroh_ros.excitation.fourier import Trajectory, fourier_trajectory, windowed
from figaroh_ros.identification.payload import row_std
from figaroh_ros.identification.payload_regressor import (
    condition_number, frame_regressors, require_observable, torque_regressor, wrench_regressor
)
from figaroh_ros.model import RobotModel, load_model


def payload_regressor(robot: RobotModel, tool_frame: str, traj: Trajectory, kind: str,
                      noise=None) -> np.ndarray:
    """The whitened payload regressor of ``kind`` (``torque`` or ``wrench``) along
    ``traj``."""
    Y, J = frame_regressors(robot, tool_frame, traj.q, traj.dq, traj.ddq)
    W = torque_regressor(Y, J) if kind == "torque" else wrench_regressor(Y)
    groups = robot.n_joints if kind == "torque" else 6
    return W / np.repeat(row_std(kind, noise, groups), len(traj.t))[:, None]


def check_payload_excitation(model, tool_frame: str, traj: Trajectory, kind: str = "torque",
                             noise=None, max_condition: float = 1e4) -> float:
    """The condition number of the payload regressor along ``traj``; a DataError naming
    the unobservable payload parameters when it exceeds ``max_condition``."""
    robot = model if isinstance(model, RobotModel) else load_model(model)
    return require_observable(payload_regressor(robot, tool_frame, traj, kind, noise), kind,
                              max_condition)


def joint_indices(robot: RobotModel, joints) -> list[int]:
    """Indices of ``joints`` (default: the last three active joints)."""
    if joints is None:
        return list(range(max(robot.n_joints - 3, 0), robot.n_joints))
    unknown = [j for j in joints if j not in robot.active_joints]
    if unknown:
        raise DataError(f"joints: {unknown} not among the model's joints "
                        f"{robot.active_joints}")
    return [robot.active_joints.index(j) for j in joints]


def scaled(shape: Trajectory, q_hold, moving, room, vmax, amax, ramp) -> Trajectory:
    """``q_hold`` plus the zero-mean ``shape`` of the ``moving`` joints scaled to stay
    within ``room`` (rad each side), ``vmax`` and ``amax`` after the fade in/out."""
    n = len(q_hold)
    s = shape.q - shape.q.mean(axis=0)
    k = np.zeros(n)
    k[moving] = room[moving] / np.maximum(np.abs(s[:, moving]).max(axis=0), 1e-12)
    for _ in range(60):
        traj = windowed(Trajectory(shape.t, q_hold + k * s, k * shape.dq, k * shape.ddq),
                        ramp)
        over = np.maximum(np.abs(traj.dq).max(axis=0) / vmax,
                          np.abs(traj.ddq).max(axis=0) / amax)
        if np.all(over <= 1.0):
            held = np.setdiff1d(np.arange(n), moving)
            # exactly still: the fade's mean leaves rounding noise (1e-14 rad), which a
            # controller differentiates into velocities of random sign
            traj.q[:, held], traj.dq[:, held], traj.ddq[:, held] = q_hold[held], 0.0, 0.0
            return traj
        k *= np.where(over > 1.0, 0.95 / np.maximum(over, 1.0), 1.0)
    raise DataError(f"the payload excitation cannot be scaled within the velocity "
                    f"{np.round(vmax, 4).tolist()} rad/s and acceleration {amax} rad/s^2 "
                    "limits: lengthen ramp or lower harmonics")


def plan_payload_excitation(model, tool_frame: str, q_hold, duration: float = 10.0, *,
                            joints=None, kind: str = "torque", rate_hz: float = 100.0,
                            harmonics: int = 3, amplitude_rad: float = 1.2,
                            velocity_scale: float = 0.5, acceleration_limit: float = 4.0,
                            joint_margin: float = 0.05, ramp: float = 1.0, starts: int = 4,
                            noise=None, max_condition: float = 1e4, seed: int = 0):
    """``(t, Q, dQ, ddQ)``: a Fourier motion of ``joints`` (default the last three) about
    ``q_hold`` (the others held), at most ``amplitude_rad`` from it and ``joint_margin``
    from the limits, ``velocity_scale`` of the URDF's velocity limits and
    ``acceleration_limit`` rad/s^2, starting and ending at rest at ``q_hold``; the best
    conditioned of ``starts`` random series, refused (DataError naming the unobservable
    parameters) when even that one cannot identify the payload."""
    robot = model if isinstance(model, RobotModel) else load_model(model)
    q_hold = np.asarray(q_hold, float).reshape(-1)
    if q_hold.size != robot.n_joints or not np.all(np.isfinite(q_hold)):
        raise DataError(f"q_hold: expected {robot.n_joints} finite values, got "
                        f"{q_hold.tolist()}")
    moving = joint_indices(robot, joints)
    lo, hi = robot.position_limits()
    room = np.minimum(np.minimum(q_hold - lo, hi - q_hold) - joint_margin, amplitude_rad)
    if np.any(room[moving] <= 0):
        raise DataError(f"q_hold: {q_hold.tolist()} is within joint_margin of a limit")
    vmax = velocity_scale * robot.velocity_limits()
    best = None
    for k in range(starts):
        shape = fourier_trajectory(robot, duration, rate_hz, harmonics, seed=seed + k)
        traj = scaled(shape, q_hold, moving, room, vmax, acceleration_limit, ramp)
        cond = condition_number(payload_regressor(robot, tool_frame, traj, kind, noise))
        if best is None or cond < best[0]:
            best = (cond, traj)
    check_payload_excitation(robot, tool_frame, best[1], kind, noise, max_condition)
    return best[1].t, best[1].q, best[1].dq, best[1].ddq


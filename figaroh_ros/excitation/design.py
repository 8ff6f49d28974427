"""``plan_trajectory``: an optimal exciting trajectory from arrays (Nguyen et al. 2023 Eq. 14;
Tröbinger et al. Eq. 11-13).  Nothing is read or written here."""
from __future__ import annotations

import numpy as np

from figaroh_ros.errors import ModelError
from figaroh_ros.excitation.parameterisation import fourier_with_rest, spline_through_postures
from figaroh_ros.excitation.planned import PlannedTrajectory
from figaroh_ros.excitation.planner import Limits, plan, robot_limits
from figaroh_ros.identification.parameters import DriveOptions, parameter_layout
from figaroh_ros.model import RobotModel, load_model


def limits_of(robot: RobotModel, velocity_scale, acceleration_limit, torque_scale,
              joint_margin, tool_frame, workspace) -> Limits:
    limits = robot_limits(robot, velocity_scale, acceleration_limit, torque_scale,
                          joint_margin)
    if tool_frame is not None:
        if not robot.model.existFrame(tool_frame):
            raise ModelError(f"unknown tool frame {tool_frame!r}")
        limits.tool_frame = tool_frame
        limits.box_lo, limits.box_hi = (np.asarray(w, float) for w in workspace)
    return limits


def trajectory_basis(limits: Limits, kind, duration, harmonics, start_posture, postures,
                     segment_duration, waypoints):
    """(``make(grid)`` building the trajectory basis on a time grid, its duration)."""
    if kind == "fourier":
        q0 = (np.asarray(start_posture, float) if start_posture is not None
              else 0.5 * (limits.q_lo + limits.q_hi))
        return (lambda grid: fourier_with_rest(q0, duration, harmonics, grid)), duration
    P = np.atleast_2d(np.asarray(postures, float))
    return ((lambda grid: spline_through_postures(P, segment_duration, waypoints, grid)),
            (len(P) - 1) * segment_duration)


def plan_trajectory(model, *, joints: list[str] | None = None, drive=None,
                    parameterisation: str = "fourier", duration: float = 10.0,
                    harmonics: int = 5, start_posture=None, postures=None,
                    segment_duration: float = 2.0, waypoints: int = 4, criterion: str = "cond",
                    grid_points: int = 60, rate_hz: float = 100.0, velocity_scale: float = 0.8,
                    acceleration_limit: float = 5.0, torque_scale: float = 0.8,
                    joint_margin: float = 0.05, tool_frame: str | None = None, workspace=None,
                    collision=None, torque_noise=None, starts: int = 3,
                    max_iterations: int = 200, seed: int = 0,
                    progress=None) -> PlannedTrajectory:
    """The exciting trajectory of ``joints`` minimising ``criterion`` (``cond``,
    ``logdet`` or ``sigma_min``) of the weighted base regressor, inside the position,
    velocity (``velocity_scale`` of the URDF's), acceleration and torque limits, the
    workspace box ``(lo, hi)`` of ``tool_frame`` (m) and free of self-collision
    (``collision``: a :class:`~figaroh_ros.calibration.SelfCollision`).

    model: a :class:`~figaroh_ros.model.RobotModel`, a URDF path or the URDF text.
    drive: :class:`DriveOptions` or its fields as a dict (friction, rotor inertia...).
    parameterisation: ``fourier`` (rest at ``start_posture`` at both ends, period
    ``duration``) or ``spline`` (through ``postures``, ``segment_duration`` each).
    torque_noise: per joint standard deviation (N.m), the regressor's row weights.
    progress: called with :class:`~figaroh_ros.progress.Progress` objects: the IPOPT
    iteration (criterion, constraint violation) at least every second, and each start's
    outcome.  ``max_iterations`` bounds each start's iterations, repairs included; the
    answer never depends on the clock or the machine's load.
    """
    robot = model if isinstance(model, RobotModel) else load_model(model, joints)
    drive = drive if isinstance(drive, DriveOptions) else DriveOptions(**(drive or {}))
    limits = limits_of(robot, velocity_scale, acceleration_limit, torque_scale, joint_margin,
                       tool_frame, workspace)
    make, length = trajectory_basis(limits, parameterisation, duration, harmonics,
                                    start_posture, postures, segment_duration, waypoints)
    weights = None if torque_noise is None else 1.0 / np.asarray(torque_noise, float)
    return plan(robot, parameter_layout(robot, drive), drive, make, limits, criterion,
                grid_points, rate_hz, length, weights, collision, starts, max_iterations,
                seed, progress)

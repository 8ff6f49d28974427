"""``figaroh-ros plan-trajectory CONFIG --out FILE``: an optimal exciting trajectory the
executor plays (CSV: ``t`` and one column per joint at the control rate)."""
from __future__ import annotations

import numpy as np

from figaroh_ros.calibration.postures import SelfCollision
from figaroh_ros.errors import SolverError
from figaroh_ros.excitation.fourier import Trajectory
from figaroh_ros.excitation.parameterisation import fourier_with_rest, spline_through_postures
from figaroh_ros.excitation.planner import PlannedTrajectory, plan, robot_limits
from figaroh_ros.identification.parameters import DriveOptions, parameter_layout
from figaroh_ros.io.experiment_files import read_postures, write_trajectory_csv
from figaroh_ros.model.robot import example_robot_package_dirs, load_urdf_model


def plan_from_config(cfg: dict, out_path: str | None = None,
                     progress=lambda m: None) -> PlannedTrajectory:
    t = cfg["trajectory"]
    robot = load_urdf_model(cfg["robot"]["urdf"], cfg["robot"]["joints"])
    drive = DriveOptions(**cfg["model"])
    layout = parameter_layout(robot, drive)
    limits = robot_limits(robot, t["velocity_scale"], t["acceleration_limit"],
                          t["torque_scale"], t["joint_margin"])
    if t["tool_frame"] is not None:
        if not robot.model.existFrame(t["tool_frame"]):

            raise SolverError(f"trajectory.tool_frame: unknown frame {t['tool_frame']!r}")
        limits.tool_frame = t["tool_frame"]
        limits.box_lo = np.array(t["workspace_min"])
        limits.box_hi = np.array(t["workspace_max"])
    if t["parameterisation"] == "fourier":
        q0 = (np.array(t["start_posture"]) if t["start_posture"] is not None
              else 0.5 * (limits.q_lo + limits.q_hi))
        duration = t["duration"]

        def make(grid):
            return fourier_with_rest(q0, duration, t["harmonics"], grid)
    else:
        _, P = read_postures(t["postures_file"], robot.active_joints)
        duration = (len(P) - 1) * t["segment_duration"]

        def make(grid):
            return spline_through_postures(P, t["segment_duration"], t["waypoints"], grid)
    collision = None
    if t["self_collision"]:
        collision = SelfCollision(t["collision_urdf"] or cfg["robot"]["urdf"],
                                  list(t["package_dirs"] or []) + example_robot_package_dirs())
    weights = None if t["torque_noise"] is None else 1.0 / np.asarray(t["torque_noise"])
    result = plan(robot, layout, drive, make, limits, t["criterion"], t["grid_points"],
                  t["rate_hz"], duration, weights, collision, t["starts"],
                  t["max_iterations"], t["seed"], progress)
    if out_path is not None:
        write_trajectory_csv(out_path, robot.active_joints,
                             Trajectory(result.t, result.q, result.dq, result.ddq))
    return result

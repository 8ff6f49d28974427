"""``figaroh-ros plan-trajectory CONFIG --out FILE``: an optimal exciting trajectory the
executor plays (CSV: ``t`` and one column per joint at the control rate)."""
from __future__ import annotations

import numpy as np

from ..model import load_urdf_model
from ..parameters import DriveOptions, parameter_layout
from ..simulate import Trajectory, write_trajectory_csv
from .parameterisation import fourier_with_rest, spline_through_postures
from .planner import PlannedTrajectory, plan, robot_limits


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
            from ..calibration.solve import CalibrationError
            raise CalibrationError(f"trajectory.tool_frame: unknown frame {t['tool_frame']!r}")
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
        from ..experiment_files import read_postures
        _, P = read_postures(t["postures_file"], robot.active_joints)
        duration = (len(P) - 1) * t["segment_duration"]

        def make(grid):
            return spline_through_postures(P, t["segment_duration"], t["waypoints"], grid)
    collision = None
    if t["self_collision"]:
        from ..calibration.postures import SelfCollision, _default_package_dirs
        collision = SelfCollision(t["collision_urdf"] or cfg["robot"]["urdf"],
                                  list(t["package_dirs"] or []) + _default_package_dirs())
    weights = None if t["torque_noise"] is None else 1.0 / np.asarray(t["torque_noise"])
    result = plan(robot, layout, drive, make, limits, t["criterion"], t["grid_points"],
                  t["rate_hz"], duration, weights, collision, t["starts"],
                  t["max_iterations"], t["seed"], progress)
    if out_path is not None:
        write_trajectory_csv(out_path, robot.active_joints,
                             Trajectory(result.t, result.q, result.dq, result.ddq))
    return result

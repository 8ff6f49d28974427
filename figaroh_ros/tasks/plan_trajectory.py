"""``figaroh-ros plan-trajectory``: an optimal exciting trajectory from a config, written as
the CSV the executor plays (``t`` and one column per joint at the control rate)."""
from __future__ import annotations

import os

from figaroh_ros.calibration import SelfCollision
from figaroh_ros.config.trajectory import load_trajectory_config
from figaroh_ros.excitation import PlannedTrajectory, plan_trajectory
from figaroh_ros.io.experiment_files import read_postures
from figaroh_ros.io.report import write_result
from figaroh_ros.model.robot import example_robot_package_dirs
from figaroh_ros.progress import Stage, reporter
from figaroh_ros.tasks import TaskOutcome


def plan_from_config(cfg: dict, progress=None) -> PlannedTrajectory:
    """The trajectory a (loaded) trajectory config describes; nothing written."""
    t, robot = cfg["trajectory"], cfg["robot"]
    postures = None
    if t["parameterisation"] == "spline":
        postures = read_postures(t["postures_file"], robot["joints"])[1]
    collision = None
    if t["self_collision"]:
        collision = SelfCollision(t["collision_urdf"] or robot["urdf"],
                                  list(t["package_dirs"] or []) + example_robot_package_dirs())
    workspace = None if t["workspace_min"] is None else (t["workspace_min"],
                                                         t["workspace_max"])
    return plan_trajectory(
        robot["urdf"], joints=robot["joints"], drive=cfg["model"],
        parameterisation=t["parameterisation"], duration=t["duration"],
        harmonics=t["harmonics"], start_posture=t["start_posture"], postures=postures,
        segment_duration=t["segment_duration"], waypoints=t["waypoints"],
        criterion=t["criterion"], grid_points=t["grid_points"], rate_hz=t["rate_hz"],
        velocity_scale=t["velocity_scale"], acceleration_limit=t["acceleration_limit"],
        torque_scale=t["torque_scale"], joint_margin=t["joint_margin"],
        tool_frame=t["tool_frame"], workspace=workspace, collision=collision,
        torque_noise=t["torque_noise"], starts=t["starts"],
        max_iterations=t["max_iterations"], seed=t["seed"], progress=progress)


def trajectory_path(out: str) -> str:
    """``out`` itself when it names a CSV file, else ``out``/trajectory.csv."""
    return out if out.endswith(".csv") else os.path.join(out, "trajectory.csv")


def run(config_path: str, *, out: str, progress=None) -> TaskOutcome:
    """Plan the trajectory of ``config_path``; write it and result.yaml beside it."""
    cfg = load_trajectory_config(config_path)
    result = plan_from_config(cfg, progress)
    path = result.to_csv(trajectory_path(out))
    summary = dict(result.to_dict(), parameterisation=cfg["trajectory"]["parameterisation"],
                   rate_hz=cfg["trajectory"]["rate_hz"], trajectory=os.path.abspath(path))
    folder = os.path.dirname(os.path.abspath(path))
    paths = {"trajectory": path, "result": write_result(summary, folder)}
    reporter(progress)(Stage.EXPORTING, 1.0, f"wrote {path}")
    return TaskOutcome(summary, paths)

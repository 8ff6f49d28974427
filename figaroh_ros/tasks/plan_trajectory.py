"""``figaroh-ros plan-trajectory``: an optimal exciting trajectory from a config, written as
the CSV the executor plays (``t`` and one column per joint at the control rate)."""
from __future__ import annotations

import os

from figaroh_ros.calibration import SelfCollision
from figaroh_ros.config.trajectory import TrajectoryConfig, load_trajectory_config
from figaroh_ros.excitation import PlannedTrajectory, plan_trajectory
from figaroh_ros.identification.parameters import DriveOptions
from figaroh_ros.io.experiment_files import read_postures
from figaroh_ros.io.output_dir import csv_output, staged_output
from figaroh_ros.io.report import write_result
from figaroh_ros.model.robot import example_robot_package_dirs
from figaroh_ros.progress import Stage, reporter
from figaroh_ros.tasks import TaskOutcome


def plan_from_config(cfg: TrajectoryConfig, progress=None) -> PlannedTrajectory:
    """The trajectory a (loaded) trajectory config describes; nothing written.  The drive
    terms are those of its ``model`` section (the friction models to choose among play no
    part in planning)."""
    t, robot = cfg.trajectory, cfg.robot
    postures = None
    if t.parameterisation == "spline":
        postures = read_postures(t.postures_file, robot.joints)[1]
    collision = None
    if t.self_collision:
        collision = SelfCollision(t.collision_urdf or robot.urdf,
                                  list(t.package_dirs or []) + example_robot_package_dirs())
    workspace = None if t.workspace_min is None else (t.workspace_min, t.workspace_max)
    return plan_trajectory(
        robot.urdf, joints=robot.joints, drive=DriveOptions.from_config(cfg.model),
        parameterisation=t.parameterisation, duration=t.duration,
        harmonics=t.harmonics, start_posture=t.start_posture, postures=postures,
        segment_duration=t.segment_duration, waypoints=t.waypoints,
        criterion=t.criterion, grid_points=t.grid_points, rate_hz=t.rate_hz,
        velocity_scale=t.velocity_scale, acceleration_limit=t.acceleration_limit,
        torque_scale=t.torque_scale, joint_margin=t.joint_margin,
        tool_frame=t.tool_frame, workspace=workspace, collision=collision,
        torque_noise=t.torque_noise, starts=t.starts,
        max_iterations=t.max_iterations, seed=t.seed, progress=progress)


def run(config_path: str, *, out: str, progress=None) -> TaskOutcome:
    """Plan the trajectory of ``config_path``; write it (``out`` itself when it names a
    CSV file, else ``out``/trajectory.csv) and result.yaml beside it."""
    cfg = load_trajectory_config(config_path)
    folder, name = csv_output(out, "trajectory.csv")
    with staged_output(folder) as st:
        result = plan_from_config(cfg, progress)
        result.to_csv(st.path(name))
        path = st.final(name)
        summary = dict(result.to_dict(), parameterisation=cfg.trajectory.parameterisation,
                       rate_hz=cfg.trajectory.rate_hz, trajectory=os.path.abspath(path))
        write_result(summary, st.dir)
    paths = {"trajectory": path, "result": st.final("result.yaml")}
    reporter(progress)(Stage.EXPORTING, 1.0, f"wrote {path}")
    return TaskOutcome(summary, paths)

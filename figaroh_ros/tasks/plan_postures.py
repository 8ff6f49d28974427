"""``figaroh-ros plan-postures``: optimal calibration postures from a calibration config,
written as the postures CSV the executor plays."""
from __future__ import annotations

import os

import numpy as np

from figaroh_ros.calibration import PosturePlan, SelfCollision, plan_postures
from figaroh_ros.config.calibration import CalibrationConfig, load_calibration_config
from figaroh_ros.errors import ConfigError
from figaroh_ros.io.output_dir import csv_output, staged_output
from figaroh_ros.io.report import write_result
from figaroh_ros.model.robot import example_robot_package_dirs
from figaroh_ros.progress import Stage, reporter
from figaroh_ros.tasks import TaskOutcome
from figaroh_ros.tasks.calibrate import model_arguments
from figaroh_ros.tasks.robot_model import resolved_robot
from figaroh_ros.threads import limited_threads


def plan_from_config(cfg: CalibrationConfig, out_path: str | None = None, progress=None,
                     bags: list[str] | None = None) -> PosturePlan:
    """The D-optimal postures a (loaded) calibration config asks for; written to
    ``out_path`` (CSV) when given.  The model comes from ``robot.source`` (a xacro, or
    the bags' with source bag; live sources need the nodes)."""
    if cfg.measurement.planes:
        raise ConfigError("measurement.planes: postures are planned for one plane (the "
                          "contacts of several planes are found on the robot); plan with a "
                          "config of one plane measurement")
    if (cfg.robot.source or "urdf") != "urdf":
        cfg, _ = resolved_robot(cfg, ".", bags)   # its paths are absolute once loaded
    p = cfg.postures
    collision = None
    if p.self_collision:
        urdf = p.collision_urdf or cfg.robot.urdf
        dirs = list(p.package_dirs or []) + example_robot_package_dirs()
        collision = SelfCollision(urdf, dirs, p.collision_margin)
    workspace = None
    if p.workspace_min is not None:
        workspace = (np.array(p.workspace_min), np.array(p.workspace_max))
    plan = plan_postures(cfg.robot.urdf, **model_arguments(cfg),
                         candidates=p.candidates, max_postures=p.max_postures,
                         plateau=p.plateau, joint_margin=p.joint_margin,
                         workspace=workspace, collision=collision, seed=p.seed,
                         progress=progress)
    if p.order == "travel":
        plan = plan.in_travel_order()
    if out_path is not None:
        plan.to_csv(out_path)
    return plan


def run(config_path: str, *, out: str, progress=None) -> TaskOutcome:
    """Plan the postures of ``config_path``; write them (``out`` itself when it names a
    CSV file, else ``out``/postures.csv) and result.yaml beside them."""
    cfg = load_calibration_config(config_path)
    folder, name = csv_output(out, "postures.csv")
    with staged_output(folder) as st, limited_threads():
        plan = plan_from_config(cfg, st.path(name), progress)
        path = st.final(name)
        summary = dict(plan.to_dict(), robot=cfg.robot.name,
                       postures_file=os.path.abspath(path))
        write_result(summary, st.dir)
    paths = {"postures": path, "result": st.final("result.yaml")}
    reporter(progress)(Stage.EXPORTING, 1.0, f"wrote {path}")
    return TaskOutcome(summary, paths)

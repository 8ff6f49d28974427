"""``figaroh-ros plan-postures CONFIG --out FILE``: optimal calibration postures from a
calibration config, written as the posture file the executor plays."""
from __future__ import annotations

import numpy as np

from figaroh_ros.calibration.postures import (
    PosturePlan, SelfCollision, candidate_postures, plan_postures
)
from figaroh_ros.io.postures_csv import write_postures
from figaroh_ros.model.robot import example_robot_package_dirs
from figaroh_ros.tasks.calibrate import build_model


def plan_from_config(cfg: dict, out_path: str, progress=lambda m: None) -> PosturePlan:
    """``figaroh-ros plan-postures``: candidates, D-optimal design, CSV for the executor."""
    km = build_model(cfg)
    p = cfg["postures"]
    collision = None
    if p["self_collision"]:
        urdf = p["collision_urdf"] or cfg["robot"]["urdf"]
        dirs = list(p["package_dirs"] or []) + example_robot_package_dirs()
        collision = SelfCollision(urdf, dirs, p["collision_margin"])
    ws = None
    if p["workspace_min"] is not None:
        ws = (np.array(p["workspace_min"]), np.array(p["workspace_max"]))
    Q = candidate_postures(km, p["candidates"], p["joint_margin"], p["seed"], ws, collision)
    progress(f"{len(Q)} feasible candidate postures")
    x = km.nominal_parameters()
    if km.measurement.kind == "points" and cfg["calibration"]["tool_guess"] is not None:
        x[km.groups["tool"]] = cfg["calibration"]["tool_guess"]
    plan = plan_postures(km, Q, p["max_postures"], p["plateau"], x)
    w = plan.weights[plan.order[:len(plan.selected)]]
    write_postures(out_path, km.chain, plan.selected,
                   {"weight": [f"{v:.6g}" for v in w],
                    "o1": [f"{v:.6g}" for v in plan.criterion[:len(plan.selected)]]})
    return plan



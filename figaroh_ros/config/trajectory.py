"""Exciting-trajectory config (``figaroh-ros plan-trajectory``): the robot and drive model of
the identification config, plus a ``trajectory`` section.  Same validation rules as every
config of the package: unknown or ill-typed fields are refused with the field's name."""
from __future__ import annotations

import os

from figaroh_ros.config.identification import (
    REQUIRED, SCHEMA as ID_SCHEMA, _fail, read_yaml, resolve_example_urdfs, validate
)

SCHEMA = {
    "robot": {"name": (str, REQUIRED, None), "urdf": ("path", REQUIRED, None),
              "joints": ("strlist", REQUIRED, None)},
    "model": ID_SCHEMA["model"],
    "trajectory": {
        "parameterisation": (str, "fourier", ("fourier", "spline")),
        "duration": (float, 10.0, None),           # s: Fourier period
        "harmonics": (int, 5, None),
        "start_posture": ("floatlist", None, None),  # Fourier rest posture (mid-range)
        "postures_file": ("path", None, None),     # spline: the postures to join (CSV)
        "segment_duration": (float, 2.0, None),    # spline: s per posture-to-posture move
        "waypoints": (int, 4, None),               # spline: free waypoints per segment
        "rate_hz": (float, 100.0, None),           # control rate of the file and checks
        "grid_points": (int, 60, None),            # samples the optimisation sees
        "criterion": (str, "cond", ("cond", "logdet", "sigma_min")),
        "velocity_scale": (float, 0.8, None),      # of the URDF velocity limits
        "acceleration_limit": (float, 5.0, None),  # rad/s^2 (m/s^2)
        "torque_scale": (float, 0.8, None),        # of the URDF effort limits
        "joint_margin": (float, 0.05, None),       # rad (m) inside the position limits
        "torque_noise": ("floatlist", None, None),  # per joint: the regressor's weights
        "tool_frame": (str, None, None),           # workspace box of this frame
        "workspace_min": ("floatlist", None, None),  # [x y z] (z min is the floor)
        "workspace_max": ("floatlist", None, None),
        "self_collision": (bool, False, None),
        "collision_urdf": ("path", None, None),
        "package_dirs": ("strlist", None, None),
        "starts": (int, 3, None),
        "max_iterations": (int, 200, None),
        "seed": (int, 0, None),
    },
}
OPTIONAL = {"model", "trajectory"}


def _cross_check(cfg: dict):
    t = cfg["trajectory"]
    n = len(cfg["robot"]["joints"])
    for k in ("duration", "segment_duration", "rate_hz", "velocity_scale",
              "acceleration_limit", "torque_scale"):
        if t[k] <= 0:
            _fail(f"trajectory.{k}", "expected a positive number")
    if t["harmonics"] < 2:
        _fail("trajectory.harmonics", "expected at least 2 (rest at both ends takes 3 "
              "conditions)")
    if t["grid_points"] < 10:
        _fail("trajectory.grid_points", "expected at least 10")
    if t["parameterisation"] == "spline" and t["postures_file"] is None:
        _fail("trajectory.postures_file", "is required with parameterisation spline")
    for k in ("start_posture", "torque_noise"):
        if t[k] is not None and len(t[k]) != n:
            _fail(f"trajectory.{k}", f"expected {n} values (one per joint)")
    if t["torque_noise"] is not None and min(t["torque_noise"]) <= 0:
        _fail("trajectory.torque_noise", "expected positive standard deviations")
    if (t["workspace_min"] is None) != (t["workspace_max"] is None):
        _fail("trajectory.workspace_min", "give both workspace_min and workspace_max")
    if t["workspace_min"] is not None:
        if t["tool_frame"] is None:
            _fail("trajectory.tool_frame", "is required with a workspace box")
        if len(t["workspace_min"]) != 3 or len(t["workspace_max"]) != 3 or any(
                a >= b for a, b in zip(t["workspace_min"], t["workspace_max"])):
            _fail("trajectory.workspace_max", "expected [x y z] above workspace_min")
    if t["starts"] < 1 or t["max_iterations"] < 1 or t["waypoints"] < 1:
        _fail("trajectory.starts", "starts, max_iterations and waypoints must be >= 1")


def load_trajectory_config(path: str) -> dict:
    raw = resolve_example_urdfs(read_yaml(path),
                                (("robot", "urdf"), ("trajectory", "collision_urdf")))
    cfg = validate(raw, os.path.dirname(os.path.abspath(path)), SCHEMA, OPTIONAL, _cross_check)
    cfg["_file"] = os.path.abspath(path)
    return cfg

"""Geometric calibration config: one YAML per robot and measurement set-up.

Same rules as the identification config (``figaroh_ros.config.identification``): every field is declared
below with its type and default, unknown or ill-typed fields are refused with an error
naming the field, relative paths are resolved against the config's folder.
"""
from __future__ import annotations

import os

from figaroh_ros.config.identification import (
    REQUIRED, _fail, override_urdf, read_yaml, resolve_example_urdfs, validate
)
from figaroh_ros.errors import ConfigError

SCHEMA: dict[str, dict[str, tuple]] = {
    "robot": {
        "name": (str, REQUIRED, None),
        "urdf": ("path", REQUIRED, None),
    },
    "calibration": {
        "level": (str, "full", ("offset", "full")),
        "start_frame": (str, "universe", None),
        "tool_frame": (str, REQUIRED, None),
        "joints": ("strlist", None, None),        # calibrated joints (default: the chain)
        "estimate_base": (bool, True, None),
        "elastic_joints": ("strlist", None, None),  # compliance per joint (rad/N.m)
        "base_guess": ("floatlist", None, None),  # [x y z roll pitch yaw] measurement->start
        "tool_guess": ("floatlist", None, None),  # pose: [x y z r p y]; points: 3 per point
    },
    "measurement": {
        "type": (str, REQUIRED, ("points", "pose", "plane")),
        "points": ("intlist", [1], None),          # which points x<k> y<k> z<k> to use
        "mask": ("boollist", None, None),
        "orientation": (str, "rpy", ("rpy", "rotvec", "quaternion")),
        "inverse": (bool, False, None),            # camera sees the target: invert
        "noise_position_mm": (float, 0.5, None),
        "noise_orientation_mrad": (float, 2.0, None),
    },
    "data": {
        "path": ("path", None, None),              # required to calibrate
        "validation": ("path", None, None),
        "fixed_joints": (dict, {}, None),          # chain joints absent from the data
        "id_column": (str, None, None),
    },
    "bag": {                                       # postures recorded by our nodes
        "paths": ("strlist", None, None),          # rosbag2 folders (or --bag)
        "joint_states": (str, "/joint_states", None),
        "measurement": (str, "/mocap/pose", None),  # geometry_msgs/PoseStamped
        "events": (str, "/figaroh/posture_events", None),
        "holdout_every": (int, 5, None),           # every k-th posture held out (0: none)
    },
    "solver": {
        "method": (str, "lm", ("lm", "ils", "robust")),
        "outlier_threshold_mm": (float, None, None),
        "max_iterations": (int, 100, None),
        "cross_validation": (bool, False, None),   # leave-one-out errors (small sets)
        # base parameters the postures determine worse than this stay nominal
        "max_std_mm": (float, 10.0, None),
        "max_std_mrad": (float, 20.0, None),
    },
    "postures": {
        "candidates": (int, 3000, None),
        "joint_margin": (float, 0.05, None),       # rad (m for prismatic) inside the limits
        "workspace_min": ("floatlist", None, None),  # tool box in the start frame (m)
        "workspace_max": ("floatlist", None, None),
        "self_collision": (bool, True, None),
        "collision_margin": (float, 0.0, None),    # m
        "collision_urdf": ("path", None, None),     # URDF whose collision meshes are installed
        "package_dirs": ("strlist", None, None),   # folders holding package:// meshes
        "max_postures": (int, 60, None),
        "plateau": (float, 0.01, None),            # fewest postures within this of the best O1
        "seed": (int, 0, None),
    },
    "output": {
        "plots": (bool, True, None),
    },
}
OPTIONAL = {"data", "bag", "solver", "postures", "output"}


def _cross_check(cfg: dict):
    c, m = cfg["calibration"], cfg["measurement"]
    if c["base_guess"] is not None and len(c["base_guess"]) != 6:
        _fail("calibration.base_guess", "expected [x, y, z, roll, pitch, yaw]")
    if not m["points"] or any(k < 1 for k in m["points"]):
        _fail("measurement.points", f"expected point numbers >= 1, got {m['points']}")
    if m["type"] == "pose" and m["points"] != [1]:
        _fail("measurement.points", "a pose measurement has one frame: use [1]")
    size = 6 if m["type"] == "pose" else 3
    if m["mask"] is not None and len(m["mask"]) != size:
        _fail("measurement.mask", f"expected {size} booleans (per measured "
              f"{'pose' if size == 6 else 'point'})")
    if m["type"] == "plane" and m["mask"] not in (None, [False, False, True]):
        _fail("measurement.mask", "a plane contact measures the distance to the plane "
              "only; leave the mask out")
    for k in ("noise_position_mm", "noise_orientation_mrad"):
        if m[k] <= 0:
            _fail(f"measurement.{k}", "expected a positive standard deviation")
    if c["tool_guess"] is not None:
        n = 6 if m["type"] == "pose" else 3 * len(m["points"])
        if len(c["tool_guess"]) != n:
            _fail("calibration.tool_guess", f"expected {n} numbers")
    for k, v in cfg["data"]["fixed_joints"].items():
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            _fail(f"data.fixed_joints.{k}", f"expected a number, got {v!r}")
    if cfg["bag"]["holdout_every"] < 0 or cfg["bag"]["holdout_every"] == 1:
        _fail("bag.holdout_every", "expected 0 (no hold-out) or an integer >= 2")
    if cfg["bag"]["paths"] is not None and cfg["measurement"]["type"] == "plane":
        _fail("measurement.type", "bags carry pose measurements: use points or pose")
    s = cfg["solver"]
    if s["outlier_threshold_mm"] is not None and s["outlier_threshold_mm"] <= 0:
        _fail("solver.outlier_threshold_mm", "expected a distance > 0 mm")
    for k in ("max_std_mm", "max_std_mrad"):
        if s[k] <= 0:
            _fail(f"solver.{k}", "expected a positive bound")
    if s["max_iterations"] < 1:
        _fail("solver.max_iterations", "expected an integer >= 1")
    p = cfg["postures"]
    if p["candidates"] < 10:
        _fail("postures.candidates", "expected at least 10 candidates")
    if (p["workspace_min"] is None) != (p["workspace_max"] is None):
        _fail("postures.workspace_min", "give both workspace_min and workspace_max or none")
    if p["workspace_min"] is not None:
        for k in ("workspace_min", "workspace_max"):
            if len(p[k]) != 3:
                _fail(f"postures.{k}", "expected [x, y, z] in metres")
        if any(a >= b for a, b in zip(p["workspace_min"], p["workspace_max"])):
            _fail("postures.workspace_max", "every bound must exceed workspace_min")
    if p["max_postures"] < 2:
        _fail("postures.max_postures", "expected at least 2")
    if not 0 < p["plateau"] < 1:
        _fail("postures.plateau", "expected a fraction in (0, 1)")


def load_calibration_config(path: str, data_override: str | None = None,
                            validation_override: str | None = None,
                            bags: list[str] | None = None,
                            urdf: str | None = None) -> dict:
    """Read, validate and complete the calibration YAML at ``path`` (``urdf``: start from
    that model, e.g. one whose inertias were identified, instead of ``robot.urdf``)."""
    raw = override_urdf(resolve_example_urdfs(
        read_yaml(path), (("robot", "urdf"), ("postures", "collision_urdf"))), urdf)
    if isinstance(raw, dict):
        if data_override is not None or validation_override is not None:
            raw["data"] = dict(raw.get("data") or {})
        if data_override is not None:
            raw["data"]["path"] = os.path.abspath(data_override)
        if validation_override is not None:
            raw["data"]["validation"] = os.path.abspath(validation_override)
        if bags:
            raw["bag"] = dict(raw.get("bag") or {}, paths=[os.path.abspath(b) for b in bags])
    cfg = validate(raw, os.path.dirname(os.path.abspath(path)), SCHEMA, OPTIONAL, _cross_check)
    cfg["_file"] = os.path.abspath(path)
    return cfg


__all__ = ["ConfigError", "SCHEMA", "load_calibration_config"]

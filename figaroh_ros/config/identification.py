"""Identification config: one YAML per robot and task, validated before anything runs.

Every field, its type and its default are declared in ``SCHEMA`` below; the README
documents them. A config with a missing required field, an unknown field, a wrong type,
a wrong array length, a NaN or an unknown option is refused with a :class:`ConfigError`
that names the field and what was expected. Relative paths are resolved against the
directory of the config file.
"""
from __future__ import annotations

import math
import os
from typing import Any

import numpy as np
import yaml

from figaroh_ros.errors import ConfigError
from figaroh_ros.model.robot import resolve_urdf

REQUIRED = object()

# field -> (type, default or REQUIRED, allowed values or None)
SCHEMA: dict[str, dict[str, tuple]] = {
    "robot": {
        "name": (str, REQUIRED, None),
        "urdf": ("path", REQUIRED, None),
        "joints": ("strlist", REQUIRED, None),
        "floating_base": (bool, False, None),
        # gravitational acceleration in the base frame (m/s^2): a wall or ceiling mount
        # (seed 003); default upright, (0, 0, -9.81)
        "gravity": ("floatlist", None, None),
    },
    "transmission": {
        "gear_ratios": ("floatlist", None, None),
        "coupling": (list, [], None),
    },
    "model": {
        "viscous_friction": (bool, True, None),
        "coulomb_friction": (bool, True, None),
        "coulomb_model": (str, "sign", ("sign", "tanh")),
        "coulomb_velocity": (float, 0.01, None),
        "rotor_inertia": (bool, True, None),
        "torque_offset": (bool, True, None),
        "coupled_convention": (str, "motor", ("motor", "lumped")),
    },
    "data": {
        "format": (str, REQUIRED, ("csv_pair", "csv_table", "bag")),
        "path": ("path", REQUIRED, None),
        "positions": (str, None, None),
        "torques": (str, None, None),
        "table": (str, None, None),
        "time_column": (str, None, None),
        "position_column": (str, "{joint}_position", None),
        "torque_column": (str, "{joint}_effort", None),
        "sample_time": (float, None, None),
        "motor_side": (bool, False, None),
        "joint_offsets": ("floatlist", None, None),
        "rows": ("intlist", None, None),
        # format bag: sensor_msgs/JointState topics; the window between the executor's marks
        "joint_topic": (str, "/joint_states", None),
        "torque_topic": (str, "/motor_currents", None),
        "events_topic": (str, "/figaroh/posture_events", None),
        "wrench_topic": (str, "/force_plate/wrench", None),   # measurements.kind wrench
        "resample_hz": (float, None, None),
    },
    "processing": {
        "position_cutoff_hz": (float, None, None),
        "filter_order": (int, 4, None),
        "decimation": (int, 1, None),
        "min_velocity": (float, 0.0, None),
    },
    "estimation": {
        "method": (str, "wls", ("ols", "wls")),
        "essential_ratio": (float, 30.0, None),
        "validation_fraction": (float, 0.2, None),
        "cross_validation_folds": (int, 4, None),     # 0: none
    },
    # what the recording measures: joint torques, or the external wrench on a force plate
    # (floating-base model; seed 000 Eq. 2, Table I)
    "measurements": {
        "kind": (str, "torques", ("torques", "wrench")),
        "contact_frame": (str, None, None),      # fixed in the world (default: root link)
        "plate_xyz": ("floatlist", None, None),  # plate pose in the world (= the contact
        "plate_rpy": ("floatlist", None, None),  # frame); default identity
        "wrench_columns": ("strlist", None, None),   # csv_table: fx fy fz mx my mz
    },
    # physically consistent standard parameters (figaroh_ros.identification.physical), written to a URDF
    "physical": {
        "method": (str, "none", ("none", "lmi", "qp", "cholesky")),
        "alpha": (float, 1.0, None),            # weight of the prior around the URDF values
        "prior_relative": (float, 0.3, None),   # prior std: fraction of each link's mass ...
        "prior_length": (float, 0.1, None),     # ... times this length (m) per moment order
        "total_mass": (float, None, None),      # qp: the robot's weighed mass (kg)
        "com_margin": (float, 0.05, None),      # qp / cholesky: CoM within this of nominal (m)
    },
    "output": {
        "plots": (bool, True, None),
    },
}
OPTIONAL_SECTIONS = {"transmission", "processing", "estimation", "measurements", "physical",
                     "output"}


def _fail(field: str, msg: str):
    raise ConfigError(f"config field '{field}': {msg}")


def _finite(field, x):
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        _fail(field, f"expected a number, got {x!r}")
    if not math.isfinite(float(x)):
        _fail(field, f"expected a finite number, got {x!r}")
    return float(x)


def _coerce(field: str, kind, value, base_dir: str):
    if kind == "path":
        if not isinstance(value, str) or not value:
            _fail(field, f"expected a file or folder path, got {value!r}")
        path = value if os.path.isabs(value) else os.path.normpath(os.path.join(base_dir, value))
        if not os.path.exists(path):
            _fail(field, f"path does not exist: {path}")
        return path
    if kind == "strlist":
        if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
            _fail(field, f"expected a non-empty list of names, got {value!r}")
        if len(set(value)) != len(value):
            _fail(field, f"names are repeated in {value}")
        return value
    if kind in ("floatlist", "intlist"):
        if not isinstance(value, list):
            _fail(field, f"expected a list of numbers, got {value!r}")
        out = [_finite(f"{field}[{i}]", v) for i, v in enumerate(value)]
        if kind == "intlist":
            if any(v != int(v) for v in out):
                _fail(field, f"expected whole numbers, got {value}")
            out = [int(v) for v in out]
        return out
    if kind is float:
        return _finite(field, value)
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            _fail(field, f"expected a whole number, got {value!r}")
        return value
    if kind is bool:
        if not isinstance(value, bool):
            _fail(field, f"expected true or false, got {value!r}")
        return value
    if kind is str:
        if not isinstance(value, str):
            _fail(field, f"expected a string, got {value!r}")
        return value
    if kind is list:
        if not isinstance(value, list):
            _fail(field, f"expected a list, got {value!r}")
        return value
    if kind is dict:
        if not isinstance(value, dict):
            _fail(field, f"expected a mapping, got {value!r}")
        return value
    if kind == "boollist":
        if not isinstance(value, list) or not all(isinstance(v, bool) for v in value):
            _fail(field, f"expected a list of true/false, got {value!r}")
        return value
    raise AssertionError(kind)


def validate(raw: Any, base_dir: str, schema: dict | None = None,
             optional: set | None = None, cross_check=None) -> dict:
    """Return a complete config (defaults filled in) or raise :class:`ConfigError`.

    ``schema``/``optional``/``cross_check`` default to the identification config's."""
    schema = SCHEMA if schema is None else schema
    optional = OPTIONAL_SECTIONS if optional is None else optional
    cross_check = _cross_check if cross_check is None else cross_check
    if not isinstance(raw, dict):
        raise ConfigError("config must be a YAML mapping with sections "
                          f"{sorted(schema)}")
    for sec in raw:
        if sec not in schema:
            raise ConfigError(f"unknown config section '{sec}'; known: {sorted(schema)}")
    cfg: dict = {}
    for sec, fields in schema.items():
        given = raw.get(sec)
        if given is None:
            if sec not in optional:
                raise ConfigError(f"config section '{sec}' is missing")
            given = {}
        if not isinstance(given, dict):
            raise ConfigError(f"config section '{sec}' must be a mapping")
        for key in given:
            if key not in fields:
                raise ConfigError(f"unknown config field '{sec}.{key}'; known: {sorted(fields)}")
        out = {}
        for key, (kind, default, allowed) in fields.items():
            name = f"{sec}.{key}"
            if key not in given or given[key] is None:
                if default is REQUIRED:
                    _fail(name, "is required")
                out[key] = default
                continue
            val = _coerce(name, kind, given[key], base_dir)
            if allowed is not None and val not in allowed:
                _fail(name, f"expected one of {list(allowed)}, got {val!r}")
            out[key] = val
        cfg[sec] = out
    cross_check(cfg)
    return cfg


def _cross_check(cfg: dict):
    joints = cfg["robot"]["joints"]
    n = len(joints)
    for field in ("transmission.gear_ratios", "data.joint_offsets"):
        sec, key = field.split(".")
        val = cfg[sec][key]
        if val is not None and len(val) != n:
            _fail(field, f"expected {n} values (one per joint of robot.joints), got {len(val)}")
    if cfg["transmission"]["gear_ratios"] is not None and 0.0 in cfg["transmission"]["gear_ratios"]:
        _fail("transmission.gear_ratios", "a gear ratio cannot be 0")
    for i, c in enumerate(cfg["transmission"]["coupling"]):
        f = f"transmission.coupling[{i}]"
        if not isinstance(c, dict) or set(c) != {"motor", "joint", "coefficient"}:
            _fail(f, "expected {motor: <joint name>, joint: <joint name>, coefficient: <number>}")
        for k in ("motor", "joint"):
            if c[k] not in joints:
                _fail(f"{f}.{k}", f"unknown joint {c[k]!r}; expected one of {joints}")
        _finite(f"{f}.coefficient", c["coefficient"])
    d = cfg["data"]
    if d["format"] == "csv_pair":
        for k in ("positions", "torques"):
            if not d[k]:
                _fail(f"data.{k}", "is required with format csv_pair")
        if d["sample_time"] is None:
            _fail("data.sample_time", "is required with format csv_pair (seconds)")
    elif d["format"] == "csv_table":
        if not d["table"]:
            _fail("data.table", "is required with format csv_table")
        if d["sample_time"] is None and d["time_column"] is None:
            _fail("data.time_column", "give a time column or data.sample_time")
    if d["sample_time"] is not None and d["sample_time"] <= 0:
        _fail("data.sample_time", f"expected a positive period in seconds, got {d['sample_time']}")
    if d["rows"] is not None and (len(d["rows"]) != 2 or d["rows"][0] >= d["rows"][1]
                                  or d["rows"][0] < 0):
        _fail("data.rows", f"expected [first, last) with 0 <= first < last, got {d['rows']}")
    p = cfg["processing"]
    if p["decimation"] < 1:
        _fail("processing.decimation", f"expected an integer >= 1, got {p['decimation']}")
    if p["filter_order"] < 1 or p["filter_order"] > 10:
        _fail("processing.filter_order", f"expected 1..10, got {p['filter_order']}")
    if p["min_velocity"] < 0:
        _fail("processing.min_velocity", "expected a velocity >= 0 (rad/s)")
    if p["position_cutoff_hz"] is not None and p["position_cutoff_hz"] <= 0:
        _fail("processing.position_cutoff_hz", "expected a frequency > 0 Hz")
    if cfg["model"]["coulomb_velocity"] <= 0:
        _fail("model.coulomb_velocity", "expected a velocity > 0 (rad/s)")
    e = cfg["estimation"]
    if not 0.0 <= e["validation_fraction"] < 0.9:
        _fail("estimation.validation_fraction", "expected a fraction in [0, 0.9)")
    if e["essential_ratio"] <= 1:
        _fail("estimation.essential_ratio", "expected a ratio > 1")
    if e["cross_validation_folds"] == 1 or e["cross_validation_folds"] < 0:
        _fail("estimation.cross_validation_folds", "expected 0 (none) or >= 2 folds")
    m = cfg["measurements"]
    if m["kind"] == "wrench":
        if not cfg["robot"]["floating_base"]:
            _fail("measurements.kind", "a wrench measurement needs robot.floating_base: true")
        for key in ("plate_xyz", "plate_rpy"):
            if m[key] is not None and len(m[key]) != 3:
                _fail(f"measurements.{key}", f"expected 3 numbers, got {m[key]}")
        if m["wrench_columns"] is not None and len(m["wrench_columns"]) != 6:
            _fail("measurements.wrench_columns", "expected 6 names: fx fy fz mx my mz")
        if cfg["data"]["format"] == "csv_pair":
            _fail("data.format", "a wrench measurement is read from a csv_table or a bag "
                  "(data.wrench_topic), not a csv_pair")
    g = cfg["robot"]["gravity"]
    if g is not None and (len(g) != 3 or not 1.0 < float(np.linalg.norm(g)) < 100.0):
        _fail("robot.gravity", f"expected 3 components of an acceleration (m/s^2), got {g}")
    ph = cfg["physical"]
    for key in ("alpha", "prior_relative", "prior_length", "com_margin"):
        if ph[key] < 0 or (key != "alpha" and ph[key] == 0):
            _fail(f"physical.{key}", f"expected a value > 0, got {ph[key]}")
    if ph["total_mass"] is not None and ph["total_mass"] <= 0:
        _fail("physical.total_mass", f"expected a mass > 0 kg, got {ph['total_mass']}")


def read_yaml(path: str):
    """The YAML document at ``path``, or a :class:`ConfigError` saying why not."""
    if not os.path.isfile(path):
        raise ConfigError(f"config file not found: {path}")
    try:
        with open(path) as f:
            return yaml.safe_load(f)
    except yaml.YAMLError as exc:
        raise ConfigError(f"config {path} is not valid YAML: {exc}") from exc


def resolve_example_urdfs(raw, fields=(("robot", "urdf"),)):
    """Replace ``example-robot-data:<relative>`` values of ``raw[section][key]`` (for each
    ``(section, key)`` of ``fields``) by the path of that URDF in the installed wheel."""
    if not isinstance(raw, dict):
        return raw
    for sec, key in fields:
        d = raw.get(sec)
        if isinstance(d, dict) and str(d.get(key, "")).startswith("example-robot-data:"):
            d[key] = resolve_urdf(d[key])
    return raw


def override_urdf(raw, urdf: str | None):
    """``robot.urdf`` of a raw config replaced by ``urdf`` (a model to start from instead
    of the nominal one, e.g. the output of an earlier calibration)."""
    if urdf is not None and isinstance(raw, dict) and isinstance(raw.get("robot"), dict):
        raw["robot"]["urdf"] = os.path.abspath(urdf)
    return raw


def nominal_urdf(path: str) -> str | None:
    """The absolute ``robot.urdf`` of the config file at ``path`` (``example-robot-data:``
    resolved, relative paths from the config's folder), or None if it names none."""
    raw = resolve_example_urdfs(read_yaml(path))
    robot = raw.get("robot") if isinstance(raw, dict) else None
    urdf = robot.get("urdf") if isinstance(robot, dict) else None
    if not isinstance(urdf, str):
        return None
    return os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(path)), urdf))


def load_config(path: str, data_override: str | None = None,
                bag: str | None = None, urdf: str | None = None) -> dict:
    """Read, validate and complete the YAML config at ``path`` (``bag``: read the recording
    from that rosbag2 folder instead; ``urdf``: start from that model, not
    ``robot.urdf``)."""
    raw = override_urdf(resolve_example_urdfs(read_yaml(path)), urdf)
    if bag is not None and isinstance(raw, dict) and isinstance(raw.get("data"), dict):
        raw["data"]["format"] = "bag"
        raw["data"]["path"] = os.path.abspath(bag)
    if data_override is not None and isinstance(raw, dict) and isinstance(raw.get("data"), dict):
        raw["data"]["path"] = os.path.abspath(data_override)
    cfg = validate(raw, os.path.dirname(os.path.abspath(path)))
    cfg["_file"] = os.path.abspath(path)
    return cfg

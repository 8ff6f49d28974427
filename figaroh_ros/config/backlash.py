"""Backlash config (``figaroh-ros identify-backlash``)."""
from __future__ import annotations

import os

from figaroh_ros.config.identification import (
    REQUIRED, read_yaml, resolve_example_urdfs, validate
)
from figaroh_ros.errors import ConfigError

SCHEMA = {
    "robot": {"name": (str, REQUIRED, None), "urdf": ("path", REQUIRED, None)},
    "backlash": {
        "joints": ("strlist", REQUIRED, None),
        "motor_topic": (str, "/joint_states", None),
        "link_topic": (str, "/link_encoders", None),
        "validation_fraction": (float, 0.3, None),
        "max_degree": (int, 4, None),
        "cutoff_hz": (float, 10.0, None),
        "min_speed_rad_s": (float, 0.05, None),
        "min_range_rad": (float, 0.2, None),
    },
}


def load_backlash_config(path: str) -> dict:
    raw = resolve_example_urdfs(read_yaml(path))
    cfg = validate(raw, os.path.dirname(os.path.abspath(path)), SCHEMA, set(),
                   cross_check=lambda c: None)
    b = cfg["backlash"]
    if not 0.1 <= b["validation_fraction"] <= 0.5:
        raise ConfigError("config field 'backlash.validation_fraction': expected 0.1 .. 0.5")
    if b["min_speed_rad_s"] < 0:
        raise ConfigError("config field 'backlash.min_speed_rad_s': expected >= 0")
    if not 1 <= b["max_degree"] <= 6:
        raise ConfigError("config field 'backlash.max_degree': expected 1 .. 6")
    return cfg

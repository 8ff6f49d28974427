"""Suspension config (``figaroh-ros identify-suspension``)."""
from __future__ import annotations

import os

import numpy as np

from figaroh_ros.config.identification import REQUIRED, read_yaml, validate
from figaroh_ros.errors import ConfigError

SCHEMA = {
    "robot": {"name": (str, REQUIRED, None)},
    "suspension": {
        "wheel_positions": (list, None, None),
        "wrench_topic": (str, "/force_plate/wrench", None),
        "base_pose_topic": (str, "/mocap/base_pose", None),
        "rest_seconds": (float, 1.0, None),
        "cutoff_hz": (float, 2.0, None),
        "validation_fraction": (float, 0.3, None),
    },
}


def load_suspension_config(path: str) -> dict:
    cfg = validate(read_yaml(path), os.path.dirname(os.path.abspath(path)), SCHEMA, set(),
                   cross_check=lambda c: None)
    s = cfg["suspension"]
    w = s["wheel_positions"]
    if w is not None:
        try:
            arr = np.asarray(w, float)
            assert arr.shape == (6, 3) and np.all(np.isfinite(arr))
        except (TypeError, ValueError, AssertionError):
            raise ConfigError("config field 'suspension.wheel_positions': expected six "
                              "[x, y, z]") from None
    if not 0.1 <= s["validation_fraction"] <= 0.5:
        raise ConfigError("config field 'suspension.validation_fraction': expected 0.1 .. 0.5")
    return cfg

"""Drive and sensor gains config (``figaroh-ros identify-gains``): an identification config
with a ``tls`` section."""
from __future__ import annotations

import os

from figaroh_ros.config.identification import (
    OPTIONAL_SECTIONS, REQUIRED, SCHEMA, read_yaml, resolve_example_urdfs, validate
)
from figaroh_ros.errors import ConfigError

TLS_SCHEMA = {
    "unloaded": ("path", REQUIRED, None),
    "loaded": ("path", REQUIRED, None),
    "current_column": (str, None, None),
    "sensor_column": (str, None, None),
    "current_topic": (str, None, None),
    "sensor_topic": (str, None, None),
    "payload_mass": (float, REQUIRED, None),
    "payload_com": ("floatlist", None, None),
    "payload_inertia": ("floatlist", None, None),
    "payload_joint": (str, None, None),
}


def load_gains_config(path: str) -> dict:
    """An identification config with a ``tls`` section, validated (errors name the field)."""
    raw = resolve_example_urdfs(read_yaml(path))
    if isinstance(raw, dict) and isinstance(raw.get("data"), dict):
        raw["data"].setdefault("path", ".")       # the folders are tls.unloaded / loaded
    schema = dict(SCHEMA, tls=TLS_SCHEMA)
    cfg = validate(raw, os.path.dirname(os.path.abspath(path)), schema, OPTIONAL_SECTIONS)
    t = cfg["tls"]
    fmt = cfg["data"]["format"]
    if fmt not in ("csv_table", "bag"):
        raise ConfigError("config field 'data.format': identify-gains reads csv_table files "
                          "or bags")
    kind = "topic" if fmt == "bag" else "column"
    if t[f"current_{kind}"] is None and t[f"sensor_{kind}"] is None:
        raise ConfigError(f"config field 'tls': give current_{kind}, sensor_{kind} or both "
                          f"(data.format {fmt})")
    if t["payload_mass"] <= 0:
        raise ConfigError("config field 'tls.payload_mass': expected a mass > 0 kg")
    if t["payload_com"] is not None and len(t["payload_com"]) != 3:
        raise ConfigError("config field 'tls.payload_com': expected 3 numbers")
    if t["payload_inertia"] is not None:
        if len(t["payload_inertia"]) != 6:
            raise ConfigError("config field 'tls.payload_inertia': expected 6 numbers")
        if t["payload_com"] is None:
            raise ConfigError("config field 'tls.payload_inertia': needs tls.payload_com")
    cfg["_file"] = os.path.abspath(path)
    return cfg

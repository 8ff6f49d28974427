"""Drive and sensor gains config (``figaroh-ros identify-gains``): an identification config
with a ``tls`` section, an unloaded and a loaded experiment with a known payload (total
least squares, seed 000 Eq. 8-10)."""
from __future__ import annotations

import os

from pydantic import Field, model_validator

from figaroh_ros.config.base import Refused, Section, parse
from figaroh_ros.config.fields import ColumnTemplate, Name, Path, Real, Topic, Vector3
from figaroh_ros.config.identification import IdentificationConfig
from figaroh_ros.config.yaml_file import read_mapping


class Tls(Section):
    """The two experiments and the payload that tells them apart."""

    unloaded: Path = Field(description="folder (or bag) of the experiment without payload")
    loaded: Path = Field(description="folder (or bag) of the experiment with the payload")
    current_column: ColumnTemplate | None = Field(None, description="`csv_table`: motor "
                                                  "current column template, e.g. "
                                                  "`{joint}_current`")
    sensor_column: ColumnTemplate | None = Field(None, description="`csv_table`: joint "
                                                 "torque sensor column template")
    current_topic: Topic | None = Field(None, description="`bag`: JointState topic whose "
                                       "`effort` holds the motor currents")
    sensor_topic: Topic | None = Field(None, description="`bag`: JointState topic of the "
                                      "torque sensors")
    payload_mass: float = Field(gt=0, le=1e4, description="payload mass, kg")
    payload_com: Vector3 | None = Field(None, description="payload centre of mass in the "
                                        "joint frame, m (default: estimated)")
    payload_inertia: list[Real] | None = Field(None, min_length=6, max_length=6, description=""
                                                "Ixx Ixy Ixz Iyy Iyz Izz about the centre of "
                                                "mass, kg.m^2 (needs `payload_com`)")
    payload_joint: Name | None = Field(None, description="joint carrying the payload "
                                       "(default: the last active joint)")


class GainsConfig(IdentificationConfig):
    """Drive (current) and torque sensor gains by TLS (`figaroh-ros identify-gains`); its
    `data.path` defaults to the config's folder."""

    tls: Tls

    @model_validator(mode="after")
    def _readings(self):
        fmt, t = self.data.format, self.tls
        if fmt not in ("csv_table", "bag"):
            raise Refused("data.format", "identify-gains reads csv_table files or bags", fmt)
        kind = "topic" if fmt == "bag" else "column"
        if getattr(t, f"current_{kind}") is None and getattr(t, f"sensor_{kind}") is None:
            raise Refused("tls", f"give current_{kind}, sensor_{kind} or both (data.format "
                          f"{fmt})")
        if os.path.realpath(t.unloaded) == os.path.realpath(t.loaded):
            raise Refused("tls.loaded", "expected a recording other than tls.unloaded (the "
                          "payload is what tells the two apart)", t.loaded)
        if t.payload_inertia is not None and t.payload_com is None:
            raise Refused("tls.payload_inertia", "needs tls.payload_com")
        return self


def parse_gains_config(path: str) -> GainsConfig:
    """The gains config at ``path``, typed."""
    raw = read_mapping(path)
    if isinstance(raw.get("data"), dict):
        raw["data"] = {"path": ".", **raw["data"]}   # the folders are tls.unloaded / loaded
    return parse(GainsConfig, raw, path)


def load_gains_config(path: str) -> dict:
    """An identification config with a ``tls`` section, validated, as a plain dict."""
    cfg = parse_gains_config(path).model_dump()
    cfg["_file"] = os.path.abspath(path)
    return cfg

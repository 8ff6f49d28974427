"""Drive and sensor gains config (``figaroh-ros identify-gains``): an identification config
with a ``tls`` section, an unloaded and a loaded experiment with a known payload (total
least squares, Nguyen et al. 2023 Eq. 8-10)."""
from __future__ import annotations

import os

import numpy as np
from pydantic import Field, model_validator

from figaroh_ros.config.base import Refused, Section, parse
from figaroh_ros.config.fields import ColumnTemplate, Name, Path, Real, Topic, Vector3
from figaroh_ros.config.identification import IdentificationConfig
from figaroh_ros.config.yaml_file import read_mapping
from figaroh_ros.errors import ConfigError
from figaroh_ros.identification.payload_feasibility import BOX_FIELD, PayloadBounds


class PayloadBox(Section):
    """The box that holds the payload object, in the payload joint's frame (m): its centre
    of mass, and all its mass, lie inside."""

    lower: Vector3 = Field(description="corner of smallest x, y, z, m")
    upper: Vector3 = Field(description="corner of largest x, y, z, m (above `lower` on "
                           "every axis)")

    @model_validator(mode="after")
    def _representable(self):
        """Ordered corners and a box the feasibility test can represent (the same check
        the identification makes, here before anything runs)."""
        try:
            PayloadBounds(tuple(self.lower), tuple(self.upper))
        except ConfigError as exc:
            raise Refused("upper", str(exc).removeprefix(f"{BOX_FIELD}: "),
                          self.upper) from None
        return self


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
    payload_box: PayloadBox | None = Field(None, description="box holding the payload "
                                           "object (joint frame): the identified payload's "
                                           "centre of mass must lie inside, its mass in "
                                           "the box's circumscribed ellipsoid (default: "
                                           "no bound)")
    physical_payload: bool = Field(True, description="bring a payload that no object can "
                                   "have (pseudo-inertia not positive semidefinite, or "
                                   "outside `payload_box`) onto the closest realisable one "
                                   "in the fit's information metric, the gains and robot "
                                   "parameters following (false: keep it, with a warning); "
                                   "a realisable payload is never changed")

    @model_validator(mode="before")
    @classmethod
    def _whole_box(cls, raw):
        box = raw.get("payload_box") if isinstance(raw, dict) else None
        if isinstance(box, dict) and not {"lower", "upper"} <= set(box):
            raise Refused("payload_box", "expected both corners, `lower` and `upper`", box)
        return raw


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
        _known_payload_realisable(t)
        return self


def _known_payload_realisable(t: Tls) -> None:
    """A given centre of mass inside the box; a given inertia about it that some object
    has: principal moments >= 0 and each at most the sum of the other two (Wensing et al.
    2017: the pseudo-inertia is then positive semidefinite)."""
    box = t.payload_box
    if box is not None and t.payload_com is not None and not all(
            lo <= c <= hi for lo, c, hi in zip(box.lower, t.payload_com, box.upper)):
        raise Refused("tls.payload_com", f"expected inside tls.payload_box (lower "
                      f"{box.lower}, upper {box.upper})", t.payload_com)
    if t.payload_inertia is None:
        return
    xx, xy, xz, yy, yz, zz = t.payload_inertia
    p = np.linalg.eigvalsh(np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]]))
    tol = 1e-12 * max(abs(p).max(), 1e-300)
    if p[0] < -tol or p[0] + p[1] < p[2] - tol:
        raise Refused("tls.payload_inertia", f"expected the inertia of an object: principal "
                      f"moments {np.round(p, 9).tolist()} must be >= 0 and each at most the "
                      f"sum of the other two", t.payload_inertia)


def parse_gains_config(path: str) -> GainsConfig:
    """The gains config at ``path``, typed."""
    raw = read_mapping(path)
    if isinstance(raw.get("data"), dict):
        raw["data"] = {"path": ".", **raw["data"]}   # the folders are tls.unloaded / loaded
    return parse(GainsConfig, raw, path)


def load_gains_config(path: str) -> GainsConfig:
    """An identification config with a ``tls`` section, validated (:func:`parse_gains_config`;
    ConfigError naming the file and field otherwise)."""
    return parse_gains_config(path)

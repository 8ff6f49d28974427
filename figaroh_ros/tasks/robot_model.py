"""The nominal model a task starts from, wherever the config's ``robot.source`` says it is.

``resolved_robot(section, config_path, bags)`` resolves ``robot.source`` (``figaroh_ros.io.
bag_model.nominal_model``): a ``urdf`` stays the file it names; a ``xacro`` expansion or
the model recorded in a bag is written once, content-addressed, into the model cache
(``$FIGAROH_MODEL_CACHE``, default ``~/.cache/figaroh_ros/models``) and the returned
section's ``urdf`` points at it, so that every later step reads a file.  The provenance (source, location,
sha256 of the exact text, xacro arguments) is returned for ``result.yaml``.
"""
from __future__ import annotations

import os
from typing import TypeVar

from pydantic import BaseModel

import figaroh_ros.io   # the bag's model reader, loaded when there are bags
from figaroh_ros.model.sources import resolve_model_source, write_model

S = TypeVar("S", bound=BaseModel)
C = TypeVar("C", bound=BaseModel)


def model_cache() -> str:
    return os.environ.get("FIGAROH_MODEL_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "figaroh_ros", "models")


def resolved_robot(section: S, config_path: str, bags: list[str] | None = None
                   ) -> tuple[S, dict]:
    """The config's ``robot`` section (a pydantic model) with ``urdf`` the file its model
    source gives (a copy; the section itself when the source is a URDF file), and the
    model's provenance as a dict."""
    base_dir = os.path.dirname(os.path.abspath(config_path))
    xml, provenance = _nominal_model(section, base_dir, bags)
    if (section.source or "urdf") != "urdf":
        section = section.model_copy(update={"urdf": write_model(xml, model_cache())})
    return section, provenance.to_dict()


def with_resolved_robot(cfg: C, config_path: str, bags: list[str] | None = None
                        ) -> tuple[C, dict]:
    """The config (a pydantic model with a ``robot`` section) whose ``robot.urdf`` is the
    file of its model source (:func:`resolved_robot`), and the provenance."""
    robot, provenance = resolved_robot(cfg.robot, config_path, bags)
    return cfg.model_copy(update={"robot": robot}), provenance


def resolve_robot(cfg: dict, config_path: str, bags: list[str] | None = None) -> dict:
    """Resolve ``cfg["robot"]``'s model source in place (a config as a mapping); its
    provenance as a dict."""
    section = cfg["robot"]
    base_dir = os.path.dirname(os.path.abspath(config_path))
    xml, provenance = _nominal_model(section, base_dir, bags)
    if (section.get("source") or "urdf") != "urdf":
        section["urdf"] = write_model(xml, model_cache())
    return provenance.to_dict()


def _nominal_model(section, base_dir: str, bags: list[str] | None):
    """``io.bag_model.nominal_model``; without bags, the sources that need none, so that a
    task reading CSV files does not load the bag readers (rosbags, mcap)."""
    if bags:
        return figaroh_ros.io.bag_model.nominal_model(section, base_dir, bags=bags)
    return resolve_model_source(section, base_dir, {})

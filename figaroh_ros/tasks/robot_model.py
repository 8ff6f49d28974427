"""The nominal model a task starts from, wherever the config's ``robot.source`` says it is.

``resolved_robot(cfg, config_path, bags)`` resolves ``robot.source`` of a typed config
(``figaroh_ros.io.bag_model.nominal_model``): a ``urdf`` stays the file it names; a
``xacro`` expansion or the model recorded in a bag is written once, content-addressed,
into the model cache (``$FIGAROH_MODEL_CACHE``, default ``~/.cache/figaroh_ros/models``)
and the returned copy's ``robot.urdf`` points at it, so that every later step reads a
file.  The provenance (source, location, sha256 of the exact text, xacro arguments) is
returned for ``result.yaml``.  ``config_model`` builds the model of a typed
identification config.
"""
from __future__ import annotations

import os

import figaroh_ros.io   # the bag's model reader, loaded when there are bags
from figaroh_ros.model.loading import load_model
from figaroh_ros.model.robot import RobotModel, configured_urdf, with_locked_joints
from figaroh_ros.model.sources import resolve_model_source, write_model


def model_cache() -> str:
    return os.environ.get("FIGAROH_MODEL_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "figaroh_ros", "models")


def resolved_robot(cfg, config_path: str, bags: list[str] | None = None):
    """``(config, provenance)``: a copy of the typed config ``cfg`` whose ``robot.urdf``
    is the file of its model source (the module documentation), and the provenance."""
    base_dir = os.path.dirname(os.path.abspath(config_path))
    xml, provenance = _nominal_model(cfg.robot, base_dir, bags)
    if (cfg.robot.source or "urdf") != "urdf":
        robot = cfg.robot.model_copy(update={"urdf": write_model(xml, model_cache())})
        cfg = cfg.model_copy(update={"robot": robot})
    return cfg, provenance.to_dict()


def config_model(cfg, urdf: str | None = None) -> RobotModel:
    """The model of a typed identification config's ``robot`` and ``transmission``
    sections, from ``urdf`` (default: ``robot.urdf``).  ModelError as the loader raises."""
    r, tr = cfg.robot, cfg.transmission
    robot = load_model(configured_urdf(urdf or r.urdf, r.remove_links), list(r.joints),
                       floating_base=r.floating_base, gear_ratios=tr.gear_ratios,
                       coupling=[c.model_dump() for c in tr.coupling], gravity=r.gravity)
    return with_locked_joints(robot, r.lock_joints)


def _nominal_model(section, base_dir: str, bags: list[str] | None):
    """``io.bag_model.nominal_model``; without bags, the sources that need none, so that a
    task reading CSV files does not load the bag readers (rosbags, mcap)."""
    if bags:
        return figaroh_ros.io.bag_model.nominal_model(section, base_dir, bags=bags)
    return resolve_model_source(section, base_dir, {})

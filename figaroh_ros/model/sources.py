"""Where the nominal model comes from: a URDF file, a xacro file with the robot's own
arguments, the live ``robot_description``, or the one recorded in a bag.

A real robot's model is built by xacro with arguments of that robot (a UR's factory
calibration, a TIAGo's end effector) and published by robot_state_publisher on
``/robot_description`` (transient local) and as its ``robot_description`` parameter; the
recorder copies it into every bag.  :func:`resolve_model_source` returns the URDF text of
the configured source and its provenance, whose ``sha256`` (of the exact text used) goes
into every result.

The core stays free of ROS and of bag reading: the sources that need them (``topic``,
``parameter``: ``figaroh_ros.ros.description``; ``bag``: ``figaroh_ros.io.bag_model``) are
passed in as ``providers`` (source name -> function of the section returning the text).
"""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from typing import Callable

import xacro

from figaroh_ros.errors import ConfigError, ModelError
from figaroh_ros.model.robot import resolve_urdf
from figaroh_ros.model.urdf_checks import check_urdf_file, check_urdf_text

SOURCES = ("urdf", "xacro", "topic", "parameter", "bag")
LIVE = ("topic", "parameter")


@dataclass
class ModelProvenance:
    """What model a result was computed with."""

    source: str                    # one of SOURCES
    location: str                  # file, topic, node or bag folder(s)
    sha256: str                    # of the URDF text used
    arguments: dict[str, str] = field(default_factory=dict)   # xacro arguments

    def to_dict(self) -> dict:
        return {"source": self.source, "location": self.location, "sha256": self.sha256,
                "arguments": dict(self.arguments)}


def model_sha256(urdf_xml: str) -> str:
    return hashlib.sha256(urdf_xml.encode("utf-8")).hexdigest()


def _get(section, name: str, default=None):
    return section.get(name, default) if isinstance(section, dict) \
        else getattr(section, name, default)


def read_urdf(path: str, base_dir: str) -> tuple[str, str]:
    """(text, absolute path) of a URDF file or ``example-robot-data:<relative>``."""
    try:
        resolved = resolve_urdf(path, base_dir)
    except ConfigError as exc:     # the path rules' error: a model problem here
        raise ModelError(str(exc)) from None
    return check_urdf_file(resolved), resolved


def run_xacro(path: str, arguments: dict[str, str], base_dir: str) -> tuple[str, str]:
    """(URDF text, absolute path) of a xacro file expanded with ``arguments`` (the
    ``name:=value`` pairs of ``xacro file.xacro name:=value``)."""
    path = os.path.abspath(os.path.join(base_dir, path))
    if not os.path.isfile(path):
        raise ModelError(f"xacro file not found: {path}")
    try:
        doc = xacro.process_file(path, mappings={str(k): str(v)
                                                 for k, v in arguments.items()})
    except Exception as exc:       # xacro raises XacroException, XML and name errors
        raise ModelError(f"xacro {path} (arguments {arguments}): {exc}") from None
    text = doc.toxml()
    try:
        check_urdf_text(text)
    except ModelError as exc:
        raise ModelError(f"xacro {path} (arguments {arguments}) made an invalid URDF: "
                         f"{exc}") from None
    return text, path


def _provided(section, source: str, providers) -> tuple[str, str]:
    provider = (providers or {}).get(source)
    if provider is None:
        if source in LIVE:
            raise ModelError(f"robot.source {source!r} reads the model from the running "
                             "robot: only the executor node can (a ROS graph); offline, "
                             "record a bag and use source: bag (with --bag), or name a "
                             "file (source: urdf or xacro, or --urdf FILE)")
        raise ModelError("robot.source 'bag' needs the recording (pass --bag)")
    text, location = provider(section)
    try:
        check_urdf_text(text)
    except ModelError as exc:
        raise ModelError(f"the robot_description from {location}: {exc}") from None
    return text, location


def resolve_model_source(section, base_dir: str, providers: dict[str, Callable] | None = None
                         ) -> tuple[str, ModelProvenance]:
    """(URDF text, provenance) of the model a config's ``robot`` section names.

    ``section``: the robot section (attributes or mapping): ``source`` (default ``urdf``),
    ``urdf``, ``xacro``, ``xacro_args``, ``description_topic``, ``description_node``;
    ``base_dir``: the folder relative paths start from (the config's); ``providers``:
    ``{source: f(section) -> (text, location)}`` for ``topic``, ``parameter`` and ``bag``.
    Raises :class:`ModelError` naming the source."""
    source = _get(section, "source") or "urdf"
    if source not in SOURCES:
        raise ModelError(f"robot.source: expected one of {list(SOURCES)}, got {source!r}")
    arguments = dict(_get(section, "xacro_args") or {})
    if source == "urdf":
        urdf = _get(section, "urdf")
        if not urdf:
            raise ModelError("robot.urdf: required with robot.source 'urdf'")
        text, location = read_urdf(urdf, base_dir)
    elif source == "xacro":
        if not _get(section, "xacro"):
            raise ModelError("robot.xacro: required with robot.source 'xacro'")
        text, location = run_xacro(_get(section, "xacro"), arguments, base_dir)
    else:
        text, location = _provided(section, source, providers)
    return text, ModelProvenance(source, location, model_sha256(text),
                                 arguments if source == "xacro" else {})


def write_model(urdf_xml: str, folder: str) -> str:
    """The URDF text saved as ``folder/model_<sha256[:12]>.urdf`` (for code reading a
    file); the same text always gives the same file."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"model_{model_sha256(urdf_xml)[:12]}.urdf")
    if not os.path.isfile(path):
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(urdf_xml)
        os.replace(tmp, path)
    return path

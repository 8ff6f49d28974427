"""Where a config's nominal model comes from: the fields of the ``robot`` section that
choose it (``figaroh_ros.model.sources``).

``source``: ``urdf`` (the file ``robot.urdf``), ``xacro`` (``robot.xacro`` expanded with
``robot.xacro_args``, as ``xacro file name:=value`` does), ``topic`` (the live
``robot_description``, transient local, waited for ``description_timeout`` s),
``parameter`` (robot_state_publisher's ``robot_description`` parameter) or ``bag`` (the
model recorded in the bag given with ``--bag``).  A robot section gets these fields by
deriving from :class:`ModelSource`.
"""
from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from figaroh_ros.config.base import Refused, Section
from figaroh_ros.config.fields import MAX_NAMES, Name, Path, Topic


class ModelSource(Section):
    """The model source fields of a robot section."""

    source: Literal["urdf", "xacro", "topic", "parameter", "bag"] = Field(
        "urdf", description="where the nominal model comes from: `urdf` (robot.urdf), "
        "`xacro` (robot.xacro with robot.xacro_args), `topic` (the live robot_description),"
        " `parameter` (robot_state_publisher's robot_description), `bag` (the model "
        "recorded in the bag given with --bag)")
    xacro: Path | None = Field(None, description="xacro file of the robot, relative to the "
                               "config (with source: xacro)")
    xacro_args: dict[Name, str] = Field(default_factory=dict, max_length=MAX_NAMES,
                                        description="xacro arguments `{name: value}` (as "
                                        "`name:=value` on xacro's command line)")
    description_topic: Topic = Field("robot_description", min_length=1,
                                     description="topic of the live model (source: topic)")
    description_node: Name = Field("robot_state_publisher", description="node holding the "
                                   "`robot_description` parameter (source: parameter)")
    description_timeout: float = Field(30.0, gt=0.0, le=300.0, description="s to wait "
                                       "for the live model before refusing (nodes launched "
                                       "together: robot_state_publisher may come later)")

    @model_validator(mode="after")
    def _source_needs_its_field(self):
        if self.source == "xacro" and self.xacro is None:
            raise Refused("xacro", "a xacro file with source: xacro")
        if self.source == "urdf" and getattr(self, "urdf", None) is None:
            raise Refused("urdf", "a URDF file with source: urdf")
        if self.xacro_args and self.source != "xacro":
            raise Refused("xacro_args", "arguments only with source: xacro",
                          self.xacro_args)
        return self

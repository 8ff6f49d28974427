"""The sections several config kinds share: the named robot and what is written besides
``result.yaml``.  Their own module, so that a calibration (or backlash, payload) config
does not build the identification config's models to reach them."""
from __future__ import annotations

from pydantic import Field

from figaroh_ros.config.base import Section
from figaroh_ros.config.fields import FileStem, Names, Urdf
from figaroh_ros.config.model_source import ModelSource


class NamedRobot(ModelSource):
    """The robot: its name and its model (a file, a xacro, the one recorded in the bag, or
    the robot's own `robot_description`: `figaroh_ros.config.model_source`)."""

    name: FileStem = Field(description="name used in outputs (file names, reports)")
    urdf: Urdf | None = Field(None, description="URDF file, relative to the config, or "
                              "`example-robot-data:<relative path>` (meshes are not "
                              "loaded; source: urdf)")


class ArmRobot(NamedRobot):
    """The robot and the joints whose data are used."""

    joints: Names = Field(description="active joints, in the order of the data columns")


class Output(Section):
    """What is written besides `result.yaml`."""

    plots: bool = Field(True, description="write the PNG plots")

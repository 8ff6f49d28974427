"""Suspension config (``figaroh-ros identify-suspension``): the wheels of the mobile base and
the topics of the force plate and of the base's motion capture (Nguyen et al. 2024 Eq. 1-5)."""
from __future__ import annotations

from pydantic import Field

from figaroh_ros.config.base import Section, parse
from figaroh_ros.config.fields import FileStem, Topic, Vector3
from figaroh_ros.config.yaml_file import read_mapping


class RobotName(Section):
    """The robot, by name only (the suspension model needs no URDF)."""

    name: FileStem = Field(description="name used in outputs")


class Suspension(Section):
    """The six wheels and the recording."""

    wheel_positions: list[Vector3] | None = Field(None, min_length=6, max_length=6,
                                                  description="six [x, y, z] in the base "
                                                  "frame, m (default: TIAGo's wheels)")
    wrench_topic: Topic = Field("/force_plate/wrench", description="WrenchStamped topic of "
                               "the force plate")
    base_pose_topic: Topic = Field("/mocap/base_pose", description="PoseStamped topic of the "
                                  "base's motion-capture body")
    rest_seconds: float = Field(1.0, gt=0, le=3600, description="initial rest: the "
                                "reference pose, s")
    cutoff_hz: float = Field(2.0, gt=0, le=10_000, description="low-pass cut-off, Hz")
    validation_fraction: float = Field(0.3, ge=0.1, le=0.5, description="last part of the "
                                       "recording held out")


class SuspensionConfig(Section):
    """Base suspension from a bag (`figaroh-ros identify-suspension`)."""

    robot: RobotName
    suspension: Suspension = Field(default_factory=Suspension)


def load_suspension_config(path: str) -> SuspensionConfig:
    """The suspension config at ``path``, validated."""
    return parse(SuspensionConfig, read_mapping(path), path)

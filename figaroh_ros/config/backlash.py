"""Backlash config (``figaroh-ros identify-backlash``): the joints whose motor and link
encoders disagree, and how their recording is read (Nguyen et al. 2024 Eq. 6-7)."""
from __future__ import annotations

from pydantic import Field

from figaroh_ros.config.base import Section, parse
from figaroh_ros.config.fields import Names, Topic
from figaroh_ros.config.sections import NamedRobot
from figaroh_ros.config.yaml_file import read_mapping


class Backlash(Section):
    """The joints, the two encoder topics and the model's search."""

    joints: Names = Field(description="joints with a link-side encoder")
    motor_topic: Topic = Field("/joint_states", description="JointState topic of the motor "
                              "encoders")
    link_topic: Topic = Field("/link_encoders", description="JointState topic of the link "
                             "encoders")
    validation_fraction: float = Field(0.3, ge=0.1, le=0.5, description="last part of the "
                                       "recording used to choose the degrees")
    max_degree: int = Field(4, ge=1, le=6, description="highest polynomial degree tried")
    cutoff_hz: float = Field(10.0, gt=0, le=10_000, description="low-pass cut-off of the "
                             "encoder signals, Hz")
    min_speed_rad_s: float = Field(0.05, ge=0, le=100, description="slower samples are in "
                                   "neither the fit nor the validation, rad/s")
    min_range_rad: float = Field(0.2, ge=0, le=100, description="a joint moved less is "
                                 "skipped, rad")


class BacklashConfig(Section):
    """Backlash and encoder discrepancy per joint from a bag (`figaroh-ros
    identify-backlash`)."""

    robot: NamedRobot
    backlash: Backlash


def load_backlash_config(path: str) -> BacklashConfig:
    """The backlash config at ``path``, validated (its paths absolute)."""
    return parse(BacklashConfig, read_mapping(path), path)

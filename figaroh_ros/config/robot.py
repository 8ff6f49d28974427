"""The robot a graph drives: its model and the controllers owning its joints.

The ``robot`` and ``controllers`` sections of ``config/robot_<robot>.yaml`` and of the
simulation configs (``config/sim_<robot>.yaml``, which add the simulator's hidden truth,
``figaroh_ros.config.sim``): what the executor needs to check and play an experiment, and
nothing simulated.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from pydantic import Field, model_validator

from figaroh_ros.config.base import Refused, Section, parse
from figaroh_ros.config.driver import Driver
from figaroh_ros.config.fields import MAX_NAMES, Name, Names, Real, Urdf
from figaroh_ros.config.model_source import ModelSource
from figaroh_ros.config.yaml_file import read_yaml


class RobotModelSection(ModelSource):
    """The robot: its name and its model (a file, a xacro, or the robot's own
    `robot_description`: `figaroh_ros.config.model_source`)."""

    name: Name = Field("robot", description="name used in outputs")
    urdf: Urdf | None = Field(None, description="URDF file, relative to the config, or "
                              "`example-robot-data:<relative path>` (source: urdf)")


class BodySelection(Section):
    """Which bodies of the URDF the recording carried (identification's `robot` section)."""

    lock_joints: dict[Name, Real] | None = Field(
        None, max_length=MAX_NAMES, description="`{joint: position}` fixed for good (rad or "
        "m; the bodies stay, rigidly attached): joints that did not move, e.g. a gripper's")
    remove_links: Names | None = Field(
        None, description="links dropped with everything below them and the joints leading "
        "to them: a hand or tool the recording did not carry (its inertia is not added)")


class RobotFileConfig(Section):
    """The robot the executor drives (`config/robot_<robot>.yaml`)."""

    robot: RobotModelSection
    controllers: dict[Name, Names] = Field(min_length=1, max_length=MAX_NAMES, description=""
                                           "`{controller: [joint, ...]}`: the joints each "
                                           "trajectory controller owns")
    driver: Driver = Field(default_factory=Driver, description="what the robot's drivers "
                           "publish (`figaroh_ros.config.driver`)")

    @model_validator(mode="after")
    def _joints_once(self):
        joints = [j for js in self.controllers.values() for j in js]
        repeated = sorted({j for j in joints if joints.count(j) > 1})
        if repeated:
            raise Refused("controllers", "a joint belongs to one controller", repeated)
        k = self.driver.joint_states.torque_per_effort
        if k is not None and len(k) != len(joints):
            raise Refused("driver.joint_states.torque_per_effort",
                          f"{len(joints)} gains, one per controlled joint", k)
        return self


@dataclass
class RobotConfig:
    name: str
    urdf: str | None                  # the file (source: urdf), else see ``model``
    controllers: dict[str, list[str]]
    driver: Driver = field(default_factory=Driver)
    model: RobotModelSection | None = None      # where the model comes from
    base_dir: str = "."                          # the config's folder

    @property
    def joints(self) -> list[str]:
        return [j for js in self.controllers.values() for j in js]


def robot_config_from_dict(raw, path: str) -> RobotConfig:
    """The ``robot`` and ``controllers`` sections of the raw config read from ``path`` (its
    other sections, e.g. a simulator's, are left to their own schema)."""
    mine = {k: raw[k] for k in ("robot", "controllers", "driver") if k in raw} \
        if isinstance(raw, dict) else raw
    cfg = parse(RobotFileConfig, mine, path)
    return RobotConfig(cfg.robot.name, cfg.robot.urdf, cfg.controllers, cfg.driver,
                       cfg.robot, os.path.dirname(os.path.abspath(path)))


def load_robot_config(path: str) -> RobotConfig:
    """The ``robot`` and ``controllers`` sections of a robot or simulation config."""
    return robot_config_from_dict(read_yaml(path), path)

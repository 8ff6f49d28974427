"""The robot a graph drives: its model and the controllers owning its joints.

The ``robot`` and ``controllers`` sections of ``config/robot_<robot>.yaml`` and of the
simulation configs (``config/sim_<robot>.yaml``, which add the simulator's hidden truth):
what the executor needs to check and play an experiment, and nothing simulated.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from figaroh_ros.config.identification import read_yaml
from figaroh_ros.errors import ConfigError
from figaroh_ros.model.robot import resolve_urdf


@dataclass
class RobotConfig:
    name: str
    urdf: str
    controllers: dict[str, list[str]]

    @property
    def joints(self) -> list[str]:
        return [j for js in self.controllers.values() for j in js]


def robot_config_from_dict(raw, path: str) -> RobotConfig:
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: expected a mapping")
    base = os.path.dirname(os.path.abspath(path))
    try:
        robot = raw["robot"]
        urdf = resolve_urdf(robot["urdf"], base)
        ctrls = raw["controllers"]
    except (KeyError, TypeError) as exc:
        raise ConfigError(f"{path}: missing field {exc}") from None
    if not isinstance(ctrls, dict) or not ctrls or not all(
            isinstance(v, list) and v for v in ctrls.values()):
        raise ConfigError(f"{path}: controllers: expected {{name: [joint, ...]}}")
    return RobotConfig(robot.get("name", "robot"), urdf, ctrls)


def load_robot_config(path: str) -> RobotConfig:
    """The ``robot`` and ``controllers`` sections of a robot or simulation config."""
    return robot_config_from_dict(read_yaml(path), path)

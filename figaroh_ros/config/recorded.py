"""How a recording names its joints and what its efforts are (the ``data`` section of an
identification config).

``data.joint_map`` maps a name the recording uses to the model's name of that joint
(e.g. franka_description's ``fer_joint1`` to example-robot-data's ``panda_joint1``); a
model joint the map does not name is read under its own name, and the recording's joints
are found by name whatever their order.  ``data.effort`` says what the recorded effort
is, checked against the options that convert it:

* ``joint_torque``: the joint's torque (N.m, N for a prismatic joint), used as is;
  refuses the constants of a current (``drive.gear_ratios``/``torque_constants``) and
  ``data.motor_side``;
* ``motor_current``: a motor current (A), turned into joint torque by the per-joint
  constants ``drive.gear_ratios x drive.torque_constants`` (or ``drive.effort_gains``,
  estimated gains ``drive.identify_gains``/``gains_from_nominal``, or the driver profile
  ``robot.driver`` names);
* ``motor_torque``: the torque at the motor, brought to the joint through
  ``transmission`` (its gear ratios and coupling, Nguyen et al. 2023 Eq. 4), which must
  give the gear ratios; positions stay as ``data.motor_side`` says.

None (the default) leaves the efforts to those options as they are set.
"""
from __future__ import annotations

from typing import Literal

from pydantic import Field

from figaroh_ros.config.base import Refused, Section
from figaroh_ros.config.fields import MAX_NAMES, Name

EFFORTS = ("joint_torque", "motor_current", "motor_torque")


class RecordedJoints(Section):
    """The fields of :mod:`figaroh_ros.config.recorded` a ``data`` section takes."""

    joint_map: dict[Name, Name] | None = Field(
        None, max_length=MAX_NAMES, description="recorded joint name -> the model's name "
        "(e.g. `fer_joint1: panda_joint1`); joints not named are read under their own "
        "name, in any order")
    effort: Literal["joint_torque", "motor_current", "motor_torque"] | None = Field(
        None, description="what the recorded effort is: `joint_torque` (used as is), "
        "`motor_current` (times drive.gear_ratios x drive.torque_constants, or "
        "drive.effort_gains), `motor_torque` (through transmission); none: as the drive "
        "and data.motor_side options say")


def check_joint_map(joints: list[str], joint_map: dict[str, str] | None) -> None:
    """Every mapped name is a joint of ``robot.joints``, named once; a recorded name that
    is another model joint's name is not mapped elsewhere (one name, two joints)."""
    if not joint_map:
        return
    seen: dict[str, str] = {}
    for recorded, model in joint_map.items():
        if model not in joints:
            raise Refused(f"data.joint_map.{recorded}", f"expected one of robot.joints "
                          f"{joints}", model)
        if model in seen:
            raise Refused(f"data.joint_map.{recorded}", f"model joint '{model}' is "
                          f"mapped from both '{seen[model]}' and '{recorded}'", model)
        seen[model] = recorded
    for recorded, model in joint_map.items():
        if recorded in joints and recorded != model and recorded not in seen:
            raise Refused(f"data.joint_map.{recorded}", f"'{recorded}' is a model joint "
                          f"read under its own name and also mapped to '{model}': map "
                          f"'{recorded}' too, or drop this entry", model)


def check_effort(effort: str | None, data, drive, transmission, driver) -> None:
    """``data.effort`` against the options that convert the efforts (module docs)."""
    currents = drive.gear_ratios is not None or drive.torque_constants is not None
    if effort == "joint_torque":
        if currents:
            raise Refused("data.effort", "joint torques take no drive.gear_ratios / "
                          "torque_constants (those turn motor currents into torques)",
                          effort)
        if data.motor_side:
            raise Refused("data.effort", "joint torques are not motor side: drop "
                          "data.motor_side or say motor_torque", effort)
    elif effort == "motor_current":
        if not (currents or drive.effort_gains is not None or driver is not None
                or drive.identify_gains or drive.gains_from_nominal):
            raise Refused("data.effort", "motor currents need their per-joint constants: "
                          "drive.gear_ratios and drive.torque_constants (or "
                          "drive.effort_gains, or drive.identify_gains to estimate them)",
                          effort)
        if data.motor_side:
            raise Refused("data.effort", "motor currents are turned into joint torques by "
                          "the drive constants, not through the transmission: drop "
                          "data.motor_side", effort)
    elif effort == "motor_torque":
        if transmission.gear_ratios is None:
            raise Refused("data.effort", "motor torques need transmission.gear_ratios to "
                          "become joint torques", effort)
        if currents:
            raise Refused("data.effort", "motor torques take no drive.gear_ratios / "
                          "torque_constants (the transmission's ratios apply)", effort)


def recorded_names(data: RecordedJoints, joints: list[str]) -> list[str]:
    """The names under which the recording holds the model's ``joints``
    (``data.joint_map`` inverted; a joint it does not map under its own name)."""
    inverse = {m: r for r, m in (data.joint_map or {}).items()}
    return [inverse.get(j, j) for j in joints]


def motor_side_efforts(data) -> bool:
    """Whether the efforts go through the transmission to the joints (``data``: the
    typed ``data`` section of an identification config)."""
    return bool(data.motor_side) or data.effort == "motor_torque"

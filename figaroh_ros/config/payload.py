"""Payload config (``figaroh-ros identify-payload``): the tool frame, what measured the
payload (joint torques or a wrist force-torque sensor), where the recording is and how it
is read (``identification.payload``)."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from figaroh_ros.config.base import Refused, Section, parse_file
from figaroh_ros.config.fields import Name, Path, Real, Topic, Vector3
from figaroh_ros.config.sections import ArmRobot

PositiveStd = Field(gt=0, le=1e6)


class PayloadRobot(ArmRobot):
    """The robot without its payload and the joints recorded."""

    dynamics: Path | None = Field(None, description="an `identify` result folder whose "
                                  "identified URDF (`*_identified.urdf`) gives the robot's "
                                  "own torques (default: robot.urdf's inertias)")


class ComBox(Section):
    """Corners of the box the centre of mass must lie in (tool frame, m)."""

    lo: Vector3 = Field(description="lower corner (x, y, z), m")
    hi: Vector3 = Field(description="upper corner (x, y, z), m")

    @model_validator(mode="after")
    def _ordered(self):
        if not all(a < b for a, b in zip(self.lo, self.hi)):
            raise Refused("hi", "each coordinate above lo's", self.hi)
        return self


class Payload(Section):
    """The payload experiment."""

    tool_frame: Name = Field(description="frame the payload is fixed to (and the wrist "
                             "sensor measures in), e.g. tool0 (UR) or panda_link8 (Franka)")
    measurements: Literal["torque", "wrench"] = Field(
        "torque", description="`torque`: joint torques (columns tau_<joint> or the effort "
        "of torque_topic); `wrench`: a wrist force-torque sensor in tool_frame (columns "
        "fx fy fz mx my mz, or wrench_topic)")
    data: Path | None = Field(None, description="CSV table: t, q_<joint>..., then "
                              "tau_<joint>... or fx..mz (or --data / --bag)")
    joint_topic: Topic = Field("/joint_states", description="JointState topic (bag)")
    torque_topic: Topic = Field("/joint_states", description="JointState topic whose effort "
                                "is the joint torque (bag, measurements: torque)")
    wrench_topic: Topic = Field("/force_torque_sensor_broadcaster/wrench",
                                description="WrenchStamped topic (bag, measurements: wrench)")
    wrench_sign: Literal[1, -1] = Field(1, description="1: the sensor reports the wrench it "
                                        "applies to the payload; -1: the payload's on it")
    torque_per_effort: list[Real] = Field([1.0], min_length=1, max_length=64, description=
                                          "N.m per unit of the recorded torque (one value or "
                                          "one per joint; UR currents: the motor constants)")
    cutoff_hz: float = Field(10.0, gt=0, le=10_000, description="zero-phase low-pass "
                             "cut-off of positions and measurements before differentiation, Hz")
    decimation: int = Field(1, ge=1, le=1000, description="keep one sample in this many "
                            "after filtering")
    torque_noise: list[Real] = Field([0.3], min_length=1, max_length=64, description="joint "
                                     "torque noise std, N.m (one value or one per joint)")
    force_noise: float = Field(0.5, gt=0, le=1e6, description="sensor force noise std, N")
    moment_noise: float = Field(0.02, gt=0, le=1e6, description="sensor moment noise std, N.m")
    com_box: ComBox | None = Field(None, description="box the centre of mass must lie in")
    max_condition: float = Field(1e4, gt=1, le=1e12, description="a recording whose payload "
                                 "regressor is worse conditioned is refused")

    @model_validator(mode="after")
    def _positive_noise(self):
        if any(v <= 0 for v in self.torque_noise):
            raise Refused("torque_noise", "positive values", self.torque_noise)
        return self


class PayloadConfig(Section):
    """Payload mass, centre of mass and inertia from a short recording (`figaroh-ros
    identify-payload`)."""

    robot: PayloadRobot
    payload: Payload


def load_payload_config(path: str) -> PayloadConfig:
    """The payload config at ``path``, validated (its paths absolute)."""
    return parse_file(PayloadConfig, path)

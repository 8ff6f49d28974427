"""What the robot's drivers publish: topics, rates, units, frames and QoS (a driver profile).

The ``driver`` section of ``config/robot_<robot>.yaml`` (and of a simulation config, whose
simulator then publishes the same way) says where the measurements of an experiment are
and what their numbers mean:

* ``joint_states``: the topic of the joint positions, its nominal rate, and what its
  ``effort`` field holds: joint torque (N.m), motor current (A, e.g. ur_robot_driver), or a
  controller value of unknown scale; ``torque_per_effort`` gives the joint torque per unit
  of effort for each controlled joint (for a current: torque constant times gear ratio,
  signed), so that ``tau_j = k_j * effort_j`` (an identification config naming this file
  in ``robot.driver`` reads its bag so: :func:`joint_gains`, by joint name);
* ``wrench``: a force-torque sensor (topic, frame of its readings);
* ``pose``: a motion-capture body (topic; mocap drivers such as vrpn_mocap publish
  best effort);
* ``extra``: any other topic to record.

Each measured topic can force its subscription's reliability/durability (``auto``: follow
what the publishers offer, like ``ros2 bag record``) and be ``required`` (the recorder's
start then fails when it has no publisher) or optional.  The profile name is a label
checked against the rules of the driver it names (e.g. ``ur_robot_driver`` publishes
currents).
"""
from __future__ import annotations

import re
from typing import Literal

from pydantic import ConfigDict, Field, model_validator

from figaroh_ros.config.base import Refused, Section, parse
from figaroh_ros.config.fields import MAX_NAMES, Name
from figaroh_ros.config.yaml_file import read_mapping
from figaroh_ros.errors import ConfigError

TOPIC = re.compile(r"^(/?[A-Za-z_~][A-Za-z0-9_]*)(/[A-Za-z_][A-Za-z0-9_]*)*$")
TYPE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*/msg/[A-Z][A-Za-z0-9]*$")
EVENTS = ("figaroh/posture_events", "figaroh_ros/msg/PostureEvent")
EFFORT_UNITS = {"torque_nm": "N.m", "current_a": "A", "unscaled": "1"}

DriverTopic = Field(min_length=1, max_length=256, pattern=TOPIC.pattern)


class Measured(Section):
    """One recorded topic: its name, type, frame and subscription QoS."""

    topic: str = DriverTopic
    type: str = Field(pattern=TYPE.pattern, max_length=256,
                      description="message type, `package/msg/Type`")
    frame: Name | None = Field(None, description="frame of the readings (header.frame_id)")
    reliability: Literal["auto", "reliable", "best_effort"] = Field(
        "auto", description="subscription reliability (`auto`: as the publishers offer)")
    durability: Literal["auto", "volatile", "transient_local"] = Field(
        "auto", description="subscription durability (`auto`: as the publishers offer)")
    required: bool = Field(True, description="a recording cannot start without a "
                           "publisher on it")


class JointStates(Section):
    """The joint state topic and what its ``effort`` means."""

    topic: str = Field("joint_states", min_length=1, max_length=256,
                       pattern=TOPIC.pattern)
    rate_hz: float = Field(100.0, gt=0.0, le=100_000.0,
                           description="nominal publishing rate (Hz)")
    effort: Literal["torque_nm", "current_a", "unscaled"] = Field(
        "torque_nm", description="what `effort` holds: joint torque, motor current, or "
        "a controller value of unknown scale")
    torque_per_effort: list[float] | None = Field(
        None, max_length=MAX_NAMES, description="joint torque per unit of effort, one per "
        "controlled joint (N.m/A for currents: torque constant x gear ratio, signed)")
    reliability: Literal["auto", "reliable", "best_effort"] = "auto"

    @model_validator(mode="after")
    def _gains(self):
        k = self.torque_per_effort
        if k is not None and any(v == 0.0 for v in k):
            raise Refused("torque_per_effort", "non-zero gains", k)
        return self


class Driver(Section):
    """What the robot's drivers publish (see the module documentation)."""

    profile: Literal["generic", "figaroh_sim", "ur_robot_driver", "pal_tiago",
                     "pal_talos"] = Field("generic", description="the driver this "
                                          "section describes (checked against its rules)")
    joint_states: JointStates = Field(default_factory=JointStates)
    wrench: Measured | None = Field(None, description="force-torque sensor "
                                    "(geometry_msgs/msg/WrenchStamped)")
    pose: Measured | None = Field(None, description="motion-capture body "
                                  "(geometry_msgs/msg/PoseStamped)")
    extra: list[Measured] = Field(default_factory=list, max_length=MAX_NAMES,
                                  description="other recorded topics")

    @model_validator(mode="after")
    def _types(self):
        for name, want in (("wrench", "geometry_msgs/msg/WrenchStamped"),
                           ("pose", "geometry_msgs/msg/PoseStamped")):
            got = getattr(self, name)
            if got is not None and got.type != want:
                raise Refused(f"{name}.type", want, got.type)
        if self.profile == "ur_robot_driver" and self.joint_states.effort != "current_a":
            raise Refused("joint_states.effort", "current_a: ur_robot_driver publishes "
                          "motor currents (A) in effort", self.joint_states.effort)
        topics = [m.topic for m in self.recorded()]
        repeated = sorted({t for t in topics if topics.count(t) > 1})
        if repeated:
            raise Refused("extra", "each topic once", repeated)
        return self

    def recorded(self) -> list[Measured]:
        """Every topic a recording of an experiment holds (the executor's marks last)."""
        js = Measured(topic=self.joint_states.topic, type="sensor_msgs/msg/JointState",
                      reliability=self.joint_states.reliability)
        marks = Measured(topic=EVENTS[0], type=EVENTS[1], required=False)
        return [js] + [m for m in (self.wrench, self.pose) if m is not None] \
            + list(self.extra) + [marks]


def joint_gains(driver: Driver, controlled: list[str],
                joints: list[str]) -> list[float] | None:
    """The driver's joint torque per unit of ``effort`` for each of ``joints`` (by name:
    ``torque_per_effort`` is one gain per ``controlled`` joint, in that order), or None when
    the effort is the joint torque (N.m).  ConfigError naming the field when the gains are
    missing for a current or do not match the controlled joints."""
    js, field = driver.joint_states, "driver.joint_states.torque_per_effort"
    k = js.torque_per_effort
    if k is None:
        if js.effort == "torque_nm":
            return None
        raise ConfigError(f"{field}: the {driver.profile} driver's efforts are "
                          f"{EFFORT_MEANING[js.effort]}, not joint torques, and the profile "
                          "gives no gains to turn them into torques (one per controlled "
                          f"joint {controlled})")
    if len(k) != len(controlled):
        raise ConfigError(f"{field}: expected {len(controlled)} gains (one per controlled "
                          f"joint {controlled}), got {len(k)}: {k}")
    missing = [j for j in joints if j not in controlled]
    if missing:
        raise ConfigError(f"{field}: no gain for {missing}: the profile's controlled joints "
                          f"are {controlled}")
    return [float(k[controlled.index(j)]) for j in joints]


EFFORT_MEANING = {"torque_nm": "joint torques (N.m)", "current_a": "motor currents (A)",
                  "unscaled": "controller values of unknown scale"}


class _DriverOf(Section):
    """The ``driver`` section alone of a robot or simulation config."""

    model_config = ConfigDict(extra="ignore", strict=True, allow_inf_nan=False)
    driver: Driver = Field(default_factory=Driver)


def load_driver(path: str) -> Driver:
    """The ``driver`` section of the robot (or simulation) config at ``path`` (the
    default generic driver when it has none); errors name ``driver.<field>``."""
    return parse(_DriverOf, read_mapping(path), path).driver

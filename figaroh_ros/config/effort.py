"""What the recorded efforts of an identification are: the ``effort`` record of
result.yaml and, when the config names a driver profile (``robot.driver``), the gains and
the joint-state topic that profile gives (docs/robots: driver section).  The functions
take the typed ``IdentificationConfig`` (``config/identification.py``)."""
from __future__ import annotations

import numpy as np

from figaroh_ros.config.drive import constants_record, drive_gains, gains_field
from figaroh_ros.config.driver import joint_gains
from figaroh_ros.config.robot import load_robot_config
from figaroh_ros.errors import ConfigError

AS_RECORDED = "as recorded"


def _topic(name: str) -> str:
    return name if name.startswith("/") else "/" + name


def _same(given: list[float], gains: list[float] | None) -> bool:
    """``drive.effort_gains`` equal to the profile's gains (None: 1, effort is torque)."""
    want = np.ones(len(given)) if gains is None else np.asarray(gains, float)
    return want.shape == (len(given),) and bool(np.allclose(given, want, rtol=1e-9, atol=0))


def driver_effort(cfg) -> tuple[dict, dict, list[float] | None]:
    """What the recording's efforts are, from the driver profile ``robot.driver`` names
    (the config names one): the ``effort`` record of result.yaml, the data topics to read,
    the per-joint gains ``tau_j = K_j effort_j`` (None: efforts are torques).
    ``drive.effort_gains`` may repeat the profile's gains, not contradict them;
    ``data.joint_topic``/``torque_topic`` set in the config must be the profile's joint
    state topic.  ConfigError naming the fields otherwise."""
    d, given, path = cfg.data, drive_gains(cfg.drive), cfg.robot.driver
    given_from = gains_field(cfg.drive)
    try:
        rc = load_robot_config(path)
    except ConfigError as exc:
        raise ConfigError(f"config field 'robot.driver' ({path}): {exc}") from None
    js, joints = rc.driver.joint_states, list(cfg.robot.joints)
    topic = _topic(js.topic)
    for key in ("joint_topic", "torque_topic"):
        if key in d.model_fields_set and getattr(d, key) != topic:
            raise ConfigError(f"config fields 'data.{key}' and 'robot.driver': data.{key} "
                              f"is {getattr(d, key)!r} but the driver profile ({path}) "
                              f"publishes the joint states and their effort on {topic!r}: "
                              f"drop data.{key} or the driver")
    if js.effort != "torque_nm" and js.torque_per_effort is None and given is not None:
        gains, source = list(given), given_from
    else:
        try:
            gains, source = joint_gains(rc.driver, rc.joints, joints), "robot.driver"
        except ConfigError as exc:
            raise ConfigError(f"config field 'robot.driver' ({path}): {exc}; or give "
                              "drive.effort_gains") from None
        if given is not None and not _same(given, gains):
            raise ConfigError(
                f"config fields '{given_from}' and 'robot.driver' disagree: "
                f"{given_from} is {list(given)} but the driver profile ({path}: "
                f"driver.joint_states.torque_per_effort, effort {js.effort}) gives "
                f"{gains or [1.0] * len(joints)} for {joints}: keep one")
    record = {"driver": {"config": path, "profile": rc.driver.profile, "effort": js.effort,
                         "torque_per_effort": None if js.torque_per_effort is None
                         else dict(zip(rc.joints, js.torque_per_effort))},
              "topic": topic if d.format == "bag" else None, "gains_from": source
              if gains is not None else None,
              "gains": None if gains is None else dict(zip(joints, gains)), "unit": "N.m",
              **_constants(cfg)}
    return record, {"joint_topic": topic, "torque_topic": topic}, gains


def effort_record(cfg) -> dict:
    """The ``effort`` record of result.yaml for a config without ``robot.driver`` (with
    one: :func:`driver_effort`): ``drive.effort_gains`` (or the gear ratios x torque
    constants, :func:`drive_gains`) or the efforts as recorded."""
    d, given = cfg.data, drive_gains(cfg.drive)
    return {"driver": None, "topic": d.torque_topic if d.format == "bag" else None,
            "gains_from": gains_field(cfg.drive) if given else None,
            "gains": None if given is None else dict(zip(cfg.robot.joints, given)),
            "unit": "N.m" if given else AS_RECORDED,
            **_constants(cfg)}


def _constants(cfg) -> dict:
    """``drive_constants`` of the effort record when the config gives them."""
    record = constants_record(cfg.drive, cfg.robot.joints)
    return {} if record is None else {"drive_constants": record}

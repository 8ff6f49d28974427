"""Identification config (``figaroh-ros identify``): one YAML per robot and recording.

The drive model is the one of Nguyen et al. 2023 (Eq. 2-4: inertial parameters, viscous and Coulomb
friction, rotor inertia, torque offset, coupled transmissions); ``measurements.kind:
wrench`` reads a force plate under a floating-base robot instead of joint torques (Nguyen et
al. 2023 Eq. 2, Table I); ``robot.gravity`` a tilted mount (Tröbinger et al.).  Every field, its type,
default and range are declared below; docs/reference/config.md is generated from
these models (``tools/gen_docs.py``).
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from figaroh_ros.config.acceptance import Acceptance
from figaroh_ros.config.base import Refused, Section, parse
from figaroh_ros.config.fields import (
    EXAMPLE_ROBOT_DATA, MAX_NAMES, ColumnTemplate, Name, Names, Numbers, Path, Topic, Vector3,
    check_per_joint, resolve_path
)
from figaroh_ros.config.drive import check_drive_constants, drive_gains
from figaroh_ros.config.effort import driver_effort, effort_record
from figaroh_ros.config.preflight import TrajectoryPreflight, check_preflight
from figaroh_ros.config.recorded import RecordedJoints, check_effort, check_joint_map
from figaroh_ros.config.robot import BodySelection
from figaroh_ros.config.sections import ArmRobot, Output
from figaroh_ros.config.yaml_file import read_mapping, read_yaml
from figaroh_ros.errors import ModelError
from figaroh_ros.model.loading import coupling_matrix
from figaroh_ros.model.robot import resolve_urdf


class Robot(BodySelection, ArmRobot):
    """The robot, its joints and how it is mounted."""

    floating_base: bool = Field(False, description="add a free-flyer root joint")
    driver: Path | None = Field(
        None, description="the robot's (or simulator's) config, relative to this one, "
        "whose `driver` section says what the recording's joint states hold: their topic "
        "(data.joint_topic and torque_topic), and `effort` turned into joint torque by its "
        "`torque_per_effort` (docs/robots: driver section); none: efforts as recorded")
    gravity: Vector3 | None = Field(
        None, description="gravitational acceleration in the base frame, m/s^2 (default "
        "(0, 0, -9.81)): wall, ceiling or tilted mounts (Tröbinger et al.'s generalized base set)")


class Coupling(Section):
    """One entry of the coupling matrix `K`: the motor of `motor` also turns with `joint`."""

    motor: Name = Field(description="joint whose motor is coupled")
    joint: Name = Field(description="joint that also turns that motor")
    coefficient: float = Field(description="entry of `K`")


class Transmission(Section):
    """Gear ratios and coupled motors (Nguyen et al. 2023 Eq. 4)."""

    gear_ratios: Numbers | None = Field(
        None, description="`r`: motor turns per joint turn, signed, one per joint "
        "(default 1)")
    coupling: list[Coupling] = Field([], max_length=MAX_NAMES,
                                     description="entries `{motor, joint, coefficient}` of `K`")


class DriveModel(Section):
    """Which drive parameters the model has (Nguyen et al. 2023 Eq. 3)."""

    viscous_friction: bool = Field(True, description="`fv` per joint (`fvm` per coupled motor)")
    coulomb_friction: bool = Field(True, description="`fs` per joint (`fsm` per coupled motor)")
    coulomb_model: Literal["sign", "tanh"] = Field("sign", description="Coulomb shape")
    coulomb_velocity: float = Field(0.01, gt=0, le=10,
                                    description="`v_s` of the tanh model, rad/s")
    rotor_inertia: bool = Field(True, description="`Ia` per uncoupled motor, `Iam` per "
                                "coupled one")
    torque_offset: bool = Field(True, description="`off` per joint")
    coupled_convention: Literal["motor", "lumped"] = Field(
        "motor", description="coupled wrist parametrisation (docs/methods/identification.md)")
    viscous_per_direction: bool = Field(False, description="`fva` per joint: viscous friction "
                                     "per direction (`fv` forwards, `fv + fva` backwards)")
    friction_models: list[Literal["sign", "tanh", "asymmetric", "stribeck",
                                  "per_joint"]] | None = Field(
        None, min_length=1, max_length=4, description="candidates fitted on the training "
        "part and chosen on the held-out one (docs/validation.md): `sign`, `tanh` (Coulomb "
        "shapes), `asymmetric` (tanh + `fva`), `stribeck` (sign + `fst` with the Stribeck "
        "velocity searched in `stribeck_range`); or `[per_joint]` alone: each joint's model "
        "(viscous, asymmetric viscous, smooth Coulomb, both, Stribeck; with its offset) "
        "chosen by cross-validation inside the training part (docs/recordings.md); none: "
        "the fields above")
    stribeck_range: list[float] = Field([0.002, 0.5], min_length=2, max_length=2,
                                        description="bounds of the Stribeck velocity search, "
                                        "rad/s")


class Drive(Section):
    """Drives that report an effort, not a torque: `tau_j = K_j effort_j` (docs/robots/tiago.md),
    `K_j` given lumped or as gear ratio x torque constant (`figaroh_ros.config.drive`)."""

    effort_gains: Numbers | None = Field(None, description="`K_j`: signed effort-to-torque "
                                         "gain per joint of robot.joints (default 1)")
    gear_ratios: Numbers | None = Field(None, description="`N_j`: gear ratio per joint of "
                                        "robot.joints, signed (a reversed drive < 0); with "
                                        "`torque_constants`, `K_j = N_j kt_j` (efforts are "
                                        "motor currents, A)")
    torque_constants: Numbers | None = Field(None, description="`kt_j`: motor torque "
                                             "constant per joint of robot.joints, N.m/A at "
                                             "the motor, > 0; with `gear_ratios`")
    gains_from_nominal: Names | None = Field(None, description="joints whose `K_j` is estimated from "
                                      "the nominal model (effort regressed on the URDF's "
                                      "torque plus friction and offset)")
    identify_gains: Names | None = Field(None, description="joints whose `K_j` is estimated "
                                  "from the model of the other fitted joints (their WLS "
                                  "parameters, then the joint's effort on its predicted "
                                  "torque and own friction); those joints fix the common "
                                  "scale")


class Data(RecordedJoints):
    """Where the recording is and how to read it (its joint names and efforts:
    ``config/recorded.py``)."""

    format: Literal["csv_pair", "csv_table", "bag"] = Field(
        description="two CSV files (positions, torques; one column per joint), one table "
        "with named columns, or a rosbag2 folder (`--bag`)")
    path: Path = Field(description="folder of the files (or the bag), relative to the "
                       "config")
    positions: Name | None = Field(None, description="`csv_pair`: positions file name")
    torques: Name | None = Field(None, description="`csv_pair`: torques file name")
    table: Name | None = Field(None, description="`csv_table`: table file name")
    time_column: Name | None = Field(None, description="`csv_table`: time column (s); "
                                     "else `sample_time`")
    position_column: ColumnTemplate = Field("{joint}_position", description="`csv_table`: "
                                            "column name template (a leading `- ` in "
                                            "headers is ignored)")
    torque_column: ColumnTemplate = Field("{joint}_effort", description="`csv_table`: "
                                          "column name template")
    sample_time: float | None = Field(None, gt=0, le=10, description="sample period, s "
                                      "(required with `csv_pair`)")
    motor_side: bool = Field(False, description="positions and torques are motor side: "
                             "converted through the transmission")
    joint_offsets: Numbers | None = Field(None, description="added to the joint positions "
                                          "(URDF zero convention), one per joint")
    rows: list[int] | None = Field(None, min_length=2, max_length=2,
                                   description="`[first, last)`: use only these rows")
    joint_topic: Topic = Field("/joint_states", description="`bag`: positions")
    torque_topic: Topic = Field("/motor_currents", description="`bag`: torques (`effort`)")
    events_topic: Topic = Field("/figaroh/posture_events", description="`bag`: the "
                               "executor's marks bounding the window ("": the whole bag)")
    wrench_topic: Topic = Field("/force_plate/wrench", description="`bag`: the plate wrench "
                               "(`measurements.kind: wrench`)")
    resample_hz: float | None = Field(None, gt=0, le=100_000, description="`bag`, and "
                                      "`csv_table` with a time column: uniform grid the "
                                      "samples are linearly interpolated onto (default: "
                                      "their median rate)")
    max_gap: float | None = Field(None, gt=0, le=3600, description="`bag`, and `csv_table` "
                                  "with a time column: longest step between stamps, s "
                                  "(default 5 grid periods); `identify` splits the "
                                  "recording at longer gaps into segments filtered apart "
                                  "(listed under `recording` in result.yaml), other tasks "
                                  "refuse them in a table")
    torque_table: Name | None = Field(None, description="`csv_table`: the torques' table "
                                      "when not in `table` (same time column and stamps)")
    fitted_joints: Names | None = Field(None, description="joints whose torque rows are "
                                        "fitted (default: all of robot.joints); the others "
                                        "still move the model")


class Processing(Section):
    """Filtering and decimation of the signals."""

    position_cutoff_hz: float | None = Field(None, gt=0, le=100_000, description="zero-phase "
                                             "Butterworth cut-off on positions (none)")
    filter_order: int = Field(4, ge=1, le=10, description="its order")
    decimation: int = Field(1, ge=1, le=10_000, description="parallel decimation factor")
    min_velocity: float = Field(0.0, ge=0, le=100, description="rad/s; slower samples of a "
                                "joint are removed")


class Estimation(Section):
    """The least-squares estimator and its validation."""

    method: Literal["ols", "wls", "irls"] = Field(
        "wls", description="estimator of the base parameters (WLS: Gautier's per-joint "
        "weights; IRLS: Huber's robust weights, for recordings with outlier samples)")
    essential_ratio: float = Field(30.0, gt=1, le=1e6, description="stop rule of the "
                                   "essential parameters (max/min %std)")
    validation_fraction: float = Field(0.2, ge=0, lt=0.9, description="last part of the "
                                       "window held out for validation (0: none)")
    cross_validation_folds: int = Field(4, ge=0, le=100, description="contiguous time "
                                        "blocks of the cross-validation table (0: none, "
                                        "else >= 2)")


class Measurements(Section):
    """What the recording measures (Nguyen et al. 2023 Eq. 2, Table I)."""

    kind: Literal["torques", "wrench"] = Field("torques", description="joint torques, or "
                                               "the wrench of a force plate under a "
                                               "floating-base robot")
    contact_frame: Name | None = Field(None, description="frame fixed in the world "
                                       "(default: the root link)")
    plate_xyz: Vector3 | None = Field(None, description="plate position in that frame, m")
    plate_rpy: Vector3 | None = Field(None, description="plate orientation, rad")
    wrench_columns: Names | None = Field(None, min_length=6, max_length=6, description="`csv"
                                         "_table`: the columns of fx fy fz mx my mz")


class Physical(Section):
    """Physically consistent standard parameters, written to a URDF
    (docs/methods/identification.md)."""

    method: Literal["none", "lmi", "qp", "cholesky"] = Field("none", description="how "
                                                             "consistency is enforced")
    alpha: float = Field(1.0, ge=0, le=1e6, description="weight of the prior around the "
                         "URDF values")
    prior_relative: float = Field(0.3, gt=0, le=100, description="prior std: fraction of "
                                  "each link's mass ...")
    prior_length: float = Field(0.1, gt=0, le=100, description="... times this length (m) "
                                "per moment order")
    total_mass: float | None = Field(None, gt=0, le=1e5, description="`qp`: the robot's "
                                     "weighed mass, kg")
    com_margin: float = Field(0.05, gt=0, le=10, description="`qp`, `cholesky`: centre of "
                              "mass box half-width around the nominal one, m")


class IdentificationConfig(Section):
    """Dynamic identification of one robot from one recording (`figaroh-ros identify`)."""

    robot: Robot
    transmission: Transmission = Field(default_factory=Transmission)
    model: DriveModel = Field(default_factory=DriveModel)
    drive: Drive = Field(default_factory=Drive)
    data: Data
    processing: Processing = Field(default_factory=Processing)
    estimation: Estimation = Field(default_factory=Estimation)
    measurements: Measurements = Field(default_factory=Measurements)
    physical: Physical = Field(default_factory=Physical)
    preflight: TrajectoryPreflight = Field(default_factory=TrajectoryPreflight)
    acceptance: Acceptance = Field(default_factory=Acceptance)
    output: Output = Field(default_factory=Output)

    @model_validator(mode="after")
    def _consistent(self):
        check_transmission(self.robot.joints, self.transmission)
        check_joint_offsets(self.robot.joints, self.data)
        check_data(self.data)
        check_measurements(self)
        check_gravity(self.robot.gravity)
        check_drive(self.robot.joints, self.data, self.drive, self.model)
        check_joint_map(self.robot.joints, self.data.joint_map)
        check_effort(self.data.effort, self.data, self.drive, self.transmission,
                     self.robot.driver)
        check_preflight(self.robot.joints, self.preflight)
        if self.estimation.cross_validation_folds == 1:
            raise Refused("estimation.cross_validation_folds",
                          "expected 0 (none) or >= 2 folds", 1)
        return self


def check_transmission(joints: list[str], t: Transmission) -> None:
    """One gear ratio per joint, none zero; couplings between known joints, into a matrix
    ``K`` that is not singular (the model's own check, :func:`coupling_matrix`)."""
    n = len(joints)
    if not check_per_joint(t.gear_ratios, joints):
        raise Refused("transmission.gear_ratios", f"expected {n} values (one per joint of "
                      "robot.joints)", t.gear_ratios)
    if t.gear_ratios is not None and 0.0 in t.gear_ratios:
        raise Refused("transmission.gear_ratios", "a gear ratio cannot be 0", t.gear_ratios)
    for i, c in enumerate(t.coupling):
        for key in ("motor", "joint"):
            if getattr(c, key) not in joints:
                raise Refused(f"transmission.coupling[{i}].{key}", f"expected one of "
                              f"robot.joints {joints}", getattr(c, key))
    try:
        coupling_matrix(joints, [c.model_dump() for c in t.coupling])
    except ModelError as exc:
        raise Refused("transmission.coupling", str(exc).removeprefix("coupling: "),
                      [c.model_dump() for c in t.coupling]) from None


def check_drive(joints: list[str], d: Data, drive: Drive, model: DriveModel) -> None:
    """Gains per joint and not zero; fitted and gain joints among the robot's; one fitted
    joint at least keeps its gain (the scale).  Negative ``drive.effort_gains`` are
    accepted on purpose: a drive may report its effort with the opposite sign (TIAGo's
    arm, docs/validation.md), so a gain is signed and only 0 is refused."""
    fitted = d.fitted_joints or joints
    for i, j in enumerate(d.fitted_joints or []):
        if j not in joints:
            raise Refused(f"data.fitted_joints[{i}]", f"expected one of robot.joints {joints}", j)
    if not check_per_joint(drive.effort_gains, joints):
        raise Refused("drive.effort_gains", f"expected {len(joints)} values (one per joint "
                      "of robot.joints)", drive.effort_gains)
    if drive.effort_gains is not None and 0.0 in drive.effort_gains:
        raise Refused("drive.effort_gains", "a gain cannot be 0 (its sign is kept)",
                      drive.effort_gains)
    check_drive_constants(joints, drive)
    for key in ("gains_from_nominal", "identify_gains"):
        for i, j in enumerate(getattr(drive, key) or []):
            if j not in fitted:
                raise Refused(f"drive.{key}[{i}]", f"expected one of the fitted joints "
                              f"{fitted}", j)
    if drive.identify_gains and set(fitted) <= set(drive.identify_gains):
        raise Refused("drive.identify_gains", "at least one fitted joint must keep its gain "
                      "(it fixes the common scale)", drive.identify_gains)
    lo, hi = model.stribeck_range
    if not 0 < lo < hi:
        raise Refused("model.stribeck_range", "expected [low, high] with 0 < low < high",
                      model.stribeck_range)


def check_joint_offsets(joints: list[str], d: Data) -> None:
    if not check_per_joint(d.joint_offsets, joints):
        raise Refused("data.joint_offsets", f"expected {len(joints)} values (one per joint "
                      "of robot.joints)", d.joint_offsets)


def check_data(d: Data) -> None:
    """The files each format needs; an ordered row window."""
    if d.format == "csv_pair":
        for key in ("positions", "torques"):
            if not getattr(d, key):
                raise Refused(f"data.{key}", "is required with format csv_pair")
        if d.sample_time is None:
            raise Refused("data.sample_time", "is required with format csv_pair (seconds)")
    if d.format == "csv_table":
        if not d.table:
            raise Refused("data.table", "is required with format csv_table")
        if d.sample_time is None and d.time_column is None:
            raise Refused("data.time_column", "give a time column or data.sample_time")
    if d.rows is not None and not 0 <= d.rows[0] < d.rows[1]:
        raise Refused("data.rows", "expected [first, last) with 0 <= first < last", d.rows)


def check_measurements(cfg: IdentificationConfig) -> None:
    """A force-plate wrench needs a floating base and a table or a bag."""
    if cfg.measurements.kind != "wrench":
        return
    if not cfg.robot.floating_base:
        raise Refused("measurements.kind", "a wrench measurement needs "
                      "robot.floating_base: true", "wrench")
    if cfg.data.format == "csv_pair":
        raise Refused("data.format", "a wrench measurement is read from a csv_table or a "
                      "bag (data.wrench_topic), not a csv_pair", "csv_pair")


def check_gravity(g: list[float] | None) -> None:
    if g is not None and not 1.0 < float(np.linalg.norm(g)) < 100.0:
        raise Refused("robot.gravity", "expected 3 components of an acceleration "
                      "(m/s^2), of norm between 1 and 100", g)


@dataclass(frozen=True)
class LoadedIdentification:
    """An identification config as the tasks run it: ``config`` the validated model with
    the values :func:`load_identification` resolves put in (``drive.effort_gains`` from
    the gear ratios and torque constants or the driver profile, ``data.joint_topic`` and
    ``torque_topic`` from the driver), ``file`` the config's absolute path, ``effort`` the
    ``effort`` record of result.yaml (what the recorded efforts were taken for)."""

    config: IdentificationConfig
    file: str
    effort: dict


def with_overrides(raw: dict, data: str | None = None, bag: str | None = None,
                   urdf: str | None = None) -> dict:
    """The raw config with the command line's choices: ``urdf`` instead of
    ``robot.urdf``, the recording from the bag ``bag`` or the folder ``data``."""
    raw = dict(raw)
    if urdf is not None and isinstance(raw.get("robot"), dict):
        raw["robot"] = dict(raw["robot"], urdf=os.path.abspath(urdf), source="urdf",
                             xacro_args={})
        for key in ("xacro", "xacro_args"):
            raw["robot"].pop(key, None)
    if isinstance(raw.get("data"), dict):
        if bag is not None:
            raw["data"] = dict(raw["data"], format="bag", path=os.path.abspath(bag))
        if data is not None:
            raw["data"] = dict(raw["data"], path=os.path.abspath(data))
    return raw


def parse_config(path: str, data: str | None = None, bag: str | None = None,
                 urdf: str | None = None) -> IdentificationConfig:
    """The identification config at ``path``, typed (``data``, ``bag``, ``urdf``: as
    :func:`load_config`)."""
    return parse(IdentificationConfig, with_overrides(read_mapping(path), data, bag, urdf),
                 path)


def load_identification(path: str, data: str | None = None, bag: str | None = None,
                        urdf: str | None = None) -> LoadedIdentification:
    """Read, validate and complete the YAML config at ``path`` (``bag``: read the
    recording from that rosbag2 bag instead; ``data``: from that folder; ``urdf``: start
    from that model, not ``robot.urdf``): a copy of the typed config whose
    ``drive.effort_gains`` is the one per-joint effort-to-torque gain (``N_j kt_j``,
    ``config/drive.py``, or the driver profile's) and whose data topics are the driver's,
    with the config's path and its effort record.  Raises ConfigError."""
    typed = parse_config(path, data, bag, urdf)
    data_section, gains = typed.data, drive_gains(typed.drive)
    if typed.robot.driver is None:
        effort = effort_record(typed)
    else:                       # the profile's topic and gains (driver_effort)
        effort, topics, gains = driver_effort(typed)
        data_section = data_section.model_copy(update=topics)
    cfg = typed.model_copy(update={
        "drive": typed.drive.model_copy(update={"effort_gains": gains}),
        "data": data_section})
    return LoadedIdentification(cfg, os.path.abspath(path), effort)


def load_config(path: str, data: str | None = None, bag: str | None = None,
                urdf: str | None = None) -> IdentificationConfig:
    """The completed config of :func:`load_identification` (without its file and effort
    record).  Raises ConfigError."""
    return load_identification(path, data, bag, urdf).config


def nominal_urdf(path: str) -> str | None:
    """The absolute ``robot.urdf`` of the config file at ``path`` (``example-robot-data:``
    resolved, relative paths from the config's folder), or None if it names none."""
    robot = read_mapping(path).get("robot")
    urdf = robot.get("urdf") if isinstance(robot, dict) else None
    if not isinstance(urdf, str):
        return None
    if urdf.startswith(EXAMPLE_ROBOT_DATA):
        return resolve_urdf(urdf)
    return resolve_path(urdf, os.path.dirname(os.path.abspath(path)))


__all__ = ["IdentificationConfig", "LoadedIdentification", "driver_effort", "effort_record",
           "load_config", "load_identification", "nominal_urdf", "parse_config", "read_yaml"]

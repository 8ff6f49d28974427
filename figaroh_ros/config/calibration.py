"""Geometric calibration config (``figaroh-ros calibrate``, ``plan-postures``): one YAML
per robot and measurement set-up.

The kinematic model and its levels (joint offsets, full placement) are Nguyen et al. 2023, Eq. 5-7
and 11; the optimal postures its Eq. 12-13 (D-optimal weights over random candidates).
Same rules as every config kind (``figaroh_ros.config.base``).
"""
from __future__ import annotations

import os
from typing import Literal

from pydantic import Field, model_validator

from figaroh_ros.config.acceptance import Acceptance
from figaroh_ros.config.base import Refused, Section, parse
from figaroh_ros.config.camera import Camera
from figaroh_ros.config.camera_detection import CameraDetection
from figaroh_ros.config.fields import (
    MAX_NAMES, Name, Names, Numbers, Path, Real, Seed, Topic, ordered_box
)
from figaroh_ros.config.sections import NamedRobot, Output
from figaroh_ros.config.workspace import Workspace
from figaroh_ros.config.yaml_file import read_mapping
from figaroh_ros.errors import ConfigError

MAX_CANDIDATES = 20_000        # posture candidates: one information matrix each (measured
                               # on TIAGo: 20 000 take 0.36 GB and 95 s, 100 000 0.9 GB)


class Calibration(Section):
    """What is calibrated: the chain from `start_frame` to `tool_frame`."""

    level: Literal["offset", "full"] = Field("full", description="joint offsets only, or "
                                             "the full placement of every joint (6 each)")
    start_frame: Name = Field("universe", description="frame the measurements are "
                              "expressed from")
    tool_frame: Name = Field(description="frame the measured body is fixed to")
    joints: Names | None = Field(None, description="calibrated joints (default: the chain)")
    estimate_base: bool = Field(True, description="estimate the measurement frame -> "
                                "start frame placement")
    elastic_joints: Names | None = Field(None, description="joints given a compliance "
                                         "(rad/N.m)")
    base_guess: list[Real] | None = Field(None, min_length=6, max_length=6, description=""
                                           "[x y z roll pitch yaw] measurement -> start frame")
    tool_guess: Numbers | None = Field(None, description="pose: [x y z roll pitch yaw]; "
                                       "points: 3 numbers per point")


class PlaneSpec(Section):
    """A plane the tool touches (`measurement.type: plane`, several planes)."""

    name: Name = Field(description="the plane's name, as in the data's `plane` column")
    pose: list[Real] | None = Field(None, min_length=6, max_length=6, description="known "
                                    "plane: [x y z roll pitch yaw] of its frame (z = the "
                                    "normal) in start_frame; left out: estimated")


class Measurement(Section):
    """What the sensor measures at each posture."""

    type: Literal["points", "pose", "plane", "camera"] = Field(
        description="marker points, a 6D pose, a contact with a plane, or the pixels of a "
        "board seen by a camera (the `camera:` section)")
    points: list[int] = Field([1], min_length=1, max_length=100, description="which points "
                              "`x<k> y<k> z<k>` of the data are used (k >= 1)")
    mask: list[bool] | None = Field(None, max_length=6, description="measured "
                                    "components (3 per point, 6 per pose)")
    orientation: Literal["rpy", "rotvec", "quaternion"] = Field("rpy", description="pose "
                                                                "orientation columns")
    inverse: bool = Field(False, description="the camera sees the target: invert the pose")
    noise_position_mm: float = Field(0.5, gt=0, le=1e4, description="position noise std, mm")
    noise_orientation_mrad: float = Field(2.0, gt=0, le=1e4, description="orientation noise "
                                          "std, mrad")
    planes: list[PlaneSpec] | None = Field(None, min_length=1, max_length=100, description=""
                                           "plane: the planes touched, each posture naming "
                                           "its own in the data's `plane` column")


class CalibrationData(Section):
    """The posture tables."""

    path: Path | None = Field(None, description="training postures CSV (required to "
                              "calibrate; or `--data`)")
    validation: Path | None = Field(None, description="validation postures CSV (or "
                                    "`--validate`)")
    fixed_joints: dict[Name, Real] = Field({}, max_length=MAX_NAMES, description="chain "
                                            "joints absent from the data: their position")
    id_column: Name | None = Field(None, description="column naming each posture")


class Bag(Section):
    """Postures recorded by our nodes (rosbag2)."""

    paths: Names | None = Field(None, description="rosbag2 folders (or `--bag`)")
    joint_states: Topic = Field("/joint_states", description="sensor_msgs/JointState topic")
    measurement: Topic = Field("/mocap/pose", description="geometry_msgs/PoseStamped topic")
    events: Topic = Field("/figaroh/posture_events", description="the executor's posture "
                         "marks ('': a bag recorded without them, the postures are the "
                         "stretches where the joints stay still)")
    image: Topic = Field("/camera/image_raw", description="measurement.type camera: "
                         "sensor_msgs/Image or CompressedImage topic")
    camera_info: Topic = Field("/camera/camera_info", description="measurement.type camera: "
                               "sensor_msgs/CameraInfo topic ('': none recorded)")
    holdout_every: int = Field(5, ge=0, le=10_000, description="every k-th posture held out "
                               "for validation (0: none, else >= 2)")
    skip_unmeasured: bool = Field(False, description="leave out the postures whose hold "
                                  "window holds fewer than 3 joint states or poses (a "
                                  "marker the cameras lost), listed in result.yaml "
                                  "(`dropped_postures`); false: such a bag is refused")


class Solver(Section):
    """The least-squares solver."""

    method: Literal["lm", "ils", "robust"] = Field("lm", description="Levenberg-Marquardt, "
                                                   "iterated LS, or robust loss")
    outlier_threshold_mm: float | None = Field(None, gt=0, le=1e4, description="postures "
                                               "with a larger residual are rejected")
    max_iterations: int = Field(100, ge=1, le=10_000, description="solver iterations")
    cross_validation: bool = Field(False, description="leave-one-out errors (small sets)")
    max_std_mm: float = Field(10.0, gt=0, le=1e4, description="base parameters determined "
                              "worse than this stay nominal (lengths)")
    max_std_mrad: float = Field(20.0, gt=0, le=1e4, description="... (angles)")


class Postures(Workspace):
    """Optimal calibration postures (`figaroh-ros plan-postures`, Nguyen et al. 2023 Eq. 12-13)."""

    candidates: int = Field(3000, ge=10, le=MAX_CANDIDATES, description="random candidate "
                            "postures")
    joint_margin: float = Field(0.05, ge=0, le=10, description="rad (m for prismatic joints) "
                                "inside the limits")
    self_collision: bool = Field(True, description="refuse self-colliding candidates "
                                 "(URDF collision geometry)")
    collision_margin: float = Field(0.0, ge=0, le=1, description="minimum distance, m")
    max_postures: int = Field(60, ge=2, le=10_000, description="most postures kept")
    plateau: float = Field(0.01, gt=0, lt=1, description="fewest postures within this "
                           "fraction of the best O1")
    seed: Seed = Field(0, description="random candidates' seed")
    order: Literal["travel", "weight"] = Field(
        "travel", description="order of the postures file: travel (the executor's moves "
        "take the least time found at the joints' velocity limits: a shorter experiment) "
        "or weight (decreasing D-optimal weight)")


class CalibrationConfig(Section):
    """Geometric calibration of one kinematic chain (`figaroh-ros calibrate`)."""

    robot: NamedRobot
    calibration: Calibration
    measurement: Measurement
    data: CalibrationData = Field(default_factory=CalibrationData)
    bag: Bag = Field(default_factory=Bag)
    solver: Solver = Field(default_factory=Solver)
    postures: Postures = Field(default_factory=Postures)
    output: Output = Field(default_factory=Output)
    acceptance: Acceptance = Field(default_factory=Acceptance)
    camera: Camera | None = Field(None, description="measurement.type camera: the camera, "
                                  "the board, the images and the joint readings")
    detection: CameraDetection = Field(default_factory=CameraDetection)

    @model_validator(mode="after")
    def _consistent(self):
        if self.calibration.start_frame == self.calibration.tool_frame:
            raise Refused("calibration.tool_frame", "expected a frame other than "
                          "start_frame (an empty chain calibrates nothing)",
                          self.calibration.tool_frame)
        check_camera(self)
        check_measurement(self.measurement)
        check_planes(self.calibration, self.measurement)
        check_tool_guess(self.calibration, self.measurement)
        check_postures(self.postures)
        if self.bag.holdout_every == 1:
            raise Refused("bag.holdout_every", "expected 0 (no hold-out) or an integer >= 2",
                          1)
        if self.bag.paths is not None and self.measurement.type == "plane":
            raise Refused("measurement.type", "bags carry pose measurements: use points or "
                          "pose", "plane")
        return self

    def with_postures(self, **fields) -> CalibrationConfig:
        """A copy whose ``postures`` section has ``fields`` (its field names) in place."""
        return self.model_copy(update={"postures": self.postures.model_copy(update=fields)})


def check_camera(c: CalibrationConfig) -> None:
    """A `camera:` section exactly when the measurement is a camera's."""
    if (c.measurement.type == "camera") != (c.camera is not None):
        if c.camera is None:
            raise Refused("camera", "measurement.type camera needs the camera: section "
                          "(setup, board, intrinsics, images, poses)")
        raise Refused("measurement.type", "a camera: section is given: set "
                      "measurement.type: camera", c.measurement.type)
    if c.camera is not None and c.calibration.tool_guess is not None:
        raise Refused("calibration.tool_guess", "a camera calibration takes "
                      "camera.camera_guess and camera.board_guess", c.calibration.tool_guess)
    if c.detection.validation_every == 1:
        raise Refused("detection.validation_every", "expected 0 (none) or an integer >= 2", 1)


def check_measurement(m: Measurement) -> None:
    """Point numbers, and a mask the size of one measurement."""
    if any(k < 1 for k in m.points):
        raise Refused("measurement.points", "expected point numbers >= 1", m.points)
    if m.type == "pose" and m.points != [1]:
        raise Refused("measurement.points", "a pose measurement has one frame: use [1]",
                      m.points)
    size = 6 if m.type == "pose" else 3
    if m.mask is not None and len(m.mask) != size:
        raise Refused("measurement.mask", f"expected {size} booleans (per measured "
                      f"{'pose' if size == 6 else 'point'})", m.mask)
    if m.type == "plane" and m.mask not in (None, [False, False, True]):
        raise Refused("measurement.mask", "a plane contact measures the distance to the "
                      "plane only; leave the mask out", m.mask)


def check_planes(c: Calibration, m: Measurement) -> None:
    """Several planes: a plane measurement, distinct names, the planes' poses in place of
    the base frame's."""
    if m.planes is None:
        return
    if m.type != "plane":
        raise Refused("measurement.planes", "planes are touched by a plane measurement: "
                      "set measurement.type: plane", [p.name for p in m.planes])
    names = [p.name for p in m.planes]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise Refused("measurement.planes", f"expected distinct plane names, {dup} repeated",
                      names)
    if c.base_guess is not None:
        raise Refused("calibration.base_guess", "with measurement.planes each known plane's "
                      "pose is given in measurement.planes[].pose: leave base_guess out",
                      c.base_guess)


def check_tool_guess(c: Calibration, m: Measurement) -> None:
    if c.tool_guess is not None:
        n = 6 if m.type == "pose" else 3 * len(m.points)
        if len(c.tool_guess) != n:
            raise Refused("calibration.tool_guess", f"expected {n} numbers", c.tool_guess)


def check_postures(p: Postures) -> None:
    """Both corners of the workspace box or none, in order."""
    if (p.workspace_min is None) != (p.workspace_max is None):
        raise Refused("postures.workspace_min", "give both workspace_min and workspace_max "
                      "or none")
    if p.workspace_min is not None and not ordered_box(p.workspace_min, p.workspace_max):
        raise Refused("postures.workspace_max", "every bound must exceed workspace_min",
                      p.workspace_max)


def with_overrides(raw: dict, data: str | None = None, validate: str | None = None,
                   bags: list[str] | None = None, urdf: str | None = None) -> dict:
    """The raw config with the command line's files in place of the config's."""
    raw = dict(raw)
    if urdf is not None and isinstance(raw.get("robot"), dict):
        raw["robot"] = dict(raw["robot"], urdf=os.path.abspath(urdf), source="urdf",
                             xacro_args={})
    files = {k: os.path.abspath(v) for k, v in (("path", data), ("validation", validate))
             if v is not None}
    if files:
        raw["data"] = dict(raw.get("data") or {}, **files)
    if bags:
        raw["bag"] = dict(raw.get("bag") or {}, paths=[os.path.abspath(b) for b in bags])
    return raw


def load_calibration_config(path: str, data: str | None = None,
                            validate: str | None = None, bags: list[str] | None = None,
                            urdf: str | None = None) -> CalibrationConfig:
    """Read and validate the calibration YAML at ``path`` (``data``, ``validate``: posture
    tables instead of the config's; ``bags``: rosbag2 folders; ``urdf``: start from that
    model instead of ``robot.urdf``); relative paths are absolute once loaded."""
    raw = with_overrides(read_mapping(path), data, validate, bags, urdf)
    return parse(CalibrationConfig, raw, path)


__all__ = ["CalibrationConfig", "ConfigError", "load_calibration_config"]

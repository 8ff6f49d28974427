"""Simulated camera config (``config/sim_<robot>_<camera>.yaml``): the hidden true camera
a simulated robot carries (``figaroh_ros.sim.camera``): where it is mounted, what board it
looks at, its intrinsics, its images' blur and noise, its rate and topics, and the hidden
joint offsets its view reveals.  Same rules as every config kind
(``figaroh_ros.config.base``)."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from figaroh_ros.config.base import Refused, Section, parse
from figaroh_ros.config.camera import BoardSpec, CameraMatrix
from figaroh_ros.config.fields import Name, Path, Seed
from figaroh_ros.config.sim import Placement
from figaroh_ros.config.yaml_file import read_mapping
from figaroh_ros.errors import ConfigError


class CameraTruth(Section):
    """The hidden true system the images are drawn from."""

    seed: Seed = Field(0, description="seed of the hidden joint offsets")
    offset_mrad: float = Field(3.0, ge=0, le=100, description="hidden joint offsets of the "
                               "camera's chain, drawn uniformly within +- this, mrad")
    mount: Placement = Field(description="the camera's optical frame in its mount frame "
                             "(tool_frame for eye_in_hand, camera_frame for on_chain)")
    centre: dict[str, float] = Field(description="joint positions (rad) at which the board "
                                     "faces the camera `distance` away (the others zero)")
    distance: float = Field(0.45, gt=0.05, le=10, description="board centre to camera at "
                            "`centre`, m")


class Topics(Section):
    """Where the images go."""

    image: str = Field("camera/image_raw", min_length=1, description="sensor_msgs/Image")
    camera_info: str = Field("camera/camera_info", min_length=1,
                             description="sensor_msgs/CameraInfo")
    frame_id: Name = Field("camera_optical_frame", description="header.frame_id")
    joint_states: str = Field("joint_states", min_length=1, description="the simulator's "
                              "joint states the camera follows")


class ImageNoise(Section):
    """What makes a simulated image look like a sensor's."""

    grey: float = Field(2.0, ge=0, le=100, description="Gaussian pixel noise, grey levels")
    blur: float = Field(0.6, ge=0, le=20, description="Gaussian blur, px (sigma)")
    supersample: int = Field(3, ge=1, le=8, description="drawn this many times finer and "
                             "averaged down (anti-aliased edges; the cost grows as its "
                             "square)")


class SimCameraConfig(Section):
    """A simulated camera on a simulated robot (`config/sim_*_camera.yaml`)."""

    robot_config: Path = Field(description="the simulated robot's config "
                                       "(config/sim_<robot>*.yaml): its model")
    setup: Literal["eye_in_hand", "on_chain"] = Field(description="camera on the flange "
                                                      "(eye_in_hand) or on the robot's "
                                                      "chain (on_chain)")
    tool_frame: Name = Field(description="eye_in_hand: the frame the camera is fixed to; "
                             "on_chain: the frame the board is held by")
    camera_frame: Name | None = Field(None, description="on_chain: the frame the camera is "
                                      "fixed to")
    rate_hz: float = Field(10.0, gt=0, le=120, description="images per second")
    intrinsics: CameraMatrix
    board: BoardSpec
    truth: CameraTruth
    noise: ImageNoise = Field(default_factory=ImageNoise)
    topics: Topics = Field(default_factory=Topics)

    @model_validator(mode="after")
    def _rules(self):
        if self.setup == "on_chain" and not self.camera_frame:
            raise Refused("camera_frame", "the robot frame the camera is fixed to "
                          "(setup on_chain)")
        return self


def parse_sim_camera(path: str) -> SimCameraConfig:
    """The simulated camera config at ``path``, typed (the board's own checks too)."""
    cfg = parse(SimCameraConfig, read_mapping(path), path)
    try:
        cfg.board.board()
    except ConfigError as exc:                 # the board's own checks, named in the file
        field, _, why = str(exc).partition(": ")       # "board.<name>: why"
        raise ConfigError(f"config {path}: field '{field}': {why}") from None
    return cfg

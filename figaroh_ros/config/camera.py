"""The ``camera:`` section of a calibration config: a camera measures the calibration
(pixels of a board's features, ``figaroh_ros.camera``).

The calibration section's ``tool_frame`` is the frame the camera (eye-in-hand) or the
board (eye-to-hand, on_chain) is fixed to; ``camera_frame`` the frame of the robot the
camera is fixed to when it rides on the robot's own chain (TIAGo's head).  Same rules as
every config kind (``figaroh_ros.config.base``).
"""
from __future__ import annotations

from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from figaroh_ros.camera.model import Intrinsics
from figaroh_ros.camera.targets import Board

from figaroh_ros.config.base import Refused, Section
from figaroh_ros.config.fields import Name, Path, Real


class BoardSpec(Section):
    """The calibration board (:class:`figaroh_ros.camera.Board`)."""

    kind: Literal["checkerboard", "charuco", "aruco_grid", "apriltag_grid"] = Field(
        description="the board's pattern")
    rows: int = Field(ge=2, le=200, description="inner corners (checkerboard), squares "
                      "(charuco) or markers (grids) along the board's height")
    cols: int = Field(ge=2, le=200, description="the same along the board's width")
    square: Real = Field(0.0, ge=0, description="side of a square (m)")
    marker: Real = Field(0.0, ge=0, description="side of a marker (m); 0 for a "
                         "checkerboard")
    dictionary: str = Field("", max_length=64, description="ArUco/AprilTag dictionary, "
                            "e.g. DICT_5X5_100 or DICT_APRILTAG_36h11")
    gap: Real = Field(0.0, ge=0, description="space between markers of a grid (m)")

    def board(self):
        """The :class:`figaroh_ros.camera.Board` (its own checks raise a ConfigError)."""
        return Board(self.kind, self.rows, self.cols, self.square, self.marker,
                     self.dictionary, self.gap)


class CameraMatrix(Section):
    """Inline intrinsics (when no CameraInfo YAML is given)."""

    width: int = Field(ge=1, le=100_000, description="image width (px)")
    height: int = Field(ge=1, le=100_000, description="image height (px)")
    fx: Real = Field(gt=0, description="focal length along x (px)")
    fy: Real = Field(gt=0, description="focal length along y (px)")
    cx: Real = Field(description="principal point x (px)")
    cy: Real = Field(description="principal point y (px)")
    dist: list[Real] = Field(default_factory=list, max_length=14, description="distortion "
                             "k1 k2 p1 p2 [k3 ...] (OpenCV order)")


class Camera(Section):
    """How the camera and the board are placed, and what is estimated."""

    setup: Literal["eye_in_hand", "eye_to_hand", "on_chain"] = Field(
        description="camera on the flange and board fixed (eye_in_hand), camera fixed and "
        "board on the flange (eye_to_hand), camera on the robot's chain and board in its "
        "gripper (on_chain)")
    camera_frame: Name | None = Field(None, description="on_chain: the robot frame the "
                                      "camera is fixed to (e.g. xtion_rgb_optical_frame)")
    camera_joint: Name | None = Field(None, description="the URDF's fixed joint whose "
                                      "origin is the camera's pose (written back)")
    board: BoardSpec
    camera_info: Path | None = Field(None, description="CameraInfo YAML "
                                     "(camera_calibration_parsers' format)")
    intrinsics: CameraMatrix | None = Field(None, description="inline intrinsics, when no "
                                            "camera_info file is given")
    estimate_intrinsics: bool = Field(False, description="estimate fx, fy, cx, cy and the "
                                      "distortion too, the CameraInfo values as a prior")
    prior_sigma: list[Real] = Field([20.0, 20.0, 20.0, 20.0, 0.05], min_length=5,
                                    max_length=5, description="prior std of fx fy cx cy "
                                    "(px) and of each distortion coefficient")
    estimate: list[Literal["camera", "board", "joints"]] = Field(
        ["camera", "board", "joints"], min_length=1, description="unknowns: the camera "
        "mount, the board mount, the joint parameters")
    pixel_noise: Real = Field(0.5, gt=0, le=100, description="std of a detected feature "
                              "(px)")
    outlier_threshold: Real | None = Field(None, gt=0, description="a view whose "
                                           "reprojection RMS exceeds this (px) is rejected; "
                                           "default 4 x the median view RMS, at least 1 px")
    camera_guess: list[Real] | None = Field(None, min_length=6, max_length=6,
                                            description="[x y z roll pitch yaw] of the "
                                            "camera in its mount frame (default: hand-eye "
                                            "in closed form)")
    board_guess: list[Real] | None = Field(None, min_length=6, max_length=6,
                                           description="the same for the board")
    images: Path | None = Field(None, description="folder of the images")
    poses: Path | None = Field(None, description="CSV: image file name, then the joint "
                               "readings")

    @model_validator(mode="after")
    def _rules(self):
        if self.setup == "on_chain" and not self.camera_frame:
            raise Refused("camera_frame", "the robot frame the camera is fixed to "
                          "(setup on_chain)")
        if (self.camera_info is None) == (self.intrinsics is None):
            raise Refused("camera_info", "either a CameraInfo YAML (camera_info) or inline "
                          "intrinsics, one of the two")
        return self

    def camera_intrinsics(self):
        """The :class:`figaroh_ros.camera.Intrinsics` this section gives."""
        if self.camera_info is not None:
            return Intrinsics.from_camera_info(self.camera_info)
        m = self.intrinsics
        K = np.array([[m.fx, 0.0, m.cx], [0.0, m.fy, m.cy], [0.0, 0.0, 1.0]])
        return Intrinsics(K, m.dist, m.width, m.height)

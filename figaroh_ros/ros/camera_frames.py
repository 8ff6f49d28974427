"""The frames a camera calibration estimated, for ``/tf_static``: the camera's optical
frame in the link it is fixed to (``camera_frame`` of the result, written by
``figaroh_ros.tasks.camera_bag``), as the calibrated URDF places it."""
from __future__ import annotations

import pinocchio as pin

from figaroh_ros.ros.static_frames import se3


def camera_transforms(summary: dict) -> tuple[list[tuple[str, str, pin.SE3]], str]:
    """(parent, child, placement) of the estimated camera frame, and the result line's
    addition."""
    f = summary["camera_frame"]
    return [(f["parent"], f["child"], se3(f))], f"; /tf_static {f['parent']}->{f['child']}"


__all__ = ["camera_transforms"]

"""The ``detection:`` section of a camera calibration config: how strict the board
detection is (:mod:`figaroh_ros.camera.detect`).  Same rules as every config kind
(``figaroh_ros.config.base``)."""
from __future__ import annotations

from pydantic import Field

from figaroh_ros.config.base import Section


class CameraDetection(Section):
    """Board detection in the images of `measurement.type: camera`."""

    homography_max_px: float = Field(2.0, gt=0, le=100, description="a view whose features "
                                     "are farther (RMS, px) from the board's plane-to-image "
                                     "homography is dropped")
    blur_min: float = Field(5.0, ge=0, le=1e6, description="a view whose blur measure "
                            "(variance of the Laplacian over the board, grey levels "
                            "squared) is lower is dropped")
    min_features: int = Field(6, ge=4, le=100_000, description="fewest board features a "
                              "view must show")
    validation_every: int = Field(0, ge=0, le=10_000, description="every k-th detected view "
                                  "held out for validation (0: none, else >= 2)")


__all__ = ["CameraDetection"]

"""What a geometric calibration measures at each posture (Nguyen et al. 2023 §II.A): points fixed to
the tool, or the pose of a frame fixed to it, with the noise of each axis and the axes kept.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from figaroh_ros.errors import ModelError

KINDS = ("points", "pose")


@dataclass
class Measurement:
    """What is measured at each posture.

    ``points``: positions of ``n_points`` points fixed to the tool (one marker, or several
    points of one rigid body), ``[x1 y1 z1 x2 ...]`` in the measurement frame.
    ``pose``: the full pose of a frame fixed to the tool (position, then orientation).
    ``mask`` keeps some axes only (a point on a plane keeps z of the plane frame).
    """

    kind: str = "points"
    n_points: int = 1
    mask: np.ndarray | None = None
    sigma_position: float = 1e-3       # m
    sigma_orientation: float = 1e-3    # rad

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ModelError(f"measurement kind must be one of {KINDS}, got {self.kind!r}")
        if self.kind == "pose":
            self.n_points = 1
        if self.n_points < 1:
            raise ModelError("a points measurement needs at least one point")
        full = self.size
        if self.mask is None:
            self.mask = np.ones(full, bool)
        self.mask = np.asarray(self.mask, bool)
        if self.mask.shape != (full,):
            # a 3- (or 6-) mask given for one point applies to every point
            if self.kind == "points" and self.mask.shape == (3,):
                self.mask = np.tile(self.mask, self.n_points)
            else:
                raise ModelError(f"measurement mask has {self.mask.size} entries, "
                                 f"expected {full}")
        if not self.mask.any():
            raise ModelError("measurement mask keeps no axis")

    @property
    def size(self) -> int:
        return 3 * self.n_points if self.kind == "points" else 6

    @property
    def labels(self) -> list[str]:
        if self.kind == "pose":
            return ["x", "y", "z", "rx", "ry", "rz"]
        return [f"{a}{k + 1}" for k in range(self.n_points) for a in "xyz"]

    @property
    def sigma(self) -> np.ndarray:
        """Standard deviation of each measured axis (for whitening)."""
        s = np.full(self.size, self.sigma_position)
        if self.kind == "pose":
            s[3:] = self.sigma_orientation
        return s

    @property
    def is_position(self) -> np.ndarray:
        p = np.ones(self.size, bool)
        if self.kind == "pose":
            p[3:] = False
        return p

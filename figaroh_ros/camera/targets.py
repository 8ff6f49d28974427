"""Calibration targets: the board's geometry and one image's detected features.

A :class:`Board` numbers its features 0..N-1 and gives each one a point in the board frame
(metres, z = 0); a :class:`Detection` gives, for one image, the pixel position of each
feature it found, by that same id.  The numbering follows OpenCV's own boards so that
detector output is used as it comes:

* ``checkerboard``: ``rows`` x ``cols`` inner corners, row after row, id ``r * cols + c`` at
  ``(c * square, r * square, 0)``;
* ``charuco``: ``rows`` x ``cols`` squares, the ``(rows-1) * (cols-1)`` inner chessboard
  corners of :class:`cv2.aruco.CharucoBoard` (id ``r * (cols-1) + c`` at
  ``((c+1) * square, (r+1) * square, 0)``);
* ``aruco_grid`` / ``apriltag_grid``: ``rows`` x ``cols`` markers of side ``marker`` spaced by
  ``gap`` (:class:`cv2.aruco.GridBoard`, marker ids 0..rows*cols-1); feature ``4 * m + k`` is
  corner ``k`` (clockwise from the top left) of marker ``m``.
"""
from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from figaroh_ros.errors import ConfigError

KINDS = ("checkerboard", "charuco", "aruco_grid", "apriltag_grid")


def aruco_dictionary(name: str):
    """The OpenCV predefined dictionary called ``name`` (e.g. ``DICT_5X5_100``)."""
    code = getattr(cv2.aruco, str(name), None)
    if not str(name).startswith("DICT_") or not isinstance(code, int):
        known = sorted(n for n in dir(cv2.aruco) if n.startswith("DICT_"))
        raise ConfigError(f"board.dictionary: unknown ArUco dictionary {name!r}; one of "
                          f"{', '.join(known)}")
    return cv2.aruco.getPredefinedDictionary(code)


@dataclass(frozen=True)
class Board:
    """A planar calibration target (see the module docstring for the feature numbering)."""

    kind: str
    rows: int
    cols: int
    square: float
    marker: float = 0.0
    dictionary: str = ""
    gap: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ConfigError(f"board.kind: {self.kind!r} is not one of {', '.join(KINDS)}")
        for name in ("rows", "cols"):
            value = getattr(self, name)
            if isinstance(value, bool) or int(value) != value or value < 2:
                raise ConfigError(f"board.{name}: {value!r} must be an integer of at least 2")
            object.__setattr__(self, name, int(value))
        for name in ("square", "marker", "gap"):
            value = float(getattr(self, name))
            if not np.isfinite(value) or value < 0:
                raise ConfigError(f"board.{name}: {getattr(self, name)!r} must be a finite "
                                  "length in metres, not negative")
            object.__setattr__(self, name, value)
        if self.kind in ("checkerboard", "charuco") and self.square <= 0:
            raise ConfigError(f"board.square: a {self.kind} needs a square side > 0 (metres)")
        if self.kind == "checkerboard":
            return
        if self.marker <= 0:
            raise ConfigError(f"board.marker: a {self.kind} needs a marker side > 0 (metres)")
        if self.kind == "charuco" and self.marker >= self.square:
            raise ConfigError(f"board.marker: {self.marker} m must be smaller than "
                              f"board.square {self.square} m on a ChArUco board")
        if self.kind == "apriltag_grid" and not self.dictionary.startswith("DICT_APRILTAG"):
            raise ConfigError(f"board.dictionary: an apriltag_grid needs a DICT_APRILTAG_* "
                              f"dictionary, not {self.dictionary!r}")
        size = aruco_dictionary(self.dictionary).bytesList.shape[0]
        needed = self.marker_count
        if needed > size:
            raise ConfigError(f"board.dictionary: {self.dictionary} has {size} markers, the "
                              f"{self.rows}x{self.cols} {self.kind} needs {needed}")

    @property
    def marker_count(self) -> int:
        """Number of ArUco/AprilTag markers printed on the board (0 for a checkerboard)."""
        if self.kind == "checkerboard":
            return 0
        if self.kind == "charuco":
            return (self.rows * self.cols) // 2
        return self.rows * self.cols

    @property
    def feature_count(self) -> int:
        """Number of features (corners) the board has, the ids being 0..feature_count-1."""
        if self.kind == "checkerboard":
            return self.rows * self.cols
        if self.kind == "charuco":
            return (self.rows - 1) * (self.cols - 1)
        return 4 * self.rows * self.cols

    def cv_board(self):
        """The OpenCV board object (``None`` for a checkerboard)."""
        if self.kind == "checkerboard":
            return None
        dictionary = aruco_dictionary(self.dictionary)
        if self.kind == "charuco":
            return cv2.aruco.CharucoBoard((self.cols, self.rows), self.square, self.marker,
                                          dictionary)
        return cv2.aruco.GridBoard((self.cols, self.rows), self.marker, self.gap, dictionary)

    def object_points(self) -> np.ndarray:
        """(feature_count, 3) points of the features in the board frame (metres, z = 0)."""
        if self.kind == "checkerboard":
            r, c = np.mgrid[0:self.rows, 0:self.cols]
            return np.column_stack([c.ravel() * self.square, r.ravel() * self.square,
                                    np.zeros(r.size)])
        if self.kind == "charuco":
            r, c = np.mgrid[0:self.rows - 1, 0:self.cols - 1]
            return np.column_stack([(c.ravel() + 1) * self.square,
                                    (r.ravel() + 1) * self.square, np.zeros(r.size)])
        pitch = self.marker + self.gap
        r, c = np.mgrid[0:self.rows, 0:self.cols]
        origin = np.column_stack([c.ravel() * pitch, r.ravel() * pitch])
        square = np.array([[0, 0], [1, 0], [1, 1], [0, 1]], float) * self.marker
        xy = (origin[:, None, :] + square[None, :, :]).reshape(-1, 2)
        return np.column_stack([xy, np.zeros(len(xy))])

    def size(self) -> tuple:
        """(width, height) of the printed board in metres."""
        if self.kind == "checkerboard":
            return ((self.cols + 1) * self.square, (self.rows + 1) * self.square)
        if self.kind == "charuco":
            return (self.cols * self.square, self.rows * self.square)
        pitch = self.marker + self.gap
        return (self.cols * pitch - self.gap, self.rows * pitch - self.gap)


@dataclass(frozen=True)
class Detection:
    """The features of a :class:`Board` found in one image.

    ``ids`` index :meth:`Board.object_points`; ``pixels`` are their sub-pixel image
    positions (x right, y down, OpenCV's convention: the centre of the top-left pixel is
    (0, 0)); ``homography_rms`` is the RMS distance (px) between the pixels and the board
    points mapped through the best plane-to-image homography.
    """

    image: str
    ids: np.ndarray
    pixels: np.ndarray
    homography_rms: float
    width: int
    height: int

    def __post_init__(self) -> None:
        ids = np.asarray(self.ids, dtype=np.int64).reshape(-1)
        pixels = np.asarray(self.pixels, dtype=np.float64).reshape(-1, 2)
        if len(ids) != len(pixels):
            raise ValueError(f"{self.image}: {len(ids)} ids for {len(pixels)} pixels")
        object.__setattr__(self, "ids", ids)
        object.__setattr__(self, "pixels", pixels)

    def __len__(self) -> int:
        return len(self.ids)


__all__ = ["Board", "Detection", "KINDS", "aruco_dictionary"]

"""The board corners of a camera calibration in the camera's optical frame, for display.

For every view two point sets (metres, camera optical frame: z forward, x right, y down):

* **predicted**: the board's features where the calibrated model puts them,
  ``p = T_ref,cam(q)^-1 * T_ref,board(q) * P_board`` (:meth:`CameraProblem.camera_points`);
  projected, they are the model's predicted pixels;
* **detected**: each detected pixel back-projected onto the board's plane at the board
  pose the model predicts: the pixel is undistorted to its viewing ray ``d = (x, y, 1)``
  (``cv2.undistortPoints`` iterated to 1e-12, the inverse of
  :func:`~figaroh_ros.camera.model.project`), and the ray meets the plane
  ``n . p = n . t`` (``n`` the board's z axis, ``t`` its origin, both in the camera frame)
  at ``p = (n . t / n . d) d``.

A pixel error ``e`` thus shows as a distance of about ``e * Z / f`` on the board (``Z`` the
depth, ``f`` the focal length in pixels), growing with the board's incidence angle.  The
points go to ``corners_fit.csv`` beside ``result.yaml`` (one row per feature:
view, split, feature, predicted x y z, detected x y z), which the calibration node turns
into RViz markers (``figaroh_ros.ros.camera_markers``).
"""
from __future__ import annotations

import csv
from dataclasses import dataclass

import cv2
import numpy as np

from figaroh_ros.camera.problem import CameraProblem, Views
from figaroh_ros.errors import DataError

HEADER = ("view", "split", "feature", "predicted_x", "predicted_y", "predicted_z",
          "detected_x", "detected_y", "detected_z")


@dataclass
class ViewCorners:
    """One view's corners in the camera's optical frame (N x 3 each, same order)."""

    view: str
    split: str              # training, rejected or held-out
    predicted: np.ndarray
    detected: np.ndarray


def corner_points(problem: CameraProblem, views: Views, x: np.ndarray,
                  split: str = "training") -> list[ViewCorners]:
    """Predicted and back-projected detected corners of every view at parameters ``x``."""
    pc, _ = problem.camera_points(views, x)
    Ta, Tb = problem.poses(views, x)
    K = problem.intrinsics_of(x)
    rays = cv2.undistortPoints(
        np.ascontiguousarray(views.pixels, float).reshape(-1, 1, 2), K.K, K.dist, None, None,
        None, (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 50, 1e-12)).reshape(-1, 2)
    d = np.c_[rays, np.ones(len(rays))]
    RaT = np.swapaxes(Ta[:, :3, :3], 1, 2)
    n = (RaT @ Tb[:, :3, 2:3])[:, :, 0]                          # board z, camera frame
    t = (RaT @ (Tb[:, :3, 3] - Ta[:, :3, 3])[:, :, None])[:, :, 0]
    v = views.view
    along = np.sum(n[v] * d, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        s = np.sum(n[v] * t[v], axis=1) / along
    s[np.abs(along) < 1e-12] = np.nan                            # a ray along the plane
    detected = s[:, None] * d
    return [ViewCorners(name, split, pc[v == k], detected[v == k])
            for k, name in enumerate(views.ids)]


def result_corners(result) -> list[ViewCorners]:
    """:func:`corner_points` of a :class:`CameraCalibrationResult`'s calibrated model: its
    training views (``rejected`` for those the outlier rejection dropped) and held-out
    views."""
    out = corner_points(result.problem, result.train, result.x)
    for c in out:
        if c.view in result.rejected:
            c.split = "rejected"
    if result.validation is not None:
        out += corner_points(result.problem, result.validation, result.x, "held-out")
    return out


def write_corners(path: str, corners: list[ViewCorners]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(HEADER)
        for c in corners:
            for k, (p, q) in enumerate(zip(c.predicted, c.detected)):
                w.writerow([c.view, c.split, k, *(f"{a:.9g}" for a in p),
                            *(f"{a:.9g}" for a in q)])


def read_corners(path: str) -> list[ViewCorners]:
    """The views of a ``corners_fit.csv``, in file order."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.reader(f))
    except OSError as exc:
        raise DataError(f"{path}: {exc.strerror}") from exc
    if not rows or tuple(rows[0]) != HEADER:
        raise DataError(f"{path}: not a corners file (header {','.join(HEADER)} expected)")
    views: dict[str, ViewCorners] = {}
    for i, r in enumerate(rows[1:], start=2):
        try:
            xyz = np.array(r[3:9], float)
            if len(r) != len(HEADER):
                raise ValueError(f"{len(r)} fields")
        except ValueError as exc:
            raise DataError(f"{path}: line {i}: {exc}") from exc
        c = views.setdefault(r[0], ViewCorners(r[0], r[1], np.zeros((0, 3)),
                                               np.zeros((0, 3))))
        c.predicted = np.vstack([c.predicted, xyz[:3]])
        c.detected = np.vstack([c.detected, xyz[3:]])
    return list(views.values())


__all__ = ["ViewCorners", "corner_points", "result_corners", "write_corners",
           "read_corners"]

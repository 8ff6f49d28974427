"""Closed-form rigid fits (numpy and pinocchio only, no solver): the Kabsch registration
of two point sets, the mean of rotations, the frame of a plane through points.  The
calibration's initial frames start from them; reading a recording averages a marker's
orientations with them without loading the calibration solver (scipy.optimize)."""
from __future__ import annotations

import numpy as np
import pinocchio as pin


def kabsch(src: np.ndarray, dst: np.ndarray) -> pin.SE3:
    """Rigid transform T minimising ||T src - dst|| (rows are points)."""
    cs, cd = src.mean(0), dst.mean(0)
    H = (src - cs).T @ (dst - cd)
    U, _, Vt = np.linalg.svd(H)
    D = np.diag([1.0, 1.0, np.sign(np.linalg.det(Vt.T @ U.T))])
    R = Vt.T @ D @ U.T
    return pin.SE3(R, cd - R @ cs)


def mean_rotation(Rs) -> np.ndarray:
    U, _, Vt = np.linalg.svd(np.sum(Rs, axis=0))
    return U @ np.diag([1.0, 1.0, np.sign(np.linalg.det(U @ Vt))]) @ Vt


def plane_frame(points: np.ndarray) -> pin.SE3:
    """Frame whose xy plane fits ``points`` (z along the smallest principal axis)."""
    c = points.mean(0)
    _, _, Vt = np.linalg.svd(points - c)
    R = Vt.T.copy()
    if np.linalg.det(R) < 0:
        R[:, 0] *= -1
    return pin.SE3(R, c)

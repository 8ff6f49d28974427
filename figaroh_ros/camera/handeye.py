"""Closed-form starting point of the camera and board mounts (hand-eye calibration).

Each view's board pose in the camera, ``C_i = T_cam,board``, comes from
``cv2.solvePnP`` on its detected features.  With ``G_i`` the robot's pose of the mount
frame (nominal model), eye-in-hand gives ``G_i X C_i = Y`` (``X`` camera on the flange,
``Y`` board in the world), hence for every pair ``A X = X B`` with ``A = G_i^-1 G_j``,
``B = C_i C_j^-1`` (Shiu & Ahmad 1989; Tsai & Lenz 1989).  Eye-to-hand is the same
equation for ``G_i^-1`` (camera in the world, board on the flange).

Solved by Park & Martin's method ("Robot sensor calibration: solving AX = XB on the
Euclidean group", IEEE Trans. Robotics and Automation, 1994): the rotation from the
log-rotations, ``R_X = (M^T M)^-1/2 M^T`` with ``M = sum beta alpha^T``, the translation by
linear least squares ``(R_A - I) t_X = R_X t_B - t_A``.  OpenCV's ``cv2.calibrateHandEye``
(``CALIB_HAND_EYE_PARK``) implements the same method; it is used when the installed
OpenCV has it.
"""
from __future__ import annotations

import cv2
import numpy as np
import pinocchio as pin

from figaroh_ros.camera.model import Intrinsics
from figaroh_ros.errors import DataError, SolverError


def board_poses(intrinsics: Intrinsics, points: list[np.ndarray], pixels: list[np.ndarray],
                names: list[str]) -> np.ndarray:
    """Board pose in the camera (P x 4 x 4) of every view by ``cv2.solvePnP``."""
    out = np.empty((len(points), 4, 4))
    for i, (P, uv) in enumerate(zip(points, pixels)):
        if len(P) < 4:
            raise DataError(f"view {names[i]}: {len(P)} features, at least 4 are needed")
        ok, rvec, tvec = cv2.solvePnP(np.ascontiguousarray(P, float),
                                      np.ascontiguousarray(uv, float), intrinsics.K,
                                      intrinsics.dist, flags=cv2.SOLVEPNP_ITERATIVE)
        if not ok:
            raise SolverError(f"view {names[i]}: the board's pose could not be found "
                              "from its features (cv2.solvePnP)")
        T = np.eye(4)
        T[:3, :3] = cv2.Rodrigues(rvec)[0]
        T[:3, 3] = tvec.ravel()
        out[i] = T
    return out


def park_martin(G: np.ndarray, C: np.ndarray) -> np.ndarray:
    """``X`` (4 x 4) of ``G_i X C_i = const`` from every pair of views."""
    n = len(G)
    if n < 3:
        raise DataError(f"{n} views: the hand-eye transform needs at least 3")
    i, j = np.triu_indices(n, 1)
    A = np.linalg.inv(G[i]) @ G[j]
    B = C[i] @ np.linalg.inv(C[j])
    alpha = np.array([pin.log3(a) for a in A[:, :3, :3]])
    beta = np.array([pin.log3(b) for b in B[:, :3, :3]])
    M = beta.T @ alpha
    w, V = np.linalg.eigh(M.T @ M)
    if w.min() <= 1e-12 * max(w.max(), 1e-300):
        raise SolverError("the views' rotations all share one axis: the hand-eye rotation "
                          "is undetermined; rotate the mount about two different axes")
    R = V @ np.diag(w ** -0.5) @ V.T @ M.T
    U, _, Vt = np.linalg.svd(R)
    R = U @ np.diag([1, 1, np.linalg.det(U @ Vt)]) @ Vt
    lhs = (A[:, :3, :3] - np.eye(3)).reshape(-1, 3)
    rhs = (B[:, :3, 3] @ R.T - A[:, :3, 3]).ravel()
    t = np.linalg.lstsq(lhs, rhs, rcond=None)[0]
    X = np.eye(4)
    X[:3, :3], X[:3, 3] = R, t
    return X


def opencv_hand_eye(G: np.ndarray, C: np.ndarray):
    """``X`` by ``cv2.calibrateHandEye`` (Park & Martin), or ``None`` when the installed
    OpenCV does not offer it (OpenCV 5.0's Python wheels)."""
    fn = getattr(cv2, "calibrateHandEye", None)
    if fn is None:
        return None
    R, t = fn([g[:3, :3] for g in G], [g[:3, 3] for g in G], [c[:3, :3] for c in C],
              [c[:3, 3] for c in C], method=cv2.CALIB_HAND_EYE_PARK)
    X = np.eye(4)
    X[:3, :3], X[:3, 3] = R, np.ravel(t)
    return X


def mean_pose(T: np.ndarray) -> np.ndarray:
    """Chordal mean rotation and mean position of the poses (P x 4 x 4)."""
    U, _, Vt = np.linalg.svd(T[:, :3, :3].sum(0))
    out = np.eye(4)
    out[:3, :3] = U @ np.diag([1, 1, np.linalg.det(U @ Vt)]) @ Vt
    out[:3, 3] = T[:, :3, 3].mean(0)
    return out


def hand_eye(G: np.ndarray, C: np.ndarray, eye_in_hand: bool,
             use_opencv: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """(camera mount, board mount) from the robot's mount poses ``G`` and the board
    poses ``C``: eye-in-hand (camera on ``G``, board fixed in ``G``'s reference) or
    eye-to-hand (board on ``G``, camera fixed)."""
    H = G if eye_in_hand else np.linalg.inv(G)
    X = (opencv_hand_eye(H, C) if use_opencv else None)
    if X is None:
        X = park_martin(H, C)
    Y = mean_pose(H @ X @ C)
    return X, Y

"""The pixel residuals of a robot-camera-board system and their exact Jacobian.

Every setup is one equation: the board's points seen by the camera,

    p_c = T_ref,cam(q, Phi_A)^-1 * T_ref,board(q, Phi_B) * P_board,
    r = pi(K, dist; p_c) - u_detected                                   (pixels)

with ``pi`` the pinhole projection with OpenCV's distortion (:mod:`.model`).  Each side
(the camera ``A``, the board ``B``) is either a kinematic chain of the robot ending in a
mount transform (:class:`ChainSide`: the calibration's own
:class:`~figaroh_ros.calibration.kinematic_model.KinematicModel`, every joint at the
level it has, the mount as its "tool" frame), or a transform fixed in the reference frame
(:class:`FixedSide`):

* eye-in-hand: camera = chain to the flange * camera mount, board = fixed in the world;
* eye-to-hand: camera = fixed in the world, board = chain to the flange * board mount;
* on the robot's chain: camera = chain to the camera's link * mount, board = chain to the
  gripper * board mount, both from the last joint the two chains share (the shared joints
  move camera and board together and cancel).

The Jacobian: a parameter moves a side by a twist ``(v, w)`` (reference axes, ``v`` at the
side's origin, the calibration's kinematic regressor), so a point moves by
``R_A^T ((P - t_A) x w - v)`` (camera side) or ``R_A^T (v + w x (P - t_B))`` (board side),
then through the projection's derivative (``cv2.projectPoints``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

import figaroh_ros.calibration.chain_batch as batch
from figaroh_ros.calibration.kinematic_model import (
    PLACEMENT_NAMES, KinematicModel, placement_variation
)
from figaroh_ros.camera.model import Intrinsics, project_jacobian


class FixedSide:
    """A frame fixed in the reference frame: ``T0 * SE3(exp3(dphi), dp)``."""

    def __init__(self, prefix: str, T0: pin.SE3 | None = None):
        self.prefix = prefix
        self.T0 = pin.SE3.Identity() if T0 is None else T0
        self.names = [f"{prefix}_{a}" for a in PLACEMENT_NAMES]
        self.joints: list[str] = []

    @property
    def n_params(self) -> int:
        return 6

    def readings(self, Q: np.ndarray) -> np.ndarray:
        return np.zeros((len(Q), 0))

    def mount(self, x: np.ndarray) -> pin.SE3:
        return self.T0 * placement_variation(x)

    def poses(self, Q: np.ndarray, x: np.ndarray, jacobian: bool):
        T = np.broadcast_to(self.mount(x).homogeneous, (len(Q), 4, 4))
        if not jacobian:
            return T, None
        C = batch.placement_columns(T[0, :3, :3], T[0, :3, 3], x, T[0, :3, 3])
        return T, np.broadcast_to(C, (len(Q), 6, 6))

    def mount_columns(self) -> np.ndarray:
        return np.arange(6)


class ChainSide:
    """A chain of the robot from the reference frame to ``frame``, then a mount."""

    def __init__(self, prefix: str, km: KinematicModel):
        self.prefix, self.km = prefix, km
        self.names = [n.replace("tool_", f"{prefix}_", 1) if n.startswith("tool_") else n
                      for n in km.names]
        self.joints = list(km.joints)

    @property
    def n_params(self) -> int:
        return self.km.n_params

    @property
    def T0(self) -> pin.SE3:
        return self.km.tool0

    def readings(self, Q: np.ndarray) -> np.ndarray:
        """Chain joint readings from full configurations (P x nq)."""
        return self.km.chain_angles(Q)

    def mount(self, x: np.ndarray) -> pin.SE3:
        return self.km.tool_pose(x)

    def poses(self, Q: np.ndarray, x: np.ndarray, jacobian: bool):
        km = self.km
        T, placed, moved = km._chain(Q, x)
        Tm = T @ km.tool_pose(x).homogeneous
        if not jacobian:
            return Tm, None
        t, pm = T[:, :3, 3], Tm[:, :3, 3]
        C = km._twists(Q, x, t, placed, moved)
        C[:, :3] -= batch.skews(pm - t) @ C[:, 3:]
        tg = km.groups["tool"]
        C[:, :, tg] = batch.placement_columns(Tm[:, :3, :3], pm, x[tg], pm)
        return Tm, C

    def mount_columns(self) -> np.ndarray:
        g = self.km.groups["tool"]
        return np.arange(g.start, g.stop)


@dataclass
class Views:
    """Detected features of every view: the robot's readings per side, and per feature
    its view, board point and pixel."""

    ids: list[str]             # view names
    Q_cam: np.ndarray          # chain readings of the camera side (P x n)
    Q_board: np.ndarray        # chain readings of the board side (P x n)
    view: np.ndarray           # (M,) view index of each feature
    points: np.ndarray         # (M, 3) board-frame point of each feature
    pixels: np.ndarray         # (M, 2) detected pixels

    def __len__(self) -> int:
        return len(self.ids)

    def subset(self, idx) -> "Views":
        idx = np.asarray(idx, int)
        where = np.full(len(self), -1)
        where[idx] = np.arange(len(idx))
        keep = np.isin(self.view, idx)
        return Views([self.ids[i] for i in idx], self.Q_cam[idx], self.Q_board[idx],
                     where[self.view[keep]], self.points[keep], self.pixels[keep])


class CameraProblem:
    """Parameters ``x = [camera side, board side, intrinsics (when estimated)]`` and the
    whitened residuals: pixel errors over ``pixel_noise``, then the intrinsics' prior
    ``(theta - theta_CameraInfo) / prior_sigma``."""

    def __init__(self, cam, board, intrinsics: Intrinsics, pixel_noise: float,
                 estimate_intrinsics: bool = False, prior_sigma: np.ndarray | None = None):
        self.cam, self.board, self.intrinsics = cam, board, intrinsics
        self.pixel_noise = float(pixel_noise)
        self.estimate_intrinsics = bool(estimate_intrinsics)
        na, nb = cam.n_params, board.n_params
        self.sa, self.sb = slice(0, na), slice(na, na + nb)
        names = list(cam.names) + list(board.names)
        self.theta0 = intrinsics.vector()
        if self.estimate_intrinsics:
            self.si = slice(na + nb, na + nb + len(self.theta0))
            names += intrinsics.names
            self.prior_sigma = np.broadcast_to(np.asarray(prior_sigma, float),
                                               self.theta0.shape).copy()
        else:
            self.si = slice(na + nb, na + nb)
            self.prior_sigma = np.zeros(0)
        self.names = names

    @property
    def n_params(self) -> int:
        return len(self.names)

    def initial(self) -> np.ndarray:
        x = np.zeros(self.n_params)
        x[self.si] = self.theta0 if self.estimate_intrinsics else []
        return x

    def intrinsics_of(self, x: np.ndarray) -> Intrinsics:
        if not self.estimate_intrinsics:
            return self.intrinsics
        return self.intrinsics.with_vector(x[self.si])

    def mount_columns(self) -> tuple[np.ndarray, np.ndarray]:
        return self.cam.mount_columns(), self.sb.start + self.board.mount_columns()

    def camera_points(self, views: Views, x: np.ndarray, jacobian: bool = False):
        """Points in the camera frame (M x 3) and their derivatives (M x 3 x n_params)."""
        Ta, Ca = self.cam.poses(views.Q_cam, x[self.sa], jacobian)
        Tb, Cb = self.board.poses(views.Q_board, x[self.sb], jacobian)
        v = views.view
        RaT = np.swapaxes(Ta[:, :3, :3], 1, 2)                      # per view
        # board points in the camera frame: R_A^T (R_B P + t_B - t_A)
        RB = RaT @ Tb[:, :3, :3]
        tB = (RaT @ (Tb[:, :3, 3] - Ta[:, :3, 3])[:, :, None])[:, :, 0]
        rb = (RB[v] @ views.points[:, :, None])[:, :, 0]           # R_A^T R_B P
        pc = rb + tB[v]
        if not jacobian:
            return pc, None
        # R_A^T skew(r) = skew(R_A^T r) R_A^T: the twists are rotated once per view
        Av, Aw = RaT @ Ca[:, :3], RaT @ Ca[:, 3:]
        Bv, Bw = RaT @ Cb[:, :3], RaT @ Cb[:, 3:]
        D = np.empty((len(pc), 3, self.n_params))
        D[:, :, self.sa] = batch.skews(pc) @ Aw[v] - Av[v]
        D[:, :, self.sb] = Bv[v] - batch.skews(rb) @ Bw[v]
        D[:, :, self.si] = 0.0
        return pc, D

    def predict(self, views: Views, x: np.ndarray) -> np.ndarray:
        """Predicted pixels (M x 2) of every detected feature."""
        pc, _ = self.camera_points(views, x)
        uv, _, _ = project_jacobian(self.intrinsics_of(x), pc)
        return uv

    def pixel_errors(self, views: Views, x: np.ndarray) -> np.ndarray:
        """Predicted minus detected pixels (M x 2)."""
        return self.predict(views, x) - views.pixels

    def residuals(self, views: Views, x: np.ndarray, jacobian: bool = True):
        """Whitened residuals (2M [+ n_intrinsics]) and Jacobian."""
        pc, D = self.camera_points(views, x, jacobian)
        uv, Jp, Ji = project_jacobian(self.intrinsics_of(x), pc)
        w = 1.0 / self.pixel_noise
        f = ((uv - views.pixels) * w).ravel()
        if self.estimate_intrinsics:
            f = np.concatenate([f, (x[self.si] - self.theta0) / self.prior_sigma])
        if not jacobian:
            return f, None
        J = (Jp @ D).reshape(-1, self.n_params) * w
        if self.estimate_intrinsics:
            J[:, self.si] = Ji.reshape(-1, Ji.shape[-1]) * w
            prior = np.zeros((len(self.theta0), self.n_params))
            prior[:, self.si] = np.diag(1.0 / self.prior_sigma)
            J = np.vstack([J, prior])
        return f, J

    def view_rms(self, views: Views, x: np.ndarray) -> np.ndarray:
        """Reprojection RMS (px, both axes) of each view."""
        e = np.sum(self.pixel_errors(views, x) ** 2, axis=1)
        n = np.bincount(views.view, minlength=len(views))
        s = np.bincount(views.view, weights=e, minlength=len(views))
        return np.sqrt(s / np.maximum(n, 1))

    def poses(self, views: Views, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Camera and board poses in the reference frame at every view (P x 4 x 4)."""
        return (self.cam.poses(views.Q_cam, x[self.sa], False)[0],
                self.board.poses(views.Q_board, x[self.sb], False)[0])

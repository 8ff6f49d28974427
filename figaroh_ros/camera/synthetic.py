"""Detections the true model predicts: each board feature projected at each posture, kept
when it is in front of the camera and inside the image with a margin, with Gaussian
pixel noise.  For ground-truth tests, benchmarks and visibility checks (no images)."""
from __future__ import annotations

import numpy as np
import pinocchio as pin

from figaroh_ros.camera.problem import CameraProblem, Views
from figaroh_ros.camera.solve import set_mounts, sides
from figaroh_ros.camera.targets import Board


def all_features(problem: CameraProblem, board: Board, Q: np.ndarray) -> Views:
    """Every feature of the board at every configuration (full configurations P x nq)."""
    Q = np.atleast_2d(np.asarray(Q, float))
    Qa = problem.cam.readings(Q)
    Qb = problem.board.readings(Q)
    P = board.object_points()
    n = len(P)
    return Views([str(i) for i in range(len(Q))], Qa, Qb, np.repeat(np.arange(len(Q)), n),
                 np.tile(P, (len(Q), 1)), np.zeros((n * len(Q), 2)))


def visible(problem: CameraProblem, board: Board, Q: np.ndarray, x: np.ndarray,
            margin: float = 20.0, min_depth: float = 0.05):
    """(pixels P x N x 2, visibility P x N) of the board's N features at each posture."""
    views = all_features(problem, board, Q)
    pc, _ = problem.camera_points(views, x)
    uv = problem.predict(views, x)
    K = problem.intrinsics_of(x)
    ok = (pc[:, 2] > min_depth) & (uv[:, 0] >= margin) & (uv[:, 1] >= margin) & \
        (uv[:, 0] <= K.width - 1 - margin) & (uv[:, 1] <= K.height - 1 - margin)
    n = board.feature_count
    return uv.reshape(len(views), n, 2), ok.reshape(len(views), n)


def detections(problem: CameraProblem, board: Board, Q: np.ndarray, x: np.ndarray,
               noise: float, rng: np.random.Generator, margin: float = 20.0,
               min_features: int = 4) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(ids, pixels)`` of the visible features of each posture, with noise (px std)."""
    uv, ok = visible(problem, board, Q, x, margin)
    out = []
    for u, k in zip(uv, ok):
        ids = np.flatnonzero(k)
        if len(ids) < min_features:
            ids = ids[:0]
        out.append((ids, u[ids] + noise * rng.standard_normal((len(ids), 2))))
    return out


def board_facing(camera: pin.SE3, board: Board, distance: float,
                 tilt: np.ndarray = np.zeros(3)) -> pin.SE3:
    """A board pose (reference frame) whose centre lies ``distance`` along the optical
    axis of the camera at ``camera``, facing it (tilted by the rotation vector ``tilt``)."""
    w, h = board.size()
    R = pin.exp3(np.asarray(tilt, float))
    centre = np.array([w / 2, h / 2, 0.0])
    T_cam_board = pin.SE3(R, np.array([0, 0, distance]) - R @ centre)
    return camera * T_cam_board


class Scene:
    """A true robot-camera-board system and views of it for ground-truth tests and the
    benchmark: the camera's (or the board's) mount ``mount``, the other mount placed so
    that the board faces the camera ``distance`` away at ``q_centre``, hidden joint
    offsets (radians, uniform within ``offset``), postures around ``q_centre`` (uniform
    within ``spread`` on the chains' joints) keeping ``min_visible`` of the features in
    the image."""

    def __init__(self, model: pin.Model, setup: str, tool_frame: str, intrinsics,
                 board: Board, q_centre: np.ndarray, mount: pin.SE3, *,
                 camera_frame: str | None = None, distance: float = 0.5,
                 offset: float = 3e-3, seed: int = 0):
        self.model, self.setup, self.board = model, setup, board
        self.rng = np.random.default_rng(seed)
        cam, brd = sides(model, setup, tool_frame, camera_frame, "offset", None)
        self.problem = CameraProblem(cam, brd, intrinsics, 1.0)
        p = self.problem
        self.q_centre = np.asarray(q_centre, float)
        x0 = p.initial()
        if setup == "eye_to_hand":     # board on the flange, camera looking at it
            set_mounts(p, np.eye(4), mount.homogeneous)
            Tb = pin.SE3(p.poses(all_features(p, board, self.q_centre[None]), x0)[1][0])
            w, h = board.size()
            centre = Tb * pin.SE3(np.eye(3), np.array([w / 2, h / 2, 0.0]))
            R = centre.rotation @ pin.rpy.rpyToMatrix(np.pi, 0.1, 0.05)  # z towards board
            cam_pose = pin.SE3(R, centre.translation - R @ np.array([0, 0, distance]))
            set_mounts(p, cam_pose.homogeneous, mount.homogeneous)
        else:
            set_mounts(p, mount.homogeneous, np.eye(4))
            Ta, Tb = p.poses(all_features(p, board, self.q_centre[None]), x0)
            facing = board_facing(pin.SE3(Ta[0]), board, distance, [0.1, 0.05, 0.0])
            set_mounts(p, mount.homogeneous,
                       (pin.SE3(Tb[0]).inverse() * facing).homogeneous)
        self.camera_mount, self.board_mount = p.cam.T0, p.board.T0
        self.x = p.initial()
        self.joint_offsets = {}
        for side in (cam, brd):
            if hasattr(side, "km"):
                for j in side.km.joints:
                    name = f"offset_{j}"
                    self.joint_offsets[name] = float(self.rng.uniform(-offset, offset))
                    self.x[p.names.index(name)] = self.joint_offsets[name]
        self.moving = [model.joints[model.getJointId(j)].idx_q
                       for side in (cam, brd) if hasattr(side, "km") for j in side.km.chain]

    def postures(self, n: int, spread: float = 0.25, min_visible: float = 0.9,
                 margin: float = 20.0) -> np.ndarray:
        """``n`` full configurations around the centre with the board in view."""
        out = []
        while len(out) < n:
            Q = np.tile(self.q_centre, (8 * n, 1))
            Q[:, self.moving] += self.rng.uniform(-spread, spread, (8 * n, len(self.moving)))
            _, ok = visible(self.problem, self.board, Q, self.x, margin)
            out += list(Q[ok.mean(axis=1) >= min_visible])
        return np.array(out[:n])

    def detections(self, Q: np.ndarray, noise: float = 0.3):
        return detections(self.problem, self.board, Q, self.x, noise, self.rng)

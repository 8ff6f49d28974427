"""A simulated camera's hidden truth and its images (ROS-free; the ``sim_camera`` node
publishes them).

The true system is a :class:`figaroh_ros.camera.synthetic.Scene` built from the simulated
camera config (``figaroh_ros.config.sim_camera``) on the simulated robot's model: the
camera's true mount, the board placed to face the camera ``truth.distance`` away at the
``truth.centre`` posture, and hidden joint offsets of the camera's chain (the link angle is
the encoder reading plus its offset).  :meth:`SimCamera.image` draws what the camera sees
at a joint reading with :func:`figaroh_ros.camera.render.render` (distortion, blur,
noise); a board not wholly in front of the camera leaves the background alone.
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin

from figaroh_ros.camera.model import Intrinsics
from figaroh_ros.camera.render import board_texture, render, true_pixels
from figaroh_ros.camera.synthetic import Scene, all_features
from figaroh_ros.config.sim_camera import SimCameraConfig, parse_sim_camera
from figaroh_ros.errors import ConfigError
from figaroh_ros.sim.truth import load_sim_config

BACKGROUND = 110


class SimCamera:
    """The hidden true camera of ``cfg`` (a path or a :class:`SimCameraConfig`)."""

    def __init__(self, cfg: SimCameraConfig | str):
        if isinstance(cfg, str):
            cfg = parse_sim_camera(cfg)
        self.cfg = cfg
        robot = load_sim_config(cfg.robot_config)
        self.urdf = robot.urdf
        self.model = pin.buildModelFromUrdf(robot.urdf)
        m = self.model
        for what, frame in (("tool_frame", cfg.tool_frame),
                            ("camera_frame", cfg.camera_frame)):
            if frame is not None and not m.existFrame(frame):
                raise ConfigError(f"{what}: no frame {frame!r} in {robot.urdf}")
        self.board = cfg.board.board()
        self.intrinsics = _intrinsics(cfg)
        self.q_centre = self.configuration(cfg.truth.centre)
        t = cfg.truth
        mount = pin.SE3(pin.rpy.rpyToMatrix(*t.mount.rpy), np.array(t.mount.xyz, float))
        self.scene = Scene(m, cfg.setup, cfg.tool_frame, self.intrinsics, self.board,
                           self.q_centre, mount, camera_frame=cfg.camera_frame,
                           distance=t.distance, offset=1e-3 * t.offset_mrad, seed=t.seed)
        self.rng = np.random.default_rng(t.seed + 1)
        self.texture = board_texture(self.board)

    # ------------------------------------------------------------- truth
    @property
    def camera_mount(self) -> pin.SE3:
        return pin.SE3(self.scene.camera_mount)

    @property
    def board_mount(self) -> pin.SE3:
        return pin.SE3(self.scene.board_mount)

    @property
    def joint_offsets(self) -> dict[str, float]:
        """``offset_<joint>`` -> hidden offset (rad), as the calibration names them."""
        return dict(self.scene.joint_offsets)

    def configuration(self, positions: dict[str, float]) -> np.ndarray:
        """The full configuration with ``positions`` (joint name -> rad), the rest zero."""
        m = self.model
        q = pin.neutral(m)
        for name, value in positions.items():
            if not m.existJointName(name):
                raise ConfigError(f"truth.centre: no joint {name!r} in {self.urdf}")
            q[m.joints[m.getJointId(name)].idx_q] = float(value)
        return q

    def reading_configuration(self, names, positions) -> np.ndarray:
        """The full configuration of a joint-state reading (unknown names ignored;
        joints not read stay at ``truth.centre``)."""
        m, q = self.model, self.q_centre.copy()
        for name, value in zip(names, positions):
            if m.existJointName(name):
                q[m.joints[m.getJointId(name)].idx_q] = float(value)
        return q

    def camera_board(self, q: np.ndarray) -> np.ndarray:
        """The board's true pose in the camera's optical frame (4x4) at the full
        configuration ``q`` (readings; the hidden offsets are applied)."""
        p = self.scene.problem
        views = all_features(p, self.board, np.asarray(q, float)[None])
        Ta, Tb = p.poses(views, self.scene.x)
        return np.linalg.inv(Ta[0]) @ Tb[0]

    def true_pixels(self, q: np.ndarray):
        """``(ids, pixels)`` of the features inside the image at ``q`` (exact)."""
        k = self.intrinsics
        ids, uv, front = true_pixels(self.board, k.K, k.dist, self.camera_board(q))
        inside = front & (uv[:, 0] >= 0) & (uv[:, 1] >= 0) & (uv[:, 0] <= k.width - 1) & \
            (uv[:, 1] <= k.height - 1)
        return ids[inside], uv[inside]

    # ------------------------------------------------------------- images
    def image(self, q: np.ndarray) -> np.ndarray:
        """The grey image (uint8, height x width) the camera takes at ``q``."""
        return self.noisy(self.clean_image(q))

    def clean_image(self, q: np.ndarray) -> np.ndarray:
        """The image at ``q`` before the pixel noise (blurred; float64 grey levels)."""
        k, n = self.intrinsics, self.cfg.noise
        try:
            return render(self.board, k.K, k.dist, self.camera_board(q), k.width, k.height,
                          blur=n.blur, background=BACKGROUND, supersample=n.supersample,
                          texture=self.texture).astype(np.float64)
        except ValueError:         # the board behind the camera: the background alone
            return np.full((k.height, k.width), float(BACKGROUND))

    def noisy(self, clean: np.ndarray) -> np.ndarray:
        """``clean`` with a frame's Gaussian pixel noise, as uint8."""
        out = clean + self.cfg.noise.grey * self.rng.standard_normal(clean.shape)
        return np.clip(np.rint(out), 0, 255).astype(np.uint8)

    def camera_info(self) -> dict:
        """The camera's nominal CameraInfo fields (the config's intrinsics)."""
        k = self.intrinsics
        d = list(np.asarray(k.dist, float).reshape(-1))
        P = np.zeros((3, 4))
        P[:3, :3] = k.K
        return {"width": k.width, "height": k.height, "K": k.K.reshape(-1).tolist(),
                "D": d, "distortion_model": "plumb_bob" if len(d) <= 5 else
                "rational_polynomial", "R": np.eye(3).reshape(-1).tolist(),
                "P": P.reshape(-1).tolist()}


def _intrinsics(cfg: SimCameraConfig) -> Intrinsics:
    m = cfg.intrinsics
    K = np.array([[m.fx, 0.0, m.cx], [0.0, m.fy, m.cy], [0.0, 0.0, 1.0]])
    return Intrinsics(K, m.dist, m.width, m.height)


__all__ = ["SimCamera", "BACKGROUND"]

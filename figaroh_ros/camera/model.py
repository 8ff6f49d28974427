"""The camera: pinhole projection with OpenCV's distortion model (Zhang 2000; Brown 1966).

A point ``(X, Y, Z)`` in the camera's optical frame (z forward, x right, y down) is seen at

    x = X / Z,  y = Y / Z,  r^2 = x^2 + y^2
    x' = x (1 + k1 r^2 + k2 r^4 + k3 r^6) + 2 p1 x y + p2 (r^2 + 2 x^2)
    y' = y (1 + k1 r^2 + k2 r^4 + k3 r^6) + p1 (r^2 + 2 y^2) + 2 p2 x y
    u = fx x' + cx,  v = fy y' + cy

(``cv2.projectPoints``; further coefficients in OpenCV's order are accepted as OpenCV
takes them).  :class:`Intrinsics` holds ``K`` and the coefficients with the image size and
reads/writes them as a ``sensor_msgs/CameraInfo`` YAML file in the format of
camera_calibration_parsers.
"""
from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np
import yaml

from figaroh_ros.errors import ConfigError, DataError

DIST_NAMES = ("k1", "k2", "p1", "p2", "k3", "k4", "k5", "k6", "s1", "s2", "s3", "s4",
              "tau_x", "tau_y")
INTRINSIC_NAMES = ("fx", "fy", "cx", "cy")
DIST_SIZES = (4, 5, 8, 12, 14)


@dataclass(frozen=True, eq=False)
class Intrinsics:
    """Camera matrix ``K`` (3 x 3), distortion ``dist`` in OpenCV's order
    (k1, k2, p1, p2[, k3, ...]) and the image size in pixels."""

    K: np.ndarray
    dist: np.ndarray
    width: int
    height: int

    def __post_init__(self) -> None:
        K = np.array(self.K, float)
        dist = np.array(self.dist, float).reshape(-1)
        if K.shape != (3, 3) or not np.all(np.isfinite(K)):
            raise ConfigError(f"intrinsics.K: a finite 3 x 3 camera matrix is needed, got "
                              f"shape {K.shape}")
        if K[0, 0] <= 0 or K[1, 1] <= 0 or abs(K[2, 2] - 1.0) > 1e-9 or \
                np.any(K[1:, 0] != 0) or K[2, 1] != 0:
            raise ConfigError(f"intrinsics.K: {K.tolist()} is not a camera matrix "
                              "[[fx, s, cx], [0, fy, cy], [0, 0, 1]] with fx, fy > 0")
        if dist.size == 0:
            dist = np.zeros(5)
        if dist.size not in DIST_SIZES or not np.all(np.isfinite(dist)):
            raise ConfigError(f"intrinsics.dist: {dist.size} coefficients; OpenCV takes "
                              f"{', '.join(map(str, DIST_SIZES))} finite values")
        for name in ("width", "height"):
            value = getattr(self, name)
            if isinstance(value, bool) or int(value) != value or value <= 0:
                raise ConfigError(f"intrinsics.{name}: {value!r} must be a positive number "
                                  "of pixels")
            object.__setattr__(self, name, int(value))
        K.setflags(write=False)
        dist.setflags(write=False)
        object.__setattr__(self, "K", K)
        object.__setattr__(self, "dist", dist)

    # ------------------------------------------------------------ parameter vector
    @property
    def names(self) -> list[str]:
        """Names of :meth:`vector`'s entries: fx, fy, cx, cy, then the coefficients."""
        return list(INTRINSIC_NAMES) + list(DIST_NAMES[:self.dist.size])

    def vector(self) -> np.ndarray:
        K = self.K
        return np.concatenate([[K[0, 0], K[1, 1], K[0, 2], K[1, 2]], self.dist])

    def with_vector(self, v) -> "Intrinsics":
        v = np.asarray(v, float)
        K = self.K.copy()
        K[0, 0], K[1, 1], K[0, 2], K[1, 2] = v[:4]
        return Intrinsics(K, v[4:], self.width, self.height)

    # ------------------------------------------------------------ CameraInfo
    @classmethod
    def from_camera_info(cls, info) -> "Intrinsics":
        """From a CameraInfo dictionary (camera_calibration_parsers' YAML keys, or the
        message's own ``width/height/k/d``), or the path of such a YAML file."""
        if isinstance(info, (str, bytes)) or hasattr(info, "__fspath__"):
            info = _read_yaml(info)
        if not isinstance(info, dict):
            raise ConfigError(f"CameraInfo: a mapping is needed, got {type(info).__name__}")
        try:
            if "camera_matrix" in info:
                K = np.reshape(info["camera_matrix"]["data"], (3, 3))
                d = info.get("distortion_coefficients", {}).get("data", [])
                w, h = info["image_width"], info["image_height"]
            else:
                K = np.reshape(info["k"], (3, 3))
                d, w, h = info.get("d", []), info["width"], info["height"]
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"CameraInfo: missing or malformed field {exc}; expected "
                              "image_width, image_height, camera_matrix.data (9 values), "
                              "distortion_coefficients.data") from exc
        model = info.get("distortion_model", "plumb_bob")
        if model not in ("plumb_bob", "rational_polynomial", "", None):
            raise ConfigError(f"CameraInfo.distortion_model: {model!r} is not OpenCV's "
                              "pinhole model (plumb_bob or rational_polynomial)")
        return cls(K, d, w, h)

    def camera_info(self, camera_name: str = "camera") -> dict:
        """The CameraInfo dictionary in camera_calibration_parsers' layout."""
        P = np.zeros((3, 4))
        P[:, :3] = self.K
        return {"image_width": self.width, "image_height": self.height,
                "camera_name": camera_name,
                "camera_matrix": {"rows": 3, "cols": 3,
                                  "data": [float(v) for v in self.K.ravel()]},
                "distortion_model": ("plumb_bob" if self.dist.size <= 5
                                     else "rational_polynomial"),
                "distortion_coefficients": {"rows": 1, "cols": int(self.dist.size),
                                            "data": [float(v) for v in self.dist]},
                "rectification_matrix": {"rows": 3, "cols": 3,
                                         "data": [float(v) for v in np.eye(3).ravel()]},
                "projection_matrix": {"rows": 3, "cols": 4,
                                      "data": [float(v) for v in P.ravel()]}}

    def to_camera_info_yaml(self, camera_name: str = "camera") -> str:
        return yaml.safe_dump(self.camera_info(camera_name), sort_keys=False)

    def check_image(self, width: int, height: int, what: str = "image") -> None:
        """A clear error when an image is not of this camera's size."""
        if (int(width), int(height)) != (self.width, self.height):
            raise DataError(f"{what} is {width}x{height} pixels but the CameraInfo says "
                            f"{self.width}x{self.height}")


def _read_yaml(path) -> dict:
    try:
        with open(path, encoding="utf-8") as f:
            return yaml.safe_load(f)
    except OSError as exc:
        raise ConfigError(f"CameraInfo file {path}: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise ConfigError(f"CameraInfo file {path}: not YAML ({exc})") from exc


def project(intrinsics: Intrinsics, points: np.ndarray) -> np.ndarray:
    """Pixels (N x 2) of points (N x 3) given in the camera's optical frame."""
    P = np.ascontiguousarray(np.asarray(points, float).reshape(-1, 3))
    if len(P) == 0:
        return np.zeros((0, 2))
    uv, _ = cv2.projectPoints(P, np.zeros(3), np.zeros(3), intrinsics.K, intrinsics.dist)
    return uv.reshape(-1, 2)


def project_jacobian(intrinsics: Intrinsics, points: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pixels (N x 2), their derivatives with respect to the points (N x 2 x 3, camera
    frame) and with respect to :meth:`Intrinsics.vector` (N x 2 x (4 + k)).

    ``cv2.projectPoints`` at the identity pose: its translation columns are the
    derivatives with respect to the point itself."""
    P = np.ascontiguousarray(np.asarray(points, float).reshape(-1, 3))
    n, k = len(P), intrinsics.dist.size
    if n == 0:
        return np.zeros((0, 2)), np.zeros((0, 2, 3)), np.zeros((0, 2, 4 + k))
    uv, J = cv2.projectPoints(P, np.zeros(3), np.zeros(3), intrinsics.K, intrinsics.dist)
    J = J.reshape(n, 2, -1)
    return uv.reshape(n, 2), J[:, :, 3:6], J[:, :, 6:10 + k]

"""Simulated camera images of a calibration board.

:func:`render` draws a :class:`~figaroh_ros.camera.targets.Board` as a pinhole camera with
OpenCV's distortion model sees it from the pose ``T_cam_board`` (4x4, board frame in the
camera frame; z along the optical axis): the board's printed face (a drawn checkerboard, or
OpenCV's own ``generateImage`` for ChArUco and marker grids) is mapped by the plane-to-image
homography of the undistorted camera, then distorted by a remap through
:func:`cv2.undistortPoints`, rendered ``supersample`` times finer and averaged down to the
image (area sampling: the edges are anti-aliased as on a sensor); Gaussian blur (``blur`` px,
sigma) and Gaussian pixel noise (``noise`` grey levels, sigma) come last.

:func:`true_pixels` gives the exact projections of the board's features (the ground truth a
detection is compared with).
"""
from __future__ import annotations

import cv2
import numpy as np

from figaroh_ros.camera.targets import Board

PRINT_DPM = 4000.0  # board texture resolution, pixels per metre (0.25 mm)


def board_texture(board: Board, px_per_m: float = PRINT_DPM, margin: float | None = None):
    """The printed board as a grey image and the board-frame point of its top-left corner.

    Returns ``(image, origin, px_per_m)``: ``image`` (uint8, white margin of ``margin`` metres, one square
    by default) and ``origin`` (x, y) such that the centre of texture pixel (i, j) is the board
    point ``origin + ((i + 0.5), (j + 0.5)) / px_per_m``.
    """
    width, height = board.size()
    if margin is None:
        margin = board.square if board.kind == "checkerboard" else max(board.square,
                                                                       board.marker)
    m = int(round(margin * px_per_m))
    w, h = int(round(width * px_per_m)), int(round(height * px_per_m))
    if board.kind == "checkerboard":
        s = board.square * px_per_m
        j, i = np.mgrid[0:h, 0:w]
        squares = (np.floor((i + 0.5) / s).astype(int) + np.floor((j + 0.5) / s).astype(int))
        inner = np.where(squares % 2 == 0, 0, 255).astype(np.uint8)
        image = np.full((h + 2 * m, w + 2 * m), 255, np.uint8)
        image[m:m + h, m:m + w] = inner
        origin = (-board.square - m / px_per_m, -board.square - m / px_per_m)
        return image, np.array(origin), px_per_m
    image = board.cv_board().generateImage((w + 2 * m, h + 2 * m), marginSize=m, borderBits=1)
    return image, np.array((-m / px_per_m, -m / px_per_m)), px_per_m


def true_pixels(board: Board, K, dist, T_cam_board):
    """``(ids, pixels, in_front)``: every feature projected through the camera (OpenCV's model);
    ``in_front`` marks the features with positive depth."""
    T = np.asarray(T_cam_board, np.float64)
    points = board.object_points()
    rvec, _ = cv2.Rodrigues(T[:3, :3])
    pixels, _ = cv2.projectPoints(points, rvec, T[:3, 3], np.asarray(K, np.float64),
                                  np.asarray(dist, np.float64))
    depth = points @ T[:3, :3].T[:, 2] + T[2, 3]
    return np.arange(len(points)), pixels.reshape(-1, 2), depth > 0


def _scaled_camera(K, s: int):
    K = np.asarray(K, np.float64).copy()
    K[0, 0] *= s
    K[1, 1] *= s
    K[0, 1] *= s
    K[0, 2] = s * (K[0, 2] + 0.5) - 0.5
    K[1, 2] = s * (K[1, 2] + 0.5) - 0.5
    return K


def render(board: Board, K, dist, T_cam_board, width: int, height: int, blur: float = 0.0,
           noise: float = 0.0, rng=None, background: int = 110, supersample: int = 3,
           texture=None) -> np.ndarray:
    """The grey uint8 image (``height`` x ``width``) of ``board`` seen from ``T_cam_board``.

    ``texture`` is a ``board_texture`` result to reuse between frames; ``rng`` a NumPy
    generator (or seed) for the noise.
    """
    T = np.asarray(T_cam_board, np.float64)
    if T.shape != (4, 4) or not np.all(np.isfinite(T)):
        raise ValueError("T_cam_board must be a finite 4x4 transform")
    image, origin, ppm = texture if texture is not None else board_texture(board)
    s = int(supersample)
    Ks = _scaled_camera(K, s)
    dist = np.asarray(dist, np.float64).reshape(-1)
    W, H = width * s, height * s
    # texture pixel -> board plane (x, y, 1) -> camera -> ideal pixel of the scaled camera
    A = np.array([[1 / ppm, 0, origin[0] + 0.5 / ppm], [0, 1 / ppm, origin[1] + 0.5 / ppm],
                  [0, 0, 1]])
    plane_to_cam = np.column_stack([T[:3, 0], T[:3, 1], T[:3, 3]])
    H_tex = Ks @ plane_to_cam @ A
    width_m, height_m = board.size()
    outline = np.array([[0, 0, 0], [width_m, 0, 0], [0, height_m, 0], [width_m, height_m, 0]])
    if np.any(outline @ T[:3, :3].T[:, 2] + T[2, 3] <= 1e-6):
        raise ValueError("the board is not wholly in front of the camera")
    Hinv = np.linalg.inv(H_tex)
    if np.any(dist):
        # the distortion is smooth: undistort the centres of the output pixels and
        # interpolate the map to the finer grid
        u, v = np.meshgrid(s * (np.arange(width) + 0.5) - 0.5,
                           s * (np.arange(height) + 0.5) - 0.5)
        pts = np.stack([u.ravel(), v.ravel()], axis=1).reshape(-1, 1, 2)
        coarse = cv2.undistortPoints(pts, Ks, dist, P=Ks).reshape(height, width, 2)
        ideal = cv2.resize(coarse.astype(np.float32), (W, H), interpolation=cv2.INTER_LINEAR)
        map_xy = cv2.perspectiveTransform(ideal, Hinv)
        big = cv2.remap(image, map_xy[..., 0], map_xy[..., 1], cv2.INTER_LINEAR,
                        borderMode=cv2.BORDER_CONSTANT, borderValue=int(background))
    else:
        big = cv2.warpPerspective(image, H_tex, (W, H), flags=cv2.INTER_LINEAR,
                                  borderMode=cv2.BORDER_CONSTANT, borderValue=int(background))
    out = cv2.resize(big, (width, height), interpolation=cv2.INTER_AREA).astype(np.float64)
    if blur > 0:
        out = cv2.GaussianBlur(out, (0, 0), float(blur))
    if noise > 0:
        rng = np.random.default_rng(rng)
        out = out + rng.normal(0.0, float(noise), out.shape)
    return np.clip(np.rint(out), 0, 255).astype(np.uint8)


def look_at(target, eye, up=(0.0, -1.0, 0.0)) -> np.ndarray:
    """T_cam_board for a camera at ``eye`` (board frame) looking at the board point
    ``target``; ``up`` is the board direction that appears up in the image."""
    eye, target, up = (np.asarray(a, np.float64) for a in (eye, target, up))
    z = target - eye
    z /= np.linalg.norm(z)
    x = np.cross(-np.asarray(up), z)
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    R_board_cam = np.column_stack([x, y, z])
    T = np.eye(4)
    T[:3, :3] = R_board_cam.T
    T[:3, 3] = -R_board_cam.T @ eye
    return T


__all__ = ["render", "true_pixels", "board_texture", "look_at", "PRINT_DPM"]

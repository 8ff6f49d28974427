"""Find a calibration board in an image: sub-pixel features by id, checked.

Every detection is checked before it is used:

* the image decodes completely (a truncated or garbage file is a :class:`DataError` naming it);
* its size matches the camera's CameraInfo when one is given;
* its sharpness: the variance of the Laplacian of the grey image, smoothed first by a Gaussian
  of 1 px so that pixel noise does not count as detail, over the board's bounding box
  (``blur_measure``, grey levels squared) is at least ``blur_min`` -- a blurred view is dropped
  (a sharp board measures 50-250, one blurred by a Gaussian of 3 px about 3-16);
* the plane-to-image homography fitted by least squares (:func:`cv2.findHomography`, on
  undistorted pixels when the intrinsics are known) reproduces the features within
  ``homography_max`` px RMS -- a view whose features are not where a plane puts them
  (a mislabelled corner, a board seen in a mirror, a wrong board geometry) is dropped.

:func:`detect` raises :class:`DetectionError` (a :class:`DataError`) naming the image and the
reason; :func:`detect_images` keeps the good views and names each dropped one.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from figaroh_ros.camera.targets import Board, Detection, aruco_dictionary
from figaroh_ros.errors import ConfigError, DataError

HOMOGRAPHY_MAX_PX = 2.0
BLUR_MIN = 5.0
MIN_FEATURES = 6
SEARCHED_DICTIONARIES = ("DICT_4X4_1000", "DICT_5X5_1000", "DICT_6X6_1000", "DICT_7X7_1000",
                         "DICT_ARUCO_ORIGINAL", "DICT_APRILTAG_36h11", "DICT_APRILTAG_25h9")


class DetectionError(DataError):
    """One image cannot give a usable detection; ``image`` names it, ``reason`` says why."""

    def __init__(self, image: str, reason: str):
        super().__init__(f"{image}: {reason}")
        self.image = image
        self.reason = reason


@dataclass(frozen=True)
class Dropped:
    """An image left out of a set of detections, and why."""

    image: str
    reason: str


def read_image(path) -> np.ndarray:
    """The grey (uint8) image of the file ``path``; a file that is missing, not an image or cut
    short is a :class:`DetectionError` naming it."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DetectionError(str(path), f"cannot read the file ({exc.strerror or exc})") from None
    return decode_image(data, str(path))


def decode_image(data: bytes, name: str) -> np.ndarray:
    """Decode encoded image bytes (PNG, JPEG, ...) to a grey uint8 image, refusing partial
    files."""
    if len(data) == 0:
        raise DetectionError(name, "the file is empty")
    if data[:2] == b"\xff\xd8" and b"\xff\xd9" not in data[-64:]:
        raise DetectionError(name, "the JPEG file is cut short (no end-of-image marker)")
    if data[:8] == b"\x89PNG\r\n\x1a\n" and b"IEND" not in data[-16:]:
        raise DetectionError(name, "the PNG file is cut short (no IEND chunk)")
    image = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED)
    if image is None or image.size == 0:
        raise DetectionError(name, "not a readable image (unknown format or corrupt data)")
    return to_gray(image, name)


def to_gray(image: np.ndarray, name: str = "image") -> np.ndarray:
    """An 8-bit grey copy of a grey, BGR or BGRA image (16-bit images are scaled)."""
    image = np.asarray(image)
    if image.dtype == np.uint16:
        image = (image / 257.0).round().astype(np.uint8)
    if image.dtype != np.uint8:
        raise DetectionError(name, f"pixels of type {image.dtype}, expected 8 or 16-bit")
    if image.ndim == 3 and image.shape[2] == 1:
        image = image[:, :, 0]
    if image.ndim == 3:
        code = cv2.COLOR_BGRA2GRAY if image.shape[2] == 4 else cv2.COLOR_BGR2GRAY
        image = cv2.cvtColor(image, code)
    if image.ndim != 2:
        raise DetectionError(name, f"an image of shape {image.shape} is not a picture")
    return image


def blur_measure(gray: np.ndarray, pixels: np.ndarray | None = None) -> float:
    """Variance of the Laplacian of ``gray`` (smoothed by a Gaussian of 1 px) over the bounding
    box of ``pixels`` (the whole image without them), in grey levels squared: low means
    blurred."""
    if pixels is not None and len(pixels):
        h, w = gray.shape
        x0, y0 = np.floor(pixels.min(axis=0)).astype(int) - 2
        x1, y1 = np.ceil(pixels.max(axis=0)).astype(int) + 3
        gray = gray[max(y0, 0):min(y1, h), max(x0, 0):min(x1, w)]
    if gray.size < 9:
        return 0.0
    smooth = cv2.GaussianBlur(gray.astype(np.float32), (0, 0), 1.0)
    return float(cv2.Laplacian(smooth, cv2.CV_32F).var())


def homography_rms(board: Board, ids: np.ndarray, pixels: np.ndarray,
                   camera_matrix=None, dist=None) -> float:
    """RMS distance (px) between ``pixels`` and the board points of ``ids`` mapped by the
    least-squares plane-to-image homography (pixels undistorted first when the camera is
    given)."""
    if len(ids) < 5:
        return 0.0
    plane = board.object_points()[ids, :2].astype(np.float64)
    points = pixels.astype(np.float64).reshape(-1, 1, 2)
    if camera_matrix is not None:
        K = np.asarray(camera_matrix, np.float64)
        d = np.zeros(0) if dist is None else np.asarray(dist, np.float64)
        points = cv2.undistortPoints(points, K, d, P=K)
    H, _ = cv2.findHomography(plane, points, 0)
    if H is None:
        return float("inf")
    mapped = cv2.perspectiveTransform(plane.reshape(-1, 1, 2), H)
    return float(np.sqrt(np.mean(np.sum((mapped - points) ** 2, axis=2))))


def _checkerboard(gray, board):
    pattern = (board.cols, board.rows)
    # CALIB_CB_ACCURACY would halve the corner error (0.04 -> 0.02 px on rendered views) at
    # four times the time: well below any real camera's noise, not worth it
    found, corners = cv2.findChessboardCornersSB(gray, pattern)
    if not found:
        flags = cv2.CALIB_CB_ADAPTIVE_THRESH | cv2.CALIB_CB_NORMALIZE_IMAGE
        found, corners = cv2.findChessboardCorners(gray, pattern, flags=flags)
        if not found:
            return np.zeros(0, int), np.zeros((0, 2))
        criteria = (cv2.TERM_CRITERIA_EPS + cv2.TERM_CRITERIA_MAX_ITER, 50, 1e-3)
        corners = cv2.cornerSubPix(gray, corners, (5, 5), (-1, -1), criteria)
    corners = corners.reshape(-1, 2).astype(np.float64)
    if (board.rows + board.cols) % 2 and _dark_first_square(gray, board, corners) is False:
        corners = corners[::-1].copy()
    return np.arange(len(corners)), corners


def _dark_first_square(gray, board, corners):
    """Whether the outer square diagonal to corner 0 is the dark one (the board's convention:
    the checkerboard's top-left square is black), ``None`` if it cannot be told."""
    plane = board.object_points()[:, :2]
    H, _ = cv2.findHomography(plane, corners, 0)
    if H is None:
        return None
    q = board.square * np.array([[-0.5, -0.5], [0.5, -0.5], [-0.5, 0.5]])
    x, y = cv2.perspectiveTransform(q.reshape(-1, 1, 2), H).reshape(-1, 2).T
    h, w = gray.shape
    if not (np.all((0 <= x) & (x < w - 1)) and np.all((0 <= y) & (y < h - 1))):
        return None
    values = gray[np.rint(y).astype(int), np.rint(x).astype(int)].astype(float)
    return bool(values[0] < 0.5 * (values[1] + values[2]))


def aruco_parameters():
    params = cv2.aruco.DetectorParameters()
    params.cornerRefinementMethod = cv2.aruco.CORNER_REFINE_SUBPIX
    return params


def _markers(gray, board):
    detector = cv2.aruco.ArucoDetector(aruco_dictionary(board.dictionary), aruco_parameters())
    corners, ids, _ = detector.detectMarkers(gray)
    if ids is None:
        return np.zeros(0, int), np.zeros((0, 2)), np.zeros(0, int)
    ids = ids.reshape(-1)
    keep = ids < board.marker_count
    marker_ids = ids[keep]
    quads = np.asarray(corners, np.float64).reshape(-1, 4, 2)[keep]
    pixels = _refine_marker_corners(gray, board, quads)
    feature_ids = (4 * marker_ids[:, None] + np.arange(4)[None, :]).reshape(-1)
    return feature_ids, pixels, ids


def _refine_marker_corners(gray, board, quads):
    """Marker corners refined by :func:`cv2.cornerSubPix`, with a window that stays inside the
    marker's quiet zone (a fifth of its side, less than half the gap to the next marker)."""
    if not len(quads):
        return quads.reshape(-1, 2)
    side = float(np.median(np.linalg.norm(quads - np.roll(quads, 1, axis=1), axis=2)))
    half = min(side / 6.0, side * board.gap / board.marker / 2.0 - 1.0) if board.gap else \
        side / 6.0
    win = int(np.clip(half, 2, 5))
    criteria = (cv2.TERM_CRITERIA_EPS + cv2.TERM_CRITERIA_MAX_ITER, 50, 1e-3)
    refined = cv2.cornerSubPix(gray, quads.reshape(-1, 1, 2).astype(np.float32), (win, win),
                               (-1, -1), criteria)
    return refined.reshape(-1, 2).astype(np.float64)


def _charuco(gray, board):
    detector = cv2.aruco.CharucoDetector(board.cv_board(), cv2.aruco.CharucoParameters(),
                                         aruco_parameters())
    corners, ids, _, marker_ids = detector.detectBoard(gray)
    seen = np.zeros(0, int) if marker_ids is None else marker_ids.reshape(-1)
    if ids is None or corners is None:
        return np.zeros(0, int), np.zeros((0, 2)), seen
    return ids.reshape(-1).astype(int), _refine_saddles(gray, corners.reshape(-1, 2)), seen


def _refine_saddles(gray, corners):
    """ChArUco corners refined by :func:`cv2.cornerSubPix` here rather than left to the
    detector (OpenCV 4.x returns them half a pixel off): a window of a third of the smallest
    distance between two corners, 2 to 6 px."""
    if len(corners) < 2:
        return corners.astype(np.float64)
    gap = np.linalg.norm(corners[:, None, :] - corners[None, :, :], axis=2)
    np.fill_diagonal(gap, np.inf)
    win = int(np.clip(gap.min() / 3.0, 2, 6))
    criteria = (cv2.TERM_CRITERIA_EPS + cv2.TERM_CRITERIA_MAX_ITER, 50, 1e-3)
    refined = cv2.cornerSubPix(gray, corners.reshape(-1, 1, 2).astype(np.float32),
                               (win, win), (-1, -1), criteria)
    return refined.reshape(-1, 2).astype(np.float64)


def _what_is_there(gray, board, marker_ids) -> str:
    """A sentence on what the image shows instead of the configured board ('' if nothing)."""
    if board.kind == "checkerboard":
        for dr in (0, -1, 1, -2, 2):
            for dc in (0, -1, 1, -2, 2):
                r, c = board.rows + dr, board.cols + dc
                if (dr or dc) and r >= 2 and c >= 2 and cv2.findChessboardCornersSB(
                        gray, (c, r))[0]:
                    return (f"found a checkerboard of {r}x{c} inner corners (rows x cols), "
                            f"the board is configured as {board.rows}x{board.cols}")
    else:
        if len(marker_ids) and marker_ids.max() >= board.marker_count:
            return (f"markers with ids up to {int(marker_ids.max())} seen but the configured "
                    f"{board.rows}x{board.cols} {board.kind} has ids 0..{board.marker_count - 1}"
                    ": check board.rows / board.cols")
        if len(marker_ids) >= max(4, board.marker_count // 2) and board.kind == "charuco":
            return (f"{len(marker_ids)} markers of {board.dictionary} seen but no chessboard "
                    "corner between them: check board.rows, board.cols and the marker layout")
        if len(marker_ids):
            return (f"only {len(marker_ids)} of the board's {board.marker_count} markers in "
                    "view (too little of the board is seen)")
    for name in SEARCHED_DICTIONARIES:
        if name == board.dictionary:
            continue
        detector = cv2.aruco.ArucoDetector(aruco_dictionary(name), aruco_parameters())
        _, ids, _ = detector.detectMarkers(gray)
        if ids is not None and len(ids) >= 2:
            return (f"{len(ids)} markers of {name} found instead: check board.dictionary "
                    f"({board.dictionary or 'none'} configured)")
    if board.kind != "checkerboard" and cv2.findChessboardCornersSB(gray, (3, 3))[0]:
        return "a plain checkerboard is in view, not markers: check board.kind"
    return ""


def detect(image, board: Board, name: str | None = None, intrinsics=None,
           homography_max: float = HOMOGRAPHY_MAX_PX, blur_min: float = BLUR_MIN,
           min_features: int = MIN_FEATURES) -> Detection:
    """Detect ``board`` in ``image`` (a file path or an array) and check the detection.

    ``intrinsics`` (anything with ``K``, ``dist``, ``width``, ``height``, e.g.
    :class:`figaroh_ros.camera.model.Intrinsics`) checks the image size and lets the
    homography check work on undistorted pixels.  Raises :class:`DetectionError` naming the
    image for every reason a view is unusable.
    """
    if board.kind == "checkerboard" and (board.rows + board.cols) % 2 == 0:
        raise ConfigError(f"board: a checkerboard of {board.rows}x{board.cols} inner corners "
                          "looks the same turned half a turn, so its corners cannot be "
                          "numbered alike in every view; use one whose rows + cols is odd "
                          "(e.g. 6x7, 7x10) or a ChArUco board")
    if isinstance(image, (str, Path)):
        name = name or str(image)
        gray = read_image(image)
    else:
        name = name or "image"
        gray = to_gray(image, name)
    height, width = gray.shape
    K = dist = None
    if intrinsics is not None:
        if (int(intrinsics.width), int(intrinsics.height)) != (width, height):
            raise DetectionError(name, f"the image is {width}x{height} px but the CameraInfo "
                                       f"is for {int(intrinsics.width)}x"
                                       f"{int(intrinsics.height)} px (wrong camera or binning)")
        K, dist = intrinsics.K, intrinsics.dist
    marker_ids = np.zeros(0, int)
    if board.kind == "checkerboard":
        ids, pixels = _checkerboard(gray, board)
    elif board.kind == "charuco":
        ids, pixels, marker_ids = _charuco(gray, board)
    else:
        ids, pixels, marker_ids = _markers(gray, board)
    if len(ids) < min_features:
        sharp = blur_measure(gray)
        hint = "" if sharp < blur_min else _what_is_there(gray, board, marker_ids)
        if sharp < blur_min:
            reason = (f"no {board.kind} target found and the image is blurred (blur measure, "
                      f"variance of the Laplacian, {sharp:.1f} < blur_min {blur_min:g})")
        elif hint:
            reason = f"no {board.kind} target found: {hint}"
        else:
            reason = (f"no {board.kind} target found ({len(ids)} features, at least "
                      f"{min_features} needed)")
        raise DetectionError(name, reason)
    order = np.argsort(ids, kind="stable")
    ids, pixels = ids[order], pixels[order]
    sharp = blur_measure(gray, pixels)
    if sharp < blur_min:
        raise DetectionError(name, f"blurred: blur measure (variance of the Laplacian) over "
                                   f"the board {sharp:.1f} < blur_min {blur_min:g}")
    rms = homography_rms(board, ids, pixels, K, dist)
    if not rms <= homography_max:
        raise DetectionError(name, f"homography check failed: the {len(ids)} features are "
                                   f"{rms:.2f} px RMS off the board's plane-to-image "
                                   f"homography (at most {homography_max:g} px)")
    return Detection(image=name, ids=ids, pixels=pixels, homography_rms=rms, width=width,
                     height=height)


def detect_images(images, board: Board, intrinsics=None, **options):
    """Detect ``board`` in every image (paths, or ``(name, array)`` pairs).

    Returns ``(detections, dropped)``: the usable views in order and a :class:`Dropped` for
    each image left out (no target, blurred, homography check).  A size that does not match
    the CameraInfo or a file that cannot be decoded stops everything with the
    :class:`DetectionError` naming the image: these are set-up errors, not bad views.
    """
    detections, dropped = [], []
    for item in images:
        name, image = (item if isinstance(item, tuple) else (str(item), item))
        if isinstance(image, (str, Path)):
            image = read_image(image)
        try:
            detections.append(detect(image, board, name=name, intrinsics=intrinsics,
                                     **options))
        except DetectionError as exc:
            if "CameraInfo" in exc.reason:
                raise
            dropped.append(Dropped(exc.image, exc.reason))
    return detections, dropped


__all__ = ["DetectionError", "Dropped", "detect", "detect_images", "read_image",
           "decode_image", "blur_measure", "homography_rms", "HOMOGRAPHY_MAX_PX", "BLUR_MIN"]

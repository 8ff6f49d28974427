"""Board detection: time per megapixel and corner accuracy, ours against OpenCV's plain calls.

Ours: :func:`figaroh_ros.camera.detect.detect` (the detector, sub-pixel refinement, feature
ids, the blur measure and the homography check).  Baseline: the one OpenCV call that finds the
features (``findChessboardCornersSB``; ``CharucoDetector.detectBoard``;
``ArucoDetector.detectMarkers`` with default parameters).  Images: each board kind rendered at
1280 x 960 through a distorted camera (blur 0.6 px, noise 2 grey levels, three poses), and
the four real 1600 x 1200 ChArUco images of test/data/camera.  Time: median of RUNS runs per
image, interleaved, in ms per megapixel.  Accuracy: RMS distance (px) of the corners to their
exact projections on the rendered images (the baseline's corners for the grids are OpenCV's
unrefined marker corners; its checkerboard corners are taken in whichever of the two orders
fits, ours are ordered by the board's black corner square).
"""
import glob
import os
import time

import cv2
import numpy as np
from results import record, row

from figaroh_ros.camera.detect import aruco_parameters, detect, read_image
from figaroh_ros.camera.model import Intrinsics
from figaroh_ros.camera.render import board_texture, look_at, render, true_pixels
from figaroh_ros.camera.targets import Board, aruco_dictionary

RUNS = 7
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
W, H = 1280, 960
CAMERA = Intrinsics(np.array([[1200.0, 0, 641.0], [0, 1200.0, 479.0], [0, 0, 1]]),
                    np.array([-0.18, 0.07, 0.0, 0.0, 0.0]), W, H)
BOARDS = {
    "checkerboard": Board("checkerboard", 6, 9, 0.03),
    "charuco": Board("charuco", 7, 5, 0.04, 0.03, "DICT_6X6_250"),
    "aruco_grid": Board("aruco_grid", 4, 5, 0.04, 0.03, "DICT_4X4_50", 0.01),
    "apriltag_grid": Board("apriltag_grid", 4, 5, 0.04, 0.03, "DICT_APRILTAG_36h11", 0.01),
}
REAL_BOARD = Board("charuco", 7, 5, 0.036195, 0.018256, "DICT_6X6_250")


def plain(board):
    """OpenCV's own call for ``board``: image -> (ids, pixels)."""
    if board.kind == "checkerboard":
        def run(gray):
            ok, c = cv2.findChessboardCornersSB(gray, (board.cols, board.rows))
            return np.arange(len(c)), c.reshape(-1, 2)
        return run
    if board.kind == "charuco":
        detector = cv2.aruco.CharucoDetector(board.cv_board())

        def run(gray):
            c, ids, _, _ = detector.detectBoard(gray)
            return ids.reshape(-1), c.reshape(-1, 2)
        return run
    detector = cv2.aruco.ArucoDetector(aruco_dictionary(board.dictionary),
                                       cv2.aruco.DetectorParameters())

    def run(gray):
        c, ids, _ = detector.detectMarkers(gray)
        ids = ids.reshape(-1)
        return (4 * ids[:, None] + np.arange(4)).reshape(-1), np.asarray(c).reshape(-1, 2)
    return run


def views(board):
    w, h = board.size()
    centre = np.array([w / 2, h / 2, 0.0])
    eyes = [(0.0, 0.0, -0.45), (0.12, -0.08, -0.4), (-0.1, 0.07, -0.38)]
    return [look_at(centre, centre + np.array(e)) for e in eyes]


def timed(fn, gray):
    t = time.perf_counter()
    fn(gray)
    return time.perf_counter() - t


def bench(name, board, images, truths=None):
    baseline = plain(board)
    ours = lambda gray: detect(gray, board, name=name)  # noqa: E731
    t_ours, t_base, e_ours, e_base = [], [], [], []
    for k, gray in enumerate(images):
        mp = gray.size / 1e6
        ours(gray), baseline(gray)                       # warm-up
        for _ in range(RUNS):
            t_ours.append(timed(ours, gray) * 1e3 / mp)
            t_base.append(timed(baseline, gray) * 1e3 / mp)
        if truths is not None:
            d = ours(gray)
            e_ours.append(d.pixels - truths[k][d.ids])
            ids, px = baseline(gray)
            if board.kind == "checkerboard":          # OpenCV's order may start either end
                px = min(px, px[::-1], key=lambda p: np.sum((p - truths[k][ids]) ** 2))
            e_base.append(px - truths[k][ids])
    rows = [row(f"{name}: detection", "ms/MP", t_ours, t_base, runs=RUNS * len(images))]
    if truths is not None:
        rms = [np.sqrt(np.mean(np.sum(np.vstack(e) ** 2, axis=1))) for e in (e_ours, e_base)]
        rows.append(row(f"{name}: corner RMS error", "px", rms[0], rms[1],
                        runs=len(images)))
    for r in rows:
        print(f"{r['case']:45s} ours {r['ours']:8.3g} {r['unit']:6s} OpenCV "
              f"{r['baseline']:8.3g}  ratio {r['ratio']}")
    return rows


def main():
    rows = []
    for kind, board in BOARDS.items():
        texture = board_texture(board)
        images, truths = [], []
        for k, T in enumerate(views(board)):
            images.append(render(board, CAMERA.K, CAMERA.dist, T, W, H, blur=0.6, noise=2.0,
                                 rng=k, texture=texture))
            truths.append(true_pixels(board, CAMERA.K, CAMERA.dist, T)[1])
        rows += bench(f"{kind} {W}x{H} rendered", board, images, truths)
    real = sorted(glob.glob(os.path.join(ROOT, "test", "data", "camera",
                                         "industrial_calibration_charuco", "images", "*.png")))
    rows += bench("charuco 1600x1200 real", REAL_BOARD, [read_image(p) for p in real])
    print(record("camera_detect", "Board detection: time per megapixel and corner accuracy",
                 "OpenCV's plain detector call (findChessboardCornersSB, "
                 "CharucoDetector.detectBoard, ArucoDetector.detectMarkers)", rows))


if __name__ == "__main__":
    main()

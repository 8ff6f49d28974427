"""Simulated board images: a detector finds every feature where the camera model puts it.

Each board kind is rendered through a distorted 640x480 camera with blur and pixel noise and
detected; the detected corners are compared with the exact projections of the board points
(cv2.projectPoints), the ground truth of the rendering.
"""
import numpy as np
import pytest

from figaroh_ros.camera.detect import detect
from figaroh_ros.camera.model import Intrinsics
from figaroh_ros.camera.render import board_texture, look_at, render, true_pixels
from figaroh_ros.camera.targets import Board

CAMERA = Intrinsics(np.array([[600.0, 0, 321.3], [0, 605.0, 238.1], [0, 0, 1]]),
                    np.array([-0.21, 0.09, 0.0012, -0.0008, 0.0]), 640, 480)
BOARDS = {
    "checkerboard": Board("checkerboard", 6, 9, 0.03),
    "charuco": Board("charuco", 7, 5, 0.04, 0.03, "DICT_6X6_250"),
    "aruco_grid": Board("aruco_grid", 4, 5, 0.04, 0.03, "DICT_4X4_50", 0.01),
    "apriltag_grid": Board("apriltag_grid", 4, 5, 0.04, 0.03, "DICT_APRILTAG_36h11", 0.01),
}
# RMS and worst corner error (px) allowed on these views: measured 0.03/0.07/0.18/0.20 RMS
LIMITS = {"checkerboard": (0.08, 0.2), "charuco": (0.15, 0.3), "aruco_grid": (0.3, 1.0),
          "apriltag_grid": (0.3, 1.0)}
EYES = [(0.0, 0.0, -0.5), (0.15, -0.1, -0.45), (-0.12, 0.08, -0.42)]


def views(board):
    w, h = board.size()
    centre = np.array([w / 2, h / 2, 0.0])
    return [look_at(centre, centre + np.array(eye)) for eye in EYES]


@pytest.mark.parametrize("kind", sorted(BOARDS))
def test_detected_corners_match_the_projected_truth(kind):
    board = BOARDS[kind]
    texture = board_texture(board)
    errors = []
    for k, T in enumerate(views(board)):
        image = render(board, CAMERA.K, CAMERA.dist, T, 640, 480, blur=0.6, noise=2.0, rng=k,
                       texture=texture)
        found = detect(image, board, name=f"{kind}_{k}.png", intrinsics=CAMERA)
        ids, truth, _ = true_pixels(board, CAMERA.K, CAMERA.dist, T)
        assert len(found) == board.feature_count, "the whole board is in view"
        np.testing.assert_array_equal(found.ids, ids)
        errors.append(np.linalg.norm(found.pixels - truth[found.ids], axis=1))
        assert found.homography_rms < 0.5
        assert (found.width, found.height) == (640, 480)
    errors = np.concatenate(errors)
    rms_limit, max_limit = LIMITS[kind]
    assert np.sqrt(np.mean(errors ** 2)) < rms_limit
    assert errors.max() < max_limit


def test_distortion_moves_the_corners_as_the_model_says():
    """A strongly distorted camera: the corners are found at the distorted projections,
    pixels away from where the pinhole alone would put them."""
    board = BOARDS["charuco"]
    T = views(board)[1]
    strong = Intrinsics(CAMERA.K, np.array([-0.35, 0.15, 0.0, 0.0, 0.0]), 640, 480)
    image = render(board, strong.K, strong.dist, T, 640, 480, noise=1.0, rng=3)
    found = detect(image, board, intrinsics=strong)
    _, truth, _ = true_pixels(board, strong.K, strong.dist, T)
    _, pinhole, _ = true_pixels(board, strong.K, np.zeros(5), T)
    assert np.abs(found.pixels - truth[found.ids]).max() < 0.3
    assert np.abs(truth - pinhole).max() > 2.0


def test_blur_and_noise_are_applied():
    board = BOARDS["checkerboard"]
    T = views(board)[0]
    sharp = render(board, CAMERA.K, CAMERA.dist, T, 640, 480)
    again = render(board, CAMERA.K, CAMERA.dist, T, 640, 480)
    blurred = render(board, CAMERA.K, CAMERA.dist, T, 640, 480, blur=3.0)
    noisy = render(board, CAMERA.K, CAMERA.dist, T, 640, 480, noise=5.0, rng=0)
    np.testing.assert_array_equal(sharp, again)
    assert np.abs(np.diff(blurred.astype(float), axis=1)).max() < \
        0.5 * np.abs(np.diff(sharp.astype(float), axis=1)).max()
    assert 4.0 < np.std(noisy.astype(float) - sharp) < 6.0


def test_a_board_behind_the_camera_is_refused():
    T = views(BOARDS["charuco"])[0]
    T[2, 3] = -1.0
    with pytest.raises(ValueError, match="in front of the camera"):
        render(BOARDS["charuco"], CAMERA.K, CAMERA.dist, T, 640, 480)

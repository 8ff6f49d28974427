"""Board detection on simulated images: partial ChArUco views, the homography check, and every
kind of bad image (none, blurred, another board, wrong dimensions, wrong CameraInfo, files cut
short or garbage) refused or dropped with the image named."""
import cv2
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from figaroh_ros.camera.detect import (DetectionError, blur_measure, decode_image, detect,
                                       detect_images, homography_rms)
from figaroh_ros.camera.model import Intrinsics
from figaroh_ros.camera.render import board_texture, look_at, render, true_pixels
from figaroh_ros.camera.targets import Board
from figaroh_ros.errors import ConfigError, DataError

CAMERA = Intrinsics(np.array([[600.0, 0, 319.5], [0, 600.0, 239.5], [0, 0, 1]]),
                    np.array([-0.15, 0.05, 0.0, 0.0, 0.0]), 640, 480)
CHARUCO = Board("charuco", 7, 5, 0.04, 0.03, "DICT_6X6_250")
CHECKER = Board("checkerboard", 6, 7, 0.03)
GRID = Board("aruco_grid", 3, 4, 0.05, 0.04, "DICT_4X4_50", 0.01)
TEXTURES = {}


def shot(board, eye=(0.0, 0.0, -0.5), target=(0.0, 0.0, 0.0), **kw):
    w, h = board.size()
    centre = np.array([w / 2, h / 2, 0.0])
    T = look_at(centre + np.array(target), centre + np.array(eye))
    texture = TEXTURES.setdefault(board, board_texture(board))
    kw.setdefault("noise", 1.5)
    kw.setdefault("rng", 0)
    return render(board, CAMERA.K, CAMERA.dist, T, 640, 480, texture=texture, **kw), T


def png(image):
    return cv2.imencode(".png", image)[1].tobytes()


def test_partial_charuco_view_keeps_the_ids_of_the_corners_in_view():
    # the camera close and aimed at the board's lower-left part: only some corners are in view
    image, T = shot(CHARUCO, eye=(-0.04, 0.08, -0.18), target=(-0.04, 0.08, 0.0))
    found = detect(image, CHARUCO, name="partial.png", intrinsics=CAMERA)
    ids, truth, _ = true_pixels(CHARUCO, CAMERA.K, CAMERA.dist, T)
    inside = (truth[:, 0] > 5) & (truth[:, 0] < 635) & (truth[:, 1] > 5) & (truth[:, 1] < 475)
    assert 6 <= len(found) < CHARUCO.feature_count
    assert set(found.ids) <= set(ids[inside])
    assert np.abs(found.pixels - truth[found.ids]).max() < 0.3
    assert np.all(np.diff(found.ids) > 0)


def test_homography_rms_is_zero_on_a_plane_and_grows_with_a_moved_corner():
    image, T = shot(CHARUCO)
    ids, truth, _ = true_pixels(CHARUCO, CAMERA.K, CAMERA.dist, T)
    assert homography_rms(CHARUCO, ids, truth, CAMERA.K, CAMERA.dist) < 1e-4
    moved = truth.copy()
    moved[5] += (6.0, 0.0)
    rms = homography_rms(CHARUCO, ids, moved, CAMERA.K, CAMERA.dist)
    # one of 24 points off by 6 px: the least-squares fit spreads it, the RMS is near 6/sqrt(24)
    assert 0.7 < rms < 6.0 / np.sqrt(24) * 1.1


def test_a_bent_board_fails_the_homography_check_and_is_named():
    """The left half of one view beside the right half of another (a board folded along its
    middle): the checkerboard finder returns every corner, but no plane puts them all there."""
    left, _ = shot(CHECKER, eye=(0.0, 0.0, -0.5))
    right, _ = shot(CHECKER, eye=(0.0, 0.0, -0.47), target=(0.01, 0.0, 0.0))
    bent = left.copy()
    bent[:, 320:] = right[:, 320:]
    with pytest.raises(DetectionError, match=r"bent\.png: homography check failed: the 42 "
                                             r"features are [2-9]\.\d\d px RMS") as err:
        detect(bent, CHECKER, name="bent.png", intrinsics=CAMERA)
    assert err.value.image == "bent.png"
    good, dropped = detect_images([("left.png", left), ("bent.png", bent)], CHECKER, CAMERA)
    assert [d.image for d in good] == ["left.png"]
    assert good[0].homography_rms < 0.2
    assert [d.image for d in dropped] == ["bent.png"]
    assert "homography" in dropped[0].reason


def test_no_target_is_named():
    empty = np.full((480, 640), 128, np.uint8)
    empty = (empty + np.random.default_rng(0).normal(0, 20, empty.shape)).clip(0, 255)
    with pytest.raises(DetectionError, match=r"wall\.png: no charuco target found"):
        detect(empty.astype(np.uint8), CHARUCO, name="wall.png")


def test_a_blurred_image_is_dropped_and_named():
    image, _ = shot(CHECKER, blur=5.0)
    sharp, _ = shot(CHECKER, blur=0.5)
    corners = detect(sharp, CHECKER).pixels
    assert blur_measure(image, corners) < 20.0 < blur_measure(sharp, corners)
    with pytest.raises(DetectionError, match=r"soft\.png: blurred: blur measure \(variance of "
                                             r"the Laplacian\) over the board \d+\.\d < "
                                             r"blur_min 20"):
        detect(image, CHECKER, name="soft.png", blur_min=20.0)
    good, dropped = detect_images([("soft.png", image), ("sharp.png", sharp)], CHECKER,
                                  blur_min=20.0)
    assert [d.image for d in good] == ["sharp.png"] and dropped[0].image == "soft.png"
    # so blurred that nothing is found: the message says the image is blurred
    fog, _ = shot(CHARUCO, blur=9.0)
    with pytest.raises(DetectionError, match=r"fog\.png: no charuco target found and the "
                                             r"image is blurred"):
        detect(fog, CHARUCO, name="fog.png")


def test_wrong_checkerboard_dimensions_say_what_was_found():
    image, _ = shot(CHECKER)
    configured = Board("checkerboard", 6, 9, 0.03)
    with pytest.raises(DetectionError, match=r"found a checkerboard of 6x7 inner corners "
                                             r".*configured as 6x9"):
        detect(image, configured, name="board.png")


def test_a_checkerboard_that_looks_the_same_turned_is_refused():
    image, _ = shot(CHECKER)
    with pytest.raises(ConfigError, match=r"6x8 inner corners looks the same turned half a "
                                          r"turn"):
        detect(image, Board("checkerboard", 6, 8, 0.03), name="board.png")


def test_another_board_is_named():
    image, _ = shot(GRID)
    with pytest.raises(DetectionError, match=r"grid\.png: no charuco target found: .*markers "
                                             r"of DICT_4X4_1000 found instead"):
        detect(image, CHARUCO, name="grid.png")
    charuco, _ = shot(CHARUCO)
    with pytest.raises(DetectionError, match=r"a plain checkerboard|no checkerboard"):
        detect(shot(CHECKER)[0], GRID, name="checker.png")
    small = Board("charuco", 4, 3, 0.04, 0.03, "DICT_6X6_250")
    with pytest.raises(DetectionError, match=r"ids up to 16 .* ids 0\.\.5"):
        detect(charuco, small, name="charuco.png")


def test_camera_info_of_another_size_is_refused_for_the_whole_set():
    image, _ = shot(CHARUCO)
    other = Intrinsics(CAMERA.K, CAMERA.dist, 1280, 960)
    with pytest.raises(DetectionError, match=r"a\.png: the image is 640x480 px but the "
                                             r"CameraInfo is for 1280x960"):
        detect_images([("a.png", image)], CHARUCO, other)


def test_board_geometry_is_checked():
    with pytest.raises(ConfigError, match="board.kind"):
        Board("circles", 4, 4, 0.02)
    with pytest.raises(ConfigError, match="board.marker"):
        Board("charuco", 5, 5, 0.02, 0.03, "DICT_4X4_50")
    with pytest.raises(ConfigError, match="DICT_4X4_50 has 50 markers"):
        Board("aruco_grid", 10, 10, 0.02, 0.01, "DICT_4X4_50", 0.005)
    with pytest.raises(ConfigError, match="unknown ArUco dictionary 'DICT_9X9'"):
        Board("charuco", 5, 5, 0.02, 0.015, "DICT_9X9")


PNG = png(shot(CHARUCO)[0])
JPEG = cv2.imencode(".jpg", shot(CHARUCO)[0])[1].tobytes()


@settings(max_examples=40, deadline=None)
@given(data=st.sampled_from([PNG, JPEG]), cut=st.floats(0.0, 0.98))
def test_files_cut_short_are_refused_naming_the_file(tmp_path_factory, data, cut):
    path = tmp_path_factory.mktemp("img") / "cut.png"
    path.write_bytes(data[:int(len(data) * cut)])
    with pytest.raises(DataError, match=r"cut\.png: "):
        detect(path, CHARUCO)


@settings(max_examples=40, deadline=None)
@given(garbage=st.binary(min_size=0, max_size=2000))
def test_garbage_bytes_are_refused_naming_the_file(tmp_path_factory, garbage):
    path = tmp_path_factory.mktemp("img") / "noise.jpg"
    path.write_bytes(garbage)
    with pytest.raises(DataError, match=r"noise\.jpg: "):
        detect(path, CHARUCO)


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(DataError, match=r"absent\.png: cannot read the file"):
        detect(tmp_path / "absent.png", CHARUCO)
    assert decode_image(PNG, "ok.png").shape == (480, 640)

"""The corners a camera calibration shows in RViz, against a synthetic system's truth:
the predicted corners are the model's board points (their projections its predicted
pixels), the detected pixels back-projected onto the board plane land within the
pixel noise's equivalent distance of the true corners, exactly on them without noise."""
from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from figaroh_ros.camera import Board, Intrinsics
from figaroh_ros.camera.marker_points import (
    corner_points, read_corners, result_corners, write_corners
)
from figaroh_ros.camera.model import project
from figaroh_ros.camera.problem import Views
from figaroh_ros.camera.synthetic import Scene, all_features
from figaroh_ros.errors import DataError
from figaroh_ros.model.robot import example_robot_urdf

INTRINSICS = Intrinsics(np.array([[900.0, 0, 640], [0, 900, 360], [0, 0, 1]]),
                        [0.05, -0.1, 0.001, -0.002, 0.02], 1280, 720)
BOARD = Board("checkerboard", 7, 10, 0.03)
UR10_CENTRE = [0.3, -1.2, 1.6, -1.9, -1.57, 0.2]
MOUNT = pin.SE3(pin.rpy.rpyToMatrix(0.02, -0.03, 0.01), np.array([0.0, 0.07, 0.05]))


def scene(seed: int = 0) -> Scene:
    pm = pin.buildModelFromUrdf(example_robot_urdf("ur_description/urdf/ur10_robot.urdf"))
    return Scene(pm, "eye_in_hand", "tool0", INTRINSICS, BOARD, UR10_CENTRE, MOUNT, seed=seed)


SCENE = scene()


def noisy_views(s: Scene, Q: np.ndarray, noise: float, rng) -> tuple[Views, np.ndarray]:
    """Every feature of every posture, its true pixels plus noise; the true camera-frame
    corners."""
    v = all_features(s.problem, s.board, Q)
    true, _ = s.problem.camera_points(v, s.x)
    v.pixels = s.problem.predict(v, s.x) + noise * rng.standard_normal((len(v.view), 2))
    return v, true


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**16), noise=st.sampled_from([0.0, 0.3, 1.0]))
def test_corners_against_the_truth(seed, noise):
    rng = np.random.default_rng(seed)
    Q = SCENE.postures(3)
    views, true = noisy_views(SCENE, Q, noise, rng)
    corners = corner_points(SCENE.problem, views, SCENE.x)
    assert [c.view for c in corners] == views.ids
    assert all(c.split == "training" for c in corners)
    predicted = np.vstack([c.predicted for c in corners])
    detected = np.vstack([c.detected for c in corners])
    # predicted: the true model's board points, projecting to its predicted pixels
    assert np.allclose(predicted, true, atol=1e-12)
    assert np.allclose(project(INTRINSICS, predicted), SCENE.problem.predict(views, SCENE.x),
                       atol=1e-9)
    # detected: on the board plane, projecting back to the detected pixels
    assert np.allclose(project(INTRINSICS, detected), views.pixels, atol=1e-4)
    Ta, Tb = SCENE.problem.poses(views, SCENE.x)
    for k, c in enumerate(corners):
        in_board = np.linalg.inv(Tb[k]) @ Ta[k] @ np.c_[c.detected, np.ones(len(c.detected))].T
        assert np.allclose(in_board[2], 0.0, atol=1e-9)
    # within the noise's equivalent distance on the board: e Z / f over the incidence
    err = np.linalg.norm(detected - true, axis=1)
    cos = np.concatenate([np.abs((np.linalg.inv(Ta[k]) @ Tb[k])[:3, 2] @ (c.predicted /
                          np.linalg.norm(c.predicted, axis=1)[:, None]).T)
                          for k, c in enumerate(corners)])
    bound = 5.0 * noise * true[:, 2] / 900.0 / cos + 1e-8
    assert np.all(err <= bound), (err.max(), bound.min())
    if noise > 0:                                  # the noise shows: the test can fail
        assert np.median(err / (noise * true[:, 2] / 900.0)) > 0.3


def test_a_calibration_result_and_its_file(tmp_path):
    from figaroh_ros.camera import calibrate_camera
    s = scene(1)
    urdf = example_robot_urdf("ur_description/urdf/ur10_robot.urdf")
    Q, Qv = s.postures(12), s.postures(4)
    result = calibrate_camera(urdf, Q, s.detections(Q), board=BOARD, intrinsics=INTRINSICS,
                              setup="eye_in_hand", tool_frame="tool0", pixel_noise=0.3,
                              validation=(Qv, s.detections(Qv)))
    corners = result_corners(result)
    assert [c.split for c in corners] == [
        "rejected" if c.view in result.rejected else "training" for c in corners[:12]] + \
        ["held-out"] * 4
    for c, uv in zip(corners[:12], np.split(result.predict(None),
                                            np.cumsum([len(c.predicted)
                                                       for c in corners[:12]])[:-1])):
        assert np.allclose(project(result.intrinsics, c.predicted), uv, atol=1e-9)
    # the calibrated model's detected corners: a fraction of a millimetre from predicted
    gap = np.linalg.norm(np.vstack([c.detected - c.predicted for c in corners]), axis=1)
    assert 1e-6 < np.sqrt(np.mean(gap ** 2)) < 1e-3
    path = tmp_path / "corners_fit.csv"
    write_corners(str(path), corners)
    back = read_corners(str(path))
    assert [(c.view, c.split) for c in back] == [(c.view, c.split) for c in corners]
    for a, b in zip(back, corners):
        assert np.allclose(a.predicted, b.predicted, rtol=1e-8, atol=1e-12)
        assert np.allclose(a.detected, b.detected, rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("text, message", [
    ("a,b\n", "not a corners file"),
    ("view,split,feature,predicted_x,predicted_y,predicted_z,detected_x,detected_y,"
     "detected_z\nv,training,0,1,2,x,4,5,6\n", "line 2"),
])
def test_a_bad_corners_file_is_a_clear_error(tmp_path, text, message):
    path = tmp_path / "corners_fit.csv"
    path.write_text(text)
    with pytest.raises(DataError, match=message):
        read_corners(str(path))
    with pytest.raises(DataError, match="missing.csv"):
        read_corners(str(tmp_path / "missing.csv"))

"""Camera posture planning on a UR10 with a wrist camera: every planned posture is checked
independently (pinocchio's forward kinematics and ``cv2.projectPoints``) to keep the whole
board in the image with the margin, within the distance and incidence range, free of
self-collision; the D-optimal choice is more informative than random postures of the
pool; the planned postures calibrate the hidden offsets; impossible requests are clear
errors."""
from __future__ import annotations

import cv2
import numpy as np
import pinocchio as pin
import pytest

from figaroh_ros.calibration.postures import SelfCollision
from figaroh_ros.camera import Board, Intrinsics, calibrate_camera, plan_camera_postures
from figaroh_ros.camera.synthetic import Scene
from figaroh_ros.errors import DataError, SolverError
from figaroh_ros.model.robot import example_robot_package_dirs, example_robot_urdf

URDF = example_robot_urdf("ur_description/urdf/ur10_robot.urdf")
K = Intrinsics(np.array([[900.0, 0, 640], [0, 900, 360], [0, 0, 1]]),
               [0.05, -0.1, 0.0, 0.0, 0.02], 1280, 720)
BOARD = Board("checkerboard", 7, 10, 0.03)
MOUNT = pin.SE3(pin.rpy.rpyToMatrix(0.02, -0.03, 0.01), np.array([0.0, 0.07, 0.05]))
CENTRE = np.array([0.3, -1.2, 1.6, -1.9, -1.57, 0.2])
MARGIN, DISTANCE, INCIDENCE = 20.0, (0.3, 0.8), 40.0


@pytest.fixture(scope="module")
def planned():
    pm = pin.buildModelFromUrdf(URDF)
    scene = Scene(pm, "eye_in_hand", "tool0", K, BOARD, CENTRE, MOUNT, offset=3e-3, seed=11)
    collision = SelfCollision(URDF, example_robot_package_dirs())
    plan = plan_camera_postures(URDF, CENTRE, board=BOARD, intrinsics=K, setup="eye_in_hand",
                                tool_frame="tool0", camera_guess=MOUNT,
                                board_guess=scene.board_mount, collision=collision,
                                n_candidates=200, spread=0.4, margin=MARGIN,
                                distance=DISTANCE, max_incidence=INCIDENCE, pixel_noise=0.3)
    return pm, scene, collision, plan


def test_planned_postures_keep_the_board_in_view(planned):
    pm, scene, collision, plan = planned
    assert plan.joints == ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint",
                           "wrist_1_joint", "wrist_2_joint", "wrist_3_joint"]
    assert 6 <= len(plan.postures) <= 40
    data = pm.createData()
    fid = pm.getFrameId("tool0")
    P = BOARD.object_points()
    w, h = BOARD.size()
    for q in np.vstack([plan.postures, plan.candidates]):
        pin.framesForwardKinematics(pm, data, q)
        T_cam_board = (data.oMf[fid] * MOUNT).inverse() * scene.board_mount
        uv, _ = cv2.projectPoints(P, cv2.Rodrigues(T_cam_board.rotation)[0],
                                  T_cam_board.translation, K.K, K.dist)
        uv = uv.reshape(-1, 2)
        assert np.all((uv >= MARGIN) & (uv <= np.array([1279, 719]) - MARGIN))
        centre = T_cam_board.act(np.array([w / 2, h / 2, 0.0]))
        assert DISTANCE[0] <= np.linalg.norm(centre) <= DISTANCE[1]
        normal = T_cam_board.rotation[:, 2]
        cos = abs(normal @ centre) / np.linalg.norm(centre)
        assert np.degrees(np.arccos(min(cos, 1.0))) <= INCIDENCE + 1e-9
        assert not collision.collides(dict(zip(plan.joints, q)))


def test_d_optimal_choice_beats_random_postures(planned):
    pm, scene, _, plan = planned
    from figaroh_ros.camera.postures import view_geometry, visible_views

    p = scene.problem
    x = p.initial()

    def logdet(Q):
        ok, _, _ = view_geometry(p, BOARD, Q, x, MARGIN)
        _, J = p.residuals(visible_views(p, BOARD, Q, ok, x), x)
        cols = np.flatnonzero(np.any(J != 0, axis=0))
        s = np.linalg.svd(J[:, cols], compute_uv=False)
        return float(np.sum(np.log(s[s > 1e-9 * s[0]])))

    chosen = logdet(plan.postures)
    rng = np.random.default_rng(0)
    k = len(plan.postures)
    random = [logdet(plan.candidates[rng.choice(len(plan.candidates), k, replace=False)])
              for _ in range(10)]
    assert chosen > max(random), (chosen, random)


def test_planned_postures_calibrate_the_hidden_offsets(planned):
    pm, scene, _, plan = planned
    Q = plan.postures
    det = scene.detections(Q, 0.3)
    held = scene.postures(20)
    det_held = scene.detections(held, 0.3)
    result = calibrate_camera(pm, Q, det, board=BOARD, intrinsics=K, setup="eye_in_hand",
                              tool_frame="tool0", pixel_noise=0.3,
                              validation=(held, det_held))
    assert result.validation_rmse < 0.5 < result.nominal_validation_rmse


def test_impossible_requests_are_clear_errors():
    with pytest.raises(DataError, match="board_guess: the board's pose in the world"):
        plan_camera_postures(URDF, CENTRE, board=BOARD, intrinsics=K, setup="eye_in_hand",
                             tool_frame="tool0")
    behind = pin.SE3(np.eye(3), np.array([0.0, 0.0, -5.0]))
    with pytest.raises(SolverError, match="keep the board in view"):
        plan_camera_postures(URDF, CENTRE, board=BOARD, intrinsics=K, setup="eye_in_hand",
                             tool_frame="tool0", board_guess=behind, n_candidates=20)

"""Camera calibration against ground truth, no images: a true robot-camera-board system
(hidden joint offsets of milliradians, camera and board mounts) projects the board's
corners, 0.3 px of noise is added, and ``calibrate_camera`` starts from the nominal model
and a closed-form hand-eye guess.  The calibrated model must predict held-out views within
10 % of the true model's own error on the same noisy pixels, find each base parameter
(the hand-eye transform among them) within 3 standard deviations of its true value, and
place the end effector on held-out postures within 15 % of the floor: the error of the
estimate the same data give when the solver starts at the truth."""
from __future__ import annotations

import os

import numpy as np
import pinocchio as pin
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from figaroh_ros.camera import Board, Detection, Intrinsics, calibrate_camera
from figaroh_ros.camera.solve import fit
from figaroh_ros.camera.synthetic import Scene
from figaroh_ros.errors import DataError
from figaroh_ros.tasks.camera_gate import camera_verdict
from figaroh_ros.model.robot import example_robot_urdf

SHARED = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "shared"))
TIAGO = os.path.join(SHARED, "data", "tiago", "urdf", "tiago_48_schunk.urdf")
INTRINSICS = Intrinsics(np.array([[900.0, 0, 640], [0, 900, 360], [0, 0, 1]]),
                        [0.05, -0.1, 0.0, 0.0, 0.02], 1280, 720)
BOARD = Board("checkerboard", 7, 10, 0.03)
UR10_CENTRE = [0.3, -1.2, 1.6, -1.9, -1.57, 0.2]
TIAGO_CENTRE = {"torso_lift_joint": 0.113, "arm_1_joint": 1.186, "arm_2_joint": 0.893,
                "arm_3_joint": 1.032, "arm_4_joint": -0.154, "arm_5_joint": 0.557,
                "arm_6_joint": -1.298, "arm_7_joint": 0.992, "head_1_joint": -0.369,
                "head_2_joint": 0.335}
MOUNT = pin.SE3(pin.rpy.rpyToMatrix(0.02, -0.03, 0.01), np.array([0.0, 0.07, 0.05]))
NOISE = 0.3


def ur10():
    urdf = example_robot_urdf("ur_description/urdf/ur10_robot.urdf")
    return urdf, pin.buildModelFromUrdf(urdf)


def tiago_scene(seed=3):
    pm = pin.buildModelFromUrdf(TIAGO)
    qc = pin.neutral(pm)
    for n, v in TIAGO_CENTRE.items():
        qc[pm.joints[pm.getJointId(n)].idx_q] = v
    mount = pin.SE3(pin.rpy.rpyToMatrix(0.01, -0.02, 0.015), np.array([0.002, -0.003, 0.001]))
    return Scene(pm, "on_chain", "arm_tool_link", INTRINSICS, BOARD, qc, mount,
                 camera_frame="xtion_rgb_optical_frame", distance=0.5, seed=seed)


def rmse(e):
    return float(np.sqrt(np.mean(np.sum(e ** 2, axis=1))))


def end_effector(problem, views, x, setup):
    """The end effector where it matters: the flange in the board's frame (eye-in-hand),
    the board's mount frame in the camera's frame (eye-to-hand, on the chain)."""
    Ta, Tb = problem.poses(views, x)
    if setup == "eye_in_hand":
        flange = Ta @ np.linalg.inv(problem.cam.mount(x[problem.sa]).homogeneous)
        return (np.linalg.inv(Tb) @ flange)[:, :3, 3]
    mount_frame = Tb @ np.linalg.inv(problem.board.mount(x[problem.sb]).homogeneous)
    return (np.linalg.inv(Ta) @ mount_frame)[:, :3, 3]


def check_against_truth(scene, result, setup, Q_val, det_val):
    p_true = scene.problem
    val_true = result.validation
    # the true model's own error on the same noisy held-out pixels
    views_true = val_true.__class__(val_true.ids, p_true.cam.readings(Q_val),
                                    p_true.board.readings(Q_val), val_true.view,
                                    val_true.points, val_true.pixels)
    floor_px = rmse(p_true.pixel_errors(views_true, scene.x))
    print(f"{setup}: true model {floor_px:.4f} px on the held-out views")
    assert result.validation_rmse <= 1.10 * floor_px, (result.validation_rmse, floor_px)
    assert result.validation_rmse < result.nominal_validation_rmse
    # every base parameter (hand-eye included) within 3 std of its true value
    x_true = result.parameters_of(scene.camera_mount, scene.board_mount,
                                  scene.joint_offsets)
    truth = result.base_matrix @ x_true
    z = (result.x[result.free] - truth) / result.std
    names = [result.problem.names[i] for i in result.free]
    assert np.all(np.abs(z) <= 3.0), dict(zip(names, np.round(z, 2)))
    assert any(n.startswith("camera_") for n in names)
    # end effector on held-out postures: within 15 % of the estimate started at the truth
    sub = result.train.subset(result.kept)
    x_oracle = fit(result.problem, sub, x_true, result.free)[0]
    p_ref = end_effector(p_true, views_true, scene.x, setup)
    err = rmse(end_effector(result.problem, val_true, result.x, setup) - p_ref)
    floor = rmse(end_effector(result.problem, val_true, x_oracle, setup) - p_ref)
    nominal = rmse(end_effector(result.problem, val_true, result.x_nominal, setup) - p_ref)
    assert err <= 1.15 * floor + 1e-6, (err, floor)
    assert err < nominal
    return err, floor, nominal


@pytest.mark.parametrize("setup", ["eye_in_hand", "eye_to_hand"])
def test_ur10_camera_reaches_the_noise_floor(setup):
    urdf, pm = ur10()
    scene = Scene(pm, setup, "tool0", INTRINSICS, BOARD, UR10_CENTRE, MOUNT,
                  distance=0.5 if setup == "eye_in_hand" else 1.0, seed=1)
    Q = scene.postures(80)
    det = scene.detections(Q, NOISE)
    result = calibrate_camera(urdf, Q[:50], det[:50], board=BOARD, intrinsics=INTRINSICS,
                              setup=setup, tool_frame="tool0", pixel_noise=NOISE,
                              validation=(Q[50:], det[50:]))
    assert result.converged and result.rejected == []
    assert abs(result.sigma - 1.0) < 0.1          # the residuals are the stated noise
    err, floor, nominal = check_against_truth(scene, result, setup, Q[50:], det[50:])
    print(setup, "held-out px:", result.validation_rmse, "nominal",
          result.nominal_validation_rmse, "end effector mm:", 1e3 * err, "floor", 1e3 * floor, "nominal", 1e3 * nominal)


def test_tiago_head_camera_on_the_chain():
    scene = tiago_scene()
    Q = scene.postures(80, spread=0.12)
    det = scene.detections(Q, NOISE)
    result = calibrate_camera(TIAGO, Q[:50], det[:50], board=BOARD, intrinsics=INTRINSICS,
                              setup="on_chain", tool_frame="arm_tool_link",
                              camera_frame="xtion_rgb_optical_frame", pixel_noise=NOISE,
                              validation=(Q[50:], det[50:]))
    names = [result.problem.names[i] for i in result.free]
    assert "offset_head_1_joint" in names and "offset_arm_1_joint" in names
    err, floor, nominal = check_against_truth(scene, result, "on_chain", Q[50:], det[50:])
    print("on_chain held-out px:", result.validation_rmse, "nominal",
          result.nominal_validation_rmse, "gripper mm:", 1e3 * err, "floor", 1e3 * floor,
          "nominal", 1e3 * nominal)
    # the URDF: the head and arm offsets and the camera's joint origin written back
    text = result.to_urdf(camera_joint="xtion_rgb_optical_joint")
    back = pin.buildModelFromXML(text)
    d0, d1 = back.createData(), pin.Model(back).createData()
    q = Q[60]
    pin.framesForwardKinematics(back, d0, q)
    cam = d0.oMf[back.getFrameId("xtion_rgb_optical_frame")]
    grip = d0.oMf[back.getFrameId("arm_tool_link")]
    Ta, Tb = result.problem.poses(result.validation.subset([10]), result.x)
    predicted = np.linalg.inv(Ta[0]) @ Tb[0] @ np.linalg.inv(result.board_mount.homogeneous)
    assert np.allclose((cam.inverse() * grip).homogeneous, predicted, atol=1e-9)
    del d1
    # the publication gate: every check passes, each with its number
    verdict = camera_verdict(result, urdf_text=text, camera_link="xtion_rgb_optical_frame")
    assert verdict.passed, [c.line() for c in verdict.failed()]
    checks = {c.name: c for c in verdict.checks}
    assert checks["urdf_round_trip"].value <= 1e-9
    assert checks["improvement_test"].value < 0.01
    # the nominal URDF does not hold the estimate: refused on that check alone
    nominal_urdf = open(TIAGO, encoding="utf-8").read()
    failed = camera_verdict(result, urdf_text=nominal_urdf,
                            camera_link="xtion_rgb_optical_frame")
    assert [c.name for c in failed.failed()] == ["urdf_round_trip"]


def test_a_view_with_shifted_pixels_is_rejected_and_named():
    urdf, pm = ur10()
    scene = Scene(pm, "eye_in_hand", "tool0", INTRINSICS, BOARD, UR10_CENTRE, MOUNT, seed=2)
    Q = scene.postures(40)
    det = scene.detections(Q, NOISE)
    det[7] = (det[7][0], det[7][1] + [6.0, -4.0])
    result = calibrate_camera(urdf, Q, det, board=BOARD, intrinsics=INTRINSICS,
                              setup="eye_in_hand", tool_frame="tool0", pixel_noise=NOISE)
    assert result.rejected == ["detections[7]"]
    assert result.rmse < 0.5
    assert result.to_dict()["rejected_views"] == ["detections[7]"]


def test_estimated_intrinsics_and_camera_info():
    urdf, pm = ur10()
    scene = Scene(pm, "eye_in_hand", "tool0", INTRINSICS, BOARD, UR10_CENTRE, MOUNT, seed=4)
    Q = scene.postures(60, spread=0.35, min_visible=0.7)
    det = scene.detections(Q, NOISE)
    prior = INTRINSICS.with_vector(INTRINSICS.vector() + [8, -6, 5, -4, 0, 0, 0, 0, 0])
    result = calibrate_camera(urdf, Q, det, board=BOARD, intrinsics=prior,
                              setup="eye_in_hand", tool_frame="tool0", pixel_noise=NOISE,
                              estimate=("camera", "board"), estimate_intrinsics=True)
    est = result.intrinsics.vector()[:4]
    true = INTRINSICS.vector()[:4]
    off = prior.vector()[:4]
    assert np.all(np.abs(est - true) < 0.5 * np.abs(off - true)), (est, true)
    back = Intrinsics.from_camera_info(__import__("yaml").safe_load(result.camera_info_yaml()))
    assert np.allclose(back.vector(), result.intrinsics.vector())


def _bad_inputs():
    urdf, pm = ur10()
    scene = Scene(pm, "eye_in_hand", "tool0", INTRINSICS, BOARD, UR10_CENTRE, MOUNT, seed=5)
    Q = scene.postures(12)
    return urdf, Q, scene.detections(Q, NOISE)


@pytest.mark.parametrize("fault,message", [
    ("nan", r"detections\[3\]: pixels that are not finite"),
    ("empty", r"detections\[2\]: no feature detected"),
    ("ids", r"detections\[1\]: feature ids .* outside the board's 0\.\.69"),
    ("size", r"image view5.png is 640x480 pixels but the CameraInfo says 1280x720"),
    ("count", r"11 joint configurations for 12 views"),
])
def test_bad_input_is_a_clear_error(fault, message):
    urdf, Q, det = _bad_inputs()
    det = list(det)
    if fault == "nan":
        det[3][1][0, 0] = np.nan
    elif fault == "empty":
        det[2] = (np.zeros(0, int), np.zeros((0, 2)))
    elif fault == "ids":
        det[1] = (det[1][0] + 40, det[1][1])
    elif fault == "size":
        det[5] = Detection("view5.png", det[5][0], det[5][1], 0.1, 640, 480)
    elif fault == "count":
        Q = Q[:11]
    with pytest.raises(DataError, match=message):
        calibrate_camera(urdf, Q, det, board=BOARD, intrinsics=INTRINSICS,
                         setup="eye_in_hand", tool_frame="tool0")


@settings(max_examples=6, deadline=None)
@given(st.integers(0, 2 ** 31), st.sampled_from(["eye_in_hand", "eye_to_hand"]),
       st.floats(1e-3, 1e-2))
def test_exact_pixels_give_the_exact_model(seed, setup, offset):
    """Without noise the calibration lands on the truth, whatever the hidden offsets (up
    to 10 mrad): zero reprojection error, the camera's pose relative to the board exact
    at postures it never saw, and the base parameters at their true values (to the second
    order of the offsets: the grouping of the base parameters is linear)."""
    urdf, pm = ur10()
    scene = Scene(pm, setup, "tool0", INTRINSICS, BOARD, UR10_CENTRE, MOUNT, offset=offset,
                  distance=0.5 if setup == "eye_in_hand" else 1.0, seed=seed)
    Q = scene.postures(35)
    det = scene.detections(Q, 0.0)
    result = calibrate_camera(pm, Q[:25], det[:25], board=BOARD, intrinsics=INTRINSICS,
                              setup=setup, tool_frame="tool0", pixel_noise=NOISE,
                              validation=(Q[25:], det[25:]))
    assert result.rmse < 1e-6 and result.validation_rmse < 1e-6
    Ta, Tb = result.problem.poses(result.validation, result.x)
    views = result.validation
    Ta0, Tb0 = scene.problem.poses(views.__class__(
        views.ids, scene.problem.cam.readings(Q[25:]), scene.problem.board.readings(Q[25:]),
        views.view, views.points, views.pixels), scene.x)
    assert np.allclose(np.linalg.inv(Ta) @ Tb, np.linalg.inv(Ta0) @ Tb0, atol=1e-9)
    x_true = result.parameters_of(scene.camera_mount, scene.board_mount,
                                  scene.joint_offsets)
    assert np.allclose(result.x[result.free], result.base_matrix @ x_true,
                       atol=2 * offset ** 2)


def test_weakly_excited_parameters_stay_initial_and_are_named():
    """Full placements from 20 views: those the views determine worse than max_std stay
    at their initial value, are named, and every estimated one meets its bound."""
    urdf, pm = ur10()
    scene = Scene(pm, "eye_in_hand", "tool0", INTRINSICS, BOARD, UR10_CENTRE, MOUNT, seed=6)
    Q = scene.postures(20)
    det = scene.detections(Q, NOISE)
    full = calibrate_camera(pm, Q, det, board=BOARD, intrinsics=INTRINSICS,
                            setup="eye_in_hand", tool_frame="tool0", level="full",
                            pixel_noise=NOISE, max_std=None)
    bound = 1e-3
    pruned = calibrate_camera(pm, Q, det, board=BOARD, intrinsics=INTRINSICS,
                              setup="eye_in_hand", tool_frame="tool0", level="full",
                              pixel_noise=NOISE, max_std=(bound, bound))
    assert pruned.poorly_excited and full.poorly_excited == []
    assert len(pruned.free) == len(full.free) - len(pruned.poorly_excited)
    assert set(pruned.poorly_excited) <= set(full.expressions)
    assert not set(pruned.poorly_excited) & set(pruned.expressions)
    assert np.all(pruned.std <= 1.5 * bound)
    assert pruned.to_dict()["poorly_excited"] == pruned.poorly_excited

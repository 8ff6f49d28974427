"""Geometric calibration on simulated robots whose kinematic errors are hidden: UR10 (6D
pose), TIAGo (torso + arm, one marker / four points / offsets), TALOS (torso + left arm).
Checks the analytic regressor, the recovery of the base parameters (within 3 std of the
truth), the validation RMSE against the noise floor, and the URDF round trip."""
import os
import zlib

import numpy as np
import pinocchio as pin
import pytest
from conftest import SHARED

from figaroh_ros.calibration.kinematic_model import KinematicModel, Measurement
from figaroh_ros.calibration.solve import (
    PostureSet, accuracy, estimate, identifiable_parameters, initial_frames
)
from figaroh_ros.calibration.urdf_export import calibrated_urdf_text, forward_kinematics_gap
from figaroh_ros.model.robot import example_robot_urdf
from figaroh_ros.sim.kinematics import hidden_errors, measure, random_postures

TIAGO = os.path.join(SHARED, "data", "tiago", "urdf", "tiago_48_schunk.urdf")
UR10 = "ur_description/urdf/ur10_robot.urdf"
TALOS = "talos_data/robots/talos_reduced.urdf"
TALOS_CHAIN = ["torso_1_joint", "torso_2_joint"] + [f"arm_left_{i}_joint" for i in range(1, 8)]


def _urdf(name):
    return name if os.path.isabs(name) else example_robot_urdf(name)


def make_model(urdf, tool, level, kind, n_points, sigma_mm=0.2, start=None, joints=None):
    m = pin.buildModelFromUrdf(_urdf(urdf))
    meas = Measurement(kind, n_points, sigma_position=sigma_mm * 1e-3,
                       sigma_orientation=1e-3)
    return KinematicModel(m, tool, level=level, measurement=meas, start_frame=start,
                          joints=joints)


CASES = {
    # name: (urdf, tool frame, level, measurement, points, tool points, start, joints)
    "ur10_pose_full": (UR10, "tool0", "full", "pose", 1, None, None, None),
    "tiago_marker_full": (TIAGO, "wrist_ft_tool_link", "full", "points", 1,
                          [[0.05, 0.02, 0.10]], None, None),
    "tiago_4points_offset": (TIAGO, "wrist_ft_tool_link", "offset", "points", 4,
                             [[0.05, 0.0, 0.1], [-0.05, 0.0, 0.1], [0.0, 0.06, 0.12],
                              [0.0, -0.04, 0.08]], None, None),
    "talos_marker_full": (TALOS, "gripper_left_base_link", "full", "points", 1,
                          [[0.0, 0.03, -0.12]], None, TALOS_CHAIN),
}


def _true_in_model_frame(km, km_true, x_true):
    """The true parameters in the calibrating model's parametrisation (its base0/tool0
    come from the registration, the truth's from the simulation)."""
    x = x_true.copy()
    if km.estimate_base:
        T = km.base0.inverse() * km_true.base_pose(x_true)
        x[km.groups["base"]] = np.r_[T.translation, pin.log3(T.rotation)]
    if km.measurement.kind == "pose":
        T = km.tool0.inverse() * km_true.tool_pose(x_true)
        x[km.groups["tool"]] = np.r_[T.translation, pin.log3(T.rotation)]
    return x


@pytest.fixture(scope="module", params=sorted(CASES))
def experiment(request):
    urdf, tool, level, kind, npts, tool_pts, start, joints = CASES[request.param]
    rng = np.random.default_rng(zlib.crc32(request.param.encode()))
    km_true = make_model(urdf, tool, level, kind, npts, start=start, joints=joints)
    # the measurement frame is far from the robot: a metre away and turned
    km_true.base0 = pin.SE3(pin.rpy.rpyToMatrix(0.3, -0.2, 2.0), np.array([1.5, -0.7, 0.4]))
    if kind == "pose":
        km_true.tool0 = pin.SE3(pin.rpy.rpyToMatrix(0.1, 0.2, -0.3), np.array([0.0, 0.05, 0.1]))
    x_true = hidden_errors(km_true, rng, tool_points=tool_pts)
    train = measure(km_true, random_postures(km_true, 150, rng), x_true, rng)
    valid = measure(km_true, random_postures(km_true, 200, rng), x_true, rng)
    km = make_model(urdf, tool, level, kind, npts, start=start, joints=joints)
    x0 = initial_frames(km, train, km.nominal_parameters())
    bp = identifiable_parameters(km, train, x0)
    res = estimate(km, train, x0, method="lm", bp=bp)
    # the true base parameters: the base-parameter vector reproducing the true model
    # exactly (noise-free measurements of the same postures)
    exact = PostureSet(train.Q, np.array(_noise_free(km_true, train.Q, x_true)))
    res_exact = estimate(km, exact, x0, method="lm", bp=bp)
    return dict(name=request.param, km=km, km_true=km_true, x_true=x_true, x0=x0, bp=bp,
                res=res, train=train, valid=valid, exact=exact, res_exact=res_exact)


def _noise_free(km_true, Q, x_true):
    m = km_true.measurement
    saved = m.sigma_position, m.sigma_orientation
    m.sigma_position = m.sigma_orientation = 0.0
    try:
        return measure(km_true, Q, x_true, np.random.default_rng(0)).Y
    finally:
        m.sigma_position, m.sigma_orientation = saved


def test_regressor_is_the_jacobian(experiment):
    """Analytic kinematic regressor == central finite differences of the model."""
    km, res, data = experiment["km"], experiment["res"], experiment["train"].subset(range(5))
    x = res.x + 1e-3 * np.random.default_rng(0).normal(size=km.n_params)
    F, J = km.residuals(data.Q, data.Y, x, True)
    h = 1e-7
    Jn = np.zeros_like(J)
    for k in range(km.n_params):
        e = np.zeros(km.n_params)
        e[k] = h
        Jn[:, :, k] = (km.residuals(data.Q, data.Y, x + e)[0]
                       - km.residuals(data.Q, data.Y, x - e)[0]) / (2 * h)
    assert np.abs(J - Jn).max() < 1e-6 * max(1.0, np.abs(J).max())


def test_base_parameters_reproduce_the_true_model_exactly(experiment):
    """The grouped (base) parameters absorb the dependent ones exactly: fitted on noise-free
    measurements they reproduce the true kinematics to numerical precision, and to first
    order they are the QR combination M of the true standard parameters."""
    km, bp, x0 = experiment["km"], experiment["bp"], experiment["x0"]
    exact = experiment["res_exact"]
    assert accuracy(km, experiment["exact"], exact.x).rmse < 1e-9
    x_true = _true_in_model_frame(km, experiment["km_true"], experiment["x_true"])
    linear = bp.M @ (x_true - x0) + x0[bp.base_index]
    assert np.abs(exact.x[bp.base_index] - linear).max() < 2e-3 * max(1.0, np.abs(linear).max())


def test_base_parameters_within_3_std_of_truth(experiment):
    bp, res = experiment["bp"], experiment["res"]
    truth = experiment["res_exact"].x[bp.base_index]
    z = (res.x[bp.base_index] - truth) / res.std
    assert np.abs(z).max() < 4.5, (experiment["name"], np.abs(z).max())
    assert np.mean(np.abs(z) < 3.0) >= 0.95
    # whitened residual sigma is the stated noise
    assert 0.85 < res.sigma < 1.15


def test_validation_rmse_at_noise_floor(experiment):
    km, res, valid = experiment["km"], experiment["res"], experiment["valid"]
    m = km.measurement
    # noise floor: the error of the true model itself on these noisy measurements
    # (sqrt(3) sigma per point in expectation)
    true = accuracy(experiment["km_true"], valid, experiment["x_true"])
    assert abs(true.rmse / (np.sqrt(3.0) * m.sigma_position) - 1) < 0.1
    acc = accuracy(km, valid, res.x)
    assert acc.rmse <= 1.1 * true.rmse, (experiment["name"], acc.rmse / true.rmse)
    # and the nominal model (frames registered, joints nominal) is far worse
    nominal = accuracy(km, valid, experiment["x0"]).rmse
    assert nominal > 3 * acc.rmse
    if m.kind == "pose":
        assert acc.orientation_rmse <= 1.1 * true.orientation_rmse


def test_exported_urdf_reproduces_calibrated_kinematics(experiment):
    km, res, valid = experiment["km"], experiment["res"], experiment["valid"]
    urdf = {"ur10_pose_full": UR10, "talos_marker_full": TALOS}.get(experiment["name"], TIAGO)
    text = calibrated_urdf_text(km, res.x, _urdf(urdf))
    assert forward_kinematics_gap(km, res.x, text, valid.Q) < 1e-9
    # and differs from the nominal file's kinematics by the calibration
    nominal = open(_urdf(urdf)).read()
    assert forward_kinematics_gap(km, res.x, nominal, valid.Q) > 1e-4


def test_identifiability_report_names_groups():
    """TIAGo full level: a revolute joint's placement along/about its own axis merges with
    the next joint's, so grouped expressions appear; nothing measured has no effect."""
    km = make_model(TIAGO, "wrist_ft_tool_link", "full", "points", 1)
    rng = np.random.default_rng(3)
    x_true = hidden_errors(km, rng, tool_points=[[0.05, 0.0, 0.1]])
    data = measure(km, random_postures(km, 60, rng), x_true, rng)
    x0 = initial_frames(km, data, km.nominal_parameters())
    bp = identifiable_parameters(km, data, x0)
    assert bp.size == 33           # 6 base + 3 marker + 24 joint parameters
    grouped = [e for e in bp.names if " " in e]
    assert any("dpz_arm_2_joint" in e or "dpz_arm_1_joint" in e for e in bp.names + grouped)
    assert len(bp.dependent_index) + len(bp.zero_index) == km.n_params - bp.size


@pytest.mark.parametrize("method", ["ils", "robust"])
def test_other_solvers_agree_with_lm(method):
    km = make_model(UR10, "tool0", "full", "points", 1, sigma_mm=0.1)
    rng = np.random.default_rng(11)
    x_true = hidden_errors(km, rng, tool_points=[[0.03, -0.02, 0.08]])
    data = measure(km, random_postures(km, 80, rng), x_true, rng)
    x0 = initial_frames(km, data, km.nominal_parameters())
    lm = estimate(km, data, x0, "lm")
    other = estimate(km, data, x0, method)
    # Gauss-Newton reaches the same minimum; the soft-L1 loss, quadratic for residuals
    # well under its 3-sigma scale, lands within a fraction of a standard deviation
    tol = 1e-3 if method == "ils" else 0.25
    z = np.abs(other.x[lm.free] - lm.x[lm.free]) / lm.std
    assert z.max() < tol


def test_outlier_postures_are_rejected():
    km = make_model(UR10, "tool0", "full", "points", 1, sigma_mm=0.1)
    rng = np.random.default_rng(12)
    x_true = hidden_errors(km, rng, tool_points=[[0.03, -0.02, 0.08]])
    data = measure(km, random_postures(km, 80, rng), x_true, rng)
    bad = [5, 40]
    data.Y[bad, :3] += [0.03, -0.02, 0.01]              # two gross marker errors
    x0 = initial_frames(km, data, km.nominal_parameters())
    res = estimate(km, data, x0, "lm", outlier_threshold=5e-3)
    assert sorted(res.rejected) == ["40", "5"]
    good = data.subset([i for i in range(80) if i not in bad])
    assert accuracy(km, good, res.x).rmse < 1.1 * np.sqrt(3) * 1e-4 * 1.2

"""Base parameters: exact on noise-free data, minimal WLS error with noise (ground truth hidden)."""
import numpy as np
import pytest
from conftest import TX40_DIR

from figaroh_ros.excitation.fourier import fourier_trajectory
from figaroh_ros.identification.base_parameters import base_parameters
from figaroh_ros.identification.estimation import (
    essential_parameters, ordinary_least_squares, rmse_per_joint, weighted_least_squares
)
from figaroh_ros.identification.parameters import DriveOptions, parameter_layout
from figaroh_ros.identification.regressor import standard_regressor
from figaroh_ros.model.robot import Transmission, load_urdf_model
from figaroh_ros.sim.dynamics import measured_torques, perturbed_parameters


def _experiment(robot, seed, duration=20.0, rate=100.0):
    drive = DriveOptions()
    layout = parameter_layout(robot, drive)
    traj = fourier_trajectory(robot, duration, rate, harmonics=5, base_freq_hz=0.1, seed=seed)
    W = standard_regressor(robot, layout, drive, traj.q, traj.dq, traj.ddq)
    return drive, layout, traj, W


@pytest.mark.parametrize("name", ["ur10", "panda"])
def test_noise_free_recovery(name, request):
    robot = request.getfixturevalue(name)
    drive, layout, traj, W = _experiment(robot, seed=11)
    phi_true = perturbed_parameters(robot, layout, seed=21)
    tau = measured_torques(robot, layout, drive, phi_true, traj, noise_std=0.0)
    bp = base_parameters(W, layout.names)
    # W phi == W_b phi_b for any phi: the grouping is exact
    phi_rand = np.random.default_rng(0).normal(size=layout.size)
    assert np.allclose(W @ phi_rand, bp.base_regressor(W) @ bp.from_standard(phi_rand),
                       atol=1e-8 * np.abs(W @ phi_rand).max())
    est = ordinary_least_squares(bp.base_regressor(W), tau.T.ravel())
    truth = bp.from_standard(phi_true)
    rel = np.abs(est.phi - truth) / np.maximum(np.abs(truth), 1e-3 * np.abs(truth).max())
    assert rel.max() < 1e-6, bp.names[int(np.argmax(rel))]
    assert len(bp.zero_index) > 0 and bp.size < layout.size


@pytest.mark.parametrize("name", ["ur10", "panda"])
def test_noisy_identification_reaches_noise_floor(name, request):
    """Torque noise of a few percent: the identified model predicts a *different* trajectory
    with an error whose RMS is within 5 % of the noise level (no model error left)."""
    robot = request.getfixturevalue(name)
    drive, layout, traj, W = _experiment(robot, seed=12, duration=60.0)
    phi_true = perturbed_parameters(robot, layout, seed=22)
    tau_clean = measured_torques(robot, layout, drive, phi_true, traj, 0.0)
    sigma = 0.02 * np.sqrt(np.mean(tau_clean ** 2, axis=0)) + 0.05
    tau = measured_torques(robot, layout, drive, phi_true, traj, sigma, seed=3)
    bp = base_parameters(W, layout.names)
    n, N = robot.n_joints, traj.q.shape[0]
    row_joint = np.repeat(np.arange(n), N)
    Wb = bp.base_regressor(W)
    est = weighted_least_squares(Wb, tau.T.ravel(), row_joint, n)
    # WLS weights recover the per-joint noise level
    assert np.allclose(est.joint_sigma, sigma, rtol=0.1)
    # validation on another trajectory
    _, _, traj_v, Wv = _experiment(robot, seed=99, duration=20.0)
    tau_v = measured_torques(robot, layout, drive, phi_true, traj_v, sigma, seed=4)
    pred = bp.base_regressor(Wv) @ est.phi
    rms = rmse_per_joint(tau_v.T.ravel(), pred, np.repeat(np.arange(n), traj_v.q.shape[0]), n)
    print(name, "validation RMS / noise:", np.round(rms / sigma, 3))
    assert np.all(rms <= 1.05 * sigma), (rms / sigma)
    # and the truth lies within a few standard deviations of the estimate
    z = (est.phi - bp.from_standard(phi_true)) / est.std
    assert np.mean(np.abs(z) < 3) > 0.95


def test_tx40_grouping_is_deterministic():
    r = np.array([32, 32, 45, -48, 45, 32.0]); K = np.eye(6); K[5, 4] = 1.0
    robot = load_urdf_model(f"{TX40_DIR}/tx40_mdh_modified.urdf",
                            [f"joint_{i}" for i in range(1, 7)], transmission=Transmission(r, K))
    drive = DriveOptions()
    layout = parameter_layout(robot, drive)
    names = []
    for seed in (1, 2):
        traj = fourier_trajectory(robot, 10.0, 100.0, seed=seed)
        W = standard_regressor(robot, layout, drive, traj.q, traj.dq, traj.ddq)
        names.append(base_parameters(W, layout.names).names)
    assert names[0] == names[1]
    assert len(names[0]) == 60
    first = names[0][0].split()
    assert first[0] == "Izz1" and {"Ia1", "Iyy2", "Iyy3", "0.07*mz3"} <= set(first)
    assert "my5 - mz6" in names[0] and "Iam6" in names[0]


def test_essential_parameters_drop_poorly_identified(ur10):
    drive, layout, traj, W = _experiment(ur10, seed=13, duration=10.0)
    phi_true = perturbed_parameters(ur10, layout, seed=23)
    tau = measured_torques(ur10, layout, drive, phi_true, traj, 0.5)
    bp = base_parameters(W, layout.names)
    keep, est = essential_parameters(bp.base_regressor(W), tau.T.ravel(), ratio=30)
    full = ordinary_least_squares(bp.base_regressor(W), tau.T.ravel())
    assert 0 < len(keep) < bp.size
    assert est.std_percent.max() <= 30 * est.std_percent.min()
    # the parameter with the worst %sigma in the full model is gone
    assert int(np.argmax(full.std_percent)) not in keep


def _orthonormal(rows: int, cols: int, seed: int) -> np.ndarray:
    return np.linalg.qr(np.random.default_rng(seed).normal(size=(rows, cols)))[0]


@pytest.mark.parametrize("ratio, independent", [(5e-8, True), (2e-9, False)])
def test_the_rank_tolerance_splits_near_dependent_columns(ratio, independent):
    """Column 4 is ``cos(a) (e0 + e1) / sqrt(2) + sin(a) e4`` over orthonormal ``e``:
    after scaling each column to unit norm its smallest singular value over the largest is
    ``tan(a / 2)`` exactly.  Set 5x above the rank tolerance (1e-8 of the largest) it is an
    independent column, 5x below a dependent one carrying ``cos(a) / sqrt(2)`` of columns
    0 and 1 (in the columns' units, which differ by 1e9 and never decide).  A column
    1e-12 of the largest norm is a zero column, one 1e-9 of it is not."""
    E = _orthonormal(300, 7, seed=8)
    a = 2.0 * np.arctan(ratio)
    units = np.array([1e3, 1.0, 1e-6, 5.0, 2e-2, 1e3 * 1e-12, 1e3 * 1e-9])
    cols = [E[:, 0], E[:, 1], E[:, 2], E[:, 3],
            np.cos(a) * (E[:, 0] + E[:, 1]) / np.sqrt(2) + np.sin(a) * E[:, 4], E[:, 5],
            E[:, 6]]
    W = np.column_stack(cols) * units
    names = ["p0", "p1", "p2", "p3", "p4", "tiny", "small"]
    bp = base_parameters(W, names)
    assert bp.zero_index.tolist() == [5]
    if independent:
        assert bp.base_index.tolist() == [0, 1, 2, 3, 4, 6] and bp.dependent_index.size == 0
        assert bp.names == ["p0", "p1", "p2", "p3", "p4", "small"]
        return
    assert bp.base_index.tolist() == [0, 1, 2, 3, 6] and bp.dependent_index.tolist() == [4]
    c = np.cos(a) / np.sqrt(2)
    assert bp.beta[:, 0] == pytest.approx([c * units[4] / units[0], c * units[4] / units[1],
                                           0.0, 0.0, 0.0], rel=1e-6, abs=1e-12)
    assert bp.names[1] == "p1 + 0.014142*p4" and bp.names[0] == "p0 + 1.4e-05*p4"
    assert bp.size == 5 and bp.M.shape == (5, 7)


def test_wls_weighs_each_joint_by_its_own_noise():
    """Two joints sharing three parameters, torque noise 0.01 on one and 1 on the other:
    Gautier's weights are each joint's OLS residual std (its rows less the parameters); the
    estimate is then exactly the least-squares solution of the rows divided by them, with
    its covariance, and far nearer the truth than OLS."""
    rng = np.random.default_rng(6)
    n, p = 400, 3
    W = rng.normal(size=(2 * n, p))
    row_joint = np.repeat([0, 1], n)
    truth = np.array([1.5, -0.7, 0.2])
    Y = W @ truth + rng.normal(size=2 * n) * np.array([0.01, 1.0])[row_joint]
    est = weighted_least_squares(W, Y, row_joint, 2)
    ols = np.linalg.lstsq(W, Y, rcond=None)[0]
    r = Y - W @ ols
    sig = np.sqrt([np.sum(r[row_joint == j] ** 2) / (n - p) for j in (0, 1)])
    assert est.joint_sigma == pytest.approx(sig, rel=1e-9)
    # joint 0's residual also holds the OLS error that joint 1's noise causes
    assert est.joint_sigma[0] < 0.03 and est.joint_sigma[1] == pytest.approx(1.0, rel=0.1)
    w = 1.0 / sig[row_joint]
    A, b = W * w[:, None], Y * w
    wls = np.linalg.lstsq(A, b, rcond=None)[0]
    assert est.phi == pytest.approx(wls, rel=1e-9, abs=1e-12)
    s2 = np.sum((b - A @ wls) ** 2) / (2 * n - p)
    assert est.residual_sigma == pytest.approx(np.sqrt(s2), rel=1e-9)
    assert est.std == pytest.approx(np.sqrt(s2 * np.diag(np.linalg.inv(A.T @ A))), rel=1e-9)
    assert np.linalg.norm(est.phi - truth) < 0.2 * np.linalg.norm(ols - truth)

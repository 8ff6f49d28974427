"""Physically consistent identification: the consistency check, the Maestro arm note
coordinates, and the three estimators on a simulated Panda whose true parameters are
hidden, identified from a poorly exciting recording and validated on a rich one."""
import numpy as np
import pinocchio as pin
import pytest

from figaroh_ros.errors import SolverError
from figaroh_ros.excitation.fourier import fourier_trajectory
from figaroh_ros.identification.base_parameters import base_parameters
from figaroh_ros.identification.estimation import ordinary_least_squares
from figaroh_ros.identification.parameters import (
    PIN_TO_STD, DriveOptions, parameter_layout, standard_parameters
)
from figaroh_ros.identification.physical.cholesky import cholesky_estimate
from figaroh_ros.identification.physical.convex import lmi_estimate, qp_estimate
from figaroh_ros.identification.physical.inertia import (
    check_link, check_parameters, cholesky_parameters, link_from_cholesky, pseudo_inertia
)
from figaroh_ros.identification.physical.problem import (
    nonnegative_drive_columns, prior_scales, whiten
)
from figaroh_ros.identification.regressor import standard_regressor
from figaroh_ros.sim.dynamics import measured_torques, perturbed_parameters


def _link(m, c, I_C):
    return pin.Inertia(m, np.asarray(c, float), np.asarray(I_C, float)) \
        .toDynamicParameters()[PIN_TO_STD]


def test_consistency_check_names_each_violation():
    good = _link(2.0, [0.1, 0.0, 0.05], np.diag([0.02, 0.03, 0.04]))
    assert check_link(good).ok
    assert np.linalg.eigvalsh(pseudo_inertia(good))[0] > 0
    neg = good.copy(); neg[0] = -1.0
    assert not check_link(neg).ok and "mass" in check_link(neg).why
    tri = _link(2.0, [0.1, 0.0, 0.05], np.diag([0.01, 0.01, 0.05]))    # 0.01 + 0.01 < 0.05
    assert not check_link(tri).ok and "triangle" in check_link(tri).why
    npd = _link(2.0, [0.0, 0.0, 0.0], np.diag([0.02, 0.03, 0.04]))
    npd[4] -= 0.05                                                   # Ixx < 0 about the CoM
    assert not check_link(npd).ok and "positive definite" in check_link(npd).why


def test_cholesky_coordinates_round_trip_with_exact_jacobian():
    rng = np.random.default_rng(0)
    for _ in range(5):
        m, c = rng.uniform(0.5, 5), rng.uniform(-0.2, 0.2, 3)
        R = pin.exp3(rng.normal(size=3))
        p = rng.uniform(0.01, 0.1, 3)                 # second moments of a box-like body
        I_C = R @ np.diag([p[1] + p[2], p[0] + p[2], p[0] + p[1]]) @ R.T
        pi = _link(m, c, I_C)
        assert check_link(pi).ok
        psi = cholesky_parameters(pi)
        back, D = link_from_cholesky(psi)
        assert np.allclose(back, pi, atol=1e-12)
        for k in range(10):
            e = np.zeros(10); e[k] = 1e-6
            fd = (link_from_cholesky(psi + e)[0] - link_from_cholesky(psi - e)[0]) / 2e-6
            assert np.allclose(D[:, k], fd, atol=1e-6 * max(1, np.abs(fd).max()))
        # any coordinates give a consistent link
        assert check_link(link_from_cholesky(rng.normal(size=10))[0]).ok


@pytest.fixture(scope="module")
def poorly_excited(panda):
    """Hidden truth: the URDF inertias perturbed by up to 20 %; training data: a 4 s,
    two-harmonic motion at 10 % of the joint ranges (a poor excitation); validation: a
    20 s rich motion.  Noise: 2 % of each joint's effort limit."""
    drive = DriveOptions(rotor_inertia=False, torque_offset=False)
    layout = parameter_layout(panda, drive)
    phi_r = standard_parameters(panda, layout)
    phi_t = perturbed_parameters(panda, layout, seed=3)
    assert all(c.ok for c in check_parameters(phi_t, layout))
    noise = 0.02 * np.abs(panda.effort_limits())
    poor = fourier_trajectory(panda, 4.0, 100, harmonics=2, amplitude=0.1, seed=1)
    rich = fourier_trajectory(panda, 20.0, 100, harmonics=5, amplitude=0.6, seed=7)

    def stack(traj, seed):
        W = standard_regressor(panda, layout, drive, traj.q, traj.dq, traj.ddq)
        return W, measured_torques(panda, layout, drive, phi_t, traj, noise, seed).T.ravel()
    W, Y = stack(poor, 2)
    Wv, Yv = stack(rich, 5)
    n = panda.n_joints

    def rms(phi):           # held-out RMS error in units of the noise
        return float(np.sqrt(np.mean(((Wv @ phi - Yv).reshape(n, -1) / noise[:, None]) ** 2)))
    bp = base_parameters(Wv, layout.names)
    ols = ordinary_least_squares(bp.base_regressor(W), Y)
    ols_rms = float(np.sqrt(np.mean(((bp.base_regressor(Wv) @ ols.phi - Yv).reshape(n, -1)
                                     / noise[:, None]) ** 2)))
    data = whiten(W, Y, np.repeat(noise, poor.q.shape[0]))
    args = (data, layout, phi_r, prior_scales(phi_r, layout),
            nonnegative_drive_columns(layout, drive.coupled_convention))
    return dict(layout=layout, phi_r=phi_r, phi_t=phi_t, rms=rms, ols_rms=ols_rms,
                floor=rms(phi_t), args=args)


@pytest.mark.parametrize("method", ["lmi", "qp", "cholesky"])
def test_consistent_estimate_beats_least_squares_on_poor_data(poorly_excited, method):
    P = poorly_excited
    est = {"lmi": lmi_estimate, "qp": qp_estimate, "cholesky": cholesky_estimate}[method](
        *P["args"])
    assert est.consistent, [c.why for c in est.checks if not c.ok]
    assert len(est.checks) == len(P["layout"].inertial_cols)
    held_out = P["rms"](est.phi)
    # least squares on the base parameters extrapolates badly from this recording
    assert P["ols_rms"] > 1.3 * P["floor"]
    assert held_out < 0.8 * P["ols_rms"], (held_out, P["ols_rms"])
    assert held_out < 1.1 * P["floor"], (held_out, P["floor"])
    assert held_out < P["rms"](P["phi_r"])        # better than the nominal model
    # friction is non-negative
    nn = P["args"][4]
    assert np.all(est.phi[nn] >= -1e-9)


def test_qp_total_mass_and_infeasible_bounds(poorly_excited):
    P = poorly_excited
    layout = P["layout"]
    masses = [P["phi_t"][c[0]] for c in layout.inertial_cols.values()]
    est = qp_estimate(*P["args"], total_mass=float(np.sum(masses)))
    got = sum(est.phi[c[0]] for c in layout.inertial_cols.values())
    assert got == pytest.approx(np.sum(masses), rel=1e-6)
    assert est.consistent
    # a total mass below what the mass bounds allow is reported, not returned
    with pytest.raises(SolverError, match="QP"):
        qp_estimate(*P["args"], total_mass=0.01 * float(np.sum(masses)))

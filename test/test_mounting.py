"""Mounting-generalized base parameters (Tröbinger et al.): the 2-DOF arm's GBS/VBS table and
torque validation gap, the Franka's 59 vs 57 base parameters, and the gravity direction
identified as a parameter on a tilted Panda."""
import os

import numpy as np
import pytest

from figaroh_ros.excitation.fourier import fourier_trajectory
from figaroh_ros.identification.mounting import (
    generalized_base_parameters, gravity_vector, identify_mounting, split_regressor
)
from figaroh_ros.identification.parameters import DriveOptions, parameter_layout
from figaroh_ros.model.robot import load_urdf_model
from figaroh_ros.sim.dynamics import perturbed_parameters

HERE = os.path.dirname(os.path.abspath(__file__))
RIGID = DriveOptions(viscous_friction=False, coulomb_friction=False, rotor_inertia=False,
                     torque_offset=False)
H_BAM, V_BAM = gravity_vector(np.pi / 2, 0.0), gravity_vector(np.pi, 0.0)

# Tröbinger et al. Table II (our names: first moments m{x,y,z}, inertias about the joint origin)
TABLE_II = {"Izz1 + Iyy2": 0.32, "mx1": 0.8, "my1 + mz2": 1.1, "Ixx2 - Iyy2": 1.59,
            "Ixy2": 0.21, "Ixz2": -0.03, "Iyz2": 0.21, "Izz2": 1.66, "mx2": 0.3,
            "my2": -2.1}


@pytest.fixture(scope="module")
def two_dof():
    robot = load_urdf_model(os.path.join(HERE, "data", "two_dof.urdf"))
    layout = parameter_layout(robot, RIGID)
    # standard values whose base combinations are the table's
    std = {"m1": 1.0, "Izz1": 0.22, "mx1": 0.8, "my1": 0.6, "m2": 10.0, "Iyy2": 0.1,
           "Ixx2": 1.69, "mz2": 0.5, "Ixy2": 0.21, "Ixz2": -0.03, "Iyz2": 0.21,
           "Izz2": 1.66, "mx2": 0.3, "my2": -2.1}
    phi = np.zeros(layout.size)
    for k, v in std.items():
        phi[layout.index(k)] = v
    return robot, layout, phi


def test_two_dof_generalized_and_vertical_sets(two_dof):
    robot, layout, _ = two_dof
    mb = generalized_base_parameters(robot, layout, RIGID)
    assert sorted(mb.generalized.names) == sorted(TABLE_II)
    assert len(mb.vertical.names) == 8
    assert sorted(mb.extra) == ["mx1", "my1 + mz2"]        # l_x1 and l_y1 + l_z2


def test_two_dof_table_and_validation_gap(two_dof):
    """Identify on each mount (noise-free, as the seed), then predict a random motion on
    both: the H-BAM set models both mounts; the V-BAM set misses joint 1's gravity torque
    on the horizontal mount."""
    robot, layout, phi = two_dof
    mb = generalized_base_parameters(robot, layout, RIGID)
    train = fourier_trajectory(robot, 10.0, 100, harmonics=5, amplitude=0.8, seed=1)
    test = fourier_trajectory(robot, 10.0, 100, harmonics=5, amplitude=0.8, seed=2)
    S = split_regressor(robot, layout, RIGID, train.q, train.dq, train.ddq)
    T = split_regressor(robot, layout, RIGID, test.q, test.dq, test.ddq)
    est = {}
    for mount, g, bp in (("H", H_BAM, mb.generalized), ("V", V_BAM, mb.vertical)):
        W = S.at(g)
        est[mount] = (bp, np.linalg.lstsq(W[:, bp.base_index], W @ phi, rcond=None)[0])
    bp, val = est["H"]
    for name, v in zip(bp.names, val):
        assert v == pytest.approx(TABLE_II[name], abs=1e-9), name
    bpv, valv = est["V"]
    for name, v in zip(bpv.names, valv):
        assert v == pytest.approx(TABLE_II[name], abs=1e-9), name
    n, N = 2, test.q.shape[0]
    rms = {}
    for mount, g in (("H", H_BAM), ("V", V_BAM)):
        W = T.at(g)
        tau = (W @ phi).reshape(n, N)
        for model, (b, v) in est.items():
            err = (W[:, b.base_index] @ v).reshape(n, N) - tau
            rms[model, mount] = np.sqrt(np.mean(err ** 2, axis=1))
    assert np.all(rms["H", "H"] < 1e-9) and np.all(rms["H", "V"] < 1e-9)
    assert np.all(rms["V", "V"] < 1e-9)
    assert rms["V", "H"][0] > 1.0 and rms["V", "H"][1] < 1e-9     # joint 1 only (Eq. 8)
    # the gap is exactly Tröbinger et al. Eq. 8's term: g sin(rho) [sin q1, cos q1] . (b58, b59)
    # (phi = 0), b58 = l_x1, b59 = l_y1 + l_z2, up to the sign convention of a_g
    W = T.at(H_BAM)
    b, v = est["V"]
    err = ((W[:, b.base_index] @ v) - W @ phi).reshape(n, N)[0]
    q1 = test.q[:, 0]
    eq8 = 9.81 * (np.sin(q1) * TABLE_II["mx1"] + np.cos(q1) * TABLE_II["my1 + mz2"])
    assert np.allclose(np.abs(err), np.abs(eq8), atol=1e-9)
    print(f"V-BAM parameters on the H-BAM arm: joint 1 RMS {rms['V', 'H'][0]:.2f} N.m "
          "(Tröbinger et al. Fig. 4: 10.9 N.m on its own random motion)")


def test_franka_59_versus_57(panda):
    drive = DriveOptions(rotor_inertia=False, torque_offset=False, coulomb_model="tanh")
    mb = generalized_base_parameters(panda, parameter_layout(panda, drive), drive)
    assert len(mb.generalized.names) == 59 and len(mb.vertical.names) == 57
    assert sorted(mb.extra) == ["mx1", "my1 + mz2"]


def test_gravity_direction_identified_on_a_tilted_panda(panda):
    drive = DriveOptions(rotor_inertia=False, torque_offset=False, coulomb_model="tanh")
    layout = parameter_layout(panda, drive)
    mb = generalized_base_parameters(panda, layout, drive)
    phi = perturbed_parameters(panda, layout, seed=5)
    rho, az = 2.1, 0.7                                  # hidden wall-ish mount
    traj = fourier_trajectory(panda, 20.0, 50, harmonics=5, amplitude=0.6, seed=6)
    S = split_regressor(panda, layout, drive, traj.q, traj.dq, traj.ddq)
    noise = 0.05
    rng = np.random.default_rng(7)
    tau = S.at(gravity_vector(rho, az)) @ phi + noise * rng.normal(size=S.W0.shape[0])
    est = identify_mounting(S, mb.generalized, tau)
    assert est.rho == pytest.approx(rho, abs=5e-3) and est.phi == pytest.approx(az, abs=5e-3)
    assert est.rms == pytest.approx(noise, rel=0.1)
    # the same parameters model the robot upright
    val = fourier_trajectory(panda, 10.0, 50, harmonics=5, amplitude=0.6, seed=8)
    T = split_regressor(panda, layout, drive, val.q, val.dq, val.ddq)
    W = T.at(V_BAM)
    idx = mb.generalized.base_index
    err = W[:, idx] @ est.phi_b - W @ phi
    # as good as if the mount had been known (noise through the estimate only)
    Wk = S.at(gravity_vector(rho, az))[:, idx]
    known = np.linalg.lstsq(Wk, tau, rcond=None)[0]
    err_known = W[:, idx] @ known - W @ phi
    assert np.sqrt(np.mean(err ** 2)) < noise
    assert np.sqrt(np.mean(err ** 2)) < 1.1 * np.sqrt(np.mean(err_known ** 2))

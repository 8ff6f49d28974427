"""The observation matrix reproduces inverse dynamics: W(q, dq, ddq) phi == RNEA + drive terms."""
import os
import signal

import numpy as np
import pinocchio as pin
import pytest
from conftest import TX40_DIR

from figaroh_ros.identification import regressor, sample_split
from figaroh_ros.identification.parameters import (
    DriveOptions, parameter_layout, standard_parameters
)
from figaroh_ros.identification.regressor import (
    joint_torques_from_parameters, standard_regressor
)
from figaroh_ros.model.robot import Transmission, load_urdf_model
from figaroh_ros.sim.dynamics import perturbed_parameters


def _random_states(robot, rng, N=40):
    n = robot.n_joints
    return rng.uniform(-2, 2, (N, n)), rng.uniform(-3, 3, (N, n)), rng.uniform(-10, 10, (N, n))


def _rnea_plus_drive(robot, layout, phi, q, dq, ddq, drive):
    """Independent reference: pinocchio RNEA on the perturbed model + friction written out."""
    model = robot.model.copy()
    for jid, cols in layout.inertial_cols.items():
        v = phi[cols][[0, 1, 2, 3, 4, 5, 7, 6, 8, 9]]  # standard -> pinocchio order
        model.inertias[jid] = pin.Inertia.FromDynamicParameters(v)
    data = model.createData()
    tau = np.zeros_like(q)
    for i in range(q.shape[0]):
        Q = pin.neutral(model); Q[robot.idx_q] = q[i]
        V = np.zeros(model.nv); V[robot.idx_v] = dq[i]
        A = np.zeros(model.nv); A[robot.idx_v] = ddq[i]
        tau[i] = pin.rnea(model, data, Q, V, A)[robot.idx_v]
    for j, jid in enumerate(robot.joint_ids):
        g = lambda name: phi[layout.index(f"{name}{jid}")] if f"{name}{jid}" in layout.names else 0.0
        fs = np.tanh(dq[:, j] / drive.coulomb_velocity) if drive.coulomb_model == "tanh" \
            else np.sign(dq[:, j])
        tau[:, j] += g("Ia") * ddq[:, j] + g("fv") * dq[:, j] + g("fs") * fs + g("off")
    return tau


@pytest.mark.parametrize("name", ["ur10", "panda"])
@pytest.mark.parametrize("coulomb", ["sign", "tanh"])
def test_regressor_matches_rnea(name, coulomb, request, rng):
    robot = request.getfixturevalue(name)
    drive = DriveOptions(coulomb_model=coulomb)
    layout = parameter_layout(robot, drive)
    phi = perturbed_parameters(robot, layout, seed=7)
    q, dq, ddq = _random_states(robot, rng)
    W = standard_regressor(robot, layout, drive, q, dq, ddq)
    tau_ref = _rnea_plus_drive(robot, layout, phi, q, dq, ddq, drive)
    N = q.shape[0]
    tau_W = (W @ phi).reshape(robot.n_joints, N).T
    assert np.max(np.abs(tau_W - tau_ref)) < 1e-9 * max(1.0, np.abs(tau_ref).max())
    # and the simulator path agrees with both
    tau_sim = joint_torques_from_parameters(robot, layout, drive, phi, q, dq, ddq)
    assert np.allclose(tau_sim, tau_ref, atol=1e-9, rtol=0)


def _tx40(convention):
    r = np.array([32, 32, 45, -48, 45, 32.0]); K = np.eye(6); K[5, 4] = 1.0
    robot = load_urdf_model(f"{TX40_DIR}/tx40_mdh_modified.urdf",
                            [f"joint_{i}" for i in range(1, 7)], transmission=Transmission(r, K))
    drive = DriveOptions(coupled_convention=convention)
    return robot, drive, parameter_layout(robot, drive)


def test_coupled_wrist_motor_convention(rng):
    """Motor 6 turns with q5 + q6: its inertia and friction act on that coordinate and
    reach both joints through K^T (Nguyen et al. 2023 Eq. 3)."""
    robot, drive, layout = _tx40("motor")
    assert "Ia6" not in layout.names and {"Iam6", "fvm6", "fsm6"} <= set(layout.names)
    phi = perturbed_parameters(robot, layout, seed=3)
    q, dq, ddq = _random_states(robot, rng)
    W = standard_regressor(robot, layout, drive, q, dq, ddq)
    tau = _rnea_plus_drive(robot, layout, phi, q, dq, ddq, drive)
    vm, am = dq[:, 4] + dq[:, 5], ddq[:, 4] + ddq[:, 5]
    motor = (phi[layout.index("Iam6")] * am + phi[layout.index("fvm6")] * vm
             + phi[layout.index("fsm6")] * np.sign(vm))
    tau[:, 4] += motor; tau[:, 5] += motor
    assert np.allclose((W @ phi).reshape(6, -1).T, tau, atol=1e-9, rtol=0)


def test_lumped_convention_is_a_reparametrisation(rng):
    """Gautier's TX40 convention lumps the diagonal motor-6 terms into Ia5, fv5, fv6."""
    rm, drive_m, lay_m = _tx40("motor")
    rl, drive_l, lay_l = _tx40("lumped")
    assert lay_m.names == lay_l.names
    phi = perturbed_parameters(rm, lay_m, seed=5)
    phi_l = phi.copy()
    for joint_param, motor_param in (("Ia5", "Iam6"), ("fv5", "fvm6"), ("fv6", "fvm6")):
        phi_l[lay_l.index(joint_param)] += phi[lay_m.index(motor_param)]
    q, dq, ddq = _random_states(rm, rng)
    Wm = standard_regressor(rm, lay_m, drive_m, q, dq, ddq)
    Wl = standard_regressor(rl, lay_l, drive_l, q, dq, ddq)
    assert np.allclose(Wm @ phi, Wl @ phi_l, atol=1e-9, rtol=0)
    assert not np.allclose(Wm @ phi, Wl @ phi, atol=1e-6)


def test_transmission_round_trip(rng):
    r = np.array([32, 32, 45, -48, 45, 32.0]); K = np.eye(6); K[5, 4] = 1.0
    tr = Transmission(r, K)
    q = rng.normal(size=(5, 6))
    theta = (np.diag(r) @ K @ q.T).T
    assert np.allclose(tr.joint_positions(theta), q)
    assert np.allclose(tr.joint_positions(theta)[:, 5], theta[:, 5] / 32 - q[:, 4])
    tau_m = rng.normal(size=(5, 6))
    tau = tr.joint_torques(tau_m)
    assert np.allclose(tau[:, 4], 45 * tau_m[:, 4] + 32 * tau_m[:, 5])
    # power is conserved: tau . dq == tau_m . dtheta_m
    dq = rng.normal(size=(5, 6)); dth = (np.diag(r) @ K @ dq.T).T
    assert np.allclose(np.sum(tau * dq, 1), np.sum(tau_m * dth, 1))


def test_standard_parameters_from_urdf(ur10):
    layout = parameter_layout(ur10, DriveOptions())
    phi = standard_parameters(ur10, layout, {"fv1": 2.0})
    jid = ur10.joint_ids[1]
    I = ur10.model.inertias[jid]
    assert phi[layout.index(f"m{jid}")] == pytest.approx(I.mass)
    assert phi[layout.index(f"mz{jid}")] == pytest.approx(I.mass * I.lever[2])
    assert phi[layout.index("fv1")] == 2.0
    assert layout.names[:10] == ["m1", "mx1", "my1", "mz1", "Ixx1", "Ixy1", "Ixz1",
                                 "Iyy1", "Iyz1", "Izz1"]
    assert layout.names[10:14] == ["Ia1", "fv1", "fs1", "off1"]


def test_regressor_split_over_worker_processes_is_the_same_matrix(panda, rng, monkeypatch):
    """The samples shared out to forked workers, in chunks that straddle their ranges,
    give the matrix of one process to the last bit (coupled motor columns included)."""
    monkeypatch.setattr(sample_split, "MIN_SAMPLES", 40)
    monkeypatch.setattr(regressor, "CHUNK", 37)
    drive = DriveOptions(coulomb_model="tanh", viscous_per_direction=True)
    layout = parameter_layout(panda, drive)
    q, dq, ddq = _random_states(panda, rng, N=301)
    one = standard_regressor(panda, layout, drive, q, dq, ddq, workers=1)
    assert sample_split.worker_count(301, 3) == 3
    split = standard_regressor(panda, layout, drive, q, dq, ddq, workers=3)
    assert split.flags.f_contiguous and split.shape == one.shape
    assert np.max(np.abs(split - one)) <= 1e-10 * np.abs(one).max()
    assert np.count_nonzero(one[:, layout.inertial_cols[panda.joint_ids[-1]]]) > 0
    phi = perturbed_parameters(panda, layout, seed=11)
    tau = joint_torques_from_parameters(panda, layout, drive, phi, q, dq, ddq)
    assert np.allclose((split @ phi).reshape(7, -1).T, tau, atol=1e-9, rtol=0)


def test_a_failed_worker_range_is_computed_again_by_the_parent():
    parent = os.getpid()
    out = sample_split.mapped_zeros((90,), shared=True)

    def fill(i0, i1):
        if os.getpid() != parent:
            raise RuntimeError("worker failure")
        out[i0:i1] = np.arange(i0, i1) + 1.0
    sample_split.split_samples(90, 3, fill)
    assert np.array_equal(out, np.arange(90) + 1.0)

    def broken(i0, i1):
        raise ValueError(f"sample {i0} is bad")
    with pytest.raises(ValueError, match="sample 0 is bad"):
        sample_split.split_samples(90, 3, broken)


def test_a_killed_worker_range_is_computed_again_and_workers_are_reaped():
    """A worker says it is done through a pipe: one killed before that (no byte, the pipe
    closed) has its range computed by the parent; the workers that had said so are
    waited for at the next split, none is left behind."""
    parent = os.getpid()
    out = sample_split.mapped_zeros((90,), shared=True)

    def fill(i0, i1):
        if os.getpid() != parent and i0 >= 60:
            os.kill(os.getpid(), signal.SIGKILL)
        out[i0:i1] = np.arange(i0, i1) + 1.0
    sample_split.split_samples(90, 3, fill)
    assert np.array_equal(out, np.arange(90) + 1.0)
    first = list(sample_split._EXITING)
    sample_split.split_samples(90, 3, lambda i0, i1: None)
    for pid in first:
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)

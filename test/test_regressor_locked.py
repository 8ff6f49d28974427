"""The regressor computed on the model whose non-active joints are locked at rest
(``locked_joints.py``) is the full model's: pinocchio's joint torque regressor of the full
model, the active joints' rows, equals it; the torques are RNEA's; the same bits whatever
the workers."""
import os

import numpy as np
import pinocchio as pin
import pytest
from conftest import PANDA_JOINTS

from figaroh_ros.identification import regressor, sample_split
from figaroh_ros.identification.locked_joints import (
    locked_joints, moved_parameters, parameter_transform
)
from figaroh_ros.identification.parameters import PIN_TO_STD, DriveOptions, parameter_layout
from figaroh_ros.identification.regressor import (
    joint_torques_from_parameters, standard_regressor
)
from figaroh_ros.model.robot import example_robot_urdf, load_urdf_model
from figaroh_ros.sim.dynamics import perturbed_parameters

TIAGO_URDF = os.path.join(os.path.dirname(__file__), "..", "config", "urdf",
                          "tiago_48_schunk.urdf")
TIAGO_JOINTS = ["torso_lift_joint"] + [f"arm_{i}_joint" for i in range(1, 8)]


@pytest.fixture(scope="module")
def tiago():
    """TIAGo on a free-flyer: casters, wheels, suspensions, gripper and head passive."""
    return load_urdf_model(TIAGO_URDF, TIAGO_JOINTS, floating_base=True)


def _rest(robot, rng):
    """A random configuration within the limits, clipped to +-1.5 (the free-flyer's
    position and the continuous joints have no finite limits)."""
    m = robot.model
    lo, hi = (np.clip(x, -1.5, 1.5) for x in (m.lowerPositionLimit, m.upperPositionLimit))
    np.random.seed(int(rng.integers(2**31)))      # pinocchio draws from numpy's generator
    return pin.randomConfiguration(m, lo, hi)


def _states(robot, rng, N):
    n = robot.n_joints
    return rng.uniform(-1, 1, (N, n)), rng.uniform(-3, 3, (N, n)), rng.uniform(-10, 10, (N, n))


def _full_model_regressor(robot, layout, q, dq, ddq, q_rest):
    """Reference: pinocchio's joint torque regressor of the full model, active rows,
    columns in the standard order."""
    model, data = robot.model, robot.model.createData()
    Q = robot.full_configuration(q, q_rest)
    V, A = robot.full_velocity(dq), robot.full_velocity(ddq)
    (N, n), W = q.shape, np.zeros((q.size, layout.size))
    for i in range(N):
        Y = pin.computeJointTorqueRegressor(model, data, Q[i], V[i], A[i])[robot.idx_v]
        for jid, cols in layout.inertial_cols.items():
            W[np.ix_(np.arange(n) * N + i, cols)] = Y[:, 10 * (jid - 1):10 * jid][:, PIN_TO_STD]
    return W


def test_parameter_transform_is_pinocchio_se3_action():
    for seed in range(5):
        np.random.seed(seed)
        M, inertia = pin.SE3.Random(), pin.Inertia.Random()
        pi = inertia.toDynamicParameters()
        assert np.allclose(parameter_transform(M) @ pi, moved_parameters(pi, M),
                           rtol=0, atol=1e-12)
        assert np.allclose(moved_parameters(pi, M), inertia.se3Action(M).toDynamicParameters(),
                           rtol=0, atol=1e-12)


@pytest.mark.parametrize("name", ["panda", "tiago"])
def test_full_model_regressor_is_the_reduced_one(name, request, rng, monkeypatch):
    robot = request.getfixturevalue(name)
    q_rest = _rest(robot, rng)
    drive = DriveOptions()
    layout = parameter_layout(robot, drive)
    q, dq, ddq = _states(robot, rng, 60)
    used = []
    computed = regressor.sample_regressors
    monkeypatch.setattr(regressor, "sample_regressors",
                        lambda r, buf: used.append(r.model.nv) or computed(r, buf))
    W = standard_regressor(robot, layout, drive, q, dq, ddq, q_rest, workers=1)
    assert used == [robot.n_joints] and robot.model.nv > robot.n_joints
    assert locked_joints(robot, q_rest).robot.model.nv == robot.n_joints
    ref = _full_model_regressor(robot, layout, q, dq, ddq, q_rest)
    inertial = np.concatenate(list(layout.inertial_cols.values()))
    err = np.abs(W[:, inertial] - ref[:, inertial]).max()
    assert err <= 1e-9 * np.abs(ref).max(), err


@pytest.mark.parametrize("name", ["panda", "tiago"])
def test_torques_are_rnea_at_a_rest_position(name, request, rng):
    robot = request.getfixturevalue(name)
    q_rest = _rest(robot, rng)
    drive = DriveOptions(coulomb_model="tanh")
    layout = parameter_layout(robot, drive)
    phi = perturbed_parameters(robot, layout, seed=5)
    q, dq, ddq = _states(robot, rng, 40)
    W = standard_regressor(robot, layout, drive, q, dq, ddq, q_rest)
    tau = joint_torques_from_parameters(robot, layout, drive, phi, q, dq, ddq, q_rest)
    tau_W = (W @ phi).reshape(robot.n_joints, len(q)).T
    assert np.max(np.abs(tau_W - tau)) < 1e-9 * max(1.0, np.abs(tau).max())


def test_same_bits_whatever_the_workers_with_locked_fingers(panda, rng, monkeypatch):
    """Chunks of 173 samples straddling the workers' ranges: the bodies moved to their
    host's frame come out the same to the last bit."""
    monkeypatch.setattr(sample_split, "MIN_SAMPLES", 100)
    monkeypatch.setattr(regressor, "CHUNK", 173)
    drive = DriveOptions()
    layout = parameter_layout(panda, drive)
    q, dq, ddq = _states(panda, rng, 1500)
    q_rest = _rest(panda, rng)
    W = {w: standard_regressor(panda, layout, drive, q, dq, ddq, q_rest, workers=w)
         for w in (1, 2, 3)}
    for w in (2, 3):
        assert np.array_equal(W[w], W[1]), w


def test_gravity_follows_the_model_and_the_reduction_is_kept(panda, rng):
    """The reduced model is built once per rest position; the model's gravity (changed
    by ``mounting.py``) is the one used."""
    q_rest = _rest(panda, rng)
    assert locked_joints(panda, q_rest) is locked_joints(panda, q_rest.copy())
    assert locked_joints(panda) is not locked_joints(panda, q_rest)
    drive = DriveOptions()
    layout = parameter_layout(panda, drive)
    q, dq, ddq = _states(panda, rng, 20)
    saved = panda.model.gravity.linear.copy()
    try:
        panda.model.gravity.linear = np.array([3.0, -1.0, -9.0])
        W = standard_regressor(panda, layout, drive, q, dq, ddq, q_rest)
        ref = _full_model_regressor(panda, layout, q, dq, ddq, q_rest)
    finally:
        panda.model.gravity.linear = saved
    inertial = np.concatenate(list(layout.inertial_cols.values()))
    assert np.abs(W[:, inertial] - ref[:, inertial]).max() <= 1e-9 * np.abs(ref).max()


def test_every_joint_active_keeps_the_full_model(ur10):
    assert locked_joints(ur10) is None
    hand = load_urdf_model(example_robot_urdf("panda_description/urdf/panda.urdf"),
                           PANDA_JOINTS + ["panda_finger_joint1", "panda_finger_joint2"])
    assert locked_joints(hand) is None

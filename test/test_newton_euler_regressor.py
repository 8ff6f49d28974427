"""The batched Newton-Euler regressor is pinocchio's joint torque regressor, sample by
sample, on the shipped arms, on humanoid trees and on random trees of every one-axis
joint; its bits do not depend on the block a sample is computed in; a model with any
other joint goes to pinocchio, sample by sample."""
import numpy as np
import pinocchio as pin
import pytest
from conftest import UR10_JOINTS
from hypothesis import given, settings
from hypothesis import strategies as st

from figaroh_ros.identification import regressor
from figaroh_ros.identification.locked_joints import locked_joints
from figaroh_ros.identification.newton_euler_regressor import (
    NewtonEulerRegressor, supported, trigonometry
)
from figaroh_ros.identification.parameters import DriveOptions, parameter_layout
from figaroh_ros.identification.regressor import (
    joint_torques_from_parameters, standard_regressor
)
from figaroh_ros.model.robot import example_robot_urdf, load_urdf_model
from figaroh_ros.sim.dynamics import perturbed_parameters

JOINT_TYPES = ["RX", "RY", "RZ", "RUBX", "RUBY", "RUBZ", "PX", "PY", "PZ",
               "RevoluteUnaligned", "PrismaticUnaligned"]


def batched(model, q, dq, ddq, blocks=None):
    """``(pairs, Y)``: the regressor's blocks (10, pairs, N) of the samples (N x nq, N x nv),
    computed over the blocks of samples ``blocks`` (bounds; default: one block)."""
    ne = NewtonEulerRegressor(model)
    N = len(q)
    trig = trigonometry(model, q)
    Y = np.full((10, len(ne.pairs.body), N), np.nan)
    bounds = [0, N] if blocks is None else blocks
    for c0, c1 in zip(bounds[:-1], bounds[1:]):
        ne(tuple(x[:, c0:c1] for x in trig), dq[c0:c1].T, ddq[c0:c1].T, Y[:, :, c0:c1])
    return ne.pairs, Y


def pinocchio_error(model, q, dq, ddq) -> tuple[float, float]:
    """Largest difference between the batched blocks and pinocchio's regressor (zero
    elsewhere), and the largest entry of pinocchio's."""
    pairs, Y = batched(model, q, dq, ddq)
    data, err, scale = model.createData(), 0.0, 0.0
    for s in range(len(q)):
        ref = pin.computeJointTorqueRegressor(model, data, q[s], dq[s], ddq[s]).reshape(
            model.nv, -1)    # a 1 x n matrix comes back 1-D
        ours = np.zeros_like(ref)
        for p, (j, i) in enumerate(zip(pairs.joint, pairs.body)):
            ours[model.joints[int(j) + 1].idx_v, 10 * i:10 * i + 10] = Y[:, p, s]
        err, scale = max(err, np.abs(ours - ref).max()), max(scale, np.abs(ref).max())
    return err, scale


def states(model, rng, N):
    """Random configurations (a continuous joint's ``(cos, sin)`` of a random angle),
    velocities and accelerations."""
    q = rng.uniform(-3, 3, (N, model.nq))
    for i in range(1, model.njoints):
        if model.joints[i].nq == 2:
            k = model.joints[i].idx_q
            q[:, k], q[:, k + 1] = np.cos(q[:, k]), np.sin(q[:, k])
    return q, rng.uniform(-4, 4, (N, model.nv)), rng.uniform(-20, 20, (N, model.nv))


@pytest.mark.parametrize("urdf, kinds", [
    ("ur_description/urdf/ur10_robot.urdf", {"RY", "RZ"}),
    ("panda_description/urdf/panda.urdf", {"RZ", "PY", "PrismaticUnaligned"}),
    ("talos_data/robots/talos_reduced.urdf", {"RX", "RY", "RZ"}),
    ("tiago_description/robots/tiago.urdf", {"RZ", "PZ", "RUBZ"}),     # wheels: continuous
])
def test_equals_pinocchio_on_whole_robots(urdf, kinds, rng):
    model = pin.buildModelFromUrdf(example_robot_urdf(urdf))
    assert {model.joints[i].shortname()[10:] for i in range(1, model.njoints)} == kinds
    err, scale = pinocchio_error(model, *states(model, rng, 40))
    assert scale > 10 and err <= 1e-12 * scale, (err, scale)


def test_equals_pinocchio_on_the_locked_panda(panda, rng):
    model = locked_joints(panda).robot.model
    assert model.nv == 7
    err, scale = pinocchio_error(model, *states(model, rng, 200))
    assert err <= 1e-12 * scale, (err, scale)


@st.composite
def trees(draw):
    """A random tree of one-axis joints, placements, inertias and gravity."""
    seed = draw(st.integers(0, 2**32 - 1))
    kinds = draw(st.lists(st.sampled_from(JOINT_TYPES), min_size=1, max_size=7))
    parents = [draw(st.integers(0, k)) for k in range(len(kinds))]
    rng = np.random.default_rng(seed)
    model = pin.Model()
    for k, (kind, parent) in enumerate(zip(kinds, parents)):
        if kind.endswith("Unaligned"):
            axis = rng.normal(size=3)
            joint = getattr(pin, f"JointModel{kind}")(*(axis / np.linalg.norm(axis)))
        else:
            joint = getattr(pin, f"JointModel{kind}")()
        placement = pin.SE3(pin.exp3(rng.normal(size=3)), rng.normal(size=3))
        jid = model.addJoint(parent, joint, placement, f"j{k}")
        inertia = pin.Inertia(rng.uniform(0.1, 5), rng.normal(size=3) * 0.3,
                              np.diag(rng.uniform(0.01, 0.5, 3)))
        model.appendBodyToJoint(jid, inertia, pin.SE3(pin.exp3(rng.normal(size=3)),
                                                      rng.normal(size=3) * 0.2))
    model.gravity = pin.Motion(np.r_[rng.normal(size=3) * 5, np.zeros(3)])
    return model, rng


@settings(max_examples=60, deadline=None)
@given(trees())
def test_equals_pinocchio_on_random_trees(tree):
    model, rng = tree
    assert supported(model)
    err, scale = pinocchio_error(model, *states(model, rng, 5))
    assert err <= 1e-11 * max(scale, 1.0), (err, scale)


@settings(max_examples=30, deadline=None)
@given(trees(), st.lists(st.integers(1, 62), min_size=1, max_size=6))
def test_a_sample_has_the_same_bits_in_any_block(tree, cuts):
    """The workers compute their ranges in blocks that start anywhere: a sample's
    columns must not depend on its neighbours (no BLAS call, no reduction)."""
    model, rng = tree
    q, dq, ddq = states(model, rng, 63)
    _, whole = batched(model, q, dq, ddq)
    _, pieces = batched(model, q, dq, ddq, [0] + sorted(set(cuts)) + [63])
    assert np.array_equal(whole, pieces)


def test_other_joints_are_not_supported():
    for joint in (pin.JointModelFreeFlyer(), pin.JointModelSpherical(),
                  pin.JointModelPlanar(), pin.JointModelTranslation(), pin.JointModelHX()):
        model = pin.Model()
        model.addJoint(0, pin.JointModelRZ(), pin.SE3.Identity(), "first")
        model.addJoint(1, joint, pin.SE3.Identity(), "other")
        assert not supported(model), joint.shortname()
        with pytest.raises(ValueError, match="revolute, continuous or prismatic"):
            NewtonEulerRegressor(model)
    assert not supported(pin.Model())
    model = pin.Model()
    model.addJoint(0, pin.JointModelRevoluteUnboundedUnaligned(), pin.SE3.Identity(), "u")
    assert not supported(model)           # its axis is not bound in Python: pinocchio's


def _continuous_ur10(tmp_path):
    """UR10 whose wrist 3 turns without limits (a continuous joint: cos and sin)."""
    text = open(example_robot_urdf("ur_description/urdf/ur10_robot.urdf")).read()
    start = text.index('<joint name="wrist_3_joint" type="revolute">')
    text = text[:start] + text[start:].replace('type="revolute"', 'type="continuous"', 1)
    path = tmp_path / "ur10_continuous.urdf"
    path.write_text(text)
    return load_urdf_model(str(path), UR10_JOINTS)


@pytest.mark.parametrize("name", ["ur10", "panda", "continuous"])
def test_long_recordings_are_rnea(name, request, rng, tmp_path):
    """From ``BATCH_MIN`` samples the batched regressor builds ``W`` (the Panda's fingers
    locked; a UR10 whose wrist is continuous, its ``(cos, sin)`` pair configured): ``W phi``
    is pinocchio's RNEA."""
    robot = _continuous_ur10(tmp_path) if name == "continuous" \
        else request.getfixturevalue(name)
    drive = DriveOptions()
    layout = parameter_layout(robot, drive)
    N = regressor.BATCH_MIN + 37
    n = robot.n_joints
    q, dq, ddq = rng.uniform(-2, 2, (N, n)), rng.uniform(-3, 3, (N, n)), \
        rng.uniform(-10, 10, (N, n))
    locked = locked_joints(robot)
    source = robot if locked is None else locked.robot
    trig = regressor.batched_trigonometry(source, q)
    assert trig is not None
    phi = perturbed_parameters(robot, layout, seed=7)
    W = standard_regressor(robot, layout, drive, q, dq, ddq, workers=1)
    tau = joint_torques_from_parameters(robot, layout, drive, phi, q, dq, ddq)
    tau_W = (W @ phi).reshape(n, N).T
    assert np.abs(tau_W - tau).max() <= 1e-10 * np.abs(tau).max()


def test_short_recordings_stay_with_pinocchio(panda):
    q = np.zeros((regressor.BATCH_MIN - 1, 7))
    assert regressor.batched_trigonometry(locked_joints(panda).robot, q) is None
    assert regressor.batched_trigonometry(locked_joints(panda).robot,
                                          np.zeros((regressor.BATCH_MIN, 7))) is not None


@settings(max_examples=25, deadline=None)
@given(st.floats(1e-6, 1e4), st.floats(1e-6, 1e4), st.floats(1e-6, 1e5),
       st.integers(0, 2**32 - 1))
def test_equals_pinocchio_at_any_scale_of_motion(angle, speed, acceleration, seed):
    """Angles of many turns, speeds and accelerations from creeping to absurd: the blocks
    stay pinocchio's to rounding (relative to the largest entry)."""
    model = pin.buildModelFromUrdf(example_robot_urdf("ur_description/urdf/ur10_robot.urdf"))
    rng = np.random.default_rng(seed)
    q, dq, ddq = (rng.uniform(-1, 1, (6, model.nv)) * s
                  for s in (angle, speed, acceleration))
    err, scale = pinocchio_error(model, q, dq, ddq)
    assert err <= 1e-11 * max(scale, 1.0), (err, scale)

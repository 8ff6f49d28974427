"""The batched kinematic model (all postures at once, cached joint motions, the last chain
kept, a fit done once) against plain per-posture pinocchio, and the TIAGo calibration
numbers unchanged by it.

Reference: a copy of the model whose joint origins carry the placement variations,
``pin.forwardKinematics`` posture by posture, and central finite differences of the
residuals for the regressor."""
import os

import numpy as np
import pinocchio as pin
import pytest
from conftest import ROOT

from figaroh_ros.calibration.kinematic_model import (
    KinematicModel, Measurement, chain_limits
)
from figaroh_ros.calibration.solve import PostureSet, estimate, fit_parameters
from figaroh_ros.config.calibration import load_calibration_config
from figaroh_ros.tasks.calibrate import calibrate_config

DATA = os.environ.get("FIGAROH_DATA", os.path.join(ROOT, "..", "shared", "data"))
TIAGO = os.path.join(ROOT, "config", "urdf", "tiago_48_schunk.urdf")


def odd_arm() -> pin.Model:
    """Continuous, prismatic, tilted revolute and helical joints, with inertias."""
    m = pin.Model()
    joints = [pin.JointModelRUBX(), pin.JointModelPY(),
              pin.JointModelRevoluteUnaligned(np.array([0.3, -0.5, 0.8]) / np.sqrt(0.98)),
              pin.JointModelHZ(0.05), pin.JointModelRZ()]
    parent = 0
    for k, jm in enumerate(joints):
        M = pin.SE3(pin.rpy.rpyToMatrix(0.1 * k, -0.2, 0.3), np.array([0.1, 0.05 * k, 0.3]))
        parent = m.addJoint(parent, jm, M, f"j{k}")
        m.appendBodyToJoint(parent, pin.Inertia.Random(), pin.SE3.Identity())
    m.addFrame(pin.Frame("tool", parent, 0, pin.SE3(np.eye(3), np.array([0.0, 0.0, 0.1])),
                         pin.FrameType.OP_FRAME))
    m.addFrame(pin.Frame("start", 1, 0, pin.SE3(pin.rpy.rpyToMatrix(0.2, 0.1, 0.0),
                                                np.array([0.02, 0.0, 0.05])),
                         pin.FrameType.OP_FRAME))
    return m


def reference_poses(km: KinematicModel, Q: np.ndarray, x: np.ndarray) -> list[pin.SE3]:
    """Measurement-frame pose of the tool frame, one pinocchio call per posture."""
    work = km.model.copy()
    for j, T in km.joint_placements(x).items():
        if km.level == "full":
            work.jointPlacements[work.getJointId(j)] = T
    data = work.createData()
    out = []
    for q_chain in Q:
        pin.forwardKinematics(work, data, km.configuration(q_chain, x))
        tool = work.frames[km.tool_fid]
        oMt = data.oMi[tool.parentJoint] * tool.placement
        oMs = pin.SE3.Identity()
        if km.start_fid is not None:
            f = work.frames[km.start_fid]
            oMs = data.oMi[f.parentJoint] * f.placement
        T_wb = km.base_pose(x)
        if km.base_motion is not None:
            T_wb = T_wb * km.base_motion(q_chain)
        out.append(T_wb * oMs.inverse() * oMt)
    return out


def model_and_data(model, tool, rng, n=15, **kw):
    kind = kw.pop("kind", "points")
    km = KinematicModel(model, tool, measurement=Measurement(kind, kw.pop("n_points", 2)),
                        **kw)
    km.base0 = pin.SE3(pin.rpy.rpyToMatrix(0.3, -0.1, 0.7), np.array([1.0, -0.4, 0.2]))
    km.tool0 = pin.SE3(pin.rpy.rpyToMatrix(-0.5, 0.2, 0.1), np.array([0.03, 0.0, 0.08]))
    lo, hi = chain_limits(km, 0.0)
    Q = rng.uniform(np.maximum(lo, -3.0), np.minimum(hi, 3.0), size=(n, len(lo)))
    x = rng.normal(0.0, 0.02, km.n_params)
    return km, Q, x


CASES = [
    ("tiago", "wrist_ft_tool_link", dict(level="full")),
    ("tiago", "wrist_ft_tool_link", dict(level="offset", n_points=1)),
    ("tiago", "wrist_ft_tool_link", dict(level="full", kind="pose")),
    ("tiago", "wrist_ft_tool_link", dict(level="offset", kind="pose",
                                         elastic_joints=["arm_2_joint", "arm_4_joint"])),
    ("tiago", "wrist_ft_tool_link", dict(level="full", start_frame="torso_lift_link",
                                         joints=["arm_2_joint", "arm_6_joint"])),
    ("odd", "tool", dict(level="full")),
    ("odd", "tool", dict(level="offset", kind="pose", start_frame="start")),
    ("odd", "tool", dict(level="full", elastic_joints=["j2"], estimate_base=False)),
]


def build(name, tool, kw, rng):
    model = pin.buildModelFromUrdf(TIAGO) if name == "tiago" else odd_arm()
    return model_and_data(model, tool, rng, **dict(kw))


@pytest.mark.parametrize("name, tool, kw", CASES)
def test_batched_kinematics_equal_pinocchio_per_posture(name, tool, kw, rng):
    km, Q, x = build(name, tool, kw, rng)
    ref = reference_poses(km, Q, x)
    got = km.tool_frame_poses(Q, x)
    for a, b in zip(got, ref):
        assert np.allclose(a.homogeneous, b.homogeneous, rtol=0, atol=1e-12)
    if km.measurement.kind == "points":
        P = km.tool_points(x)
        pts = np.array([[T.act(p) for p in P] for T in ref])
        assert np.allclose(km.predict_points(Q, x), pts, rtol=0, atol=1e-12)


@pytest.mark.parametrize("name, tool, kw", CASES)
def test_batched_regressor_equals_finite_differences(name, tool, kw, rng):
    km, Q, x = build(name, tool, kw, rng)
    Y = km.residuals(Q, np.zeros((len(Q), km.measurement.size)), x)[0] \
        + rng.normal(0.0, 0.01, (len(Q), km.measurement.size))
    F, J = km.residuals(Q, Y, x, jacobian=True)
    assert np.array_equal(F, km.residuals(Q, Y, x)[0])
    h = 1e-6
    for k in range(km.n_params):
        e = np.zeros(km.n_params)
        e[k] = h
        fd = (km.residuals(Q, Y, x + e)[0] - km.residuals(Q, Y, x - e)[0]) / (2 * h)
        assert np.allclose(J[:, :, k], fd, rtol=0, atol=2e-7), km.names[k]


def test_base_displacement_per_posture(rng):
    km, Q, x = model_and_data(pin.buildModelFromUrdf(TIAGO), "wrist_ft_tool_link", rng)
    km.base_motion = lambda q: pin.SE3(pin.exp3(np.array([0.0, 0.01 * q[1], 0.0])),
                                       np.array([0.0, 0.0, 0.002 * q[2]]))
    for a, b in zip(km.tool_frame_poses(Q, x), reference_poses(km, Q, x)):
        assert np.allclose(a.homogeneous, b.homogeneous, rtol=0, atol=1e-12)


def test_caches_follow_the_inputs(rng):
    """Postures changed in place, a new base frame and new parameters are all seen."""
    km, Q, x = model_and_data(pin.buildModelFromUrdf(TIAGO), "wrist_ft_tool_link", rng,
                              level="offset")
    first = km.predict_points(Q, x).copy()
    Q[3, 2] += 0.4                                   # same array, new content
    moved = km.predict_points(Q, x)
    assert not np.allclose(moved[3], first[3])
    assert np.allclose(moved[[0, 1, 2]], first[[0, 1, 2]])
    assert np.allclose(moved, np.array([[T.act(p) for p in km.tool_points(x)]
                                        for T in reference_poses(km, Q, x)]), atol=1e-12)
    km.base0 = pin.SE3(np.eye(3), np.array([5.0, 0.0, 0.0]))
    shifted = km.predict_points(Q, x)
    assert not np.allclose(shifted, moved)
    assert np.allclose(shifted, np.array([[T.act(p) for p in km.tool_points(x)]
                                          for T in reference_poses(km, Q, x)]), atol=1e-12)
    x2 = x.copy()
    x2[km.groups["arm_4_joint"]] += 0.05
    assert not np.allclose(km.predict_points(Q, x2), shifted)
    km.base_motion = lambda q: pin.SE3(np.eye(3), np.array([0.0, 0.0, 0.03]))   # a sag
    sagged = km.predict_points(Q, x).copy()
    assert np.abs(sagged - shifted).max() > 0.02       # the 3 cm sag is seen
    km.base_motion = None                           # as the simulator resets it
    assert np.allclose(km.predict_points(Q, x), shifted, atol=1e-12)


def test_a_fit_given_to_estimate_is_the_fit_it_would_do(rng):
    """``estimate(first_fit=...)`` (the fit of the pruning step reused) gives the very
    numbers of the estimate that fits again."""
    km, Q, x = model_and_data(pin.buildModelFromUrdf(TIAGO), "wrist_ft_tool_link", rng,
                              n=30, level="offset", n_points=1)
    truth = x.copy()
    Y = km.residuals(Q, np.zeros((len(Q), 3)), truth)[0] + rng.normal(0, 2e-4, (len(Q), 3))
    data = PostureSet(Q, Y)
    x0 = truth.copy()
    x0[[km.groups[j].start for j in km.joints]] = 0.0
    again = estimate(km, data, x0)
    fit = fit_parameters(km, data, x0, again.free, "lm", 100)
    given = estimate(km, data, x0, first_fit=(x0, again.free, "lm", fit))
    assert np.array_equal(again.x, given.x) and np.array_equal(again.std, given.std)
    # a fit of other free parameters (a pruned set), another start or another solver is
    # not taken for this one: a deliberately wrong answer never reaches the estimate
    wrong = (fit[0] + 0.1, fit[1], fit[2])
    for other in ((x0, again.free[:-1], "lm", wrong), (x0 + 1e-3, again.free, "lm", wrong),
                  (x0, again.free, "trf", wrong)):
        assert np.array_equal(estimate(km, data, x0, first_fit=other).x, again.x)
    assert not np.allclose(estimate(km, data, x0, first_fit=(x0, again.free, "lm",
                                                             wrong)).x, again.x)


@pytest.mark.skipif(not os.path.isdir(os.path.join(DATA, "tiago", "mocap")),
                    reason="real TIAGo recordings not available")
@pytest.mark.parametrize("config, rmse_mm", [("tiago_calibration_offset.yaml", 2.875606212954),
                                             ("tiago_calibration_full.yaml", 1.642568008607)])
def test_tiago_training_fit_unchanged(config, rmse_mm, monkeypatch):
    """The training RMSE of the shipped TIAGo configs as before the batched model
    (per-posture pinocchio), to 1e-9 m: speed changed nothing of the answer."""
    monkeypatch.setenv("FIGAROH_DATA", DATA)
    cfg = load_calibration_config(os.path.join(ROOT, "config", config))
    cfg = cfg.model_copy(update={"data": cfg.data.model_copy(update={"validation": None})})
    result = calibrate_config(cfg)
    assert abs(1e3 * result.rmse - rmse_mm) < 1e-6


@pytest.mark.parametrize("bad", [np.nan, np.inf, -1e300 * 1e300])
def test_empty_or_non_finite_postures_are_refused_by_posture(rng, bad):
    from figaroh_ros.calibration.result import chain_postures
    from figaroh_ros.errors import DataError
    km, Q, _ = model_and_data(pin.buildModelFromUrdf(TIAGO), "wrist_ft_tool_link", rng,
                              level="offset")
    with pytest.raises(DataError, match="no postures"):
        chain_postures(km, np.zeros((0, len(km.chain))))
    Q[2, 1] = bad
    with pytest.raises(DataError, match="posture 2: joint readings that are not finite"):
        chain_postures(km, Q)

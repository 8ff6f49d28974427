"""Optimal calibration postures (Eq. 12, Fig. 2) and static postures (Eq. 13)."""
import numpy as np
import pinocchio as pin
import pytest
import yaml
from conftest import ROOT, UR10_JOINTS, cli_in_process

from figaroh_ros.calibration import plan_postures
from figaroh_ros.calibration.kinematic_model import KinematicModel, Measurement
from figaroh_ros.calibration.postures import (
    SelfCollision, candidate_postures, choose_count, d_optimal_weights, information_matrices,
    static_postures
)
from figaroh_ros.calibration.solve import accuracy, estimate, initial_frames, whitened
from figaroh_ros.model.robot import example_robot_package_dirs, example_robot_urdf
from figaroh_ros.sim.kinematics import hidden_errors, measure, random_postures

UR10 = example_robot_urdf("ur_description/urdf/ur10_robot.urdf")


@pytest.fixture(scope="module")
def km():
    m = pin.buildModelFromUrdf(UR10)
    k = KinematicModel(m, "tool0", level="full",
                       measurement=Measurement("points", 1, sigma_position=1e-4))
    return k


@pytest.fixture(scope="module")
def collision():
    return SelfCollision(UR10, example_robot_package_dirs())


def test_self_collision_detects_a_folded_arm(collision):
    free = dict(zip(UR10_JOINTS, [0.0, -1.57, 1.57, -1.57, -1.57, 0.0]))
    folded = dict(free, elbow_joint=3.1)          # forearm folded onto the upper arm
    assert not collision.collides(free)
    assert collision.collides(folded)


def test_self_collision_tests_only_the_pairs_the_joints_move_with_the_same_answers():
    """TIAGo's torso and arm against every collision pair of the URDF (its hand's fingers
    among them): the same verdict on 400 random postures, a reference posture of a
    neutral finger set in collision refusing every posture, and far fewer pairs tested."""
    urdf = example_robot_urdf("tiago_description/robots/tiago.urdf")
    sc = SelfCollision(urdf, example_robot_package_dirs())
    m = sc.model
    chain = ["torso_lift_joint"] + [f"arm_{i}_joint" for i in range(1, 8)]
    ids = [m.getJointId(j) for j in chain]
    lo = np.array([m.lowerPositionLimit[m.joints[i].idx_q] for i in ids])
    hi = np.array([m.upperPositionLimit[m.joints[i].idx_q] for i in ids])
    postures = [dict(zip(chain, q)) for q in np.random.default_rng(3).uniform(lo, hi, (400, 8))]
    every_pair = [bool(pin.computeCollisions(m, sc.data, sc.geom, sc.gdata,
                                             sc.configuration(j), True)) for j in postures]
    assert [sc.collides(j) for j in postures] == every_pair
    assert 20 < sum(every_pair) < 380                     # both verdicts are exercised
    always, moved, _ = sc._pairs_moved_by(frozenset(chain))
    assert not always and len(moved.collisionPairs) < 0.7 * len(sc.geom.collisionPairs)
    # a pair the chain cannot move, in collision when every other joint is neutral
    k = next(k for k, p in enumerate(sc.geom.collisionPairs)
             if p not in list(moved.collisionPairs))
    sc.gdata.collisionRequests[k].security_margin = 10.0
    sc._moved_by.clear()
    assert sc.collides(postures[0]) and sc.collides(postures[1])


def test_candidates_respect_limits_workspace_and_collisions(km, collision):
    lo_ws, hi_ws = np.array([-1.0, -1.0, 0.2]), np.array([1.0, 1.0, 1.2])
    Q = candidate_postures(km, 60, margin=0.1, seed=2, workspace=(lo_ws, hi_ws),
                           collision=collision)
    assert len(Q) == 60
    lo = km.model.lowerPositionLimit[km.chain_idx_q] + 0.1
    hi = km.model.upperPositionLimit[km.chain_idx_q] - 0.1
    assert np.all(Q >= lo) and np.all(Q <= hi)
    for T in km.tool_frame_poses(Q, km.nominal_parameters()):
        assert np.all(T.translation >= lo_ws) and np.all(T.translation <= hi_ws)
    assert not any(collision.collides(dict(zip(km.chain, q))) for q in Q)


def test_candidates_respect_the_asymmetric_limits_of_the_panda():
    """The Panda's joint 4 lies in [-3.0718, -0.0698] and joint 6 in [-0.0175, 3.7525]
    (the URDF's XML read here): every candidate inside each bound less the margin, and the
    draws reach near both ends of each joint's range."""
    import xml.etree.ElementTree as ET
    urdf = example_robot_urdf("panda_description/urdf/panda.urdf")
    chain = [f"panda_joint{i}" for i in range(1, 8)]
    limit = {j.get("name"): j.find("limit") for j in ET.parse(urdf).getroot().iter("joint")}
    lo = np.array([float(limit[j].get("lower")) for j in chain])
    hi = np.array([float(limit[j].get("upper")) for j in chain])
    panda = KinematicModel(pin.buildModelFromUrdf(urdf), "panda_link8", level="full",
                           measurement=Measurement("points", 1, sigma_position=1e-4))
    assert panda.chain == chain
    Q = candidate_postures(panda, 400, margin=0.05, seed=4)
    assert Q.shape == (400, 7)
    assert np.all(Q >= lo + 0.05) and np.all(Q <= hi - 0.05)
    span = hi - lo - 0.1
    assert np.all(Q.min(axis=0) < lo + 0.05 + 0.02 * span)
    assert np.all(Q.max(axis=0) > hi - 0.05 - 0.02 * span)


def test_d_optimal_weights_solve_the_design_problem():
    """Kiefer-Wolfowitz: at the D-optimal design, max_i tr(M^-1 Sigma_i) = p, attained on
    the support, and the objective beats the uniform design."""
    rng = np.random.default_rng(0)
    S = information_matrices([rng.normal(size=(3, 6)) for _ in range(80)])
    w = d_optimal_weights(S)
    assert abs(w.sum() - 1) < 1e-8 and w.min() >= 0
    M = np.tensordot(w, S, axes=1)
    g = np.einsum("ij,kji->k", np.linalg.inv(M), S)
    assert g.max() <= 6 * 1.01
    assert np.all(g[w > 1e-3] > 6 * 0.97)
    uniform = np.tensordot(np.full(80, 1 / 80), S, axes=1)
    assert np.linalg.slogdet(M)[1] > np.linalg.slogdet(uniform)[1]


def test_count_is_the_peak_or_plateau():
    assert choose_count(np.array([0, 1.0, 2.0, 3.0, 2.5, 2.0]), 0.01) == 4
    assert choose_count(np.array([0, 1.0, 2.0, 2.99, 3.0, 3.0]), 0.01) == 4


def test_optimal_postures_calibrate_better_than_random(km):
    """Same number of postures: the D-optimal set gives a larger information determinant
    and a smaller error on fresh postures than random ones."""
    rng = np.random.default_rng(5)
    pool = random_postures(km, 600, rng)
    x = km.nominal_parameters([[0.03, -0.02, 0.08]])
    plan = plan_postures(UR10, tool_frame="tool0", measurement="points", points=x[-3:][None],
                         noise=1e-4, candidates=pool, max_postures=50, plateau=0.01)
    k = len(plan.postures)
    assert 5 <= k <= 50
    assert plan.criterion[k - 1] >= 0.99 * plan.criterion.max()
    x_true = hidden_errors(km, rng, tool_points=[[0.03, -0.02, 0.08]])
    fresh = measure(km, random_postures(km, 200, rng), x_true, rng)
    errs, logdets = {}, {}
    for label, Q in (("optimal", plan.postures), ("random", pool[rng.choice(600, k, False)])):
        data = measure(km, Q, x_true, rng)
        x0 = initial_frames(km, data, km.nominal_parameters())
        res = estimate(km, data, x0)
        errs[label] = accuracy(km, fresh, res.x).rmse
        _, J = whitened(km, data, res.x)
        logdets[label] = np.linalg.slogdet(J[:, res.free].T @ J[:, res.free])[1]
    assert logdets["optimal"] > logdets["random"]
    assert errs["optimal"] < errs["random"]


def test_static_postures_keep_torques_under_limits(ur10):
    rng = np.random.default_rng(3)
    lo, hi = ur10.position_limits()
    Q = rng.uniform(np.maximum(lo, -np.pi), np.minimum(hi, np.pi), size=(400, 6))
    plan = static_postures(ur10, Q, effort_fraction=0.5, max_postures=30)
    data = ur10.model.createData()
    for q in ur10.full_configuration(plan.postures):
        g = pin.computeGeneralizedGravity(ur10.model, data, q)
        assert np.all(np.abs(g[ur10.idx_v]) <= 0.5 * ur10.effort_limits() + 1e-9)
    assert len(plan.postures) >= 2
    assert any(n.startswith("m") or n.startswith("mx") for n in plan.parameter_names)


def test_plan_postures_cli_writes_executor_csv(tmp_path):
    import subprocess
    import sys
    cfg = {"robot": {"name": "ur10", "urdf": UR10},
           "calibration": {"level": "full", "tool_frame": "tool0",
                           "tool_guess": [0.03, -0.02, 0.08]},
           "measurement": {"type": "points", "noise_position_mm": 0.1},
           "postures": {"candidates": 300, "max_postures": 40,
                        "workspace_min": [-1.3, -1.3, 0.0], "workspace_max": [1.3, 1.3, 1.5]}}
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(cfg))
    out = tmp_path / "postures.csv"
    r = cli_in_process("plan-postures", path, "--out", out)
    assert r.returncode == 0, r.stderr
    rows = out.read_text().strip().splitlines()
    assert rows[0].split(",")[:6] == UR10_JOINTS
    assert 5 <= len(rows) - 1 <= 40

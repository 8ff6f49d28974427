"""Pre-flight of calibration postures: what they will identify is known
before the robot moves, and the numbers hold.

Truth: the expected standard deviations (the stated noise propagated through the
least-squares estimate) match the spread of the estimates over repeated noisy
calibrations of the same postures.  Degenerate posture sets (one posture repeated, a wrist
joint that never moves) are refused with the unobservable parameters named; the CLI exits
2 on them, 0 on planned postures.
"""
import os

import numpy as np
import pinocchio as pin
import pytest
from conftest import ROOT, cli_in_process

from figaroh_ros.calibration import calibrate
from figaroh_ros.calibration.identifiability import posture_identifiability
from figaroh_ros.calibration.procedure import kinematic_model
from figaroh_ros.model.robot import example_robot_urdf
from figaroh_ros.tasks.preflight import identifiability_checks

UR10 = example_robot_urdf("ur_description/urdf/ur10_robot.urdf")
NOISE = (0.1e-3, 0.5e-3)                      # m, rad per axis
CONFIG = os.path.join(ROOT, "config", "ur10_sim_calibration.yaml")


def _poses(km, Q, rng) -> np.ndarray:
    x = km.nominal_parameters()
    out = []
    for T in km.predict(Q, x):
        R = T.rotation @ pin.exp3(rng.normal(0, NOISE[1], 3))
        out.append(np.r_[T.translation + rng.normal(0, NOISE[0], 3), pin.log3(R)])
    return np.array(out)


@pytest.fixture(scope="module")
def planned():
    km, _ = kinematic_model(UR10, tool_frame="tool0", measurement="pose", noise=NOISE)
    rng = np.random.default_rng(3)
    lo = np.array([km.model.lowerPositionLimit[km.model.joints[km.model.getJointId(j)].idx_q]
                   for j in km.chain]) + 0.2
    hi = np.array([km.model.upperPositionLimit[km.model.joints[km.model.getJointId(j)].idx_q]
                   for j in km.chain]) - 0.2
    return km, rng.uniform(np.maximum(lo, -3.0), np.minimum(hi, 3.0), (12, len(km.chain)))


def test_expected_std_matches_the_spread_of_repeated_calibrations(planned):
    km, Q = planned
    ident = posture_identifiability(km, Q)
    assert ident.rank_deficit == 0
    rng = np.random.default_rng(11)
    estimates = []
    for _ in range(16):
        res = calibrate(UR10, Q, _poses(km, Q, rng), tool_frame="tool0", measurement="pose",
                        noise=NOISE)
        p = res.parameters
        estimates.append({**dict(zip(p.names, p.values)), **dict(zip(p.expressions, p.values))})
    common = [n for n in ident.expected_std if all(n in e for e in estimates)]
    assert len(common) >= 0.8 * len(ident.expected_std), (common, list(ident.expected_std))
    ratios = [np.std([e[n] for e in estimates], ddof=1) / ident.expected_std[n]
              for n in common]
    assert 0.75 <= np.median(ratios) <= 1.33, sorted(ratios)


def test_degenerate_postures_are_refused_with_the_unobservable_parameters(planned):
    km, Q = planned
    good = identifiability_checks(posture_identifiability(km, Q), 6 * len(Q), (10.0, 20.0))
    assert good.passed, [c.line() for c in good.failed()]
    same = np.repeat(Q[:1], len(Q), axis=0)
    verdict = identifiability_checks(posture_identifiability(km, same), 6 * len(Q),
                                     (10.0, 20.0))
    assert not verdict.passed and "observable" in [c.name for c in verdict.failed()]
    still = Q.copy()
    still[:, -1] = 0.0                                    # wrist_3 never turns
    ident = posture_identifiability(km, still)
    assert ident.rank_deficit > 0
    assert any("tool" in n or "wrist_3" in n for n in ident.unobservable), ident.unobservable


def test_the_cli_passes_planned_postures_and_refuses_a_repeated_one(tmp_path):
    from figaroh_ros.config.calibration import load_calibration_config
    from figaroh_ros.tasks.plan_postures import plan_from_config
    cfg = load_calibration_config(CONFIG)
    cfg = cfg.with_postures(max_postures=10, candidates=300, plateau=1e-6)
    good = str(tmp_path / "good.csv")
    plan_from_config(cfg, good)
    lines = open(good).read().splitlines()
    bad = tmp_path / "bad.csv"
    bad.write_text("\n".join([lines[0]] + [lines[1]] * 10) + "\n")
    run = ["preflight", CONFIG, "--postures"]
    ok = cli_in_process(*run, good, "--out", tmp_path / "ok")
    assert ok.returncode == 0 and ok.stdout.count("PASSED") == 4, ok.stdout + ok.stderr
    assert os.path.isfile(tmp_path / "ok" / "result.yaml")
    no = cli_in_process(*run, bad)
    assert no.returncode == 2 and "observable" in no.stderr, no.stderr
    assert len(no.stderr.strip().splitlines()) == 1

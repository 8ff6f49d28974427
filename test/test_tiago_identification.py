"""TIAGo's own dynamic identification: CSV tables with jittered stamps
resampled like bags, signed drive gains, friction models, validation on another
recording; simulated truths for each feature, then the real recording against the
plain least-squares baseline of the issue."""
from __future__ import annotations

import os

import numpy as np
import pytest
import yaml

from figaroh_ros.config.identification import load_config
from figaroh_ros.errors import ConfigError, DataError
from figaroh_ros.excitation.fourier import fourier_trajectory
from figaroh_ros.identification.base_parameters import base_parameters
from figaroh_ros.identification.drive_gains import separated_gains
from figaroh_ros.identification.observation import Observation
from figaroh_ros.identification.parameters import DriveOptions, parameter_layout
from figaroh_ros.identification.regressor import (
    joint_torques_from_parameters, standard_regressor
)
from figaroh_ros.io.recording import resampled
from figaroh_ros.model.loading import load_model
from figaroh_ros.sim.dynamics import perturbed_parameters
from figaroh_ros.tasks.identify import identify_config

UR5 = "example-robot-data:ur_description/urdf/ur5_robot.urdf"
UR_JOINTS = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint",
             "wrist_2_joint", "wrist_3_joint"]
TIAGO = os.path.join(os.path.dirname(__file__), "..", "config", "tiago_identification.yaml")
TIAGO_DATA = os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data", "tiago",
                          "identification")
BASELINE = {"arm_1_joint": 0.169, "arm_2_joint": 0.081, "arm_3_joint": 0.095,
            "arm_4_joint": 0.130, "stacked": 0.094}
# held out, measured 15.28 / 7.84 / 9.23 / 12.63 %: bounds 0.2-0.7 points above, each
# below the plain least squares
ACHIEVED = {"arm_1_joint": 0.160, "arm_2_joint": 0.080, "arm_3_joint": 0.094,
            "arm_4_joint": 0.128}


def test_resampling_of_jittered_stamps_recovers_the_signal():
    rng = np.random.default_rng(3)
    t = np.cumsum(rng.uniform(0.008, 0.012, 3000))
    f = lambda x: np.column_stack([np.sin(1.3 * x), np.cos(0.7 * x)])  # noqa: E731
    grid, P, T = resampled(t, f(t), 2 * f(t), 100.0, None, "table")
    assert np.allclose(np.diff(grid), 0.01)
    assert np.max(np.abs(P - f(grid))) < 2e-4          # linear interpolation error bound
    assert np.max(np.abs(T - 2 * f(grid))) < 4e-4


def test_a_gap_in_the_stamps_is_refused_with_its_times():
    t = np.arange(500) * 0.01
    t[300:] += 0.2
    with pytest.raises(DataError, match=r"from t = 2\.99 to 3\.2"):
        resampled(t, np.zeros((500, 1)), np.zeros((500, 1)), 100.0, None, "table")
    grid, _, _ = resampled(t, np.zeros((500, 1)), np.zeros((500, 1)), 100.0, 0.5, "table")
    assert abs(len(grid) - 520) <= 1 and grid[-1] <= t[-1]


def _sim(drive: DriveOptions, seed: int, gains=None, noise=0.2):
    arm = load_model(UR5, UR_JOINTS)
    layout = parameter_layout(arm, drive)
    phi = perturbed_parameters(arm, layout, seed=11)
    for j in range(6):
        for cols, v in ((layout.fva_col, 1.5), (layout.fst_col, 2.0)):
            if cols is not None and cols[j] >= 0:
                phi[cols[j]] = v
    traj = fourier_trajectory(arm, 20.0, 100.0, harmonics=5, base_freq_hz=0.1, seed=seed)
    tau = joint_torques_from_parameters(arm, layout, drive, phi, traj.q, traj.dq, traj.ddq)
    tau += np.random.default_rng(seed).normal(0, noise, tau.shape)
    effort = tau / (np.ones(6) if gains is None else np.asarray(gains))
    return arm, traj, effort


TRUE_K = np.array([20.0, 30.0, -12.0, 8.0, -5.0, 4.0])


def _gain_problem(K0: np.ndarray):
    """The six-joint arm's efforts under the hidden gains ``TRUE_K``, scaled by the guess
    ``K0``: the observation whose rows ``separated_gains`` corrects."""
    drive = DriveOptions()
    arm, traj, effort = _sim(drive, 1, TRUE_K, noise=0.05)
    layout = parameter_layout(arm, drive)
    W = standard_regressor(arm, layout, drive, traj.q, traj.dq, traj.ddq)
    base = base_parameters(W, layout.names)
    n, N = 6, traj.q.shape[0]
    return Observation(base.base_regressor(W), (effort * K0).T.ravel(),
                       np.repeat(np.arange(n), N)), n


def test_gain_of_a_vertical_axis_from_the_other_joints_model():
    """shoulder_pan (vertical axis, no gravity) with a gain 5x off: its gain is recovered
    from the model of the other joints' rows, which its own rows cannot bend."""
    true_K = TRUE_K
    K0 = true_K * np.array([5.0, 1, 1, 1, 1, 1])
    obs, n = _gain_problem(K0)
    g = separated_gains(obs, np.arange(n) == 0, n)
    assert np.allclose(g[1:], 1.0)
    assert abs(g[0] * K0[0] / true_K[0] - 1) < 0.02, g[0] * K0[0]


def test_separated_gains_refuse_a_lone_joint_and_non_finite_efforts():
    from figaroh_ros.errors import DataError, SolverError
    obs, n = _gain_problem(TRUE_K)
    lone = Observation(obs.Wb[obs.row_joint == 0], obs.Y[obs.row_joint == 0],
                       np.zeros(int(np.sum(obs.row_joint == 0)), int))
    with pytest.raises(SolverError, match="joint 1: no other fitted joint"):
        separated_gains(lone, np.array([True]), 1)
    Y = obs.Y.copy()
    Y[5] = np.nan
    with pytest.raises(DataError, match="not finite"):
        separated_gains(Observation(obs.Wb, Y, obs.row_joint), np.arange(n) == 0, n)


@pytest.mark.parametrize("truth,chosen", [({"viscous_per_direction": True,
                                             "coulomb_model": "tanh",
                                             "coulomb_velocity": 0.02}, "asymmetric"),
                                           ({"stribeck_velocity": 0.05}, "stribeck")])
def test_friction_model_chosen_on_held_out_data(tmp_path, truth, chosen):
    drive = DriveOptions(**truth)
    arm, traj, tau = _sim(drive, 2)
    header = ",".join(["t"] + [f"{j}_position" for j in UR_JOINTS]
                      + [f"{j}_effort" for j in UR_JOINTS])
    t = traj.t + np.random.default_rng(0).uniform(-0.002, 0.002, traj.t.shape)
    np.savetxt(tmp_path / "rec.csv", np.column_stack([t, traj.q, tau]), delimiter=",",
               header=header, comments="")
    (tmp_path / "id.yaml").write_text(yaml.safe_dump({
        "robot": {"name": "ur5", "urdf": UR5, "joints": UR_JOINTS},
        "model": {"friction_models": ["sign", chosen], "coulomb_velocity": 0.02,
                  "stribeck_range": [0.01, 0.3]},
        "data": {"format": "csv_table", "path": ".", "table": "rec.csv",
                 "time_column": "t", "resample_hz": 100.0},
        "processing": {"position_cutoff_hz": 10.0, "decimation": 2},
        "estimation": {"validation_fraction": 0.3, "cross_validation_folds": 0}}))
    r = identify_config(load_config(str(tmp_path / "id.yaml")))
    sel = r.friction_selection
    assert sel["chosen"] == chosen
    errs = {c["model"]: c["validation_relative_error"]["stacked"] for c in sel["candidates"]}
    assert errs[chosen] < errs["sign"]
    if chosen == "stribeck":
        assert abs(np.log(r.drive.stribeck_velocity / 0.05)) < np.log(1.5)


def test_validate_on_another_recording(tmp_path):
    drive = DriveOptions()
    arm, traj, tau = _sim(drive, 3)
    _, traj2, tau2 = _sim(drive, 4)
    for name, tr, ta in (("a", traj, tau), ("b", traj2, tau2)):
        os.makedirs(tmp_path / name)
        np.savetxt(tmp_path / name / "q.csv", tr.q, delimiter=",", header=",".join(UR_JOINTS))
        np.savetxt(tmp_path / name / "tau.csv", ta, delimiter=",", header=",".join(UR_JOINTS))
    (tmp_path / "id.yaml").write_text(yaml.safe_dump({
        "robot": {"name": "ur5", "urdf": UR5, "joints": UR_JOINTS},
        "data": {"format": "csv_pair", "path": "a", "positions": "q.csv",
                 "torques": "tau.csv", "sample_time": 0.01},
        "processing": {"position_cutoff_hz": 10.0},
        "estimation": {"cross_validation_folds": 0}}))
    r = identify_config(load_config(str(tmp_path / "id.yaml")),
                        validation=str(tmp_path / "b"))
    # the noise (0.2 N.m) is the floor of the held-out RMSE on the other recording
    assert np.all(r.validation_rmse < 0.2 * 1.15), r.validation_rmse
    assert np.all(r.validation_rmse < r.nominal_validation_rmse)
    with pytest.raises(DataError, match="validation recording"):
        identify_config(load_config(str(tmp_path / "id.yaml")),
                        validation=str(tmp_path / "missing"))


def test_bad_drive_config_names_the_field(tmp_path):
    raw = yaml.safe_load(open(TIAGO))
    raw["robot"]["urdf"] = UR5
    raw["drive"] = {"effort_gains": [1.0] * 7 + [0.0]}
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(raw))
    with pytest.raises(ConfigError, match="drive.effort_gains"):
        load_config(str(tmp_path / "bad.yaml"))
    raw["drive"] = {"identify_gains": ["arm_1_joint", "arm_2_joint", "arm_3_joint",
                                       "arm_4_joint"]}
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(raw))
    with pytest.raises(ConfigError, match="drive.identify_gains"):
        load_config(str(tmp_path / "bad.yaml"))


@pytest.mark.skipif(not os.path.isdir(TIAGO_DATA), reason="shared TIAGo data not present")
def test_tiago_real_data_beats_the_least_squares_baseline():
    cfg = load_config(TIAGO, data=TIAGO_DATA)
    cfg = cfg.model_copy(update={"model": cfg.model.model_copy(   # the model chosen by
        update={"friction_models": ["tanh"]})})                   # the full config
    r = identify_config(cfg)
    rel = dict(zip(r.joints, r.validation_relative_error))
    rel["stacked"] = r.validation_relative_error_stacked
    # every joint below the plain least squares of the issue, arm_1 included (its gain
    # from the other joints' model); the stacked error is in torque units, so it depends
    # on the gains and is not compared with the baseline's
    for joint, bound in ACHIEVED.items():
        assert bound < BASELINE[joint] and rel[joint] < bound, (joint, rel)
    nominal = r.nominal_validation_relative_error_stacked
    assert rel["stacked"] < 0.2 * nominal
    assert np.all(np.sign(r.gain_factors) == [1, 1, -1, -1])

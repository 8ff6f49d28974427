"""Pre-flight of a planned exciting trajectory: what it will identify is
known before the robot moves, and the numbers hold.

Truth: on a simulated UR10 whose true parameters are hidden, the expected std the
pre-flight predicts from the config's torque noise (``sigma^2 (W_b^T W_b)^-1``, per-joint
weights) matches the spread of the base parameters over 16 noisy identifications (WLS) of
the same trajectory, without and with parallel decimation.  A degenerate trajectory (a
joint held still) fails naming that joint's parameters; the CLI exits 0 on the exciting
one, 2 on the degenerate one; the executor refuses such a trajectory goal.
"""
import os

import numpy as np
import pytest
import yaml
from conftest import cli_in_process

from figaroh_ros.config.identification import load_config
from figaroh_ros.excitation.fourier import fourier_trajectory, windowed
from figaroh_ros.identification import DriveOptions, identify, parameter_layout
from figaroh_ros.io.experiment_files import write_trajectory_csv
from figaroh_ros.sim.dynamics import measured_torques, perturbed_parameters
from figaroh_ros.tasks.identify import robot_from_config
from figaroh_ros.tasks.preflight import trajectory_verdict

JOINTS = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint",
          "wrist_2_joint", "wrist_3_joint"]
NOISE = [0.8, 0.8, 0.5, 0.2, 0.2, 0.1]         # N.m per joint
REPEATS = 16


@pytest.fixture(scope="module")
def setting(tmp_path_factory):
    """An identification config stating the noise, the arm and a Fourier excitation at
    rest at both ends (20 s at 100 Hz)."""
    work = tmp_path_factory.mktemp("preflight_trajectory")
    path = str(work / "identification.yaml")
    yaml.safe_dump({
        "robot": {"name": "ur10", "joints": JOINTS,
                  "urdf": "example-robot-data:"
                          "ur_description/urdf/ur10_joint_limited_robot.urdf"},
        "data": {"format": "csv_pair", "path": ".", "positions": "q.csv",
                 "torques": "tau.csv", "sample_time": 0.01},
        "preflight": {"torque_noise": NOISE}}, open(path, "w"))
    cfg = load_config(path)
    robot = robot_from_config(cfg)
    traj = windowed(fourier_trajectory(robot, 20.0, 100.0, harmonics=5, base_freq_hz=0.1,
                                       seed=1))
    return {"work": work, "config": path, "cfg": cfg, "robot": robot, "traj": traj}


@pytest.mark.parametrize("decimation", [1, 5])
def test_expected_std_matches_the_spread_of_repeated_identifications(setting, decimation):
    """With the parallel decimation too: fewer rows, each carrying the share of the noise
    the decimation filter keeps."""
    robot, traj = setting["robot"], setting["traj"]
    cfg = setting["cfg"]
    cfg = cfg.model_copy(update={"processing": cfg.processing.model_copy(
        update={"decimation": decimation})})
    verdict, ident = trajectory_verdict(cfg, JOINTS, traj.t, traj.q)
    assert verdict.passed, [c.line() for c in verdict.failed()]
    assert ident.rank == len(ident.structural) and not ident.unobservable
    drive = DriveOptions()
    layout = parameter_layout(robot, drive)
    phi_true = perturbed_parameters(robot, layout, seed=7)
    estimates = []
    for k in range(REPEATS):
        tau = measured_torques(robot, layout, drive, phi_true, traj, np.array(NOISE),
                               seed=100 + k)
        p = identify(robot, traj.q, traj.dq, traj.ddq, tau, method="wls",
                     decimation=decimation).base_parameters
        estimates.append({n.split()[0]: v for n, v in zip(p.names, p.values)})
    predicted = {n.split()[0]: s for n, s in ident.expected_std.items()}
    common = [n for n in predicted if all(n in e for e in estimates)]
    assert len(common) == len(predicted), (sorted(predicted), sorted(estimates[0]))
    ratios = np.array([np.std([e[n] for e in estimates], ddof=1) / predicted[n]
                       for n in common])
    print(f"decimation {decimation}: spread / expected std over {len(common)} base "
          f"parameters ({ident.rows} equations, condition number "
          f"{ident.condition_number:.0f}): median "
          f"{np.median(ratios):.3f}, 10-90 % {np.percentile(ratios, [10, 90]).round(3)}")
    assert 0.8 <= np.median(ratios) <= 1.25, sorted(ratios)


def test_a_joint_held_still_fails_naming_its_parameters(setting):
    cfg, traj = setting["cfg"], setting["traj"]
    still = traj.q.copy()
    still[:, 3] = still[0, 3]                       # wrist_1_joint (pinocchio joint 4)
    verdict, ident = trajectory_verdict(cfg, JOINTS, traj.t, still)
    assert not verdict.passed and ident.rank < len(ident.structural)
    failed = {c.name: c.detail for c in verdict.failed()}
    assert "observable" in failed, failed
    heads = {n.split()[0] for n in ident.unobservable}
    assert {"Ia4", "fv4", "fs4"} <= heads, ident.unobservable
    assert all(n[-1] == "4" for n in heads), ident.unobservable
    assert "fv4" in failed["observable"] and "rank" in failed["observable"]
    constant = np.repeat(traj.q[:1], len(traj.t), axis=0)      # one posture, held
    verdict, ident = trajectory_verdict(cfg, JOINTS, traj.t, constant)
    assert not verdict.passed and ident.rank < len(ident.structural) / 2


def test_the_condition_threshold_names_the_poorly_identified(setting):
    cfg, traj = setting["cfg"], setting["traj"]
    verdict, ident = trajectory_verdict(cfg, JOINTS, traj.t, traj.q)
    cfg = cfg.model_copy(update={"preflight": cfg.preflight.model_copy(
        update={"max_condition": ident.condition_number / 2})})
    verdict, weak = trajectory_verdict(cfg, JOINTS, traj.t, traj.q)
    failed = {c.name: c.detail for c in verdict.failed()}
    assert list(failed) == ["condition_number"] and weak.poorly_identified
    assert weak.poorly_identified[0].split()[0] in failed["condition_number"]


def test_the_cli_passes_the_exciting_trajectory_and_refuses_a_still_joint(setting):
    work, traj = setting["work"], setting["traj"]
    good, bad = str(work / "good.csv"), str(work / "bad.csv")
    write_trajectory_csv(good, JOINTS, traj)
    still = type(traj)(traj.t, traj.q.copy(), traj.dq, traj.ddq)
    still.q[:, 3] = still.q[0, 3]
    write_trajectory_csv(bad, JOINTS, still)
    run = ["preflight", setting["config"], "--trajectory"]
    ok = cli_in_process(*run, good, "--out", work / "ok")
    assert ok.returncode == 0 and ok.stdout.count("PASSED") == 3, ok.stdout + ok.stderr
    result = yaml.safe_load(open(work / "ok" / "result.yaml"))
    assert result["rank"] == result["base_parameters"] and result["expected_std"]
    no = cli_in_process(*run, bad)
    assert no.returncode == 2 and "fv4" in no.stderr, no.stderr
    assert len(no.stderr.strip().splitlines()) == 1
    both = cli_in_process(*run, good, "--postures", good)
    assert both.returncode == 2 and "not allowed with" in both.stderr, both.stderr  # argparse
    assert os.path.isfile(good)


def test_the_executor_refuses_a_degenerate_trajectory_goal_before_moving(setting):
    """The executor's goal check (``refuse_unidentifiable``, run on every RunExperiment
    goal): a trajectory goal under ``preflight_identification_config`` is refused naming
    the unobservable parameters; the exciting one, and any goal without a config, pass."""
    pytest.importorskip("rclpy")
    from types import SimpleNamespace

    from figaroh_ros.ros.common import GoalRefused
    from figaroh_ros.ros.preflight_action import preflight_identification, \
        refuse_unidentifiable
    traj = setting["traj"]
    cfg = preflight_identification(setting["config"], "<robot name='unused'/>")
    assert preflight_identification("", "") is None
    ex = SimpleNamespace(preflight=None, preflight_identification=cfg)
    refuse_unidentifiable(ex, JOINTS, traj.q, traj.t)
    still = traj.q.copy()
    still[:, 3] = still[0, 3]
    with pytest.raises(GoalRefused, match="pre-flight FAILED, nothing moved.*fv4"):
        refuse_unidentifiable(ex, JOINTS, still, traj.t)
    refuse_unidentifiable(SimpleNamespace(preflight=None, preflight_identification=None),
                          JOINTS, still, traj.t)
    refuse_unidentifiable(ex, JOINTS, still[:5], None)      # postures: no calibration set

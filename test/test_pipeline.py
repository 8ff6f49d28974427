"""Config -> recording -> identification, through the CLI, on a simulated UR10 whose true
parameters are hidden; and bad configs refused with a message naming the field."""
import os
import subprocess
import sys

import numpy as np
import pytest
import yaml
from conftest import UR10_JOINTS, cli_identify

from figaroh_ros.config.identification import load_config
from figaroh_ros.errors import ConfigError
from figaroh_ros.excitation.fourier import fourier_trajectory
from figaroh_ros.identification.parameters import parameter_layout
from figaroh_ros.model.robot import example_robot_urdf
from figaroh_ros.sim.dynamics import measured_torques, perturbed_parameters
from figaroh_ros.tasks.identify import drive_options, identify_config, robot_from_config

RATE = 500.0


@pytest.fixture(scope="module")
def ur10_recording(tmp_path_factory, ur10):
    d = tmp_path_factory.mktemp("ur10rec")
    cfg = {
        "robot": {"name": "ur10_sim", "urdf": example_robot_urdf("ur_description/urdf/ur10_robot.urdf"),
                  "joints": UR10_JOINTS},
        "model": {"coulomb_model": "sign"},
        "data": {"format": "csv_table", "path": str(d), "table": "log.csv", "time_column": "t"},
        "processing": {"position_cutoff_hz": 20.0, "decimation": 5, "min_velocity": 0.02},
        "estimation": {"method": "wls", "validation_fraction": 0.25},
        "output": {"plots": True},
    }
    cfg_path = d / "ur10.yaml"
    cfg_path.write_text(yaml.safe_dump(cfg))
    full = load_config(str(cfg_path))
    robot = robot_from_config(full); drive = drive_options(full)
    layout = parameter_layout(robot, drive)
    phi_true = perturbed_parameters(robot, layout, seed=31)
    traj = fourier_trajectory(robot, 40.0, RATE, harmonics=5, base_freq_hz=0.1, seed=32)
    sigma = 0.3
    tau = measured_torques(robot, layout, drive, phi_true, traj, sigma, seed=33)
    rng = np.random.default_rng(34)
    q_meas = traj.q + rng.normal(scale=2e-5, size=traj.q.shape)   # encoder noise
    header = ["t"] + [f"{j}_position" for j in UR10_JOINTS] + [f"{j}_effort" for j in UR10_JOINTS]
    np.savetxt(d / "log.csv", np.column_stack([traj.t, q_meas, tau]), delimiter=",",
               header=",".join(header), comments="")
    return cfg_path, phi_true, layout


def test_cli_identifies_to_the_noise_floor(ur10_recording, tmp_path):
    cfg_path, phi_true, layout = ur10_recording
    out = tmp_path / "out"
    proc, res = cli_identify(cfg_path, out)
    assert set(res["rmse"]) == set(UR10_JOINTS)
    assert res["condition_number"] > 1
    for row in res["base_parameters"]:
        assert {"name", "value", "std_percent"} <= set(row)
    assert all((out / f"torque_{j}.png").stat().st_size > 5000 for j in UR10_JOINTS)
    # cross-validation table: 4 time blocks, each predicted near the hold-out level and
    # far better than the nominal model
    cv = res["cross_validation"]
    assert cv["folds"] == 4 and len(cv["rmse"]) == 4 and "cross-validation" in proc.stdout
    hold = np.array([res["validation_rmse"][j] for j in UR10_JOINTS])
    for fold, nom in zip(cv["rmse"], cv["nominal_rmse"]):
        r = np.array([fold[j] for j in UR10_JOINTS])
        assert np.all(r < 1.5 * hold) and np.all(r < 0.3 * np.array([nom[j] for j in UR10_JOINTS]))
    assert "essential parameters" in proc.stdout
    # noise floor of the held-out window through the same processing: the true model
    cfg = load_config(str(cfg_path))
    result = identify_config(cfg)
    obs = result.held_out
    floor = [np.sqrt(np.mean((obs.Y - obs.Wb @ result.base.from_standard(phi_true))[obs.row_joint == j] ** 2))
             for j in range(len(UR10_JOINTS))]
    val = np.array([res["validation_rmse"][j] for j in UR10_JOINTS])
    print("hold-out RMSE / noise floor:", np.round(val / floor, 3))
    assert np.all(val <= 1.05 * np.array(floor))
    # the recovered base parameters agree with the hidden truth
    truth = result.base.from_standard(phi_true)
    z = (result.estimate.phi - truth) / result.estimate.std
    assert np.mean(np.abs(z) < 3) > 0.9


def _write(tmp_path, cfg):
    p = tmp_path / "bad.yaml"
    p.write_text(yaml.safe_dump(cfg))
    return p


@pytest.mark.parametrize("mutate,field", [
    (lambda c: c["robot"].pop("joints"), "robot.joints"),
    (lambda c: c["robot"].__setitem__("joints", ["shoulder_pan_joint", "no_such_joint"]), "no_such_joint"),
    (lambda c: c["transmission"].__setitem__("gear_ratios", [1.0, 2.0]), "transmission.gear_ratios"),
    (lambda c: c["processing"].__setitem__("position_cutoff_hz", float("nan")), "processing.position_cutoff_hz"),
    (lambda c: c["estimation"].__setitem__("method", "magic"), "estimation.method"),
    (lambda c: c["model"].__setitem__("frobnicate", True), "model.frobnicate"),
    (lambda c: c["data"].__setitem__("sample_time", -1.0), "data.sample_time"),
])
def test_bad_config_is_refused_and_nothing_written(ur10_recording, tmp_path, mutate, field):
    cfg_path, _, _ = ur10_recording
    cfg = yaml.safe_load(cfg_path.read_text())
    cfg.setdefault("transmission", {})
    mutate(cfg)
    bad = _write(tmp_path, cfg)
    with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
        identify_config(load_config(str(bad)))
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, "-m", "figaroh_ros.cli", "identify", str(bad),
                           "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and field.split(".")[-1] in proc.stderr
    assert not out.exists()


def test_bad_recording_names_the_problem(ur10_recording, tmp_path):
    cfg_path, _, _ = ur10_recording
    cfg = yaml.safe_load(cfg_path.read_text())
    data = np.loadtxt(os.path.join(cfg["data"]["path"], "log.csv"), delimiter=",", skiprows=1)
    header = open(os.path.join(cfg["data"]["path"], "log.csv")).readline().strip()
    data[100, 3] = np.nan
    np.savetxt(tmp_path / "log.csv", data, delimiter=",", header=header, comments="")
    proc = subprocess.run([sys.executable, "-m", "figaroh_ros.cli", "identify", str(cfg_path),
                           "--data", str(tmp_path), "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "NaN" in proc.stderr and "row 100" in proc.stderr
    assert not (tmp_path / "out").exists()
    data[100, 3] = 0.0
    np.savetxt(tmp_path / "log.csv", data, delimiter=",", comments="",
               header=header.replace("elbow_joint_effort", "elbow_effort"))
    proc = subprocess.run([sys.executable, "-m", "figaroh_ros.cli", "identify", str(cfg_path),
                           "--data", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "elbow_joint_effort" in proc.stderr


def test_cli_physical_writes_a_consistent_urdf_and_covariance(ur10_recording, tmp_path):
    """physical.method lmi: the consistent standard parameters predict the hold-out as well
    as least squares, every link passes, and the URDF written beside ``covariance.yaml``
    reloads with exactly those inertias."""
    from figaroh_ros.identification.parameters import standard_parameters
    from figaroh_ros.model.robot import load_urdf_model
    cfg_path, phi_true, layout = ur10_recording
    raw = yaml.safe_load(cfg_path.read_text())
    raw["physical"] = {"method": "lmi"}
    raw["data"]["path"] = str(cfg_path.parent)
    p = tmp_path / "phys.yaml"
    p.write_text(yaml.safe_dump(raw))
    out = tmp_path / "out"
    proc, res = cli_identify(p, out)
    assert "essential parameters" in proc.stdout and "every link consistent" in proc.stdout
    ph = res["physical"]
    assert ph["consistent"] and ph["publishable"] and all(l["ok"] for l in ph["links"])
    val = np.array([res["validation_rmse"][j] for j in UR10_JOINTS])
    pval = np.array([ph["validation_rmse"][j] for j in UR10_JOINTS])
    nom = np.array([res["nominal_validation_rmse"][j] for j in UR10_JOINTS])
    assert np.sqrt(np.mean(pval ** 2)) <= 1.05 * np.sqrt(np.mean(val ** 2))
    assert np.sqrt(np.mean(pval ** 2)) < 0.5 * np.sqrt(np.mean(nom ** 2))
    cov = yaml.safe_load((out / "covariance.yaml").read_text())
    P = len(cov["standard_parameters"]["names"])
    C = np.array(cov["standard_parameters"]["covariance"])
    assert C.shape == (P, P) and np.all(np.linalg.eigvalsh(C) > 0)
    Cb = np.array(cov["base_parameters"]["covariance"])
    std = np.array([r["std"] for r in res["base_parameters"]])
    assert np.allclose(np.sqrt(np.diag(Cb)), std, rtol=1e-9)
    urdf = out / "ur10_sim_identified.urdf"
    robot = load_urdf_model(str(urdf), UR10_JOINTS)
    phi = np.array([r["value"] for r in ph["standard_parameters"]])
    got = standard_parameters(robot, layout)
    for cols in layout.inertial_cols.values():
        assert np.allclose(got[cols], phi[cols], rtol=1e-8, atol=1e-10)
    # what the data determine (the base combinations) agrees with the hidden truth as the
    # least-squares estimate does; the prior only holds what the data leave free
    result = identify_config(load_config(str(p)))
    z = (result.base.from_standard(phi) - result.base.from_standard(phi_true)) \
        / result.estimate.std
    assert np.mean(np.abs(z) < 3) > 0.85, np.round(z, 1)


def test_inconsistent_or_worse_model_is_not_published(ur10_recording):
    cfg_path, _, _ = ur10_recording
    cfg = load_config(str(cfg_path))
    cfg = cfg.model_copy(update={"physical": cfg.physical.model_copy(update={"method": "qp"})})
    result = identify_config(cfg)
    assert result.physical_publishable == (True, "")
    result.physical.checks[1].ok = False
    result.physical.checks[1].why = "mass -1 kg is not positive"
    ok, why = result.physical_publishable
    assert not ok and "is not physically consistent: mass -1 kg" in why
    result.physical.checks[1].ok = True
    held_out = result.physical_validation_rmse
    result.physical_validation_rmse = 2 * result.nominal_validation_rmse
    ok, why = result.physical_publishable
    assert not ok and "not better than the nominal" in why
    assert result.to_dict()["physical"]["not_published_because"] == why
    # without a held-out part there is nothing to check it against: not published
    result.physical_validation_rmse = None
    ok, why = result.physical_publishable
    assert not ok and "validation_fraction" in why
    result.physical_validation_rmse = held_out
    assert result.physical_publishable == (True, "")


def test_wall_mounted_robot_needs_its_gravity(tmp_path, ur10):
    """A UR10 on a wall (gravity along the base x axis): with ``robot.gravity`` the
    identification reaches the noise and finds the generalized base set (Tröbinger et al.: more
    parameters than upright); assuming the upright mount it cannot."""
    g_wall = [float(9.81 * np.sin(0.3)), 0.0, float(-9.81 * np.cos(0.3))]   # tilted 0.3 rad
    cfg = {
        "robot": {"name": "ur10_wall", "urdf": example_robot_urdf("ur_description/urdf/ur10_robot.urdf"),
                  "joints": UR10_JOINTS, "gravity": g_wall},
        "model": {"coulomb_model": "sign"},
        "data": {"format": "csv_table", "path": str(tmp_path), "table": "log.csv",
                 "time_column": "t"},
        "processing": {"position_cutoff_hz": 20.0, "decimation": 5, "min_velocity": 0.02},
        "estimation": {"method": "wls", "validation_fraction": 0.25, "cross_validation_folds": 0},
        "output": {"plots": False},
    }
    (tmp_path / "wall.yaml").write_text(yaml.safe_dump(cfg))
    full = load_config(str(tmp_path / "wall.yaml"))
    robot = robot_from_config(full)
    assert np.allclose(robot.model.gravity.linear, g_wall)
    drive = drive_options(full)
    layout = parameter_layout(robot, drive)
    phi = perturbed_parameters(robot, layout, seed=41)
    traj = fourier_trajectory(robot, 40.0, RATE, harmonics=5, base_freq_hz=0.1, seed=42)
    tau = measured_torques(robot, layout, drive, phi, traj, 0.3, seed=43)
    header = ["t"] + [f"{j}_position" for j in UR10_JOINTS] + [f"{j}_effort" for j in UR10_JOINTS]
    np.savetxt(tmp_path / "log.csv", np.column_stack([traj.t, traj.q, tau]), delimiter=",",
               header=",".join(header), comments="")
    wall = identify_config(full)
    cfg["robot"].pop("gravity")
    (tmp_path / "upright.yaml").write_text(yaml.safe_dump(cfg))
    upright = identify_config(load_config(str(tmp_path / "upright.yaml")))
    assert wall.base.size == upright.base.size + 2
    v_wall = np.sqrt(np.mean(wall.validation_rmse ** 2))
    v_up = np.sqrt(np.mean(upright.validation_rmse ** 2))
    assert v_wall < 0.2 and v_up > 3 * v_wall, (v_wall, v_up)
    bad = dict(cfg, robot=dict(cfg["robot"], gravity=[0.0, 9.81]))
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(bad))
    with pytest.raises(ConfigError, match="robot.gravity"):
        load_config(str(tmp_path / "bad.yaml"))

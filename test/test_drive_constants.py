"""Drive model per joint: ``drive.gear_ratios`` and
``drive.torque_constants`` (N.m/A at the motor) instead of one lumped
``drive.effort_gains``: ``K_j = N_j kt_j``, the one conversion of recorded efforts.

Truth: a simulated two-joint arm with hidden parameters and torque noise of known std,
whose recorded efforts are the motor currents ``tau_j / (N_j kt_j)`` with hidden gear
ratios (one reversed) and torque constants; plain, and with a coupled transmission in the
model (the coupling enters the regressor as with any gain).  Given ``N`` and ``kt`` the
identification predicts the held-out part at the noise floor (the hidden model's own RMSE
through the same equations); ``drive.effort_gains`` may repeat the product, not
contradict it; zero, negative or one-sided constants are refused naming field and joint."""
import os

import numpy as np
import pytest
import yaml
from conftest import ROOT
from test_driver_profile_identification import profile

from figaroh_ros.config.identification import load_config
from figaroh_ros.errors import ConfigError
from figaroh_ros.excitation.fourier import fourier_trajectory
from figaroh_ros.identification.parameters import DriveOptions, parameter_layout
from figaroh_ros.model.loading import load_model
from figaroh_ros.sim.dynamics import measured_torques, perturbed_parameters
from figaroh_ros.tasks import identify

URDF = os.path.join(ROOT, "test", "data", "two_dof.urdf")
JOINTS = ["joint1", "joint2"]
MODEL = {"viscous_friction": True, "coulomb_friction": True, "rotor_inertia": True,
         "torque_offset": True}
NOISE = 0.05                         # N.m
RATE = 200.0
GEAR = [101.0, -80.0]                # hidden; joint2's drive reports reversed
KT = [0.127, 0.0834]                 # hidden, N.m/A
K = [g * k for g, k in zip(GEAR, KT)]
COUPLING = [{"motor": "joint2", "joint": "joint1", "coefficient": 0.5}]


def write_config(folder, name, drive, coupling=()):
    raw = {"robot": {"name": "two_dof", "urdf": URDF, "joints": JOINTS}, "model": MODEL,
           "transmission": {"coupling": list(coupling)},
           "drive": drive,
           "data": {"format": "csv_pair", "path": str(folder), "positions": "q.csv",
                    "torques": "i.csv", "sample_time": 1.0 / RATE},
           "processing": {"position_cutoff_hz": 10.0, "decimation": 1, "min_velocity": 0.1},
           "estimation": {"method": "wls", "validation_fraction": 0.3,
                          "cross_validation_folds": 0},
           "output": {"plots": False}}
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(raw))
    return str(path)


def recording(folder, coupling, seed):
    """Positions and motor currents of the hidden arm (``coupling``: its transmission)."""
    os.makedirs(folder)
    robot = load_model(URDF, JOINTS, coupling=list(coupling) or None)
    drive = DriveOptions(**MODEL)
    layout = parameter_layout(robot, drive)
    phi = perturbed_parameters(robot, layout, seed=seed)
    traj = fourier_trajectory(robot, 24.0, RATE, harmonics=5, base_freq_hz=0.1,
                              amplitude=0.8, seed=seed + 1)
    tau = measured_torques(robot, layout, drive, phi, traj, NOISE, seed=seed + 2)
    for name, values in (("q.csv", traj.q), ("i.csv", tau / np.array(K))):
        np.savetxt(folder / name, values, delimiter=",", header=",".join(JOINTS),
                   comments="")
    return phi


@pytest.mark.parametrize("coupled", [False, True], ids=["plain", "coupled"])
def test_currents_with_gear_ratios_and_torque_constants_at_the_noise_floor(tmp_path,
                                                                            coupled):
    coupling = COUPLING if coupled else ()
    phi = recording(tmp_path / "rec", coupling, seed=81 if not coupled else 91)
    path = write_config(tmp_path / "rec", "constants",
                        {"gear_ratios": GEAR, "torque_constants": KT}, coupling)
    cfg = load_config(path)
    assert cfg.drive.effort_gains == pytest.approx(K, rel=1e-15)
    res = identify.identify_config(cfg)
    o = res.held_out
    err = o.Y - o.Wb @ res.base.from_standard(phi)
    truth = np.array([np.sqrt(np.mean(err[o.row_joint == j] ** 2)) for j in range(2)])
    held = np.asarray(res.validation_rmse)
    true_base = res.base.from_standard(phi)
    rel = np.abs(res.estimate.phi - true_base) / np.maximum(np.abs(true_base), 1e-3)
    print(f"{'coupled' if coupled else 'plain'}: held-out RMSE {held} N.m, the hidden "
          f"model's {truth}, noise {NOISE}; base parameters: median relative error "
          f"{np.median(rel):.2e}")
    assert np.all(held <= 1.05 * truth)
    assert np.all(truth <= 1.1 * NOISE)
    assert np.median(rel) < 0.05
    # the same recording read with the lumped gains: the same identification
    same = identify.identify_config(load_config(write_config(
        tmp_path / "rec", "lumped", {"effort_gains": K}, coupling)))
    np.testing.assert_allclose(same.estimate.phi, res.estimate.phi, rtol=1e-9, atol=1e-12)


def test_result_records_where_the_gains_come_from(tmp_path):
    recording(tmp_path / "rec", (), seed=81)
    path = write_config(tmp_path / "rec", "constants",
                        {"gear_ratios": GEAR, "torque_constants": KT})
    out = identify.run(path, out=str(tmp_path / "out"))
    with open(out.paths["result"]) as f:
        eff = yaml.safe_load(f)["effort"]
    assert eff["gains_from"] == "drive.gear_ratios x drive.torque_constants"
    assert eff["gains"] == pytest.approx(dict(zip(JOINTS, K)))
    assert eff["unit"] == "N.m"
    assert eff["drive_constants"] == {j: {"gear_ratio": g, "torque_constant": k}
                                      for j, g, k in zip(JOINTS, GEAR, KT)}


def _refused(tmp_path, drive, words, name="bad"):
    with pytest.raises(ConfigError, match=words):
        load_config(write_config(tmp_path, name, drive))


def test_both_forms_must_agree(tmp_path):
    ok = load_config(write_config(tmp_path, "both", {"gear_ratios": GEAR,
                                                     "torque_constants": KT,
                                                     "effort_gains": K}))
    assert ok.drive.effort_gains == pytest.approx(K, rel=1e-15)
    _refused(tmp_path, {"gear_ratios": GEAR, "torque_constants": KT,
                        "effort_gains": [K[0], -K[1]]},
             r"field 'drive\.effort_gains'.*drive\.gear_ratios x drive\.torque_constants"
             r".*joint2: 6\.672 vs -6\.672, got")


@pytest.mark.parametrize("drive, words", [
    ({"gear_ratios": [101.0, 0.0], "torque_constants": KT},
     r"field 'drive\.gear_ratios\[1\]'.*joint joint2: a gear ratio cannot be 0"),
    ({"gear_ratios": GEAR, "torque_constants": [0.0, 0.1]},
     r"field 'drive\.torque_constants\[0\]'.*joint joint1: a torque constant is > 0"),
    ({"gear_ratios": GEAR, "torque_constants": [0.1, -0.1]},
     r"field 'drive\.torque_constants\[1\]'.*joint joint2.*sign.*gear ratio"),
    ({"gear_ratios": [float("nan"), 1.0], "torque_constants": KT},
     r"field 'drive\.gear_ratios\[0\]'.*finite"),
    ({"gear_ratios": GEAR, "torque_constants": [float("inf"), 0.1]},
     r"field 'drive\.torque_constants\[0\]'.*finite"),
    ({"gear_ratios": GEAR}, r"field 'drive\.gear_ratios'.*drive\.torque_constants too"),
    ({"torque_constants": KT}, r"field 'drive\.torque_constants'.*drive\.gear_ratios too"),
    ({"gear_ratios": [1.0], "torque_constants": KT},
     r"field 'drive\.gear_ratios'.*expected 2 values"),
])
def test_bad_constants_are_refused_naming_field_and_joint(tmp_path, drive, words):
    _refused(tmp_path, drive, words)


def test_a_driver_profile_must_agree_with_the_constants(tmp_path):
    prof = profile(tmp_path, gains=[K[1], K[0]])          # controllers: joint2, joint1
    raw = yaml.safe_load(open(write_config(tmp_path, "p", {"gear_ratios": GEAR,
                                                            "torque_constants": KT})))
    raw["robot"]["driver"] = prof
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(raw))
    assert load_config(str(tmp_path / "p.yaml")).drive.effort_gains == \
        pytest.approx(K, rel=1e-12)
    raw["drive"]["gear_ratios"] = [GEAR[0], -GEAR[1]]
    (tmp_path / "p.yaml").write_text(yaml.safe_dump(raw))
    with pytest.raises(ConfigError, match=r"drive\.gear_ratios x drive\.torque_constants' "
                       r"and 'robot\.driver' disagree"):
        load_config(str(tmp_path / "p.yaml"))

"""``--reference-friction``: a published per-joint friction model given as numbers
(``io/reference_friction.py``).  Truths: Gaz et al. 2019's sigmoid computed by hand at
chosen velocities, and Table I of that paper as the data set's PROVENANCE.md copies it."""
from __future__ import annotations

import os
import re

import numpy as np
import pytest
from conftest import ROOT, SHARED

from figaroh_ros.errors import ConfigError
from figaroh_ros.io.reference_friction import read_reference_friction, sigmoid_friction
from figaroh_ros.tasks.reference_model_check import reference_friction_of

GAZ_FRICTION = os.path.join(ROOT, "config", "reference", "panda_gaz2019_friction.yaml")
PROVENANCE = os.path.join(SHARED, "data", "panda_gaz2019", "PROVENANCE.md")
JOINTS = [f"panda_joint{i}" for i in range(1, 8)]


def test_the_sigmoid_against_hand_computed_values():
    """phi1 = 0.5 N.m, phi2 = 10 s/rad, phi3 = 0.05 rad/s: with s(x) = 1 / (1 + e^-x),
    tau(0.1) = 0.5 (s(1.5) - s(0.5)) = 0.5 (0.8175744762 - 0.6224593312),
    tau(-0.2) = 0.5 (s(-1.5) - s(0.5)) = 0.5 (0.1824255238 - 0.6224593312),
    and far from rest phi1 (1 - s(0.5)) forwards, -phi1 s(0.5) backwards; zero at rest,
    without overflow at any velocity."""
    dq = np.array([0.0, 0.1, -0.2, 1e4, -1e4])
    with np.errstate(all="raise"):
        tau = sigmoid_friction(dq, 0.5, 10.0, 0.05)
    expected = [0.0, 0.0975575725, -0.2200169037, 0.1887703344, -0.3112296656]
    assert np.allclose(tau, expected, atol=1e-10)
    # phi3 = 0: odd in dq, 0.5 (s(1) - 1/2) at dq = 0.1
    assert np.allclose(sigmoid_friction([0.1, -0.1], 0.5, 10.0, 0.0),
                       [0.1155292893, -0.1155292893], atol=1e-10)


def test_the_shipped_file_is_table_1_of_gaz_2019():
    f = read_reference_friction(GAZ_FRICTION)
    assert f.model == "sigmoid" and "Gaz" in f.source and list(f.joints) == JOINTS
    if not os.path.isfile(PROVENANCE):
        pytest.skip("the Gaz 2019 data set is absent")
    text = open(PROVENANCE, encoding="utf-8").read()
    table = [[float(v) for v in re.search(rf"{name} = ([-0-9. ]+)", text).group(1).split()]
             for name in ("phi1", "phi2", "phi3")]
    assert np.array_equal(f.for_joints(JOINTS), np.array(table))


def test_each_rows_friction_is_its_joints():
    f = read_reference_friction(GAZ_FRICTION)
    row_joint = np.array([2, 0, 6, 2])
    v = np.array([0.3, -0.4, 1.0, 0.0])
    tau = f.torques(JOINTS, row_joint, v)
    for t, j, dq in zip(tau, row_joint, v):
        p = f.joints[JOINTS[j]]
        assert t == pytest.approx(p[0] / (1 + np.exp(-p[1] * (dq + p[2])))
                                  - p[0] / (1 + np.exp(-p[1] * p[2])), abs=1e-12)
    assert tau[3] == 0.0


@pytest.mark.parametrize("text, words", [
    ("model: tanh\njoints: {a: {phi1: 1.0, phi2: 2.0, phi3: 0.0}}\n", ["model", "sigmoid"]),
    ("model: sigmoid\njoints: {a: {phi1: 1.0, phi2: 0.0, phi3: 0.0}}\n",
     ["joints.a.phi2", "greater than 0"]),
    ("model: sigmoid\njoints: {a: {phi1: 1.0, phi3: 0.0}}\n", ["joints.a.phi2", "required"]),
    ("model: sigmoid\njoints: {a: {phi1: .nan, phi2: 1.0, phi3: 0.0}}\n", ["joints.a.phi1"]),
    ("model: sigmoid\njoints: {a: {phi1: '1', phi2: 1.0, phi3: 0.0}}\n", ["joints.a.phi1"]),
    ("model: sigmoid\njoints: {}\n", ["joints"]),
    ("model: sigmoid\nfriction: 1\njoints: {a: {phi1: 1.0, phi2: 1.0, phi3: 0.0}}\n",
     ["unknown", "friction"]),
])
def test_a_bad_file_is_refused_naming_it_and_the_field(tmp_path, text, words):
    path = tmp_path / "friction.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as exc:
        read_reference_friction(str(path))
    msg = str(exc.value)
    assert msg.startswith(f"--reference-friction {path}:"), msg
    assert all(w in msg for w in words), msg


def test_joints_other_than_the_fitted_ones_are_refused_by_name():
    f = read_reference_friction(GAZ_FRICTION)
    with pytest.raises(ConfigError, match=r"missing \['j8'\]; not fitted \['panda_joint7'\]"):
        f.for_joints(JOINTS[:6] + ["j8"])


def test_friction_without_a_reference_model_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="give --reference-model too"):
        reference_friction_of(None, GAZ_FRICTION)
    with pytest.raises(ConfigError, match="no such file"):
        reference_friction_of("model.urdf", str(tmp_path / "absent.yaml"))
    assert reference_friction_of("model.urdf", None) is None


def test_a_reference_with_the_true_sigmoid_friction_scores_at_the_noise_floor(tmp_path):
    """A simulated two-joint arm whose friction is a known sigmoid per joint (and no other
    drive term), torque noise 0.05 N.m: ``identify --reference-model`` with its true rigid
    parameters (a table) and ``--reference-friction`` with its true sigmoid predicts the
    held-out part at the noise floor; the table alone misses the friction by far; a file
    naming other joints is refused with nothing written."""
    from test_reference_table import DRIVE, JOINTS, RATE, URDF, write_config

    from figaroh_ros.excitation.fourier import fourier_trajectory
    from figaroh_ros.identification.parameters import parameter_layout
    from figaroh_ros.io.reference_model import write_parameter_table
    from figaroh_ros.model.robot import load_urdf_model
    from figaroh_ros.sim.dynamics import measured_torques, perturbed_parameters
    from figaroh_ros.tasks import identify

    robot = load_urdf_model(URDF, JOINTS)
    layout = parameter_layout(robot, DRIVE)
    phi = perturbed_parameters(robot, layout, seed=91)
    for name in layout.names:                 # no drive term but the sigmoid
        if not name.startswith(("m", "I")) or name.startswith("Ia"):
            phi[layout.index(name)] = 0.0
    traj = fourier_trajectory(robot, 24.0, RATE, harmonics=5, base_freq_hz=0.1,
                              amplitude=0.8, seed=92)
    sig = {"joint1": (0.8, 8.0, 0.03), "joint2": (0.5, 12.0, -0.02)}
    tau = measured_torques(robot, layout, DRIVE, phi, traj, 0.05, seed=93)
    tau += np.column_stack([sigmoid_friction(traj.dq[:, j], *sig[name])
                            for j, name in enumerate(JOINTS)])
    for name, values in (("q.csv", traj.q), ("tau.csv", tau)):
        np.savetxt(tmp_path / name, values, delimiter=",", header=",".join(JOINTS),
                   comments="")
    write_parameter_table(str(tmp_path / "rigid.csv"), robot, layout, phi)
    friction = tmp_path / "friction.yaml"
    friction.write_text("model: sigmoid\nsource: simulated\njoints:\n" + "".join(
        f"  {j}: {{phi1: {p[0]}, phi2: {p[1]}, phi3: {p[2]}}}\n" for j, p in sig.items()))
    config = write_config(tmp_path)
    table = str(tmp_path / "rigid.csv")
    both = identify.run(config, out=str(tmp_path / "both"), reference_model=table,
                        reference_friction=str(friction)).summary["reference_model"]
    alone = identify.run(config, out=str(tmp_path / "alone"),
                         reference_model=table).summary["reference_model"]
    rmse = np.array([both["validation_rmse"][j] for j in JOINTS])
    assert np.all(rmse < 1.15 * 0.05), rmse
    assert all(alone["validation_rmse"][j] > 4 * 0.05 for j in JOINTS), alone
    assert both["friction"]["joints"]["joint2"] == dict(zip(("phi1", "phi2", "phi3"),
                                                             sig["joint2"]))
    assert both["held_out_rows"] == alone["held_out_rows"]
    other = tmp_path / "other.yaml"
    other.write_text(friction.read_text().replace("joint2:", "elbow:"))
    with pytest.raises(ConfigError, match=r"missing \['joint2'\]; not fitted \['elbow'\]"):
        identify.run(config, out=str(tmp_path / "refused"), reference_model=table,
                     reference_friction=str(other))
    assert not (tmp_path / "refused").exists()

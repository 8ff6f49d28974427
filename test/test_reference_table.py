"""``identify --reference-model TABLE``: a published standard-parameter table (inertias,
frictions, rotor inertias per link and joint) scored on the same held-out data as ours,
in the ``reference_model`` section of result.yaml like a URDF.

Truth: a simulated two-joint arm with hidden parameters and torque noise of known std.
The table written from the hidden parameters predicts the held-out part at the noise
floor (the true model's own RMSE, computed directly through the same equations); the
URDF's nominal parameters written as a table (drive terms declared zero) score exactly as
the URDF itself; the same table in the long CSV form (names in our or the ``--reference``
notation) and in YAML reads to the same vector; a bad table is refused naming what is
missing, unknown or not a number, before anything is written."""
import os

import numpy as np
import pytest
import yaml
from conftest import ROOT

from figaroh_ros.config.identification import load_config
from figaroh_ros.errors import ConfigError, DataError
from figaroh_ros.excitation.fourier import fourier_trajectory
from figaroh_ros.identification.parameters import (
    DriveOptions, parameter_layout, standard_parameters
)
from figaroh_ros.io.reference_model import (
    read_parameter_table, table_standard_parameters, write_parameter_table
)
from figaroh_ros.model.robot import load_urdf_model
from figaroh_ros.sim.dynamics import measured_torques, perturbed_parameters
from figaroh_ros.tasks import identify

URDF = os.path.join(ROOT, "test", "data", "two_dof.urdf")
JOINTS = ["joint1", "joint2"]
MODEL = {"viscous_friction": True, "coulomb_friction": True, "rotor_inertia": True,
         "torque_offset": True}
DRIVE = DriveOptions(**MODEL)
NOISE = 0.05                       # N.m
RATE = 200.0


def write_config(root, **estimation):
    raw = {"robot": {"name": "two_dof", "urdf": URDF, "joints": JOINTS}, "model": MODEL,
           "data": {"format": "csv_pair", "path": str(root), "positions": "q.csv",
                    "torques": "tau.csv", "sample_time": 1.0 / RATE},
           "processing": {"position_cutoff_hz": 10.0, "decimation": 1, "min_velocity": 0.1},
           "estimation": {"method": "wls", "validation_fraction": 0.3,
                          "cross_validation_folds": 0, **estimation},
           "output": {"plots": False}}
    path = root / "identification.yaml"
    path.write_text(yaml.safe_dump(raw))
    return str(path)


@pytest.fixture(scope="module")
def arm(tmp_path_factory):
    root = tmp_path_factory.mktemp("reference_table")
    robot = load_urdf_model(URDF, JOINTS)
    layout = parameter_layout(robot, DRIVE)
    phi = perturbed_parameters(robot, layout, seed=71)
    traj = fourier_trajectory(robot, 24.0, RATE, harmonics=5, base_freq_hz=0.1,
                              amplitude=0.8, seed=72)
    tau = measured_torques(robot, layout, DRIVE, phi, traj, NOISE, seed=73)
    for name, values in (("q.csv", traj.q), ("tau.csv", tau)):
        np.savetxt(root / name, values, delimiter=",", header=",".join(JOINTS), comments="")
    write_parameter_table(str(root / "true.csv"), robot, layout, phi)
    nominal = standard_parameters(robot, layout)
    write_parameter_table(str(root / "nominal.csv"), robot, layout, nominal)
    # the same nominal model, its drive terms left out and declared zero
    (root / "nominal_zero.csv").write_text(
        "joint,m,mx,my,mz,Ixx,Ixy,Ixz,Iyy,Iyz,Izz,zero\n" + "".join(
            f"{j},{','.join(repr(float(v)) for v in nominal[layout.inertial_cols[k + 1]])},"
            "Ia fv fs off\n" for k, j in enumerate(JOINTS)))
    config = write_config(root)
    out = identify.run(config, out=str(root / "true_out"), reference_model=str(root / "true.csv"))
    return {"root": root, "robot": robot, "layout": layout, "phi": phi, "config": config,
            "true_run": out, "nominal": nominal}


def test_the_true_table_scores_at_the_noise_floor(arm):
    res = identify.identify_config(load_config(arm["config"]))
    o = res.held_out
    err = o.Y - o.Wb @ res.base.from_standard(arm["phi"])
    truth = np.array([np.sqrt(np.mean(err[o.row_joint == j] ** 2)) for j in range(2)])
    with open(arm["true_run"].paths["result"]) as f:
        written = yaml.safe_load(f)["reference_model"]
    ref = np.array([written["validation_rmse"][j] for j in JOINTS])
    ours = np.array([arm["true_run"].summary["validation_rmse"][j]
                     for j in JOINTS])
    print(f"held-out RMSE: true table {ref}, true model directly {truth}, ours {ours}, "
          f"noise {NOISE}")
    assert written["path"] == str(arm["root"] / "true.csv")
    assert np.all(ref <= 1.05 * truth)
    np.testing.assert_allclose(ref, truth, rtol=1e-6)        # the same model, rounded 1e-9
    assert np.all(truth <= 1.1 * NOISE)
    assert set(written["validation_relative_error"]) == set(JOINTS) | {"stacked"}


def test_the_nominal_table_scores_like_the_nominal_urdf(arm, tmp_path):
    urdf = identify.run(arm["config"], out=str(tmp_path / "u"), reference_model=URDF)
    u = urdf.summary["reference_model"]["validation_relative_error"]
    for name in ("nominal.csv", "nominal_zero.csv"):
        t = identify.run(arm["config"], out=str(tmp_path / name),
                         reference_model=str(arm["root"] / name))
        got = t.summary["reference_model"]["validation_relative_error"]
        for key in u:
            assert abs(got[key] - u[key]) <= 1e-9, (name, key, got[key], u[key])
    print(f"nominal URDF / table held-out relative error: {u}")


def test_long_csv_and_yaml_forms_read_to_the_same_vector(arm, tmp_path):
    robot, layout, phi = arm["robot"], arm["layout"], arm["phi"]
    notation = {"Ixx1": "J1xx", "mx2": "c2x m2", "fv1": "fv,1", "fs2": "fc,2", "off1": "fo,1"}
    (tmp_path / "long.csv").write_text("parameter,value\n" + "".join(   # fv,1 quoted
        f'"{notation.get(n, n)}",{v!r}\n' for n, v in zip(layout.names, phi.tolist())))
    got = table_standard_parameters(robot, layout, read_parameter_table(str(tmp_path / "long.csv")))
    np.testing.assert_array_equal(got, phi)
    joints = {j: {n[:-1]: float(phi[layout.index(n)]) for n in layout.names
                  if n.endswith(str(k + 1))} for k, j in enumerate(JOINTS)}
    joints["joint2"].pop("off")
    joints["joint2"]["zero"] = ["off"]
    (tmp_path / "t.yaml").write_text(yaml.safe_dump({"joints": joints}))
    want = phi.copy()
    want[layout.index("off2")] = 0.0
    got = table_standard_parameters(robot, layout, read_parameter_table(str(tmp_path / "t.yaml")))
    np.testing.assert_array_equal(got, want)
    # long form: wildcard rows declare the rest of a kind (or all) zero
    (tmp_path / "wild.csv").write_text("parameter,value\nm1,2.0\nIa*,0\n*,0\n")
    got = table_standard_parameters(robot, layout, read_parameter_table(str(tmp_path / "wild.csv")))
    assert got[layout.index("m1")] == 2.0 and np.count_nonzero(got) == 1


@pytest.mark.parametrize("text, words", [
    ("joint,m,mx,my,mz,Ixx,Ixy,Ixz,Iyy,Iyz,Izz,Ia,fv,fs\njoint1" + ",1" * 13 + "\njoint2"
     + ",1" * 13 + "\n", r"2 parameters of the model missing: off1, off2 .*'zero' column"),
    ("joint,m,Izz,Ia,fv,fs,off,mass,zero\njoint1,1,1,1,1,1,1,1,all\n",
     r"unknown columns \['mass'\]"),
    ("joint,m,Izz,zero\njoint1,1,1,all\nelbow,1,1,all\n",
     r"joint 'elbow' is not a joint of the model .*joint1"),
    ("joint,m,Izz,zero\njoint1,1,nan,all\njoint2,1,1,all\n",
     r"row 2 \(joint joint1\), column 'Izz': 'nan' is not a finite number"),
    ("joint,m,Izz,zero\njoint1,1,1,all\njoint2,inf,1,all\n",
     r"row 3 \(joint joint2\), column 'm': 'inf' is not a finite number"),
    ("joint,m,Izz,zero\njoint1,1,abc,all\n", r"row 2 \(joint joint1\), column 'Izz': "
     r"expected a number, got 'abc'"),
    ("joint,m,zero\njoint1,1,Ia mass\n", r"row 2 \(joint joint1\), column 'zero': "
     r"unknown parameter kinds \['mass'\]"),
    ("parameter,value\nm1,1\nIzz7,1\n*,0\n", r"'Izz7' is not a standard parameter"),
    ("parameter,value\nm1,1\nwhat1,1\n*,0\n", r"'what1' is not a standard parameter"),
    ("parameter,value\nm1,1\nm1 + m2,1\n*,0\n", r"row 3, column 'parameter': 'm1 \+ m2' "
     "is not one standard parameter"),
    ("parameter,value\nm1,1e999\n*,0\n", r"row 2 \(m1\), column 'value'.*not a finite"),
    ("parameter,value\nm1,1\nIa*,1\n", r"wildcard row"),
    ("joint,fva,zero\njoint1,0.5,all\njoint2,,all\n", r"1 parameters given that the "
     r"model does not have.*fva1"),
    ("name,value\nm1,1\n", r"expected a 'joint' column .* 'parameter, value'"),
])
def test_a_bad_table_is_refused_naming_what(arm, tmp_path, text, words):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(DataError, match=words):
        table_standard_parameters(arm["robot"], arm["layout"], read_parameter_table(str(path)))


def test_through_identify_a_bad_table_is_refused_and_nothing_written(arm, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("joint,m,Izz,zero\njoint1,1,nan,all\njoint2,1,1,all\n")
    with pytest.raises(ConfigError, match=r"--reference-model .*bad\.csv.*column 'Izz'"):
        identify.run(arm["config"], out=str(tmp_path / "r"), reference_model=str(bad))
    bad.write_text("joint,m,Izz\njoint1,1,1\njoint2,1,1\n")
    with pytest.raises(ConfigError, match=r"--reference-model .*missing: mx1"):
        identify.run(arm["config"], out=str(tmp_path / "r"), reference_model=str(bad))
    assert not os.path.exists(tmp_path / "r")

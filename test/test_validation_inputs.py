"""Bad input refused with an error naming the field, the file or the column:
a validation recording (``--validate``) of other joints than the config's, as a CSV pair,
a CSV table or a bag; a singular coupling matrix, a zero gear ratio or effort gain in the
config.  And ``--validate`` itself through the command line on a simulated two-joint arm
with hidden parameters: the other recording predicted at its noise floor."""
import os
import shutil

import numpy as np
import pytest
import test_bag_gaps
import yaml
from conftest import cli_in_process
from test_bag_gaps import DRIVE, JOINTS, NOISE, RATE, URDF, write_bag

from figaroh_ros.config.identification import load_config
from figaroh_ros.errors import ConfigError, DataError, ModelError
from figaroh_ros.excitation.fourier import fourier_trajectory
from figaroh_ros.identification.parameters import parameter_layout
from figaroh_ros.model.loading import load_model
from figaroh_ros.model.robot import load_urdf_model
from figaroh_ros.sim.dynamics import measured_torques, perturbed_parameters
from figaroh_ros.io import bag_index
from figaroh_ros.io.recording import STORAGE_SUFFIXES, validation_config
from figaroh_ros.tasks.identify import identify_config

OTHER = ["arm_a", "arm_b"]          # same count as JOINTS, other names
MODEL = {"viscous_friction": True, "coulomb_friction": True, "rotor_inertia": False,
         "torque_offset": True}


def write_pair(folder, traj, tau, names, comments=""):
    """A csv_pair recording: q.csv and tau.csv, one column per name."""
    os.makedirs(folder)
    for name, values in (("q.csv", traj.q), ("tau.csv", tau)):
        np.savetxt(folder / name, values, delimiter=",", header=",".join(names),
                   comments=comments)
    return str(folder)


def write_table(folder, traj, tau, names):
    """A csv_table recording: log.csv with t, <joint>_position, <joint>_effort."""
    os.makedirs(folder)
    header = ["t"] + [f"{j}_position" for j in names] + [f"{j}_effort" for j in names]
    np.savetxt(folder / "log.csv", np.column_stack([traj.t, traj.q, tau]), delimiter=",",
               header=",".join(header), comments="")
    return str(folder)


def write_config(path, data, **sections):
    """An identification config of the two-joint arm reading ``data``."""
    path.write_text(yaml.safe_dump({
        "robot": {"name": "two_dof", "urdf": URDF, "joints": JOINTS}, "model": MODEL,
        "data": data,
        "processing": {"position_cutoff_hz": 10.0, "decimation": 1, "min_velocity": 0.1},
        "estimation": {"method": "wls", "validation_fraction": 0.0,
                       "cross_validation_folds": 0},
        "output": {"plots": False}, **sections}))
    return str(path)


@pytest.fixture(scope="module")
def rec(tmp_path_factory):
    """Two recordings of one hidden arm (fitted, validated), each in the config's format
    and with other joints' names; the configs of the fitted one."""
    root = tmp_path_factory.mktemp("validation_inputs")
    robot = load_urdf_model(URDF, JOINTS)
    layout = parameter_layout(robot, DRIVE)
    phi = perturbed_parameters(robot, layout, seed=41)
    runs = []
    for seed in (42, 43):
        traj = fourier_trajectory(robot, 20.0, RATE, harmonics=5, base_freq_hz=0.1,
                                  amplitude=0.8, seed=seed)
        runs.append((traj, measured_torques(robot, layout, DRIVE, phi, traj, NOISE,
                                            seed=seed + 10)))
    (fit_t, fit_tau), (val_t, val_tau) = runs
    r = {"root": root,
         "fit": write_pair(root / "fit", fit_t, fit_tau, JOINTS),
         "valid": write_pair(root / "valid", val_t, val_tau, JOINTS, comments="# "),
         "other": write_pair(root / "other", val_t, val_tau, OTHER),
         "swapped": write_pair(root / "swapped", val_t, val_tau, JOINTS[::-1]),
         "table_fit": write_table(root / "table_fit", fit_t, fit_tau, JOINTS),
         "table_other": write_table(root / "table_other", val_t, val_tau, OTHER),
         "bag": write_bag(root / "bag", val_t, val_tau),
         "bag_db3": write_bag(root / "bag_db3", val_t, val_tau, storage="sqlite3")}
    test_bag_gaps.JOINTS = OTHER       # write_bag names the joints of this module global
    try:
        r["bag_other"] = write_bag(root / "bag_other", val_t, val_tau)
    finally:
        test_bag_gaps.JOINTS = JOINTS
    r["pair_cfg"] = write_config(root / "pair.yaml", {
        "format": "csv_pair", "path": r["fit"], "positions": "q.csv", "torques": "tau.csv",
        "sample_time": 1.0 / RATE, "joint_topic": "/joint_states",
        "torque_topic": "/joint_torques", "events_topic": ""})
    r["table_cfg"] = write_config(root / "table.yaml", {
        "format": "csv_table", "path": r["table_fit"], "table": "log.csv",
        "time_column": "t"})
    return r


def _validate(cfg_path, other):
    return identify_config(load_config(cfg_path), validation=other)


def test_a_pair_of_other_joints_is_refused_naming_file_and_columns(rec):
    with pytest.raises(DataError) as err:
        _validate(rec["pair_cfg"], rec["other"])
    msg = str(err.value)
    assert msg.startswith(f"validation recording {rec['other']}")
    assert os.path.join(rec["other"], "q.csv") in msg
    assert str(JOINTS) in msg and "missing" in msg and str(OTHER) in msg and "unexpected" in msg
    with pytest.raises(DataError, match=r"columns \['joint2', 'joint1'\] in another order"):
        _validate(rec["pair_cfg"], rec["swapped"])


def test_a_table_of_other_joints_is_refused_naming_the_column(rec):
    with pytest.raises(DataError, match=r"validation recording .*table_other.*log\.csv: no "
                                        r"column 'joint1_position'"):
        _validate(rec["table_cfg"], os.path.join(rec["table_other"], "log.csv"))


def test_a_bag_of_other_joints_is_refused_naming_the_joints(rec):
    with pytest.raises(DataError, match=r"validation recording .*bag_other.*joints "
                                        r"\['joint1', 'joint2'\] missing from '/joint_states'"):
        _validate(rec["pair_cfg"], rec["bag_other"])
    # the same recording with the config's joints is predicted at the noise floor
    res = _validate(rec["pair_cfg"], rec["bag"])
    assert np.all(res.validation_rmse <= 1.15 * NOISE), res.validation_rmse


@pytest.mark.parametrize("bag,suffix", [("bag", ".mcap"), ("bag_db3", ".db3")])
def test_a_bag_as_published_is_read_as_a_bag(rec, tmp_path, bag, suffix):
    """A validation bag as published, its storage file alone (no metadata.yaml): its
    folder or the file itself is read as a bag, the prediction that of the indexed bag;
    the validation recording is a copy of the config, which stays as it was."""
    storage = [f for f in os.listdir(rec[bag]) if f.endswith(suffix)]
    assert len(storage) == 1 and os.path.isfile(os.path.join(rec[bag], "metadata.yaml"))
    bare = tmp_path / "bare"
    bare.mkdir()
    shutil.copy(os.path.join(rec[bag], storage[0]), bare / f"recording{suffix}")
    indexed = _validate(rec["pair_cfg"], rec[bag])
    cfg = load_config(rec["pair_cfg"])
    for other in (str(bare), str(bare / f"recording{suffix}")):
        copy = validation_config(cfg, other)
        assert (copy.data.format, copy.data.path, copy.data.rows) == ("bag", other, None)
        assert copy.model.model_dump() == cfg.model.model_dump()
        res = _validate(rec["pair_cfg"], other)
        np.testing.assert_allclose(res.validation_rmse, indexed.validation_rmse, rtol=1e-9)
    assert (cfg.data.format, cfg.data.path) == ("csv_pair", rec["fit"])
    log = os.path.join(rec["table_fit"], "log.csv")
    assert validation_config(cfg, log).data.format == "csv_pair"     # a CSV file is no bag
    assert set(STORAGE_SUFFIXES) == set(bag_index.STORAGES)


def _cli(*args):
    return cli_in_process("identify", *args)


def test_cli_validate_writes_the_relative_error_at_the_noise_floor(rec, tmp_path):
    out = tmp_path / "out"
    proc = _cli(rec["pair_cfg"], "--validate", rec["valid"], "--out", out)
    assert proc.returncode == 0, proc.stderr
    res = yaml.safe_load((out / "result.yaml").read_text())
    rel, nominal = res["validation_relative_error"], res["nominal_validation_relative_error"]
    assert set(JOINTS) <= set(rel) and all(0 < rel[j] < nominal[j] for j in JOINTS)
    rmse = np.array([res["validation_rmse"][j] for j in JOINTS])
    assert np.all(rmse <= 1.15 * NOISE), rmse          # the noise is the floor
    assert "hold-out relative error (least-squares estimate)" in proc.stdout


def test_cli_bad_validation_recording_exits_2_and_writes_nothing(rec, tmp_path):
    out = tmp_path / "out"
    proc = _cli(rec["pair_cfg"], "--validate", rec["other"], "--out", out)
    assert proc.returncode == 2
    assert os.path.join(rec["other"], "q.csv") in proc.stderr and "arm_a" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not out.exists()


@pytest.fixture()
def raw(rec):
    """The pair config as YAML data, to change."""
    return yaml.safe_load(open(rec["pair_cfg"]).read())


def _load(tmp_path, raw):
    """``raw`` written to a file and loaded."""
    path = tmp_path / "changed.yaml"
    path.write_text(yaml.safe_dump(raw))
    return load_config(str(path))


def test_a_singular_coupling_is_refused_by_the_config_loader(tmp_path, raw):
    # motor 1 turns with joint 2 and motor 2 with joint 1, both fully: K = [[1, 1], [1, 1]]
    coupling = [{"motor": "joint1", "joint": "joint2", "coefficient": 1.0},
                {"motor": "joint2", "joint": "joint1", "coefficient": 1.0}]
    raw["transmission"] = {"coupling": coupling}
    with pytest.raises(ConfigError, match=r"field 'transmission\.coupling': the motor-to-joint "
                                          r"matrix K is singular \(determinant 0, rank 1 of 2\)"):
        _load(tmp_path, raw)
    # the model's own check, the same function and words
    with pytest.raises(ModelError, match=r"singular \(determinant 0, rank 1 of 2\)"):
        load_model(URDF, JOINTS, coupling=coupling)
    raw["transmission"]["coupling"][1]["coefficient"] = 0.5          # det 0.5: accepted
    assert _load(tmp_path, raw).transmission.coupling[1].coefficient == 0.5


@pytest.mark.parametrize("section,field,values", [
    ("transmission", "gear_ratios", [10.0, 0.0]),
    ("drive", "effort_gains", [0.0, 1.0]),
])
def test_a_zero_ratio_or_gain_is_refused_naming_the_field(tmp_path, raw, section, field,
                                                          values):
    raw[section] = {field: values}
    with pytest.raises(ConfigError, match=rf"field '{section}\.{field}': .* cannot be 0"):
        _load(tmp_path, raw)


def test_negative_effort_gains_are_accepted(tmp_path, raw):
    """Signed on purpose: a drive may report its effort with the opposite sign (TIAGo)."""
    raw["drive"] = {"effort_gains": [-1.0 / 7, 1.0 / 18]}
    assert _load(tmp_path, raw).drive.effort_gains == [-1.0 / 7, 1.0 / 18]

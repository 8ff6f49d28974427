"""Recordings that hold nothing to fit are refused by name with exit code 2 and nothing
written: an identification recording in which no joint moves (every position constant,
or all zero; as a bag or a table, as the training or the validation recording), a
posture file of only zeros, or of one posture repeated.  The real recordings they were
made from still go through."""
from __future__ import annotations

import csv
import os

import numpy as np
import pytest
import yaml
from conftest import ROOT, cli_in_process
from hypothesis import given, settings
from hypothesis import strategies as st
from rosbags.rosbag2 import Writer

from figaroh_ros.errors import DataError
from figaroh_ros.io.bags import typestore
from figaroh_ros.io.degenerate import refuse_degenerate_postures, refuse_still_recording
from test_bag_as_published import JS, joint_state

DATA = os.environ["FIGAROH_DATA"]
PANDA_CONFIG = os.path.join(ROOT, "config", "panda_unisa.yaml")
UR10_CONFIG = os.path.join(ROOT, "config", "ur10_calibration.yaml")
FER = [f"fer_joint{i}" for i in range(1, 8)]


def still_bag(folder, positions: np.ndarray, n: int = 300):
    """A bare bag of the Panda (fer_ names) holding ``positions`` for ``n`` samples at 30
    Hz with efforts that vary (a drive that is switched on but does not move)."""
    store = typestore()
    with Writer(folder, version=8) as w:
        conn = w.add_connection("/joint_states", JS, typestore=store)
        for k in range(n):
            t = k * 33_333_333
            w.write(conn, t, joint_state(store, t, FER, positions,
                                         np.sin(np.arange(7) + 0.01 * k)))
    os.remove(folder / "metadata.yaml")
    return folder


@pytest.mark.parametrize("value, how", [(0.0, "every position is 0"),
                                        (0.3, "every joint keeps one position")])
def test_a_bag_in_which_no_joint_moves_is_refused(tmp_path, value, how):
    bag = still_bag(tmp_path / "bag", np.full(7, value))
    out = tmp_path / "out"
    proc = cli_in_process("identify", PANDA_CONFIG, "--bag", bag, "--out", out)
    assert proc.returncode == 2, proc.stderr
    assert f"bag {bag}: no joint moves ({how}" in proc.stderr
    assert not out.exists()


def test_a_still_validation_recording_is_refused(tmp_path):
    bag = still_bag(tmp_path / "bag", np.zeros(7))
    out = tmp_path / "out"
    proc = cli_in_process("identify", PANDA_CONFIG, "--bag", os.path.join(DATA, "panda_unisa"),
                          "--validate", bag, "--out", out)
    assert proc.returncode == 2
    assert f"validation recording {bag}: bag {bag}: no joint moves" in proc.stderr
    assert not out.exists()


def test_a_still_table_is_refused(tmp_path):
    """The Gaz 2019 table with its positions replaced by zeros (torques kept)."""
    src = os.path.join(DATA, "panda_gaz2019", "trajectory_1.csv")
    with open(src) as f:
        rows = [next(f) for _ in range(2001)]
    header = rows[0].strip().split(",")
    table = np.loadtxt(rows[1:], delimiter=",")
    table[:, [i for i, h in enumerate(header) if h.endswith("_position")]] = 0.0
    np.savetxt(tmp_path / "still.csv", table, delimiter=",", header=",".join(header),
               comments="")
    cfg = yaml.safe_load(open(os.path.join(ROOT, "config", "panda_gaz2019.yaml")))
    cfg["data"].update(path=str(tmp_path), table="still.csv")
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
    proc = cli_in_process("identify", tmp_path / "c.yaml", "--out", tmp_path / "out")
    assert proc.returncode == 2
    assert f"{tmp_path / 'still.csv'}: no joint moves (every position is 0" in proc.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("given", ["panda_unisa", "panda_unisa/panda_exciting_trajectory.db3"])
def test_the_published_bag_still_identifies(tmp_path, given):
    """The moving recording these were made from, as its folder or its storage file (with
    the config's plain fit: no friction-model search, no physical estimate): exit 0,
    held-out errors printed per joint beside the nominal model's."""
    cfg = yaml.safe_load(open(PANDA_CONFIG))
    cfg["model"].pop("friction_models", None)
    cfg["physical"] = {"method": "none"}
    (tmp_path / "plain.yaml").write_text(yaml.safe_dump(cfg))
    proc = cli_in_process("identify", tmp_path / "plain.yaml", "--bag",
                          os.path.join(DATA, given), "--out", tmp_path / "out")
    assert proc.returncode == 0, proc.stderr
    line = next(x for x in proc.stdout.splitlines()
                if x.startswith("hold-out relative error (least-squares estimate)"))
    assert all(f"panda_joint{i} " in line for i in range(1, 8)) and "stacked" in line
    result = yaml.safe_load((tmp_path / "out" / "result.yaml").read_text())
    assert result["bag"]["written_by"] == "unknown"


def _postures(path, rows):
    with open(os.path.join(DATA, "ur10", "calibration.csv")) as f:
        header = next(csv.reader(f))
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows([header] + rows)


@pytest.mark.parametrize("kind", ["zeros", "one posture repeated", "zero measurements"])
def test_a_degenerate_posture_file_is_refused(tmp_path, kind):
    with open(os.path.join(DATA, "ur10", "calibration.csv")) as f:
        real = [r for r in csv.reader(f)][1:]
    rows = {"zeros": [["0"] * len(real[0]) for _ in real],
            "one posture repeated": [r[:6] + real[0][6:] for r in real],
            "zero measurements": [["0"] * 6 + r[6:] for r in real]}[kind]
    _postures(tmp_path / "p.csv", rows)
    out = tmp_path / "out"
    proc = cli_in_process("calibrate", UR10_CONFIG, "--data", tmp_path / "p.csv",
                          "--out", out)
    assert proc.returncode == 2, proc.stdout
    words = {"zeros": "every value is 0", "one posture repeated": "all 23 postures have "
             "the same joint positions", "zero measurements": "every measurement is 0"}
    assert f"{tmp_path / 'p.csv'}: {words[kind]}" in proc.stderr
    assert not out.exists()


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 50), joints=st.integers(1, 8),
       level=st.floats(-10, 10, allow_nan=False), moved=st.integers(-1, 7),
       step=st.floats(2e-6, 1.0))
def test_still_means_no_joint_spans_more_than_the_threshold(n, joints, level, moved, step):
    """A recording is refused exactly when no joint's positions span more than 1e-6."""
    q = np.full((n, joints), level)
    moves = 0 <= moved < joints and n >= 2
    if moves:
        q[-1, moved] += step
    names = [f"j{i}" for i in range(joints)]
    if moves:
        refuse_still_recording(q, names, "rec")
    else:
        with pytest.raises(DataError, match="rec: no joint moves"):
            refuse_still_recording(q, names, "rec")


def test_held_out_postures_may_repeat_but_not_be_zeros():
    Q, Y = np.ones((3, 6)), np.ones((3, 6))
    refuse_degenerate_postures(Q, Y, ["a"] * 6, "val", training=False)
    with pytest.raises(DataError, match="train: all 3 postures have the same"):
        refuse_degenerate_postures(Q, Y, ["a"] * 6, "train")
    with pytest.raises(DataError, match="val: every value is 0"):
        refuse_degenerate_postures(0 * Q, 0 * Y, ["a"] * 6, "val", training=False)

"""A task's outputs appear all at once or not at all (``figaroh_ros.io.output_dir``):
``--out`` is checked before any work, a failure half way leaves nothing behind, and a
run into an existing folder replaces only the files it writes."""
import os
import signal
import subprocess
import sys
import threading

import pytest
import yaml
from conftest import ROOT

from figaroh_ros.errors import DataError, ModelError
from figaroh_ros.io.output_dir import STAGE_PREFIX, csv_output, staged_output
from figaroh_ros.tasks import calibrate, plan_postures

CONFIG = os.path.join(ROOT, "config", "tiago_calibration_offset.yaml")
WRITTEN = {"result.yaml", "tiago_calibrated.urdf", "errors_train.png",
           "errors_validation.png", "postures_fit.csv"}


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "figaroh_ros.cli", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def tree(folder) -> set[str]:
    return {os.path.relpath(os.path.join(r, f), folder)
            for r, ds, fs in os.walk(folder) for f in fs + ds}


def test_out_naming_an_existing_file_is_refused_before_any_work(tmp_path):
    out = tmp_path / "out"
    out.write_text("precious")
    r = run_cli("calibrate", CONFIG, "--out", str(out))
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and str(out) in lines[0] and "existing file" in lines[0], r.stderr
    assert "Traceback" not in r.stderr
    assert out.read_text() == "precious" and tree(tmp_path) == {"out"}


def test_out_below_a_file_is_refused(tmp_path):
    (tmp_path / "plain").write_text("")
    out = tmp_path / "plain" / "sub" / "out"
    r = run_cli("calibrate", CONFIG, "--out", str(out))
    assert r.returncode == 2 and "is a file, not a folder" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and str(out) in r.stderr
    assert tree(tmp_path) == {"plain"}


def test_unwritable_parent_is_refused(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    try:
        if os.access(locked, os.W_OK):
            pytest.skip("running as root: a 0o500 folder is writable")
        r = run_cli("calibrate", CONFIG, "--out", str(locked / "out"))
        assert r.returncode == 2 and "not writable" in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1
        assert tree(locked) == set()
    finally:
        locked.chmod(0o700)


def _broken_urdf_writer(monkeypatch):
    original = calibrate.CalibrationResult.to_urdf

    def fail(self, path=None):
        if path is None:
            return original(self)
        with open(path, "w") as f:       # half a file, as a crash while writing would leave
            f.write("<robot")
        raise ModelError("URDF writer failed")
    monkeypatch.setattr(calibrate.CalibrationResult, "to_urdf", fail)


def test_failure_after_work_started_leaves_no_new_folder(tmp_path, monkeypatch):
    _broken_urdf_writer(monkeypatch)
    out = tmp_path / "new" / "deeper" / "out"
    with pytest.raises(ModelError, match="URDF writer failed"):
        calibrate.run(CONFIG, out=str(out))
    assert tree(tmp_path) == set()         # neither out, its made parents nor a stage


def test_failure_into_an_existing_folder_leaves_it_untouched(tmp_path, monkeypatch):
    _broken_urdf_writer(monkeypatch)
    (tmp_path / "result.yaml").write_text("previous: run\n")
    with pytest.raises(ModelError):
        calibrate.run(CONFIG, out=str(tmp_path))
    assert tree(tmp_path) == {"result.yaml"}
    assert (tmp_path / "result.yaml").read_text() == "previous: run\n"


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory):
    out = tmp_path_factory.mktemp("cal") / "out"
    return out, calibrate.run(CONFIG, out=str(out))


def test_normal_run_writes_exactly_the_expected_files(calibrated):
    out, outcome = calibrated
    assert tree(out) == WRITTEN
    assert outcome.summary["urdf"] == os.path.abspath(out / "tiago_calibrated.urdf")
    with open(out / "result.yaml") as f:
        assert yaml.safe_load(f) == outcome.summary
    for p in [outcome.paths["urdf"], outcome.paths["result"], *outcome.paths["plots"]]:
        assert os.path.isfile(p) and os.path.dirname(os.path.abspath(p)) == str(out)
    assert not any(n.startswith(STAGE_PREFIX) for n in os.listdir(out.parent))


def test_existing_folder_keeps_the_files_not_written(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "result.yaml").write_text("previous: run\n")
    outcome = calibrate.run(CONFIG, out=str(tmp_path))
    assert tree(tmp_path) == WRITTEN | {"notes.txt"}
    assert (tmp_path / "notes.txt").read_text() == "mine"
    with open(tmp_path / "result.yaml") as f:
        assert yaml.safe_load(f) == outcome.summary


def test_staging_moves_subfolders_and_cleans_up_on_error(tmp_path):
    with staged_output(str(tmp_path / "out")) as st:
        os.makedirs(st.path("plots"))
        open(st.path("plots/a.png"), "w").close()
        assert os.path.dirname(st.dir) == str(tmp_path)
        assert not (tmp_path / "out").exists()
    assert tree(tmp_path) == {"out", "out/plots", "out/plots/a.png"}
    with pytest.raises(RuntimeError):
        with staged_output(str(tmp_path / "out")) as st:
            open(st.path("a.png"), "w").close()
            raise RuntimeError
    assert tree(tmp_path) == {"out", "out/plots", "out/plots/a.png"}


def test_planner_csv_outputs(tmp_path):
    assert csv_output(str(tmp_path / "o"), "trajectory.csv") == (str(tmp_path / "o"),
                                                                "trajectory.csv")
    assert csv_output(str(tmp_path / "plan.csv"), "x.csv") == (str(tmp_path), "plan.csv")
    assert csv_output("plan.csv", "x.csv") == (".", "plan.csv")
    (tmp_path / "dir.csv").mkdir()
    with pytest.raises(DataError, match="existing folder"):
        csv_output(str(tmp_path / "dir.csv"), "x.csv")


def test_planner_writes_its_csv_and_result_beside_it(tmp_path):
    cfg = {"robot": {"name": "ur10",
                     "urdf": "example-robot-data:ur_description/urdf/"
                             "ur10_joint_limited_robot.urdf"},
           "calibration": {"level": "full", "tool_frame": "tool0",
                           "tool_guess": [0.03, -0.02, 0.08]},
           "measurement": {"type": "points", "noise_position_mm": 0.1},
           "postures": {"candidates": 100, "max_postures": 10,
                        "workspace_min": [-1.3, -1.3, 0.0], "workspace_max": [1.3, 1.3, 1.5]}}
    (tmp_path / "plan.yaml").write_text(yaml.safe_dump(cfg))
    out = tmp_path / "plans" / "p.csv"
    outcome = plan_postures.run(str(tmp_path / "plan.yaml"), out=str(out))
    assert tree(tmp_path / "plans") == {"p.csv", "result.yaml"}
    assert outcome.summary["postures_file"] == str(out)
    assert outcome.paths == {"postures": str(out),
                             "result": str(tmp_path / "plans" / "result.yaml")}


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
@pytest.mark.parametrize("after", ["a", "a/b", STAGE_PREFIX, "out exists"])
def test_a_signal_right_after_a_folder_is_made_leaves_nothing(tmp_path, monkeypatch, signum,
                                                              after):
    """The signal arrives at the worst moment: right after the mkdir of a parent of
    ``out``, or of the staging folder.  The handler (SystemExit, as in ``cli.main``) must
    still unwind through the cleanup, in a process with other threads (an xdist worker,
    BLAS): a signal held back in one thread is taken by another, and Python runs its
    handler in the main thread all the same (the first fix, a signal mask, failed there)."""
    out = tmp_path / "a" / "b" / "out"
    if after == "out exists":
        out.mkdir(parents=True)
    mkdir = os.mkdir

    def mkdir_then_signal(path, *args, **kwargs):
        mkdir(path, *args, **kwargs)
        rel = os.path.relpath(path, tmp_path)
        if rel == after or os.path.basename(path).startswith(STAGE_PREFIX) and (
                after in (STAGE_PREFIX, "out exists")):
            os.kill(os.getpid(), signum)        # the handler runs at Python's next check

    def handler(signum, frame):
        raise SystemExit(128 + signum)
    other = threading.Event()
    thread = threading.Thread(target=other.wait)
    thread.start()
    monkeypatch.setattr(os, "mkdir", mkdir_then_signal)
    old = signal.signal(signum, handler)
    try:
        with pytest.raises(SystemExit):
            with staged_output(str(out)) as st:
                open(st.path("x.txt"), "w").close()
    finally:
        signal.signal(signum, old)
        monkeypatch.undo()
        other.set()
        thread.join()
    assert tree(tmp_path) == ({"a", "a/b", "a/b/out"} if after == "out exists" else set())

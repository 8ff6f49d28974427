"""Fuzz suite, command-line side: every malformed input ends
the command with exit code 2 and ONE line ``error: ...`` naming the field or file
position and the value refused, within a stated time, with nothing written under
``--out``; a well-formed input still succeeds with finite results.

The corpus holds one case per measured failure class of the issue.  Commands run in this
process (``main(argv)``) with ``FIGAROH_ROS_DEBUG=1``, so an unexpected exception fails
the test with its traceback instead of becoming an "internal error" line; each run is
bounded by an alarm.  One case runs as a real process, as a user would.
"""
import functools
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager

import pytest
import yaml
from conftest import ROOT, SHARED
from hypothesis import HealthCheck, given, settings, strategies as st
from test_fuzz_inputs import chain_urdf

from figaroh_ros.cli.main import main
from figaroh_ros.cli.output import error_line
from figaroh_ros.errors import ConfigError, DataError
from figaroh_ros.io.output_dir import STAGE_PREFIX, staged_output

SECONDS = 20                   # stated bound of one refused or small command
TIAGO_TRAIN = os.path.join(SHARED, "data", "tiago", "mocap",
                           "qualisys_2021-11-30_static_postures.csv")
TIAGO_URDF = os.path.join(SHARED, "data", "tiago", "urdf", "tiago_48_schunk.urdf")
UR10 = "example-robot-data:ur_description/urdf/ur10_joint_limited_robot.urdf"
UR10_JOINTS = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint",
               "wrist_2_joint", "wrist_3_joint"]


@contextmanager
def deadline(seconds: float):
    def expired(signum, frame):
        raise TimeoutError(f"command ran longer than {seconds} s")
    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@pytest.fixture
def cli(monkeypatch, capsys):
    monkeypatch.setenv("FIGAROH_ROS_DEBUG", "1")

    def run(*argv, seconds=SECONDS):
        capsys.readouterr()
        with deadline(seconds):
            rc = main([str(a) for a in argv])
        return rc, capsys.readouterr().err
    return run


def files_under(folder) -> set[str]:
    return {os.path.relpath(os.path.join(r, f), folder)
            for r, ds, fs in os.walk(folder) for f in fs + ds}


def assert_refused(rc, err, *fragments):
    """Exit 2, exactly one ``error:`` line holding every fragment, no traceback."""
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert rc == 2, err
    assert len(errors) == 1 and err.rstrip().endswith(errors[0]), err
    assert "Traceback" not in err and "error: error:" not in err, err
    for fragment in fragments:
        assert fragment in errors[0], f"{fragment!r} not in {errors[0]!r}"


def calibration_config(**sections) -> dict:
    cfg = {"robot": {"name": "tiago", "urdf": TIAGO_URDF},
           "calibration": {"level": "offset", "tool_frame": "wrist_ft_tool_link"},
           "measurement": {"type": "points", "points": [1], "noise_position_mm": 0.2},
           "data": {"path": TIAGO_TRAIN}}
    for key, value in sections.items():
        section, field = key.split("__")
        cfg.setdefault(section, {})[field] = value
    return cfg


def trajectory_config(**fields) -> dict:
    return {"robot": {"name": "ur10", "urdf": UR10, "joints": UR10_JOINTS},
            "trajectory": {"starts": 1, "max_iterations": 5, **fields}}


def write(folder, name, content) -> str:
    path = os.path.join(folder, name)
    if isinstance(content, bytes):
        with open(path, "wb") as f:
            f.write(content)
    else:
        with open(path, "w") as f:
            f.write(content if isinstance(content, str) else yaml.safe_dump(content))
    return path


def refused_in(cli, tmp_path, verb, config, *fragments):
    """Run ``verb config --out tmp/out``: refused naming ``fragments``, nothing written."""
    before = files_under(tmp_path)
    rc, err = cli(verb, config, "--out", tmp_path / "out")
    assert_refused(rc, err, *fragments)
    assert files_under(tmp_path) == before, files_under(tmp_path) - before


# -- configs --------------------------------------------------------------------------------

@pytest.mark.parametrize("verb, config, fragments", [
    ("calibrate", calibration_config(solver__max_iterations=10**30),
     ["'solver.max_iterations'", str(10**30)]),
    ("calibrate", calibration_config(calibration__start_frame="wrist_ft_tool_link"),
     ["'calibration.tool_frame'", "'wrist_ft_tool_link'"]),
    ("calibrate", calibration_config(robot__name="../../escaped"),
     ["'robot.name'", "'../../escaped'"]),
    ("calibrate", calibration_config(postures__seed=-1), ["'postures.seed'", "-1"]),
    ("calibrate", calibration_config(postures__joint_margin=-0.1),
     ["'postures.joint_margin'", "-0.1"]),
    ("calibrate", calibration_config(data__fixed_joints={"torso_lift_joint": float("nan")}),
     ["'data.fixed_joints.torso_lift_joint'", "nan"]),
    ("calibrate", calibration_config(calibration__base_guess=[1e300, 0, 0, 0, 0, 0]),
     ["'calibration.base_guess[0]'", "1e+300"]),
    ("plan-postures", calibration_config(postures__candidates=10**9),
     ["'postures.candidates'", str(10**9)]),
    ("plan-trajectory", trajectory_config(harmonics=10**6), ["'trajectory.harmonics'"]),
    ("plan-trajectory", trajectory_config(starts=10**7), ["'trajectory.starts'"]),
    ("plan-trajectory", trajectory_config(rate_hz=1e12),
     ["'trajectory.rate_hz'", "1000000000000.0"]),
    ("plan-trajectory", trajectory_config(duration=3600, rate_hz=10_000),
     ["'trajectory'", "GB", "'rate_hz': 10000"]),
    ("plan-trajectory", trajectory_config(grid_points=10**12),
     ["'trajectory.grid_points'"]),
], ids=lambda v: v if isinstance(v, str) else None)
def test_config_corpus(cli, tmp_path, verb, config, fragments):
    path = write(tmp_path, "c.yaml", config)
    refused_in(cli, tmp_path, verb, path, path, *fragments)


def test_a_config_that_is_not_utf8_or_an_alias_bomb_is_refused(cli, tmp_path):
    path = write(tmp_path, "c.yaml", yaml.safe_dump(calibration_config()).encode()
                 + b"# caf\xe9\n")
    refused_in(cli, tmp_path, "calibrate", path, path, "not UTF-8")
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi"))
    path = write(tmp_path, "c.yaml", bomb)
    refused_in(cli, tmp_path, "calibrate", path, path, "expands to more than")


def test_an_unknown_column_placeholder_is_refused(cli, tmp_path):
    write(tmp_path, "t.csv", "a,b\n1,2\n")
    config = {"robot": {"name": "ur10", "urdf": UR10, "joints": UR10_JOINTS[:1]},
              "data": {"format": "csv_table", "path": ".", "table": "t.csv",
                       "sample_time": 0.01, "torque_column": "{joint}_{axis}"}}
    path = write(tmp_path, "c.yaml", config)
    refused_in(cli, tmp_path, "identify", path, "'data.torque_column'", "'{joint}_{axis}'",
               "{axis}")


def test_the_same_recording_twice_is_refused_for_gains(cli, tmp_path):
    (tmp_path / "rec").mkdir()
    config = {"robot": {"name": "ur10", "urdf": UR10, "joints": UR10_JOINTS[:1]},
              "data": {"format": "bag"},
              "tls": {"unloaded": "rec", "loaded": "./rec/", "current_topic": "/cur",
                      "payload_mass": 1.0}}
    path = write(tmp_path, "c.yaml", config)
    refused_in(cli, tmp_path, "identify-gains", path, "'tls.loaded'", str(tmp_path / "rec"))


# -- URDFs ------------------------------------------------------------------------------------

TWO_DOF = {"robot": {"name": "two", "urdf": "r.urdf", "joints": ["j1", "j2"]},
           "trajectory": {"starts": 1, "max_iterations": 5}}


@pytest.mark.parametrize("faults, parents, fragments", [
    ({}, [2, 1], ["loop"]),
    ({(1, "axis"): "0 0 0"}, None, ["'j1'", "axis", "[0.0, 0.0, 0.0]"]),
    ({(2, "lower"): "2", (2, "upper"): "-2"}, None, ["'j2'", "lower=2.0 > upper=-2.0"]),
    ({(1, "mass"): "heavy"}, None, ["'l1'", "'heavy'"]),
    ({(2, "xyz"): "nan 0 0"}, None, ["'j2'", "'nan 0 0'"]),
])
def test_urdf_corpus_through_the_planner(cli, tmp_path, faults, parents, fragments):
    write(tmp_path, "r.urdf", chain_urdf(2, faults, parents))
    path = write(tmp_path, "c.yaml", TWO_DOF)
    refused_in(cli, tmp_path, "plan-trajectory", path, "'robot.urdf'", "r.urdf", *fragments)


def test_a_urdf_that_is_not_utf8_is_refused(cli, tmp_path):
    write(tmp_path, "r.urdf", chain_urdf(2, {}).encode().replace(b"<robot name=\"r\">",
                                                                 b"<robot name=\"\xff\">"))
    path = write(tmp_path, "c.yaml", TWO_DOF)
    refused_in(cli, tmp_path, "plan-trajectory", path, "r.urdf", "not UTF-8")


def test_a_urdf_loop_as_a_real_process_gives_one_line_and_no_crash(tmp_path):
    # pinocchio segfaults on this URDF: the process must end with the message instead
    write(tmp_path, "r.urdf", chain_urdf(2, {}, [2, 1]))
    path = write(tmp_path, "c.yaml", TWO_DOF)
    r = subprocess.run([sys.executable, "-m", "figaroh_ros.cli", "plan-trajectory", path,
                        "--out", str(tmp_path / "out")], cwd=ROOT, capture_output=True,
                       text=True, timeout=60)
    assert_refused(r.returncode, r.stderr, "loop", "r.urdf")
    assert files_under(tmp_path) == {"r.urdf", "c.yaml"}


# -- data files ------------------------------------------------------------------------

def _tiago_rows() -> tuple[list[str], list[list[str]]]:
    with open(TIAGO_TRAIN) as f:
        lines = f.read().splitlines()
    return lines[0].split(","), [line.split(",") for line in lines[1:]]


@pytest.mark.parametrize("cell, fragments", [
    ("1e300", ["line 4, column 'z1'", "'1e300'"]),
    ("nan", ["line 4, column 'z1'", "'nan'"]),
    ("", ["line 4, column 'z1'", "not a number"]),
])
def test_a_posture_cell_is_refused_naming_line_column_and_value(cli, tmp_path, cell,
                                                                fragments):
    header, rows = _tiago_rows()
    rows[2][header.index("z1")] = cell
    data = write(tmp_path, "p.csv", "\n".join(",".join(r) for r in [header] + rows) + "\n")
    path = write(tmp_path, "c.yaml", calibration_config(data__path=data))
    refused_in(cli, tmp_path, "calibrate", path, data, *fragments)


def test_a_posture_file_that_is_not_utf8_is_refused(cli, tmp_path):
    with open(TIAGO_TRAIN, "rb") as f:
        raw = f.read()
    data = write(tmp_path, "p.csv", raw.replace(b"\n", b"\n\xff", 1))
    path = write(tmp_path, "c.yaml", calibration_config(data__path=data))
    refused_in(cli, tmp_path, "calibrate", path, data, "line 2: not UTF-8")


def test_a_fixed_joint_that_also_has_a_column_is_refused(cli, tmp_path):
    path = write(tmp_path, "c.yaml",
                 calibration_config(data__fixed_joints={"arm_1_joint": 0.0}))
    refused_in(cli, tmp_path, "calibrate", path, "['arm_1_joint']", "fixed_joints")


REFORMATTED = {"lead": lambda v: "  " + v, "exp": lambda v: f"{float(v):.17e}",
               "plus": lambda v: "+" + v if not v.startswith("-") else v}
BROKEN = {"nan": "nan", "inf": "-inf", "huge": "1e300", "text": "abc", "empty": "",
          "comma": "1;2", "hex": "0x1p3"}


@settings(max_examples=6, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(row=st.integers(0, 19), column=st.sampled_from(["x1", "y1", "z1", "arm_2_joint",
                                                       "torso_lift_joint"]),
       change=st.sampled_from(sorted(REFORMATTED) + sorted(BROKEN)))
def test_a_posture_table_calibrates_to_finite_numbers_or_names_its_cell(
        cli, tmp_path_factory, row, column, change):
    folder = tmp_path_factory.mktemp("fuzz")
    header, rows = _tiago_rows()
    k = header.index(column)
    value = rows[row][k]
    rows[row][k] = REFORMATTED[change](value) if change in REFORMATTED else BROKEN[change]
    data = write(folder, "p.csv", "\n".join(",".join(r) for r in [header] + rows) + "\n")
    path = write(folder, "c.yaml", calibration_config(data__path=data, output__plots=False))
    rc, err = cli("calibrate", path, "--out", folder / "out")
    if change in BROKEN:
        assert_refused(rc, err, data, f"line {row + 2}, column '{column}'")
        assert files_under(folder) == {"p.csv", "c.yaml"}
        return
    assert rc == 0, err
    assert not any(n.startswith(STAGE_PREFIX) for n in os.listdir(folder / "out"))
    # the same numbers written another way: the same calibration as the file as shipped
    assert _estimate(folder / "out") == pytest.approx(_shipped_estimate(cli), rel=1e-9)


def _estimate(out) -> list[float]:
    with open(os.path.join(out, "result.yaml")) as f:
        result = yaml.safe_load(f)
    values = [p["value"] for p in result["parameters"]] + [result["rmse_train_mm"]]
    assert values and all(math.isfinite(v) for v in values)
    return values


@functools.lru_cache(maxsize=1)
def _shipped_result_folder() -> str:
    return tempfile.mkdtemp(prefix="fuzz-shipped-")


def _shipped_estimate(cli) -> list[float]:
    folder = _shipped_result_folder()
    out = os.path.join(folder, "out")
    if not os.path.isdir(out):
        path = write(folder, "c.yaml", calibration_config(output__plots=False))
        rc, err = cli("calibrate", path, "--out", out)
        assert rc == 0, err
    return _estimate(out)


def test_a_bad_reference_is_refused_before_any_output(cli, tmp_path):
    ref = write(tmp_path, "ref.csv", b"Izz1,1.0,2.0,1.0,\xff\n")
    config = os.path.join(ROOT, "config", "staubli_tx40.yaml")
    before = files_under(tmp_path)
    rc, err = cli("identify", config, "--out", tmp_path / "out", "--reference", ref)
    assert_refused(rc, err, ref, "not UTF-8")
    assert files_under(tmp_path) == before


# -- outputs and messages --------------------------------------------------------------

def test_a_staging_folder_left_by_a_killed_run_is_removed_by_the_next(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()                                       # a pid that no longer runs
    stale = out / f"{STAGE_PREFIX}{dead.pid}-0123456789ab"
    live = out / f"{STAGE_PREFIX}{os.getpid()}-0123456789ab"   # another run, still going
    for d in (stale, live):
        d.mkdir()
        (d / "result.yaml").write_text("partial")
    with staged_output(str(out)) as st:
        with open(st.path("result.yaml"), "w") as f:
            f.write("complete")
    assert not stale.exists() and live.is_dir()
    assert (out / "result.yaml").read_text() == "complete"
    shutil.rmtree(live)


def test_a_terminated_run_leaves_nothing(tmp_path):
    # SIGTERM (a supervisor stopping the command) unwinds like an error: no staging folder
    path = write(tmp_path, "c.yaml", calibration_config(postures__candidates=20_000,
                                                        postures__self_collision=False))
    proc = subprocess.Popen([sys.executable, "-m", "figaroh_ros.cli", "plan-postures", path,
                             "--out", str(tmp_path / "out")], cwd=ROOT,
                            stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(1200):                         # the staging folder: work has begun
            if any(n.startswith(STAGE_PREFIX) for n in os.listdir(tmp_path)):
                break
            if proc.poll() is not None:
                pytest.fail(f"ended before it could be stopped: {proc.stderr.read()}")
            time.sleep(0.05)
        proc.terminate()
        rc = proc.wait(timeout=60)
    finally:
        proc.kill()
    assert rc == 128 + signal.SIGTERM and "Traceback" not in proc.stderr.read()
    assert files_under(tmp_path) == {"c.yaml"}


def test_an_output_name_cannot_leave_the_output_folder(tmp_path):
    with pytest.raises(DataError, match="leaves the output folder"):
        with staged_output(str(tmp_path / "out")) as st:
            st.path("../../evil.urdf")
    assert files_under(tmp_path) == set()


@pytest.mark.parametrize("exc, line", [
    (ConfigError("error: config c.yaml: field 'a': bad"),
     "error: config c.yaml: field 'a': bad"),
    (DataError("Error: error: x"), "error: x"),
    (DataError("first\n  second\n\n"), "error: first; second"),
    (DataError(""), "error: DataError"),
])
def test_the_error_line_is_one_line_with_one_prefix(exc, line):
    assert error_line(exc) == line


def test_an_unexpected_exception_is_one_line_and_exit_3(monkeypatch, capsys):
    monkeypatch.delenv("FIGAROH_ROS_DEBUG", raising=False)

    def broken(args):
        raise KeyError("boom")
    monkeypatch.setattr("figaroh_ros.cli.main.build_parser", lambda: _Parser(broken))
    assert main(["anything"]) == 3
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and re.match(r"error: internal error \(KeyError: "
                                                   r"'boom'\)", err), err


class _Parser:
    def __init__(self, func):
        self.func = func

    def parse_args(self, argv):
        return self

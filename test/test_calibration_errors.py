"""Bad calibration input is refused with a message naming the problem; nothing written."""
import os

import pytest
import yaml
from conftest import SHARED, cli_in_process

TIAGO_TRAIN = os.path.join(SHARED, "data", "tiago", "mocap",
                           "qualisys_2021-11-30_static_postures.csv")
TIAGO_URDF = os.path.join(SHARED, "data", "tiago", "urdf", "tiago_48_schunk.urdf")


def base_config():
    return {"robot": {"name": "tiago", "urdf": TIAGO_URDF},
            "calibration": {"level": "offset", "tool_frame": "wrist_ft_tool_link"},
            "measurement": {"type": "points", "points": [1], "noise_position_mm": 0.2},
            "data": {"path": TIAGO_TRAIN}}


def run(tmp_path, cfg):
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(cfg))
    out = tmp_path / "out"
    return cli_in_process("calibrate", path, "--out", out), out


def test_good_config_runs(tmp_path):
    r, out = run(tmp_path, base_config())
    assert r.returncode == 0, r.stderr
    assert (out / "result.yaml").is_file()


def _edit(path, value):
    cfg = base_config()
    sec, key = path.split(".")
    if value is KeyError:
        del cfg[sec][key]
    else:
        cfg[sec][key] = value
    return cfg


@pytest.mark.parametrize("field,value,message", [
    ("calibration.level", "everything", "calibration.level"),
    ("calibration.tool_frame", "no_such_frame", "unknown tool frame 'no_such_frame'"),
    ("calibration.joints", ["arm_1_joint", "head_1_joint"], "head_1_joint"),
    ("measurement.type", "laser", "measurement.type"),
    ("measurement.mask", [True, False], "measurement.mask"),
    ("measurement.noise_position_mm", -1.0, "measurement.noise_position_mm"),
    ("measurement.points", [1, 7], "missing column 'x7'"),
    ("data.path", "/nonexistent/file.csv", "data.path"),
    ("calibration.tool_frame", KeyError, "calibration.tool_frame"),
])
def test_bad_config_is_refused(tmp_path, field, value, message):
    r, out = run(tmp_path, _edit(field, value))
    assert r.returncode == 2
    assert message in r.stderr, r.stderr
    assert not out.exists()


def test_bad_posture_files_are_refused(tmp_path):
    lines = open(TIAGO_TRAIN).read().splitlines()
    header = lines[0].split(",")
    # a non-number in the arm_3 column of the fifth posture
    bad = lines[5].split(",")
    bad[header.index("arm_3_joint")] = "nan"
    f = tmp_path / "nan.csv"
    f.write_text("\n".join(lines[:5] + [",".join(bad)] + lines[6:]) + "\n")
    r, out = run(tmp_path, dict(base_config(), data={"path": str(f)}))
    assert r.returncode == 2 and "line 6, column 'arm_3_joint'" in r.stderr
    # a missing joint column
    f2 = tmp_path / "nojoint.csv"
    k = header.index("arm_7_joint")
    f2.write_text("\n".join(",".join(c for i, c in enumerate(l.split(",")) if i != k)
                            for l in lines) + "\n")
    r, out = run(tmp_path, dict(base_config(), data={"path": str(f2)}))
    assert r.returncode == 2 and "no column for chain joint 'arm_7_joint'" in r.stderr
    # too few postures for the parameters
    f3 = tmp_path / "few.csv"
    f3.write_text("\n".join(lines[:4]) + "\n")
    r, out = run(tmp_path, dict(base_config(), data={"path": str(f3)}))
    assert r.returncode == 2 and "postures" in r.stderr
    assert not out.exists()

"""Bad input, end to end: the processes a user starts, given a model they cannot
have, stop with exit code 2 and one line naming what is missing or wrong, and write nothing.

- the executor node with ``robot.source: topic`` and nobody publishing the model: one line
  naming the topic and the timeout (before, the function-level test only: test_model_sources)
- ``figaroh-ros calibrate`` and ``figaroh-ros identify`` with ``robot.source: xacro``
  pointing at a xacro with an error: one ``error:`` line naming the xacro file, nothing
  under ``--out``
(A driver profile that does not match the topics seen: test_recorder_qos.py.)
"""
import os
import subprocess
import sys

import pytest
import yaml
from conftest import ROOT, ros_graph_environment

TIAGO_TRAIN = os.path.join(os.environ["FIGAROH_DATA"], "tiago", "mocap",
                           "qualisys_2021-11-30_static_postures.csv")


def _files(folder) -> set[str]:
    return {os.path.relpath(os.path.join(r, f), folder)
            for r, ds, fs in os.walk(folder) for f in fs + ds}


@pytest.mark.xdist_group("ros_graph")      # a ROS domain of its own, like the graph tests
def test_the_executor_without_a_published_model_stops_with_one_line(tmp_path):
    """The shipped UR10 config (source: topic, as on the real robot) with a 1 s
    description_timeout, in a ROS domain where no robot_state_publisher runs: exit 2 within
    the timeout plus the start-up, one line naming the topic and the timeout."""
    robot = yaml.safe_load(open(os.path.join(ROOT, "config", "robot_ur10.yaml")))
    assert robot["robot"]["source"] == "topic"
    robot["robot"]["description_timeout"] = 1.0
    config = tmp_path / "robot.yaml"
    config.write_text(yaml.safe_dump(robot))
    before = dict(os.environ)
    ros_graph_environment()                # a domain of its own, this process's kept
    env = dict(os.environ)
    os.environ.clear()
    os.environ.update(before)
    proc = subprocess.run([sys.executable, "-m", "figaroh_ros.ros.executor", "--ros-args",
                           "-p", f"config:={config}"], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path, env=env)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("executor: no robot model on ") and \
        "'/robot_description' within 1 s" in lines[0], lines[0]     # the resolved name
    assert _files(tmp_path) == {"robot.yaml"}


BROKEN = {
    "undefined macro": '<?xml version="1.0"?>\n<robot xmlns:xacro="http://www.ros.org/wiki/'
                       'xacro" name="r">\n  <xacro:arg name="prefix" default=""/>\n'
                       '  <xacro:undefined_macro name="$(arg prefix)base"/>\n</robot>\n',
    "not XML": '<?xml version="1.0"?>\n<robot xmlns:xacro="http://www.ros.org/wiki/xacro" '
               'name="r">\n  <link name="base">\n</robot>\n',
}


def _configs(tmp_path) -> dict[str, dict]:
    """A calibration and an identification config, valid but for their model."""
    model = {"source": "xacro", "xacro": "robot.urdf.xacro", "xacro_args": {"prefix": "r_"}}
    (tmp_path / "t.csv").write_text("a,b\n1,2\n")
    return {
        "calibrate": {"robot": {"name": "tiago", **model},
                      "calibration": {"level": "offset", "tool_frame": "wrist_ft_tool_link"},
                      "measurement": {"type": "points", "points": [1],
                                      "noise_position_mm": 0.2},
                      "data": {"path": TIAGO_TRAIN}},
        "identify": {"robot": {"name": "ur10", **model, "joints": ["shoulder_pan_joint"]},
                     "data": {"format": "csv_table", "path": ".", "table": "t.csv",
                              "sample_time": 0.01}}}


@pytest.mark.parametrize("verb", ["calibrate", "identify"])
@pytest.mark.parametrize("fault", sorted(BROKEN))
def test_a_xacro_error_stops_the_command_naming_the_file(tmp_path, verb, fault):
    """``figaroh-ros VERB CONFIG --out OUT`` as a user runs it, the config's model a
    broken xacro: exit 2, one ``error:`` line naming the xacro file, nothing written."""
    xacro_file = tmp_path / "robot.urdf.xacro"
    xacro_file.write_text(BROKEN[fault])
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(_configs(tmp_path)[verb]))
    before = _files(tmp_path)
    proc = subprocess.run([sys.executable, "-m", "figaroh_ros.cli", verb, str(config),
                           "--out", str(tmp_path / "out")], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    assert f"xacro {xacro_file} (arguments {{'prefix': 'r_'}})" in lines[0], lines[0]
    assert "Traceback" not in proc.stderr and proc.stdout == "", proc.stdout
    assert _files(tmp_path) == before, _files(tmp_path) - before

"""``figaroh-ros call`` covers every action and service of the figaroh nodes: each
sub-command's help with the exit codes, and, on the simulated UR10's graph, the pre-flight
(passed and failed, with its checks and numbers), the recorder's start / status / stop, the
model history and a restore refused, a payload goal and a calibration started by the service refused
with the reason, and a missing server named."""
import os
import re
import subprocess
import sys

import pytest
import yaml

from conftest import ROOT, sim_ur10_graph

pytestmark = pytest.mark.xdist_group("ros_graph_2")

CLI = os.path.join(os.path.dirname(sys.executable), "figaroh-ros")
COMMANDS = ("run-experiment", "calibrate", "plan-trajectory", "start-calibration",
            "identify-payload", "preflight", "restore", "recorder")
CAL = os.path.join(ROOT, "config", "ur10_sim_calibration.yaml")


def _call(work, *args, timeout: float = 120.0) -> subprocess.CompletedProcess:
    return subprocess.run([CLI, "call", *args], cwd=str(work), capture_output=True,
                          text=True, timeout=timeout, env=dict(os.environ))


def test_every_command_has_help_with_exit_codes():
    top = subprocess.run([CLI, "call", "--help"], capture_output=True, text=True, timeout=60)
    assert top.returncode == 0
    for c in COMMANDS:
        assert c in top.stdout, c
        sub = subprocess.run([CLI, "call", c, "--help"], capture_output=True, text=True,
                             timeout=60)
        assert sub.returncode == 0 and "exit codes: 0" in sub.stdout and \
            "130 Ctrl-C" in sub.stdout, (c, sub.stdout)


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    work = tmp_path_factory.mktemp("call")
    planned = subprocess.run([CLI, "plan-postures", CAL, "--out", str(work / "postures.csv")],
                             capture_output=True, text=True, timeout=300)
    assert planned.returncode == 0, planned.stderr
    rows = (work / "postures.csv").read_text().splitlines()
    (work / "three.csv").write_text("\n".join(rows[:4]) + "\n")
    with sim_ur10_graph(work, "call_cli_test"):
        yield work


def test_preflight_passed_and_failed(graph):
    ok = _call(graph, "preflight", "--postures", "postures.csv", "--topic-window", "1.0")
    assert ok.returncode == 0, (ok.stdout, ok.stderr)
    assert "passed: true" in ok.stdout and "rank: 30 of 30 parameters" in ok.stdout
    assert re.search(r"- pass topic:/joint_states: .* 250 Hz", ok.stdout), ok.stdout
    assert re.search(r"pass +\d+ %  identifiability:postures", ok.stderr), ok.stderr
    bad = _call(graph, "preflight", "--postures", "three.csv", "--topic-window", "1.0")
    assert bad.returncode == 2, (bad.stdout, bad.stderr)
    assert "passed: false" in bad.stdout and "- FAIL identifiability:" in bad.stdout
    rank = re.search(r"rank: (\d+) of 30 parameters", bad.stdout)
    assert rank and int(rank.group(1)) < 30, bad.stdout
    assert bad.stderr.rstrip().splitlines()[-1].startswith("error: FAILED"), bad.stderr


def test_recorder_start_status_stop(graph):
    started = _call(graph, "recorder", "start", "--bag-path", str(graph / "bags" / "manual"))
    assert started.returncode == 0 and "success: true" in started.stdout, started
    status = _call(graph, "recorder", "status")
    assert status.returncode == 0, status
    counts = yaml.safe_load(status.stdout)["counts"]
    assert counts["/joint_states"] > 0, status.stdout
    stopped = _call(graph, "recorder", "stop")
    assert stopped.returncode == 0 and "success: true" in stopped.stdout, stopped
    meta = yaml.safe_load((graph / "bags" / "manual" / "metadata.yaml").read_text())
    assert meta["rosbag2_bagfile_information"]["message_count"] > 0
    # a bag outside the recorder's bag_dir: refused, nothing written
    outside = _call(graph, "recorder", "start", "--bag-path", str(graph / "elsewhere"))
    assert outside.returncode == 2 and "success: false" in outside.stdout, outside
    assert outside.stderr.startswith("error: ") and not (graph / "elsewhere").exists()
    assert "success: true" in _call(graph, "recorder", "status").stdout


def test_restore_history_and_refusal(graph):
    history = _call(graph, "restore", "history")
    assert history.returncode == 0, history
    said = yaml.safe_load(history.stdout)
    assert said["success"] is True and said["model_hash"] is None, history.stdout
    # nothing published yet: nothing to restore (the whole restore: test_real_launch_files)
    nominal = _call(graph, "restore", "nominal")
    assert nominal.returncode == 2 and yaml.safe_load(nominal.stdout)["success"] is False
    assert nominal.stderr == "error: no nominal model kept: nothing has been published yet\n"
    unknown = _call(graph, "restore", "0" * 64)
    assert unknown.returncode == 2 and "success: false" in unknown.stdout, unknown
    assert unknown.stderr.startswith("error: "), unknown.stderr


def test_payload_and_start_calibration_refused_with_reason(graph):
    payload = _call(graph, "identify-payload", "--bag", "bags/none",
                    "--config", os.path.join(ROOT, "config", "ur10_payload.yaml"))
    assert payload.returncode == 2 and "bags/none" in payload.stderr, payload.stderr
    refused = _call(graph, "start-calibration", "--bags", "bags/none", "--config", CAL,
                    "--kind", "geometric")
    assert refused.returncode == 2, (refused.stdout, refused.stderr)
    assert "accepted: false" in refused.stdout and "goal_id: ~" in refused.stdout
    assert "bags/none" in refused.stderr, refused.stderr


def test_missing_server_is_named(graph):
    gone = _call(graph, "restore", "history", "--namespace", "nobody", "--timeout", "2")
    assert gone.returncode == 2
    assert "/nobody/figaroh/restore_description (calibration node)" in gone.stderr, gone.stderr

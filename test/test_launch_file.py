"""The no-ROS launch runner reads YAML launch files the way ``ros2 launch`` does:
conditions, groups and namespaces, includes with arguments, parameter files,
``$(env)`` without a default, unknown tags refused with file and line; a node that exits
does not stop the others unless marked ``on_exit: shutdown``, ``respawn`` restarts it, and
SIGTERM to the runner stops every child."""
import os
import signal
import subprocess
import sys
import time

import pytest

from figaroh_ros.cli.launch_runner import LaunchedGraph, command, parse
from figaroh_ros.errors import ConfigError


def _write(path, text: str) -> str:
    path.write_text(text)
    return str(path)


def test_conditions_groups_includes_and_parameter_files(tmp_path, monkeypatch):
    monkeypatch.setenv("FIGAROH_TEST_ROBOT", "robot7")
    params = _write(tmp_path / "params.yaml", "recorder:\n  ros__parameters:\n"
                    "    storage: sqlite3\n    start_timeout: 2.5\n")
    inner = _write(tmp_path / "inner.launch.yaml", """
launch:
- arg: {name: who, default: nobody}
- node: {pkg: figaroh_ros, exec: executor, name: "exec_$(var who)"}
""")
    outer = _write(tmp_path / "outer.launch.yaml", f"""
launch:
- arg: {{name: with_sim, default: "false"}}
- let: {{name: robot, value: "$(env FIGAROH_TEST_ROBOT)"}}
- node: {{pkg: figaroh_ros, exec: sim_robot, name: sim, if: "$(var with_sim)"}}
- node:
    pkg: figaroh_ros
    exec: recorder
    name: rec
    unless: "$(var with_sim)"
    param:
    - {{from: {params}}}
    - {{name: bag_dir, value: "$(env FIGAROH_NOT_SET /tmp/bags)"}}
- group:
    push-ros-namespace: "$(var robot)"
    launch:
    - include:
        file: {inner}
        arg:
        - {{name: who, value: "$(var robot)"}}
""")
    nodes = parse(outer, {})
    assert [n["name"] for n in nodes] == ["rec", "exec_robot7"]
    assert nodes[0]["param"] == [("storage", "sqlite3"), ("start_timeout", 2.5),
                                 ("bag_dir", "/tmp/bags")]
    assert nodes[1]["namespace"] == "/robot7"
    assert "__ns:=/robot7" in command(nodes[1])
    assert [n["name"] for n in parse(outer, {"with_sim": "true"})] == ["sim", "exec_robot7"]


@pytest.mark.parametrize("body, words", [
    ("- node: {pkg: figaroh_ros, exec: recorder, launch-prefix: gdb}", ":3: 'node' does not"),
    ("- timer: {period: 1.0}", ":3: unsupported tag 'timer'"),
    ("- node: {pkg: figaroh_ros, exec: recorder, name: '$(env FIGAROH_NOT_SET)'}",
     "FIGAROH_NOT_SET' is not set"),
    ("- node: {pkg: figaroh_ros, exec: recorder, if: maybe}", "expected true or false"),
    ("- node: {pkg: figaroh_ros, exec: recorder, name: '$(eval 1+1)'}",
     "unsupported substitution"),
    ("- node: {pkg: no_such_pkg, exec: no_such_exec_xyz}", "not found"),
])
def test_what_is_not_understood_is_refused_with_file_and_line(tmp_path, body, words):
    path = _write(tmp_path / "bad.launch.yaml", "# a bad launch file\nlaunch:\n" + body + "\n")
    with pytest.raises(ConfigError) as err:
        LaunchedGraph(path)
    assert words in str(err.value) and "bad.launch.yaml" in str(err.value), str(err.value)


@pytest.fixture()
def programs(tmp_path, monkeypatch):
    """Stand-in executables on PATH (they ignore the --ros-args every node is given)."""
    for name, body in (("fig_sleep60", "exec sleep 60"), ("fig_sleep61", "exec sleep 61.5"),
                       ("fig_false", "exit 1"), ("fig_true", "exit 0")):
        script = tmp_path / name
        script.write_text(f"#!/bin/sh\n{body}\n")
        script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")


def test_an_exiting_node_leaves_the_others_running_respawn_and_shutdown(tmp_path, programs):
    path = _write(tmp_path / "procs.launch.yaml", """
launch:
- node: {pkg: stand_in, exec: fig_sleep60, name: sleeper}
- node: {pkg: stand_in, exec: fig_false, name: quitter}
- node: {pkg: stand_in, exec: fig_true, name: phoenix, respawn: "true", respawn_delay: 0.2}
""")
    g = LaunchedGraph(path, quiet=True, env=dict(os.environ, ROS_DOMAIN_ID="37"))
    try:
        # what a failed call shows: the graph's domain first, then each node
        assert g.tails()[0] == "ROS_DOMAIN_ID=37" and g.tails()[1].startswith("sleeper")
        first = dict(g.procs)["phoenix"].pid
        deadline = time.monotonic() + 10
        while dict(g.procs)["phoenix"].pid == first and time.monotonic() < deadline:
            assert g.supervise() is None
            time.sleep(0.05)
        assert dict(g.procs)["phoenix"].pid != first, "phoenix was not respawned"
        assert dict(g.procs)["quitter"].poll() == 1
        assert dict(g.procs)["sleeper"].poll() is None
    finally:
        g.stop()
    path = _write(tmp_path / "shutdown.launch.yaml", """
launch:
- node: {pkg: stand_in, exec: fig_sleep60, name: sleeper}
- node: {pkg: stand_in, exec: fig_true, name: leader, on_exit: shutdown}
""")
    g = LaunchedGraph(path, quiet=True)
    try:
        deadline, why = time.monotonic() + 10, None
        while why is None and time.monotonic() < deadline:
            why, _ = g.supervise(), time.sleep(0.05)
        assert why and "leader" in why
    finally:
        g.stop()
    assert all(p.poll() is not None for _, p in g.procs)


def test_sigterm_to_the_runner_stops_every_child(tmp_path, programs):
    path = _write(tmp_path / "sleep.launch.yaml", """
launch:
- node: {pkg: stand_in, exec: fig_sleep61, name: sleeper}
""")
    runner = subprocess.Popen([sys.executable, "-m", "figaroh_ros.cli", "launch", path],
                              stderr=subprocess.PIPE, text=True)

    def sleepers():
        out = subprocess.run(["pgrep", "-f", "sleep 61.5"], capture_output=True, text=True)
        return [int(p) for p in out.stdout.split()]
    deadline = time.monotonic() + 20
    while not sleepers() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert sleepers(), "the node did not start"
    runner.send_signal(signal.SIGTERM)
    assert runner.wait(timeout=20) == 0, runner.stderr.read()
    deadline = time.monotonic() + 10
    while sleepers() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not sleepers(), "a child outlived the runner"

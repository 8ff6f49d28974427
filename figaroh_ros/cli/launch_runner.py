"""``figaroh-ros launch FILE [name:=value ...]``: run a ROS 2 YAML launch description.

On a robot, ``ros2 launch figaroh_ros <file>.launch.yaml`` runs our launch files; here (no
launch/ros2cli) this runner is the stand-in: it reads the same files the way ``ros2
launch`` does for every tag it accepts and refuses the others with the file, line and tag
(``figaroh_ros.cli.launch_file``).  Our nodes start as ``python -m
figaroh_ros.ros.<exec>``, another package's from its installed executable (a missing one is
an error, as in ``ros2 launch``).  A node that exits does not stop the others unless it is
marked ``on_exit: shutdown``; ``respawn: true`` restarts it after ``respawn_delay`` s;
SIGINT or SIGTERM to the runner stops every child (SIGINT, then SIGTERM, then SIGKILL), and
a runner that dies takes its children with it (PR_SET_PDEATHSIG).
"""
from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
import sys
import time

import yaml

from figaroh_ros.cli.launch_file import declared, read_launch
from figaroh_ros.errors import ConfigError

OUR_EXECUTABLES = {"sim_robot": "figaroh_ros.ros.sim_robot",
                   "recorder": "figaroh_ros.ros.recorder",
                   "executor": "figaroh_ros.ros.executor",
                   "calibration_node": "figaroh_ros.ros.calibration_node",
                   "dynamics_monitor": "figaroh_ros.ros.dynamics_monitor",
                   "sim_camera": "figaroh_ros.ros.sim_camera"}


def parse(path: str, overrides: dict[str, str]) -> list[dict]:
    """The nodes of a launch file, every substitution and condition resolved
    (``figaroh_ros.cli.launch_file``)."""
    return read_launch(path, overrides)


def _param_arg(name, value) -> str:
    if isinstance(value, bool):
        v = "true" if value else "false"
    elif isinstance(value, (list, dict)):
        v = yaml.safe_dump(value, default_flow_style=True).strip()
    else:
        v = str(value) or '""'              # an empty string stays a string
    return f"{name}:={v}"


def executable(node: dict) -> list[str]:
    """How to start a node's program: ours as ``python -m``, another package's from its
    ``lib/<pkg>`` folder on AMENT_PREFIX_PATH (or PATH); ConfigError when not found, as
    ``ros2 launch`` fails on a missing package."""
    if node["pkg"] == "figaroh_ros":
        if node["exec"] not in OUR_EXECUTABLES:
            raise ConfigError(f"{node['line']}: figaroh_ros has no executable "
                              f"'{node['exec']}'")
        return [sys.executable, "-m", OUR_EXECUTABLES[node["exec"]]]
    for prefix in filter(None, os.environ.get("AMENT_PREFIX_PATH", "").split(":")):
        candidate = os.path.join(prefix, "lib", node["pkg"], node["exec"])
        if os.access(candidate, os.X_OK):
            return [candidate]
    found = shutil.which(node["exec"])
    if found is None:
        raise ConfigError(f"{node['line']}: executable '{node['exec']}' of package "
                          f"'{node['pkg']}' not found (AMENT_PREFIX_PATH, PATH)")
    return [found]


def command(node: dict) -> list[str]:
    ros = ["--ros-args"]
    if node.get("name"):
        ros += ["-r", f"__node:={node['name']}"]
    if node.get("namespace"):
        ros += ["-r", f"__ns:=/{node['namespace'].strip('/')}"]     # as ros2 launch: absolute
    for a, b in node["remap"]:
        ros += ["-r", f"{a}:={b}"]
    for name, value in node["param"]:
        ros += ["-p", _param_arg(name, value)]
    return executable(node) + node.get("args", []) + ros + node.get("ros_args", [])


def _die_with_parent():
    """In the child before exec: SIGTERM when the process that launched it dies (Linux
    PR_SET_PDEATHSIG), so a killed runner or test leaves no orphaned nodes behind."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)
    except (OSError, AttributeError):      # not Linux: the runner's own stop() still applies
        pass


class LaunchedGraph:
    """The processes of a launch file.  ``supervise()`` restarts the nodes marked
    ``respawn`` (after ``respawn_delay``) and says whether the launch goes on: a node that
    exits stops the others only when marked ``on_exit: shutdown``; ``stop()`` ends them
    all (SIGINT, then SIGTERM, then SIGKILL)."""

    def __init__(self, path: str, overrides: dict[str, str] | None = None, env=None,
                 cwd: str | None = None, quiet: bool = False):
        self.env, self.cwd, self.quiet = env, cwd, quiet
        self.nodes = parse(path, overrides or {})
        commands = [command(n) for n in self.nodes]        # every error before any start
        self.procs: list[tuple[str, subprocess.Popen]] = []
        self.exited: dict[str, float] = {}                 # label -> when it exited
        for node, cmd in zip(self.nodes, commands):
            self.procs.append((self._label(node), self._start(node, cmd)))

    @staticmethod
    def _label(node: dict) -> str:
        return node.get("name") or node["exec"]

    def _log_path(self, label: str) -> str | None:
        """Where a quiet launch with a working folder keeps a node's output (read back by
        ``failed()``): ``<cwd>/launch_logs/<label>.log``."""
        if not (self.quiet and self.cwd):
            return None
        return os.path.join(self.cwd, "launch_logs", label.replace(os.sep, "_") + ".log")

    def _start(self, node: dict, cmd: list[str]) -> subprocess.Popen:
        out, path = None, self._log_path(self._label(node))
        if path is not None:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            out = open(path, "ab")
        elif self.quiet:
            out = subprocess.DEVNULL
        env = dict(self.env if self.env is not None else os.environ, **node.get("env", {}))
        try:
            return subprocess.Popen(cmd, env=env, cwd=self.cwd, stdout=out, stderr=out,
                                    start_new_session=True, preexec_fn=_die_with_parent)
        finally:
            if path is not None:
                out.close()                 # the child holds its own descriptor

    def failed(self, tail: int = 20) -> list[str]:
        """The nodes that exited with an error, each with the last ``tail`` lines of its
        output when a quiet launch kept it."""
        return [f"{n} (exit {p.returncode})" + self._tail(n, tail) for n, p in self.procs
                if p.poll() is not None and p.returncode != 0]

    def tails(self, lines: int = 20) -> list[str]:
        """The graph's ROS domain, then every node, running or not, with the last ``lines``
        lines of its output when a quiet launch kept it (what a failed call to a live node
        shows)."""
        env = self.env if self.env is not None else os.environ
        return [f"ROS_DOMAIN_ID={env.get('ROS_DOMAIN_ID', '(unset: 0)')}"] + \
            [n + self._tail(n, lines) for n, _ in self.procs]

    def _tail(self, label: str, lines: int) -> str:
        path = self._log_path(label)
        if path is None or not os.path.exists(path):
            return ""
        with open(path, "rb") as f:
            text = f.read()[-20000:].decode("utf-8", "replace")
        return ":\n" + "\n".join(text.splitlines()[-lines:])

    def supervise(self) -> str | None:
        """Respawn what must be; why the launch must end (None: it goes on)."""
        now = time.monotonic()
        for k, (node, (label, p)) in enumerate(zip(self.nodes, self.procs)):
            if p.poll() is None:
                continue
            if node.get("on_exit") == "shutdown":
                return f"{label} exited ({p.returncode}) and is marked on_exit: shutdown"
            if node.get("respawn"):
                since = self.exited.setdefault(label, now)
                if now - since >= node.get("respawn_delay", 0.0):
                    print(f"[launch] respawning {label} (exit {p.returncode})",
                          file=sys.stderr)
                    self.procs[k] = (label, self._start(node, command(node)))
                    self.exited.pop(label)
        if all(p.poll() is not None for _, p in self.procs):
            return "every node exited"
        return None

    def stop(self, timeout: float = 5.0):
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
            for _, p in self.procs:
                if p.poll() is None:
                    try:
                        os.killpg(p.pid, sig)
                    except ProcessLookupError:
                        pass
            t0 = time.monotonic()
            while time.monotonic() - t0 < timeout and any(p.poll() is None
                                                          for _, p in self.procs):
                time.sleep(0.05)
            if all(p.poll() is not None for _, p in self.procs):
                return


def _terminate(signum, frame):
    raise KeyboardInterrupt           # SIGTERM stops every child like Ctrl-C


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: figaroh-ros launch FILE [name:=value ...]", file=sys.stderr)
        return 2
    path, rest = argv[0], argv[1:]
    overrides = {}
    for a in rest:
        if ":=" not in a:
            print(f"error: launch arguments are name:=value, got {a!r}", file=sys.stderr)
            return 2
        k, v = a.split(":=", 1)
        overrides[k] = v
    try:
        unused = sorted(set(overrides) - declared(path))
        if unused:
            print(f"[launch] arguments {unused} are not declared by {path}: unused",
                  file=sys.stderr)
        graph = LaunchedGraph(path, overrides)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    signal.signal(signal.SIGTERM, _terminate)
    try:
        while True:
            why = graph.supervise()
            if why:
                print(f"[launch] stopping: {why}", file=sys.stderr)
                return 1 if graph.failed() else 0
            time.sleep(0.2)
    except KeyboardInterrupt:
        return 0
    finally:
        graph.stop()

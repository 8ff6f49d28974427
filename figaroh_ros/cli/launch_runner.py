"""``figaroh-ros launch FILE [name:=value ...]``: run a ROS 2 YAML launch description.

On a robot, ``ros2 launch figaroh_ros <file>.launch.yaml`` runs our launch files; here (no
launch/ros2cli) this runner starts the same files.  It understands the part of the YAML
launch format the files use: ``arg`` (name, default), ``node`` (pkg, exec, name,
namespace, param list of name/value, remap list of from/to, output) and the
substitutions ``$(var NAME)``, ``$(env NAME)``, ``$(env NAME DEFAULT)`` and
``$(find-pkg-share figaroh_ros)``.  Our nodes start as ``python -m
figaroh_ros.ros.<exec>``; a node of another package is started through its installed
executable when ROS provides one, else reported and skipped.  All children stop together
(SIGINT, then SIGTERM) when the runner is interrupted or a node exits with an error.
"""
from __future__ import annotations

import ctypes
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import yaml

from figaroh_ros.errors import ConfigError
from figaroh_ros.io.share import share_directory

OUR_EXECUTABLES = {"sim_robot": "figaroh_ros.ros.sim_robot",
                   "recorder": "figaroh_ros.ros.recorder",
                   "executor": "figaroh_ros.ros.executor",
                   "calibration_node": "figaroh_ros.ros.calibration_node"}


def _share_dir() -> str:
    d = share_directory()
    if d is None:
        raise ConfigError("cannot find the figaroh_ros share directory")
    return d


def substitute(text, args: dict[str, str]):
    if not isinstance(text, str):
        return text

    def repl(m):
        parts = m.group(1).split()
        kind = parts[0]
        if kind == "var":
            if parts[1] not in args:
                raise ConfigError(f"undefined launch argument '{parts[1]}'")
            return args[parts[1]]
        if kind == "env":
            return os.environ.get(parts[1], " ".join(parts[2:]))
        if kind == "find-pkg-share":
            if parts[1] != "figaroh_ros":
                raise ConfigError(f"$(find-pkg-share {parts[1]}) is not available here")
            return _share_dir()
        raise ConfigError(f"unsupported substitution $({m.group(1)})")

    return re.sub(r"\$\(([^()]*)\)", repl, text)


def parse(path: str, overrides: dict[str, str]) -> list[dict]:
    """The nodes of a launch file, with every substitution resolved."""
    try:
        with open(path) as f:
            doc = yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read launch file {path}: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("launch"), list):
        raise ConfigError(f"{path}: expected a mapping with a 'launch' list")
    args: dict[str, str] = {}
    nodes = []
    for k, entry in enumerate(doc["launch"]):
        if not isinstance(entry, dict) or len(entry) != 1:
            raise ConfigError(f"{path}: entry {k} must be one of arg / node")
        (kind, body), = entry.items()
        if kind == "arg":
            name = body["name"]
            if name in overrides:
                args[name] = overrides[name]
            elif "default" in body:
                args[name] = str(substitute(str(body["default"]), args))
            else:
                raise ConfigError(f"launch argument '{name}' has no default: give {name}:=...")
        elif kind == "node":
            node = {key: substitute(body.get(key), args) for key in
                    ("pkg", "exec", "name", "namespace", "output")}
            node["param"] = [(p["name"], substitute(p["value"], args))
                             for p in body.get("param", [])]
            node["remap"] = [(r["from"], substitute(r["to"], args))
                             for r in body.get("remap", [])]
            nodes.append(node)
        else:
            raise ConfigError(f"{path}: unsupported entry '{kind}' (arg and node only)")
    unknown = set(overrides) - set(args)
    if unknown:
        raise ConfigError(f"unknown launch arguments {sorted(unknown)}; declared: "
                          f"{sorted(args)}")
    return nodes


def _param_arg(name, value) -> str:
    if isinstance(value, bool):
        v = "true" if value else "false"
    elif isinstance(value, (list, dict)):
        v = yaml.safe_dump(value, default_flow_style=True).strip()
    else:
        v = str(value)
    return f"{name}:={v}"


def command(node: dict) -> list[str] | None:
    if node["pkg"] == "figaroh_ros":
        if node["exec"] not in OUR_EXECUTABLES:
            raise ConfigError(f"figaroh_ros has no executable '{node['exec']}'")
        cmd = [sys.executable, "-m", OUR_EXECUTABLES[node["exec"]]]
    else:
        exe = shutil.which(node["exec"])
        prefix = os.environ.get("AMENT_PREFIX_PATH", "").split(":")
        for p in prefix:
            cand = os.path.join(p, "lib", node["pkg"], node["exec"])
            if p and os.access(cand, os.X_OK):
                exe = cand
        if exe is None:
            return None
        cmd = [exe]
    ros = ["--ros-args"]
    if node.get("name"):
        ros += ["-r", f"__node:={node['name']}"]
    if node.get("namespace"):
        ros += ["-r", f"__ns:=/{node['namespace'].strip('/')}"]     # as ros2 launch: absolute
    for a, b in node["remap"]:
        ros += ["-r", f"{a}:={b}"]
    for name, value in node["param"]:
        ros += ["-p", _param_arg(name, value)]
    return cmd + ros


def _die_with_parent():
    """In the child before exec: SIGTERM when the process that launched it dies (Linux
    PR_SET_PDEATHSIG), so a killed runner or test leaves no orphaned nodes behind."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)
    except (OSError, AttributeError):      # not Linux: the runner's own stop() still applies
        pass


class LaunchedGraph:
    """The processes of a launch file; stop() ends them all."""

    def __init__(self, path: str, overrides: dict[str, str] | None = None, env=None,
                 cwd: str | None = None, quiet: bool = False):
        self.procs: list[tuple[str, subprocess.Popen]] = []
        for node in parse(path, overrides or {}):
            cmd = command(node)
            label = node.get("name") or node["exec"]
            if cmd is None:
                print(f"[launch] skipping {node['pkg']}/{node['exec']}: not installed here",
                      file=sys.stderr)
                continue
            out = subprocess.DEVNULL if quiet else None
            self.procs.append((label, subprocess.Popen(cmd, env=env, cwd=cwd, stdout=out,
                                                       stderr=out,
                                                       start_new_session=True,
                                                       preexec_fn=_die_with_parent)))

    def failed(self) -> list[str]:
        return [f"{n} (exit {p.returncode})" for n, p in self.procs
                if p.poll() is not None and p.returncode != 0]

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
        graph = LaunchedGraph(path, overrides)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        while True:
            bad = graph.failed()
            if bad:
                print(f"[launch] stopping: {', '.join(bad)} exited", file=sys.stderr)
                return 1
            if all(p.poll() is not None for _, p in graph.procs):
                return 0
            time.sleep(0.2)
    except KeyboardInterrupt:
        return 0
    finally:
        graph.stop()

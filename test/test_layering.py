"""The package's layers (docs/testing.md): lower layers never import higher ones, no import
cycles, rclpy only under ``ros/``, the simulator only where a simulation is run, and
imports at module top (the few in-function ones carry a reason)."""
from __future__ import annotations

import ast
import os

import pytest

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "figaroh_ros")

# rank of every subpackage: a module may import modules of its own or a lower rank
RANK = {"errors": 0, "progress": 0, "threads": 0, "lazy": 0, "model": 1, "identification": 2,
        "phenomena": 3, "calibration": 3, "excitation": 3, "camera": 3, "config": 4, "io": 5, "api": 6,
        "tasks": 7, "sim": 8, "cli": 9, "ros": 9, "__init__": 10}
# who may import the simulator besides itself
SIM_USERS = {"figaroh_ros.ros.sim_robot", "figaroh_ros.ros.sim_controllers", "figaroh_ros.ros.demo",
             "figaroh_ros.ros.sim_camera"}
HEAVY_OPTIONAL = ("matplotlib", "cvxpy", "ament_index_python", "cmeel", "rosbag2_py",
                  "tf2_ros", "xacro", "figaroh_ros.ros", "dask")


def _modules():
    for root, _, files in os.walk(ROOT):
        for f in files:
            if f.endswith(".py"):
                path = os.path.join(root, f)
                rel = os.path.relpath(path, os.path.dirname(ROOT))[:-3].replace(os.sep, ".")
                yield rel.removesuffix(".__init__"), path


def _imports(path):
    tree = ast.parse(open(path, encoding="utf-8").read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node, a.name
        elif isinstance(node, ast.ImportFrom) and node.module:
            assert node.level == 0, f"{path}:{node.lineno}: relative import"
            yield node, node.module


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


MODULES = dict(_modules())
GRAPH = {m: sorted({name for _, name in _imports(p) if name.startswith("figaroh_ros.")
                    and not name.startswith(("figaroh_ros.msg", "figaroh_ros.srv",
                                             "figaroh_ros.action"))})
         for m, p in MODULES.items()}


def test_every_module_has_a_known_layer():
    unknown = sorted({_layer(m) for m in MODULES} - set(RANK))
    assert not unknown, f"subpackages without a layer in RANK: {unknown}"


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_go_down_the_layers(module):
    mine = RANK[_layer(module)]
    up = [d for d in GRAPH[module] if RANK[_layer(d)] > mine and d != "figaroh_ros"]
    assert not up, f"{module} (layer {_layer(module)}) imports higher layers: {up}"


def test_only_ros_imports_rclpy():
    bad = [m for m, p in MODULES.items() if _layer(m) != "ros"
           and any(n.split(".")[0] in ("rclpy", "rcl_interfaces") for _, n in _imports(p))]
    assert not bad, f"rclpy imported outside figaroh_ros.ros: {bad}"


def test_simulator_only_for_simulations():
    bad = [m for m, deps in GRAPH.items() if _layer(m) != "sim" and m not in SIM_USERS
           and any(_layer(d) == "sim" for d in deps)]
    assert not bad, f"modules importing figaroh_ros.sim: {bad}"


def test_no_import_cycles():
    seen, stack, cycles = set(), [], []

    def visit(m):
        if m in stack:
            cycles.append(stack[stack.index(m):] + [m])
            return
        if m in seen:
            return
        seen.add(m)
        stack.append(m)
        for d in GRAPH.get(m, []):
            if d in MODULES:
                visit(d)
        stack.pop()
    for m in sorted(MODULES):
        visit(m)
    assert not cycles, f"import cycles: {cycles[:3]}"


def test_in_function_imports_are_few_and_explained():
    found = []
    for m, path in MODULES.items():
        lines = open(path, encoding="utf-8").read().splitlines()
        tree = ast.parse("\n".join(lines))
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    found.append((m, node.lineno, lines[node.lineno - 1]))
    unexplained = [f for f in found if "#" not in f[2]]
    assert not unexplained, f"in-function imports without a reason: {unexplained}"
    assert len(found) < 10, f"{len(found)} in-function imports: {found}"


def test_short_functions_and_files():
    """Median function length under 15 lines, no module over 500 lines."""
    lengths, big = [], []
    for m, path in MODULES.items():
        src = open(path, encoding="utf-8").read()
        if src.count("\n") > 500:
            big.append((m, src.count("\n")))
        lengths += [n.end_lineno - n.lineno + 1 for n in ast.walk(ast.parse(src))
                    if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    lengths.sort()
    assert lengths[len(lengths) // 2] < 15, f"median function length {lengths[len(lengths) // 2]}"
    assert not big, f"modules over 500 lines: {big}"


def test_ros_nodes_spawn_no_subprocess():
    """The nodes run the core through the API (in a worker process), never the CLI."""
    bad = [m for m, p in MODULES.items() if _layer(m) == "ros"
           and any(n == "subprocess" for _, n in _imports(p))]
    assert not bad, f"subprocess imported in {bad}"

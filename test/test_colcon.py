"""The repository builds as a ROS 2 package with colcon (from PyPI) in a workspace that
holds this checkout in src/, the install space imports as one coherent package, and the
installed command runs an installed config: no shipped config refers outside the package
(real recordings come from ``${FIGAROH_DATA}`` or the command line)."""
import ast
import glob
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import colcon_build
import pytest
import yaml
from conftest import ROOT, SHARED, ros_graph_environment

VENV = os.path.dirname(os.path.dirname(sys.executable))


@pytest.mark.skipif(shutil.which("colcon", path=os.path.dirname(sys.executable)) is None,
                    reason="colcon not installed")
def test_colcon_builds_the_package(tmp_path):
    """A clean copy of the checkout (its tracked and untracked files) in a workspace's src/,
    built by ``colcon build`` (CMake configure, every rosidl generator, compile, link,
    install): the install space has the commands, launch and config files and interface
    definitions, its Python package imports with the generated interfaces, the installed
    calibrate command calibrates real recordings and the installed launch file starts nodes
    that publish joint states. Ninja and ccache (filled by make setup) cut its CPU; see
    colcon_build.build_tools for why the result is what any ``colcon build`` of this
    checkout gives: a broken .msg or CMakeLists.txt still fails in CMake or a generator, a
    .msg whose generated C does not compile in the compiler (checked with a warm cache).
    Under ``make test`` the build ran in the background from the suite's start
    (``conftest.pytest_sessionstart``); alone, the test builds."""
    ws = os.environ.get(colcon_build.BACKGROUND_ENV)
    if not ws:
        ws = str(tmp_path / "ws")
        colcon_build.main(ws)
    r = colcon_build.result(ws)
    assert r["returncode"] == 0, r["output"]
    inst = Path(ws) / "install" / "figaroh_ros"
    site = inst / "lib" / "python3.11" / "site-packages"
    for exe in ("sim_robot", "recorder", "executor", "calibration_node", "figaroh-ros"):
        assert os.access(inst / "lib" / "figaroh_ros" / exe, os.X_OK)
    for f in ("launch/sim_ur10.launch.yaml", "config/sim_ur10.yaml", "msg/PostureEvent.msg",
              "action/Calibrate.action"):
        assert (inst / "share" / "figaroh_ros" / f).is_file()
    code = ("import figaroh_ros.calibration.solve as s, figaroh_ros.action._calibrate as c;"
            "from figaroh_ros.action import Calibrate; from figaroh_ros.srv import "
            "RecorderControl; print(s.__file__); print(c.__file__)")
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path,
                       env=dict(os.environ, PYTHONPATH=str(site)), capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert all(line.startswith(str(site)) for line in r.stdout.split())
    share = inst / "share" / "figaroh_ros"
    out = tmp_path / "out"
    r = subprocess.run([sys.executable, str(inst / "lib" / "figaroh_ros" / "figaroh-ros"),
                        "calibrate", str(share / "config" / "tiago_calibration_offset.yaml"),
                        "--out", str(out)], cwd=tmp_path, capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(site),
                                FIGAROH_DATA=os.path.join(SHARED, "data")), timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    with open(out / "result.yaml") as f:
        result = yaml.safe_load(f)
    # FIGAROH's joint-offset calibration of these recordings: 4.23 mm on validation
    assert 4.0 < result["rmse_validation_mm"] < 4.5, result["rmse_validation_mm"]
    assert result["rmse_validation_mm"] < result["nominal_rmse_validation_mm"]
    assert (out / "tiago_calibrated.urdf").is_file()
    _installed_launch_runs(inst, site, tmp_path)


LISTEN = """
import sys, rclpy
from sensor_msgs.msg import JointState
rclpy.init()
node = rclpy.create_node("install_space_probe")
got = []
node.create_subscription(JointState, "/joint_states", got.append, 10)
import time
end = time.monotonic() + float(sys.argv[1])
while not got and time.monotonic() < end:
    rclpy.spin_once(node, timeout_sec=0.1)
print(" ".join(got[0].name) if got else "")
"""


def _installed_launch_runs(inst, site, tmp_path):
    """The ``ros2 launch``-equivalent start of sim_ur10 from the install space: the
    installed command runs the installed launch file, whose nodes import the installed
    package and publish the simulated UR10's joint states."""
    domain = ros_graph_environment()
    env = dict(os.environ, PYTHONPATH=str(site), ROS_DOMAIN_ID=str(domain),
               AMENT_PREFIX_PATH=f"{inst}:{VENV}")
    share = inst / "share" / "figaroh_ros"
    runner = subprocess.Popen([sys.executable, str(inst / "lib" / "figaroh_ros" / "figaroh-ros"),
                               "launch", str(share / "launch" / "sim_ur10.launch.yaml")],
                              cwd=tmp_path, env=env, stderr=subprocess.PIPE, text=True)
    try:
        r = subprocess.run([sys.executable, "-c", LISTEN, "60"], env=env, capture_output=True,
                           text=True, timeout=120)
        assert r.stdout.split() == ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint",
                                    "wrist_1_joint", "wrist_2_joint", "wrist_3_joint"], (
            r.stdout + r.stderr[-2000:])
        assert runner.poll() is None, runner.stderr.read()[-2000:]
    finally:
        runner.terminate()
        assert runner.wait(timeout=30) == 0


PATH_KEYS = re.compile(r"(^|_)(urdf|path|validation|file|dir|csv)$")


def _paths(node, key=""):
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, str(k))
    elif isinstance(node, list):
        for v in node:
            yield from _paths(v, key)
    elif isinstance(node, str) and PATH_KEYS.search(key):
        yield key, node


@pytest.mark.parametrize("config", sorted(glob.glob(os.path.join(ROOT, "config", "*.yaml"))))
def test_shipped_configs_refer_to_nothing_outside_the_package(config):
    with open(config) as f:
        text = f.read()
    assert "shared/" not in text, "a path into the development checkout's neighbours"
    for key, value in _paths(yaml.safe_load(text)):
        if value.startswith("example-robot-data:") or value.startswith("${FIGAROH_DATA}/"):
            continue
        path = os.path.normpath(os.path.join(os.path.dirname(config), value))
        inside = os.path.join(ROOT, "config")
        assert path == inside or path.startswith(inside + os.sep), (key, value)
        assert os.path.exists(path), (key, value)


def test_one_version_string():
    root = ET.parse(os.path.join(ROOT, "package.xml")).getroot()
    r = subprocess.run([sys.executable, "setup.py", "--version"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.stdout.split()[-1] == root.findtext("version")
    with open(os.path.join(ROOT, "setup.cfg")) as f:
        assert not re.search(r"^version\s*=", f.read(), re.M)


# import name -> rosdep key (ros/rosdistro rosdep/*.yaml, or a ROS package); None: no key
# exists, docs/installation.md documents the pip install step (the pip name)
ROSDEP = {"numpy": "python3-numpy", "scipy": "python3-scipy", "yaml": "python3-yaml",
          "matplotlib": "python3-matplotlib", "pydantic": "python3-pydantic",
          "rosbags": "python3-rosbags-pip", "cvxpy": "python3-cvxpy-pip",
          "mcap": "mcap-ros2-support", "pinocchio": "pinocchio", "xacro": "xacro",
          "rclpy": "rclpy", "rcl_interfaces": "rcl_interfaces", "std_msgs": "std_msgs",
          "ament_index_python": "ament_index_python", "sensor_msgs": "sensor_msgs",
          "geometry_msgs": "geometry_msgs", "trajectory_msgs": "trajectory_msgs",
          "std_srvs": "std_srvs", "control_msgs": "control_msgs", "tf2_msgs": "tf2_msgs",
          "builtin_interfaces": "builtin_interfaces", "cyipopt": None, "threadpoolctl": None,
          "tf2_ros": "tf2_ros_py", "rosbag2_py": "rosbag2_py", "dask": None,
          "visualization_msgs": "visualization_msgs", "action_msgs": "action_msgs",
          "networkx": "python3-networkx", "cv2": "python3-opencv",
          "unique_identifier_msgs": "unique_identifier_msgs"}
PIP = {"cyipopt": "cyipopt", "threadpoolctl": "threadpoolctl", "dask": "dask[distributed]"}


def _rosdistro_keys() -> set[str]:
    """The keys that exist in ros/rosdistro (test/data/rosdep/rosdistro_keys.yaml: the
    commit and files they were copied from are named there)."""
    with open(os.path.join(ROOT, "test", "data", "rosdep", "rosdistro_keys.yaml")) as f:
        return {k for keys in yaml.safe_load(f).values() for k in keys}


def _imported_third_party() -> set[str]:
    """Top-level modules imported by the package that are neither stdlib nor its own."""
    imported = set()
    for path in glob.glob(os.path.join(ROOT, "figaroh_ros", "**", "*.py"), recursive=True):
        with open(path) as f:
            tree = ast.parse(f.read())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                imported |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                imported.add(node.module.split(".")[0])
    return imported - set(sys.stdlib_module_names) - {"figaroh_ros"}


def _robot_install_section() -> str:
    """docs/installation.md's section on a ROS 2 workspace (rosdep, pip, colcon)."""
    with open(os.path.join(ROOT, "docs", "installation.md")) as f:
        text = f.read()
    return text.split("## In a ROS 2 workspace", 1)[1].split("\n## ", 1)[0]


def test_every_imported_dependency_has_a_rosdep_key():
    """Every key of package.xml exists in ros/rosdistro (``python3-dask`` did not: rosdep
    failed on it); every imported module has its key there, or no key and the pip install step
    of docs/installation.md names it."""
    root = ET.parse(os.path.join(ROOT, "package.xml")).getroot()
    keys = {e.text for e in root if e.tag.endswith("depend")}
    known = _rosdistro_keys()
    assert keys <= known, f"not a rosdistro rosdep key: {sorted(keys - known)}"
    third_party = _imported_third_party()
    assert third_party <= set(ROSDEP), sorted(third_party - set(ROSDEP))
    missing = {m: ROSDEP[m] for m in third_party if ROSDEP[m] and ROSDEP[m] not in keys}
    assert not missing, missing
    section = _robot_install_section()
    undocumented = [m for m in third_party if ROSDEP[m] is None and PIP[m] not in section]
    assert not undocumented, undocumented

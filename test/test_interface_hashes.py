"""The standard interfaces generated here have the type hash (RIHS01, REP 2011) of the
definitions that the distro's own releases ship, so a real controller of that distro
matches our executor.  The releases' files are fixtures (test/data/interfaces/<distro>/,
provenance in PROVENANCE.md); hashes are computed from the text with the rosidl generators
of the wheels, and the installed generated types report theirs on the ROS graph."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, ros_graph_environment
from rosidl_adapter.action import convert_action_to_idl
from rosidl_adapter.msg import convert_msg_to_idl
from rosidl_generator_type_description import generate_type_hash

VENV_SHARE = Path(sys.prefix) / "share"
FIXTURES = Path(ROOT) / "test" / "data" / "interfaces"
OURS = Path(ROOT) / "ros_interfaces"
DISTROS = ("humble", "jazzy", "kilted")
PACKAGES = {"control_msgs": "action/FollowJointTrajectory", "tf2_msgs": "msg/TFMessage"}
DEPENDENCIES = ("builtin_interfaces", "std_msgs", "geometry_msgs", "trajectory_msgs",
                "service_msgs", "action_msgs", "unique_identifier_msgs")


def type_hashes(package_dir: Path, package: str, work: Path) -> dict[str, str]:
    """RIHS01 of every type (and sub-type) defined by the .msg/.action files of a
    package folder, as rosidl computes them at build time."""
    idl, tuples = work / "idl", []
    for f in sorted(package_dir.glob("*/*")):
        rel = f.relative_to(package_dir)
        convert = {".msg": convert_msg_to_idl, ".action": convert_action_to_idl}[f.suffix]
        convert(package_dir.absolute(), package, rel, idl / rel.parent)
        tuples.append(f"{idl}:{rel.with_suffix('.idl')}")
    args = work / "args.json"
    args.write_text(json.dumps({
        "package_name": package, "output_dir": str(work / "json"), "idl_tuples": tuples,
        "include_paths": [f"{d}:{VENV_SHARE / d}" for d in DEPENDENCIES]}))
    hashes = {}
    for out in generate_type_hash(str(args)):
        hashes.update({h["type_name"]: h["hash_string"]
                       for h in json.loads(Path(out).read_text())["type_hashes"]})
    return hashes


@pytest.fixture(scope="module")
def hashes(tmp_path_factory):
    """(origin, distro, package) -> {type: RIHS01}; origin 'release' or 'ours'."""
    out = {}
    for distro in DISTROS:
        for package in PACKAGES:
            for origin, root in (("release", FIXTURES), ("ours", OURS)):
                d = root / distro / package if origin == "release" else root / package / distro
                work = tmp_path_factory.mktemp(f"{origin}_{distro}_{package}")
                out[origin, distro, package] = type_hashes(d, package, work)
    return out


def installed_distro() -> str:
    marker = VENV_SHARE / "control_msgs" / "ros_distro"
    return os.environ.get("ROS_DISTRO") or (marker.read_text().strip()
                                            if marker.is_file() else "kilted")


@pytest.mark.parametrize("distro", DISTROS)
@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_our_definitions_hash_like_the_release_of_each_distro(hashes, distro, package):
    release, ours = hashes["release", distro, package], hashes["ours", distro, package]
    top = f"{package}/{PACKAGES[package]}"
    assert ours[top] == release[top]
    assert {k: v for k, v in ours.items() if k.startswith(package)} == \
        {k: v for k, v in release.items() if k.startswith(package)}


def test_the_kilted_feedback_differs_from_humble_and_jazzy(hashes):
    fb = "control_msgs/action/FollowJointTrajectory_Feedback"
    h = {d: hashes["release", d, "control_msgs"][fb] for d in DISTROS}
    assert h["humble"] == h["jazzy"] != h["kilted"]
    goal = "control_msgs/action/FollowJointTrajectory_Goal"
    assert len({hashes["release", d, "control_msgs"][goal] for d in DISTROS}) == 1


PROBE = """
import time, rclpy
from rclpy.action import ActionServer
from control_msgs.action import FollowJointTrajectory
from tf2_msgs.msg import TFMessage
rclpy.init()
node = rclpy.create_node("hash_probe")
server = ActionServer(node, FollowJointTrajectory, "/hash_probe/fjt", lambda g: None)
pub = node.create_publisher(TFMessage, "/hash_probe/tf", 1)
topics = {"/hash_probe/fjt/_action/feedback": None, "/hash_probe/tf": None}
deadline = time.monotonic() + 20.0
while None in topics.values() and time.monotonic() < deadline:
    for t in topics:
        infos = node.get_publishers_info_by_topic(t)
        if infos:
            topics[t] = str(infos[0].topic_type_hash)
    time.sleep(0.05)
print(topics["/hash_probe/fjt/_action/feedback"])
print(topics["/hash_probe/tf"])
"""


@pytest.mark.xdist_group("ros_graph")
def test_the_installed_types_carry_the_installed_distros_hash(hashes):
    before = dict(os.environ)
    ros_graph_environment()
    try:
        r = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                           timeout=120)
    finally:
        os.environ.clear()
        os.environ.update(before)
    assert r.returncode == 0, r.stderr[-2000:]
    feedback, tf = r.stdout.split()
    distro = installed_distro()
    cm, tf2 = hashes["release", distro, "control_msgs"], hashes["release", distro, "tf2_msgs"]
    assert feedback == cm["control_msgs/action/FollowJointTrajectory_FeedbackMessage"], \
        f"generated FollowJointTrajectory is not {distro}'s: rebuild (make setup)"
    assert tf == tf2["tf2_msgs/msg/TFMessage"]
    installed = json.loads((VENV_SHARE / "control_msgs" / "action" /
                            "FollowJointTrajectory.json").read_text())["type_hashes"][0]
    assert installed["hash_string"] == cm["control_msgs/action/FollowJointTrajectory"]


def test_an_unknown_distro_is_refused_before_anything_is_built(tmp_path):
    r = subprocess.run(["bash", os.path.join(ROOT, "tools", "build_interfaces.sh"),
                        str(tmp_path)], env=dict(os.environ, ROS_DISTRO="foxy"),
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "unknown ROS_DISTRO 'foxy'" in r.stderr
    assert list(tmp_path.iterdir()) == []

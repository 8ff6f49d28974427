"""The shipped RViz view (config/rviz/calibration.rviz) shows what the calibration node
publishes: a MarkerArray display on the node's marker topic with its QoS (transient local:
the last calibration shows in an RViz started later), every marker namespace enabled, the
fixed frame the markers are stamped in (the simulated mocap frame), and the robot model
from the latched /robot_description."""
import ast
import os

import pytest
import yaml
from conftest import ROOT

RVIZ = os.path.join(ROOT, "config", "rviz", "calibration.rviz")


@pytest.fixture(scope="module")
def view():
    with open(RVIZ) as f:
        return yaml.safe_load(f)["Visualization Manager"]


def _displays(view, cls):
    return [d for d in view["Displays"] if d["Class"] == f"rviz_default_plugins/{cls}"]


def _mocap_frame() -> str:
    """The frame_id the simulated robot stamps its mocap poses with (sim_robot._mocap): the
    frame the node's markers use (``measurement_frame_id`` of the recorded bag)."""
    tree = ast.parse(open(os.path.join(ROOT, "figaroh_ros", "ros", "sim_robot.py")).read())
    mocap = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)
                 and n.name == "_mocap")
    frames = [n.value.value for n in ast.walk(mocap) if isinstance(n, ast.Assign)
              and ast.unparse(n.targets[0]) == "msg.header.frame_id"]
    assert len(frames) == 1, frames
    return frames[0]


def _launch_namespace() -> str:
    """The calibration node's namespace in launch/sim_ur10.launch.yaml by default."""
    with open(os.path.join(ROOT, "launch", "sim_ur10.launch.yaml")) as f:
        launch = yaml.safe_load(f)["launch"]
    default = {e["arg"]["name"]: e["arg"].get("default") for e in launch if "arg" in e}
    (node,) = [e["node"] for e in launch if "node" in e
               and e["node"]["exec"] == "calibration_node"]
    ns = node.get("namespace", "")
    return default["namespace"] if ns == "$(var namespace)" else ns


def test_a_marker_array_display_on_the_node_topic(view):
    import numpy as np
    from rclpy.qos import DurabilityPolicy, ReliabilityPolicy

    from figaroh_ros.calibration.markers import PostureFit, marker_specs
    from figaroh_ros.ros.markers import MARKERS_QOS, TOPIC
    (d,) = _displays(view, "MarkerArray")
    assert d["Enabled"] is True
    assert _launch_namespace().strip("/") == ""
    assert d["Topic"]["Value"] == "/" + TOPIC
    assert MARKERS_QOS.durability == DurabilityPolicy.TRANSIENT_LOCAL \
        and d["Topic"]["Durability Policy"] == "Transient Local"
    assert MARKERS_QOS.reliability == ReliabilityPolicy.RELIABLE \
        and d["Topic"]["Reliability Policy"] == "Reliable"
    fit = PostureFit(["a"], ["train"], *(np.zeros((1, 1, 3)) for _ in range(3)))
    namespaces = {s["ns"] for s in marker_specs(fit, 1e-3)}
    assert set(d["Namespaces"]) == namespaces and all(d["Namespaces"].values())


def test_the_fixed_frame_is_the_markers_frame(view):
    frame = _mocap_frame()
    assert frame == "mocap"
    assert view["Global Options"]["Fixed Frame"] == frame
    assert all(d.get("Reference Frame", "<Fixed Frame>") == "<Fixed Frame>"
               for d in view["Displays"])


def test_the_robot_model_from_the_latched_description(view):
    (d,) = _displays(view, "RobotModel")
    assert d["Description Source"] == "Topic"
    assert d["Description Topic"]["Value"] == "/robot_description"
    assert d["Description Topic"]["Durability Policy"] == "Transient Local"

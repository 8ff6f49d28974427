"""The nominal model from each source a robot offers: a URDF file, a xacro file with the
robot's arguments, the bag the recorder wrote, and the live robot_description (topic,
transient local, and robot_state_publisher's parameter) -- with its sha256 and a clear
error for each way it can fail."""
import hashlib
import os
import subprocess
import sys
import time

import numpy as np
import pinocchio as pin
import pytest
from conftest import ROOT, ros_graph_environment, said_line, stop_processes

from figaroh_ros.config.base import parse
from figaroh_ros.config.fields import Urdf
from figaroh_ros.config.model_source import ModelSource
from figaroh_ros.errors import ConfigError, DataError, ModelError, RosError
from figaroh_ros.io.bag_model import nominal_model, read_bag_model
from figaroh_ros.io.bags import typestore
from figaroh_ros.io.segmented_bag import SegmentedBagWriter
from figaroh_ros.model.loading import load_model
from figaroh_ros.model.sources import resolve_model_source, write_model

DATA = os.path.join(ROOT, "test", "data")
URDF = os.path.join(DATA, "two_dof.urdf")
XACRO = os.path.join(DATA, "two_dof.urdf.xacro")


class Robot(ModelSource):
    """A robot section with the model source fields (the hook of config/robot.py)."""
    name: str = "robot"
    urdf: Urdf | None = None


def _joint2_offset(text: str, joint="joint2") -> np.ndarray:
    model = load_model(text).model
    return model.jointPlacements[model.getJointId(joint)].translation


def test_a_urdf_file_is_read_as_is_with_its_hash():
    text, prov = resolve_model_source({"urdf": "two_dof.urdf"}, DATA)
    with open(URDF, "rb") as f:
        raw = f.read()
    assert text == raw.decode() and prov.sha256 == hashlib.sha256(raw).hexdigest()
    assert (prov.source, prov.location) == ("urdf", URDF)


def test_xacro_arguments_reach_the_model():
    text, prov = resolve_model_source(
        {"source": "xacro", "xacro": "two_dof.urdf.xacro",
         "xacro_args": {"link1_length": "0.42", "prefix": "ur_"}}, DATA)
    assert np.allclose(_joint2_offset(text, "ur_joint2"), [0, 0, 0.42])
    R = load_model(text).model.jointPlacements[2].rotation
    assert np.allclose(R, pin.rpy.rpyToMatrix(-np.pi / 2, 0, 0))
    default, prov0 = resolve_model_source({"source": "xacro", "xacro": XACRO}, DATA)
    assert np.allclose(_joint2_offset(default), [0, 0, 0.3])      # the xacro's default
    assert prov.sha256 != prov0.sha256 and prov.arguments == {"link1_length": "0.42",
                                                              "prefix": "ur_"}
    path = write_model(text, "/tmp/figaroh_model_test")
    assert path.endswith(f"model_{prov.sha256[:12]}.urdf") and open(path).read() == text


def test_xacro_errors_name_the_file(tmp_path):
    bad = tmp_path / "bad.urdf.xacro"
    bad.write_text('<robot xmlns:xacro="http://www.ros.org/wiki/xacro" name="r">'
                   '<xacro:undefined_macro/></robot>')
    with pytest.raises(ModelError, match="bad.urdf.xacro"):
        resolve_model_source({"source": "xacro", "xacro": str(bad)}, DATA)
    with pytest.raises(ModelError, match="xacro file not found"):
        resolve_model_source({"source": "xacro", "xacro": "none.xacro"}, DATA)
    loop = tmp_path / "notree.urdf.xacro"
    loop.write_text('<robot name="r"><link name="a"/><link name="b"/></robot>')
    with pytest.raises(ModelError, match="invalid URDF"):
        resolve_model_source({"source": "xacro", "xacro": str(loop)}, DATA)


def _bag(path, descriptions):
    store = typestore()
    w = SegmentedBagWriter(str(path), {"/robot_description": "std_msgs/msg/String"}, store)
    String = store.types["std_msgs/msg/String"]
    for k, d in enumerate(descriptions):
        w.write("/robot_description", 10**18 + k, store.serialize_cdr(
            String(data=d), "std_msgs/msg/String"))
    w.close()


def test_the_bag_gives_the_model_the_experiment_started_with(tmp_path):
    first = open(URDF).read()
    second, _ = resolve_model_source({"source": "xacro", "xacro": XACRO,
                                      "xacro_args": {"link1_length": "0.5"}}, DATA)
    _bag(tmp_path / "bag", [first, second])
    assert read_bag_model([str(tmp_path / "bag")]) == (first, 2)
    text, prov = nominal_model(Robot(source="bag"), DATA, bags=[str(tmp_path / "bag")])
    assert text == first and prov.sha256 == hashlib.sha256(first.encode()).hexdigest()
    assert prov.source == "bag" and "first of 2 versions" in prov.location
    _bag(tmp_path / "empty", [])
    with pytest.raises(DataError, match="holds no '/robot_description'"):
        nominal_model({"source": "bag"}, DATA, bags=[str(tmp_path / "empty")])
    with pytest.raises(ModelError, match="pass --bag"):
        nominal_model({"source": "bag"}, DATA)
    with pytest.raises(ModelError, match="offline, record a bag") as refused:
        nominal_model({"source": "topic"}, DATA)
    assert "--live" not in str(refused.value)          # a flag no command has
    assert "only the executor node" in str(refused.value) and "--urdf FILE" in str(
        refused.value), refused.value


def test_the_config_section_checks_each_source_has_what_it_needs(tmp_path):
    cfg = str(tmp_path / "c.yaml")
    parsed = parse(Robot, {"source": "xacro", "xacro": XACRO,
                           "xacro_args": {"link1_length": "0.4"}}, cfg)
    assert parsed.xacro == XACRO and parsed.description_timeout == 30.0
    for raw, field in (({"source": "xacro"}, "xacro"), ({"source": "urdf"}, "urdf"),
                       ({"source": "topic", "xacro_args": {"a": "1"}}, "xacro_args"),
                       ({"source": "live"}, "source"),
                       ({"source": "topic", "description_timeout": 0.0},
                        "description_timeout")):
        with pytest.raises(ConfigError, match=field):
            parse(Robot, raw, cfg)


STATE_PUBLISHER = """
import sys, rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.parameter import Parameter
from std_msgs.msg import String
from figaroh_ros.ros.common import LATCHED
rclpy.init()
node = rclpy.create_node("robot_state_publisher")
text = open(sys.argv[1]).read()
node.declare_parameter("robot_description", text)
node.create_publisher(String, "/robot_description", LATCHED).publish(String(data=text))
print("up", flush=True)
try:
    rclpy.spin(node)
except (KeyboardInterrupt, ExternalShutdownException):
    pass
"""


@pytest.fixture()
def state_publisher():
    before = dict(os.environ)
    ros_graph_environment()
    p = subprocess.Popen([sys.executable, "-c", STATE_PUBLISHER, URDF],
                         stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        said_line(p, "up")
        yield
    finally:
        stop_processes([p], timeout=10)     # a starved machine: the test's verdict stands
    os.environ.clear()
    os.environ.update(before)


@pytest.mark.xdist_group("ros_graph")
def test_the_live_model_comes_from_the_topic_and_the_parameter(state_publisher):
    from figaroh_ros.ros.description import live_providers  # rclpy: ROS graph tests only
    expected = open(URDF).read()
    live = live_providers()
    section = Robot(source="topic", description_timeout=20.0)
    text, prov = nominal_model(section, DATA, live=live)
    assert text == expected and prov.location == "robot_description"    # relative: namespaces
    text, prov = nominal_model(Robot(source="parameter", description_timeout=20.0), DATA,
                               live=live)
    assert text == expected and prov.sha256 == hashlib.sha256(expected.encode()).hexdigest()
    t0 = time.monotonic()
    with pytest.raises(RosError, match="no robot model on '/silent/robot_description' "
                                       "within 1 s"):
        nominal_model(Robot(source="topic", description_topic="/silent/robot_description",
                            description_timeout=1.0), DATA, live=live)
    assert time.monotonic() - t0 < 5.0
    with pytest.raises(RosError, match="node '/no_such_node' does not answer"):
        nominal_model(Robot(source="parameter", description_node="no_such_node",
                            description_timeout=1.0), DATA, live=live)

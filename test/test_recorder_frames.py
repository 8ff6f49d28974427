"""A bag is self-contained about its measurement frames: at start the
recorder looks up on TF each frame the driver section names relative to the model root
(robot_description's root link) and writes the transforms into the bag's custom_data; a
frame TF does not give within ``frame_timeout`` is named in the start reply."""
import os
import time

import numpy as np
import pinocchio as pin
import pytest
import yaml
from conftest import ROOT
from geometry_msgs.msg import PoseStamped, WrenchStamped
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from test_recorder_qos import _call, _recorder
from tf2_msgs.msg import TFMessage

from figaroh_ros.io.bag_metadata import UNRESOLVED_KEY, recorded_frames
from figaroh_ros.msg import PostureEvent
from figaroh_ros.ros.common import LATCHED
from figaroh_ros.ros.frames import DYNAMIC, StaticBroadcaster, to_msg
from figaroh_ros.srv import RecorderControl

pytestmark = pytest.mark.xdist_group("ros_graph_2")   # the second worker's graphs

URDF = """<robot name="r"><link name="base_link"/><link name="flange"/>
<joint name="j" type="revolute"><parent link="base_link"/><child link="flange"/>
<axis xyz="0 0 1"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint></robot>"""
STATIC = pin.SE3(np.eye(3), np.array([1.0, 0.0, 0.0]))                # base_link -> flange
MOVING = pin.SE3(pin.exp3(np.array([0.0, 0.0, 0.3])), np.array([0.0, 0.5, 0.0]))


@pytest.fixture()
def framed(tmp_path):
    """The recorder on a robot YAML whose driver names the wrench frame tool0_controller
    (on TF: base_link -> flange static, flange -> tool0_controller on /tf) and the pose
    frame nowhere (on no TF)."""
    robot = yaml.safe_load(open(os.path.join(ROOT, "config", "robot_ur10.yaml")))
    robot["driver"] = {
        "profile": "generic", "joint_states": {"topic": "/arm/joint_states"},
        "wrench": {"topic": "/ft/wrench", "type": "geometry_msgs/msg/WrenchStamped",
                   "frame": "tool0_controller"},
        "pose": {"topic": "/mocap/pose", "type": "geometry_msgs/msg/PoseStamped",
                 "frame": "nowhere", "required": False}}
    config = tmp_path / "robot.yaml"
    config.write_text(yaml.safe_dump(robot))
    with _recorder(tmp_path, [f"config:={config}", "start_timeout:=5.0",
                              "frame_timeout:=1.0"], "recorder_frames_test") as graph:
        yield graph


def test_the_measurement_frames_are_written_into_the_bag(framed, tmp_path):
    node, executor = framed
    description = node.create_publisher(String, "/robot_description", LATCHED)
    description.publish(String(data=URDF))
    StaticBroadcaster(node).send([("base_link", "flange", STATIC)])
    tf = node.create_publisher(TFMessage, "/tf", DYNAMIC)
    js = node.create_publisher(JointState, "/arm/joint_states", 10)
    ft = node.create_publisher(WrenchStamped, "/ft/wrench", 10)
    pose = node.create_publisher(PoseStamped, "/mocap/pose", 10)
    node.create_publisher(PostureEvent, "/figaroh/posture_events", 10)

    def tick():
        now = node.get_clock().now().to_msg()
        tf.publish(TFMessage(transforms=[to_msg("flange", "tool0_controller", MOVING, now)]))
        js.publish(JointState(name=["j"], position=[0.0]))
        ft.publish(WrenchStamped())
        pose.publish(PoseStamped())
    node.create_timer(0.02, tick)
    client = node.create_client(RecorderControl, "/figaroh/recorder/control")
    bag = str(tmp_path / "bag")
    started = _call(node, executor, client, "start", bag)
    assert "frames not on TF" in started.message, started.message
    unresolved = started.message.split("frames not on TF")[1]
    assert "nowhere" in unresolved and "tool0_controller" not in unresolved, started.message
    t0 = time.monotonic()
    while time.monotonic() - t0 < 0.3:
        executor.spin_once(timeout_sec=0.01)
    _call(node, executor, client, "stop")
    frames = recorded_frames(bag)
    assert set(frames) == {"tool0_controller"}, frames
    f = frames["tool0_controller"]
    want = STATIC * MOVING
    got = pin.XYZQUATToSE3(np.array(f["xyz"] + f["xyzw"]))
    assert f["parent"] == "base_link"
    assert np.allclose(got.translation, want.translation, atol=1e-9), f
    assert np.allclose(got.rotation, want.rotation, atol=1e-9), f
    meta = yaml.safe_load(open(os.path.join(bag, "metadata.yaml")))
    assert meta["rosbag2_bagfile_information"]["custom_data"][UNRESOLVED_KEY] == "nowhere"

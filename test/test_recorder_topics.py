"""Which topics a recording holds and which it requires (``ros.recorder.recorded_topics``,
``config.driver.Driver.recorded``): the joint states, the force-torque sensor, the mocap
body and the extra topics of the robot's driver section, each required unless it says
otherwise, the executor's marks last and never required; a recording of named topics
(no robot config) requires none."""
import os

from conftest import ROOT

from figaroh_ros.config.driver import EVENTS, Driver
from figaroh_ros.ros.parameters import RecorderParameters
from figaroh_ros.ros.recorder import recorded_topics


def test_the_robots_driver_section_says_what_is_required():
    measured = recorded_topics(RecorderParameters(
        config=os.path.join(ROOT, "config", "robot_ur10.yaml")))
    assert list(measured) == ["joint_states", "force_torque_sensor_broadcaster/wrench",
                              "mocap/pose", "figaroh/posture_events"]
    assert {t: m.required for t, m in measured.items()} == {
        "joint_states": True, "force_torque_sensor_broadcaster/wrench": True,
        "mocap/pose": False, "figaroh/posture_events": False}
    assert measured["joint_states"].type == "sensor_msgs/msg/JointState"
    assert measured["mocap/pose"].reliability == "best_effort"
    assert measured["figaroh/posture_events"].type == "figaroh_ros/msg/PostureEvent"


def test_extra_topics_come_before_the_marks_and_keep_their_own_rule():
    d = Driver(joint_states={"topic": "arm/joint_states", "reliability": "reliable"},
               pose={"topic": "body", "type": "geometry_msgs/msg/PoseStamped"},
               extra=[{"topic": "currents", "type": "sensor_msgs/msg/JointState"},
                      {"topic": "imu", "type": "sensor_msgs/msg/Imu", "required": False}])
    got = d.recorded()
    assert [(m.topic, m.type, m.required) for m in got] == [
        ("arm/joint_states", "sensor_msgs/msg/JointState", True),
        ("body", "geometry_msgs/msg/PoseStamped", True),
        ("currents", "sensor_msgs/msg/JointState", True),
        ("imu", "sensor_msgs/msg/Imu", False),
        (EVENTS[0], EVENTS[1], False)]
    assert got[0].reliability == "reliable"
    assert [m.topic for m in Driver().recorded()] == ["joint_states", EVENTS[0]]


def test_named_topics_are_recorded_none_required():
    measured = recorded_topics(RecorderParameters(
        topics=["/joint_states:sensor_msgs/msg/JointState", "/tf:tf2_msgs/msg/TFMessage"]))
    assert [(t, m.topic, m.type, m.required) for t, m in measured.items()] == [
        ("/joint_states", "/joint_states", "sensor_msgs/msg/JointState", False),
        ("/tf", "/tf", "tf2_msgs/msg/TFMessage", False)]

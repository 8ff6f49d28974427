"""The frames a geometric calibration estimated, broadcast on ``/tf_static``.

A published geometric result carries the measurement frame -> start frame placement
(``base_frame`` of result.yaml: the start frame's pose in the measurement frame, e.g. the
robot base seen by the motion capture) and, for a pose measurement, the tool frame ->
measured body placement (``tool_frame``).  They become two static transforms:

* ``<measurement frame>`` -> ``<start frame>`` (``universe`` is the URDF's root link);
* ``<tool frame>`` -> ``<tool frame>_measured`` (the marker body or target).

The measurement frame is the ``frame_id`` of the recorded measurement messages (the mocap
driver's frame).  As tf2_ros's StaticTransformBroadcaster does, the transforms go out on
``/tf_static`` as one latched ``tf2_msgs/TFMessage`` (transient local, depth 1) holding
every static transform this node has sent, each child once; a restored model replaces
them with its own (``ros/description_owner.py``).
"""
from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from tf2_msgs.msg import TFMessage

from figaroh_ros.ros.frames import to_msg

TF_STATIC = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                       reliability=ReliabilityPolicy.RELIABLE)


def root_link(urdf_text: str) -> str:
    """The link of a URDF that is no joint's child."""
    robot = ET.fromstring(urdf_text)
    children = {j.find("child").get("link") for j in robot.iter("joint")
                if j.find("child") is not None}
    return next(ln.get("name") for ln in robot.iter("link") if ln.get("name") not in children)


def se3(pose: dict) -> pin.SE3:
    return pin.SE3(pin.rpy.rpyToMatrix(*pose["rpy"]), np.array(pose["xyz"], float))


def estimated_transforms(summary: dict, measurement_frame: str, start_frame: str,
                         tool_frame: str) -> list[tuple[str, str, pin.SE3]]:
    """(parent, child, placement) of the frames a geometric result estimated."""
    out = [(measurement_frame, start_frame, se3(summary["base_frame"]))]
    if isinstance(summary.get("tool_frame"), dict):
        out.append((tool_frame, f"{tool_frame}_measured", se3(summary["tool_frame"])))
    return out


class StaticFrames:
    """A latched ``/tf_static`` publisher keeping one transform per child frame."""

    def __init__(self, node):
        self.node = node
        self.pub = node.create_publisher(TFMessage, "/tf_static", TF_STATIC)
        self.sent: dict[str, object] = {}

    def send(self, transforms: list[tuple[str, str, pin.SE3]]) -> None:
        stamp = self.node.get_clock().now().to_msg()
        for parent, child, T in transforms:
            self.sent[child] = to_msg(parent, child, T, stamp)
        self.pub.publish(TFMessage(transforms=list(self.sent.values())))

    def replace(self, transforms: list[tuple[str, str, pin.SE3]]) -> None:
        """Exactly ``transforms`` on /tf_static from now on (a restored model's frames;
        an empty message when it has none)."""
        self.sent = {}
        self.send(transforms)

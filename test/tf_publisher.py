"""A TF publisher for test_frames.py: ``world -> arm`` static (x = 1 m), ``arm -> hand``
turning about z at 1 rad/s from the stamp 0 of its first message, published at 50 Hz;
with our StaticBroadcaster (tf2_ros's where it exists).  ``tf_publisher.py PARENT CHILD``:
only the static ``PARENT -> CHILD`` (x = 1 m), as a second latched /tf_static publisher."""
import sys

import numpy as np
import pinocchio as pin
import rclpy
from tf2_msgs.msg import TFMessage

from figaroh_ros.ros.frames import DYNAMIC, StaticBroadcaster, to_msg

rclpy.init()
node = rclpy.create_node("tf_fixture")
parent, child = sys.argv[1:3] if len(sys.argv) == 3 else ("world", "arm")
StaticBroadcaster(node).send([(parent, child, pin.SE3(np.eye(3), np.array([1.0, 0, 0])))])
pub = node.create_publisher(TFMessage, "/tf", DYNAMIC)
t0 = node.get_clock().now().nanoseconds


def tick():
    now = node.get_clock().now()
    angle = (now.nanoseconds - t0) * 1e-9
    T = pin.SE3(pin.exp3(np.array([0, 0, angle])), np.array([0, 0.5, 0]))
    pub.publish(TFMessage(transforms=[to_msg("arm", "hand", T, now.to_msg())]))


if len(sys.argv) != 3:
    node.create_timer(0.02, tick)
print(t0, flush=True)
try:
    rclpy.spin(node)
except KeyboardInterrupt:
    sys.exit(0)

"""A node run by ``figaroh_ros.ros.common.run_node`` whose timer shuts the context down and
then publishes, as a sensor timer does when Ctrl-C lands while it runs: rcl refuses the
publish ("publisher's context is invalid").  ``python shutdown_race_node.py [threads]
[plain]``: exits 0 when the node treats that as the shutdown; ``plain`` spins with rclpy's
bare ``spin()``, which raises it.  ``starting``: the shutdown lands while the node is
constructed (SIGTERM during a start-up), and rcl refuses its publisher."""
import sys

import rclpy
from rclpy.node import Node
from sensor_msgs.msg import JointState

from figaroh_ros.ros import common


class ShutdownRace(Node):
    def __init__(self):
        super().__init__("shutdown_race")
        if "starting" in sys.argv[1:]:
            rclpy.try_shutdown()            # what rclpy's SIGTERM handler does
        self.pub = self.create_publisher(JointState, "shutdown_race_joint_states", 10)
        self.create_timer(0.01, self._publish)

    def _publish(self):
        rclpy.try_shutdown()
        self.pub.publish(JointState(name=["a"], position=[0.0]))


if __name__ == "__main__":
    if "plain" in sys.argv[1:]:
        common.spin_through_destruction = lambda ex, node: ex.spin()
    threads = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else None
    sys.exit(common.run_node(ShutdownRace, "shutdown_race", threads))

"""A node run by ``figaroh_ros.ros.common.run_node`` whose SIGTERM rclpy does not act on:
its handlers are uninstalled once the node exists, so a SIGTERM neither shuts the context
down nor wakes the executor's ``rcl_wait`` (what a loaded calibration node showed when
rclpy's wake-up was lost).  Prints ``spinning`` once constructed and ``destroyed`` when its
node is destroyed.  ``python sigterm_unheard_node.py [threads] [plain]``: ``plain`` spins
with rclpy's bare ``spin()``, which waits for ever."""
import sys

import rclpy
from rclpy.node import Node
from rclpy.signals import uninstall_signal_handlers

from figaroh_ros.ros import common


class Unheard(Node):
    def __init__(self):
        super().__init__("sigterm_unheard")
        uninstall_signal_handlers()          # SIGTERM reaches run_node's handler alone
        print("spinning", flush=True)

    def destroy_node(self):
        print("destroyed", flush=True)
        super().destroy_node()


if __name__ == "__main__":
    if "plain" in sys.argv[1:]:
        common.spin_through_destruction = lambda ex, node: ex.spin()
    threads = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else None
    sys.exit(common.run_node(Unheard, "sigterm_unheard", threads))

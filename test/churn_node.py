"""A node run by ``figaroh_ros.ros.common.run_node`` on a multi-threaded executor whose
goal-like callback creates and destroys a subscription ``N`` times while a timer of the
same node floods its topic at 1 kHz: the executor's pattern (a joint-state subscription
per goal, pre-flight listeners).  ``python churn_node.py N [plain]``; prints ``churned N``
and exits 0 when it lives through it; ``plain`` spins with rclpy's bare ``spin()``."""
import sys
import time

import rclpy
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState

from figaroh_ros.ros import common

BEST_EFFORT = QoSProfile(depth=10, reliability=ReliabilityPolicy.BEST_EFFORT)


class Churn(Node):
    def __init__(self):
        super().__init__("churn")
        self.group = ReentrantCallbackGroup()
        self.pub = self.create_publisher(JointState, "churn_joint_states", 10)
        self.create_timer(0.001, self._publish, callback_group=self.group)
        self.create_timer(0.01, self._churn, callback_group=self.group)
        self.started = False

    def _publish(self):
        self.pub.publish(JointState(name=["a"], position=[0.0]))

    def _churn(self):
        if self.started:
            return
        self.started = True
        count = int(sys.argv[1])
        for _ in range(count):
            sub = self.create_subscription(JointState, "churn_joint_states", lambda m: None,
                                           BEST_EFFORT, callback_group=self.group)
            time.sleep(0.002)
            self.destroy_subscription(sub)
        print(f"churned {count}", flush=True)
        rclpy.try_shutdown()


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[2] == "plain":
        common.spin_through_destruction = lambda ex, node: ex.spin()
    sys.exit(common.run_node(Churn, "churn", 4))

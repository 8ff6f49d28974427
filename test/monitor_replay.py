"""Replays simulated joint states (positions and measured torques) on ``/joint_states`` at
their rate, for the dynamics monitor's graph test: ``python monitor_replay.py FILE.npz``.
Stamps are the samples' own times (1000 s + i / rate), so what the monitor flags can be
compared with the simulated push times whatever the machine's load; waits for a
subscriber first."""
import sys
import time

import numpy as np
import rclpy
from sensor_msgs.msg import JointState


def main(path: str) -> int:
    data = np.load(path)
    q, tau, rate = data["q"], data["tau"], float(data["rate"])
    names = [str(n) for n in data["names"]]
    rclpy.init()
    node = rclpy.create_node("monitor_replay")
    pub = node.create_publisher(JointState, "/joint_states", len(q))
    deadline = time.monotonic() + 60.0
    while pub.get_subscription_count() == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    if pub.get_subscription_count() == 0:
        print("no subscriber on /joint_states", file=sys.stderr)
        return 1
    time.sleep(0.5)
    start = time.monotonic()
    for i in range(len(q)):
        msg = JointState(name=names, position=q[i].tolist(), effort=tau[i].tolist())
        stamp = 1000.0 + i / rate
        msg.header.stamp.sec, msg.header.stamp.nanosec = int(stamp), int(round(stamp % 1 * 1e9))
        pub.publish(msg)
        delay = start + (i + 1) / rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    time.sleep(1.0)
    node.destroy_node()
    rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))

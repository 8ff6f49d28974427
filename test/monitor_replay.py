"""Replays simulated joint states (positions and measured torques) on ``/joint_states``,
for the dynamics monitor's graph test::

    python monitor_replay.py FILE.npz [SPEED [ACK_TOPIC AHEAD]]

Stamps are the samples' own times (1000 s + i / rate), so what the monitor flags can be
compared with the simulated push times whatever the machine's load or the replay speed.
``SPEED``: times faster than the recording's rate (1: real time).  ``ACK_TOPIC``: a
``std_msgs/Int64`` topic carrying how many samples the last reader of the chain (the
test, reading every output of the monitor) has received whole; the replay stays at most
``AHEAD`` samples ahead of it, so a monitor or a reader slowed by the machine's load is
waited for, never overrun (the reliable queues, 500 deep, would drop the oldest samples).
A count lost in transit is made good by the next one.  Waits for a subscriber first."""
import sys
import time

import numpy as np
import rclpy
from rclpy.experimental import EventsExecutor
from sensor_msgs.msg import JointState
from std_msgs.msg import Int64

STAMP0 = 1000.0
ACK_TIMEOUT_S = 30.0     # the monitor answered nothing for that long: it is gone


def stamped(names, q, tau, i, rate) -> JointState:
    msg = JointState(name=names, position=q.tolist(), effort=tau.tolist())
    stamp = STAMP0 + i / rate
    msg.header.stamp.sec, msg.header.stamp.nanosec = int(stamp), int(round(stamp % 1 * 1e9))
    return msg


def wait_until(ex, t_end: float) -> None:
    """Spin (acknowledgements in) until the monotonic time ``t_end``."""
    while (left := t_end - time.monotonic()) > 0:
        ex.spin_once(timeout_sec=left)


def main(path: str, speed: float = 1.0, ack_topic: str = "", ahead: int = 0) -> int:
    data = np.load(path)
    q, tau, rate = data["q"], data["tau"], float(data["rate"])
    names = [str(n) for n in data["names"]]
    rclpy.init()
    ex, node = EventsExecutor(), rclpy.create_node("monitor_replay")   # cheap callbacks
    ex.add_node(node)
    pub = node.create_publisher(JointState, "/joint_states", len(q))
    acked = [0]
    if ack_topic:
        node.create_subscription(Int64, ack_topic,
                                 lambda m: acked.__setitem__(0, max(acked[0], m.data)), 100)
    deadline = time.monotonic() + 60.0
    while pub.get_subscription_count() == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    if pub.get_subscription_count() == 0:
        print("no subscriber on /joint_states", file=sys.stderr)
        return 1
    wait_until(ex, time.monotonic() + 0.5)
    start, period, held = time.monotonic(), 1.0 / (rate * speed), 0.0
    for i in range(len(q)):
        waited = time.monotonic()
        while ack_topic and i - acked[0] >= ahead:
            if time.monotonic() - waited > ACK_TIMEOUT_S:
                print(f"no answer on {ack_topic} after sample {acked[0]}", file=sys.stderr)
                return 1
            ex.spin_once(timeout_sec=0.05)
        held += time.monotonic() - waited
        pub.publish(stamped(names, q[i], tau[i], i, rate))
        wait_until(ex, start + (i + 1) * period)
    print(f"replayed {len(q)} samples in {time.monotonic() - start:.1f} s "
          f"({len(q) / rate:.0f} s of recording; {held:.1f} s held back by the reader)")
    wait_until(ex, time.monotonic() + 1.0)
    node.destroy_node()
    rclpy.try_shutdown()
    return 0


if __name__ == "__main__":
    argv = sys.argv[1:]
    sys.exit(main(argv[0], *(float(a) for a in argv[1:2]), *argv[2:3],
                  *(int(a) for a in argv[3:4])))

"""Recorder throughput: JointState (7 joints) + WrenchStamped + PoseStamped at 1 kHz each,
published by another process, recorded by the recorder node (its own process) into a bag.

Prints messages published, messages in the bag, drops, and the recorder's CPU use.
Goal: 0 drops over 60 s.  Then a crash test: a recorder killed (SIGKILL) in the middle of a
recording must leave a readable bag missing at most 1 s before the kill.
Usage: bench/bench_recorder.py [--seconds 60] [--storage mcap] [--kill-after 5]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

from results import record, row

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOPICS = ["/joint_states:sensor_msgs/msg/JointState",
          "/force_plate/wrench:geometry_msgs/msg/WrenchStamped",
          "/mocap/pose:geometry_msgs/msg/PoseStamped"]

PUBLISHER = r'''
import sys, time
import rclpy
from geometry_msgs.msg import PoseStamped, WrenchStamped
from sensor_msgs.msg import JointState
from rclpy.qos import QoSProfile, ReliabilityPolicy
rate, seconds = float(sys.argv[1]), float(sys.argv[2])
rclpy.init()
node = rclpy.create_node("bench_publisher")
qos = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
pubs = [node.create_publisher(JointState, "/joint_states", qos),
        node.create_publisher(WrenchStamped, "/force_plate/wrench", qos),
        node.create_publisher(PoseStamped, "/mocap/pose", qos)]
t0 = time.monotonic()
while min(p.get_subscription_count() for p in pubs) < 1:   # the recorder, once started
    if time.monotonic() - t0 > 30: sys.exit("recorder never subscribed")
    time.sleep(0.01)
print("ready", flush=True)
sys.stdin.readline()                     # wait for "go" (recording started)
js = JointState(name=[f"joint_{i}" for i in range(7)], position=[0.0] * 7,
                velocity=[0.0] * 7, effort=[0.0] * 7)
w, p = WrenchStamped(), PoseStamped()
n = int(rate * seconds)
start = time.monotonic()
for k in range(n):
    target = start + k / rate
    while time.monotonic() < target:
        pass
    stamp = node.get_clock().now().to_msg()
    js.header.stamp = w.header.stamp = p.header.stamp = stamp
    js.position[0] = float(k)
    for pub, msg in zip(pubs, (js, w, p)):
        pub.publish(msg)
print(f"published {3 * n} {time.monotonic() - start:.2f}", flush=True)
time.sleep(2.0)
node.destroy_node(); rclpy.shutdown()
'''


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--rate", type=float, default=1000.0)
    ap.add_argument("--storage", default="mcap", choices=["mcap", "sqlite3"])
    ap.add_argument("--kill-after", type=float, default=5.0)
    a = ap.parse_args()
    rows = throughput(a) + [crash(a)]
    record("recorder", "Recorder throughput and a killed recorder", "", rows)


def _start(a, seconds):
    from figaroh_ros.ros.transport import random_domain
    env = dict(os.environ, ROS_DOMAIN_ID=str(random_domain()),
               ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
    os.environ.update(env)
    work = tempfile.mkdtemp(prefix="bench_rec_")
    topics = "[" + ",".join(f'"{t}"' for t in TOPICS) + "]"
    rec = subprocess.Popen([sys.executable, "-m", "figaroh_ros.ros.recorder", "--ros-args",
                            "-p", f"topics:={topics}", "-p", f"storage:={a.storage}"],
                           env=env, cwd=work)
    pub = subprocess.Popen([sys.executable, "-c", PUBLISHER, str(a.rate), str(seconds)],
                           env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    return work, rec, pub


def crash(a):
    """SIGKILL the recorder mid-recording; the bag must still open."""
    import signal

    import rclpy

    from figaroh_ros.srv import RecorderControl
    work, rec, pub = _start(a, 2 * a.kill_after)
    rclpy.init()
    node = rclpy.create_node("bench_crash")
    cli = node.create_client(RecorderControl, "/figaroh/recorder/control")
    assert cli.wait_for_service(timeout_sec=30.0)
    bag = os.path.join(work, "bags", "bag")    # inside the recorder's bag_dir
    fut = cli.call_async(RecorderControl.Request(command="start", bag_path=bag))
    rclpy.spin_until_future_complete(node, fut, timeout_sec=30.0)
    assert pub.stdout.readline().strip() == "ready"    # the recorder subscribes at start
    pub.stdin.write("go\n")
    pub.stdin.flush()
    time.sleep(a.kill_after)
    kill_ns = node.get_clock().now().nanoseconds
    os.kill(rec.pid, signal.SIGKILL)
    rec.wait()
    pub.kill()
    node.destroy_node()
    rclpy.shutdown()
    from pathlib import Path

    from rosbags.highlevel import AnyReader

    from figaroh_ros.io.bags import typestore
    with AnyReader([Path(bag)], default_typestore=typestore()) as reader:
        last = max(t for _, t, _ in reader.messages())
        n = sum(c.msgcount for c in reader.connections)
    print(f"recorder killed {a.kill_after:.0f} s into a recording: the bag opens, {n} "
          f"messages, the last {1e-9 * (kill_ns - last):.2f} s before the kill missing "
          f"(goal <= 1 s)")
    return row(f"recorder killed {a.kill_after:g} s into a recording: the bag opens, "
               "data missing before the kill", "s", 1e-9 * (kill_ns - last))


def throughput(a):
    work, rec, pub = _start(a, a.seconds)
    import rclpy

    from figaroh_ros.srv import RecorderControl
    rclpy.init()
    node = rclpy.create_node("bench_control")
    cli = node.create_client(RecorderControl, "/figaroh/recorder/control")
    assert cli.wait_for_service(timeout_sec=30.0), "recorder service not up"

    def call(cmd, path=""):
        fut = cli.call_async(RecorderControl.Request(command=cmd, bag_path=path))
        rclpy.spin_until_future_complete(node, fut, timeout_sec=30.0)
        return fut.result()

    bag = os.path.join(work, "bags", "bag")    # inside the recorder's bag_dir
    r = call("start", bag)
    assert r.success, r.message
    assert pub.stdout.readline().strip() == "ready"    # the recorder subscribes at start
    cpu0 = _cpu(rec.pid)
    t0 = time.monotonic()
    pub.stdin.write("go\n")
    pub.stdin.flush()
    line = pub.stdout.readline().split()
    published, took = int(line[1]), float(line[2])
    time.sleep(1.0)
    cpu = (_cpu(rec.pid) - cpu0) / (time.monotonic() - t0)
    r = call("stop")
    assert r.success, r.message
    pub.wait()
    rec.terminate()
    rec.wait()
    node.destroy_node()
    rclpy.shutdown()
    from pathlib import Path

    from rosbags.highlevel import AnyReader

    from figaroh_ros.io.bags import typestore
    with AnyReader([Path(bag)], default_typestore=typestore()) as reader:
        counts = {}
        for c in reader.connections:
            counts[c.topic] = counts.get(c.topic, 0) + c.msgcount
    recorded = sum(v for k, v in counts.items() if k != "/robot_description")
    print(f"{a.seconds:.0f} s at {a.rate:.0f} Hz x 3 topics ({a.storage}); publisher "
          f"took {took:.1f} s")
    print(f"published {published}, recorded {recorded}, dropped {published - recorded} "
          f"({100.0 * (published - recorded) / published:.3f} %); recorder CPU "
          f"{100 * cpu:.0f} % of one core")
    what = f"{a.seconds:g} s at {a.rate:g} Hz x 3 topics ({a.storage})"
    return [row(f"{what}: messages dropped", "%", 100.0 * (published - recorded) / published),
            row(f"{what}: recorder CPU", "% of a core", 100 * cpu)]


def _cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


if __name__ == "__main__":
    main()

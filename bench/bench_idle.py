"""Idle cost of the nodes next to a 250 Hz joint state publisher.

A publisher process sends /joint_states at 250 Hz (6 joints).  Each node under test runs in
its own process with no goal; its CPU use (user + system, from /proc) is measured over a
window after start-up, median of several windows.  Baseline, in the same run: a bare rclpy
node subscribing to /joint_states (what any Python listener of that topic costs).
Also the simulated robot's own cost, not idle: it publishes joint states at
250 Hz itself (config/sim_ur10.yaml, mocap at 100 Hz), so it runs in a domain of its own,
with no subscriber.

    .venv/bin/python bench/bench_idle.py [--seconds 5] [--windows 3]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIM = os.path.join(ROOT, "config", "sim_ur10.yaml")
SIM_LABEL = "sim_robot (publishing 250 Hz itself)"

PUBLISHER = """
import rclpy
from sensor_msgs.msg import JointState
rclpy.init()
node = rclpy.create_node("bench_joint_states")
pub = node.create_publisher(JointState, "/joint_states", 10)
names = [f"j{k}" for k in range(6)]
def tick():
    msg = JointState(name=names, position=[0.0] * 6)
    msg.header.stamp = node.get_clock().now().to_msg()
    pub.publish(msg)
node.create_timer(1 / 250, tick)
rclpy.spin(node)
"""

LISTENER = """
import rclpy
from sensor_msgs.msg import JointState
rclpy.init()
node = rclpy.create_node("bench_listener")
node.create_subscription(JointState, "/joint_states", lambda m: None, 10)
rclpy.spin(node)
"""


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def core_percent(proc, seconds: float, windows: int) -> float:
    """Median CPU use of ``proc`` (% of one core) over ``windows`` windows."""
    shares = []
    for _ in range(windows):
        c0, t0 = cpu_seconds(proc.pid), time.monotonic()
        time.sleep(seconds)
        shares.append(100 * (cpu_seconds(proc.pid) - c0) / (time.monotonic() - t0))
    return statistics.median(shares)


def start(args: list[str], env, cwd) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, *args], env=env, cwd=cwd,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--windows", type=int, default=3)
    a = ap.parse_args()
    from figaroh_ros.ros.transport import MAX_DOMAIN, random_domain
    domain = random_domain()            # the simulator alone in the next one
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain),
               ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
    sim_env = dict(env, ROS_DOMAIN_ID=str(domain % MAX_DOMAIN + 1))
    cwd = tempfile.mkdtemp(prefix="bench_idle_")
    publisher = start(["-c", PUBLISHER], env, cwd)
    nodes = {"baseline: bare rclpy listener": ["-c", LISTENER],
             "executor": ["-m", "figaroh_ros.ros.executor", "--ros-args", "-p",
                          f"config:={SIM}"],
             "calibration_node": ["-m", "figaroh_ros.ros.calibration_node", "--ros-args",
                                  "-p", f"output_dir:={cwd}/cal"],
             "recorder": ["-m", "figaroh_ros.ros.recorder", "--ros-args", "-p",
                          f"config:={SIM}", "-p", f"bag_dir:={cwd}/bags"]}
    try:
        procs = {label: start(args, env, cwd) for label, args in nodes.items()}
        procs[SIM_LABEL] = start(["-m", "figaroh_ros.ros.sim_robot", "--ros-args", "-p",
                                  f"config:={SIM}"], sim_env, cwd)
        time.sleep(8.0)                       # imports, discovery
        results = {label: core_percent(p, a.seconds, a.windows) for label, p in procs.items()}
        dead = [f"{label} (exit {p.returncode})" for label, p in procs.items()
                if p.poll() is not None]
        if dead:
            sys.exit(f"nodes ended before the measure: {dead}")
    finally:
        for p in [publisher, *locals().get("procs", {}).values()]:
            p.terminate()
    base = results.pop("baseline: bare rclpy listener")
    sim = results.pop(SIM_LABEL)
    print(f"idle CPU next to 250 Hz /joint_states, median of {a.windows} x {a.seconds:.0f} s")
    print(f"  baseline (bare rclpy listener): {base:5.1f} % of a core")
    for label, share in results.items():
        print(f"  {label:16s}: {share:5.1f} % of a core  ({share / max(base, 1e-9):.2f} x "
              "baseline; goal <= 5 %)")
    print(f"  {SIM_LABEL}: {sim:5.1f} % of a core  ({sim / max(base, 1e-9):.2f} x baseline)")


if __name__ == "__main__":
    main()

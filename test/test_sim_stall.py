"""The simulated robot's joint-rate sensors after a stall of its process (ros/sim_robot.py,
``next_due``): the samples it missed are published once it runs again, each with the state
and stamp of its period, so a recording's stamps stay regular.  The stall here is a
SIGSTOP of 0.8 s (in test runs: rclpy's ``publish`` holding the GIL while FastDDS waited
333 ms to 1 s on a dead reader's shared-memory port; the simulated TIAGo's joint states fell
to 37.6 Hz).  A longer stop (the executor's watchdog tests) is not caught up."""
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import rclpy
from conftest import ROOT, ros_graph_environment, stop_processes
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import QoSProfile
from sensor_msgs.msg import JointState

pytestmark = pytest.mark.xdist_group("ros_graph_2")   # the second worker's graphs

SIM = os.path.join(ROOT, "config", "sim_ur10.yaml")    # joint states at 250 Hz


def _stamps(msgs) -> np.ndarray:
    return np.array([m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec for m in msgs])


def _spin(executor, seconds: float):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        executor.spin_once(timeout_sec=0.01)


def test_the_joint_states_missed_during_a_stall_follow_it(tmp_path):
    before = dict(os.environ)
    ros_graph_environment()
    context = rclpy.Context()
    log = open(tmp_path / "sim.log", "w")
    sim = subprocess.Popen([sys.executable, "-m", "figaroh_ros.ros.sim_robot", "--ros-args",
                            "-p", f"config:={SIM}"], cwd=tmp_path, env=dict(os.environ),
                           stdout=subprocess.DEVNULL, stderr=log)
    try:
        rclpy.init(context=context)
        node = rclpy.create_node("sim_stall_test", context=context)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)
        msgs = []
        node.create_subscription(JointState, "/joint_states", msgs.append,
                                 QoSProfile(depth=5000))
        deadline = time.monotonic() + 60.0
        while len(msgs) < 250 and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.05)
        assert len(msgs) >= 250, "the simulator published no joint states"
        msgs.clear()
        _spin(executor, 1.0)
        os.kill(sim.pid, signal.SIGSTOP)
        time.sleep(0.8)
        os.kill(sim.pid, signal.SIGCONT)
        _spin(executor, 1.5)
        node.destroy_node()
    finally:
        stop_processes([sim])
        if context.ok():
            rclpy.shutdown(context=context)
        log.close()
        os.environ.clear()
        os.environ.update(before)
    t = _stamps(msgs)
    gaps = np.diff(t)
    # every period present, once, in order: 4 ms apart (the stamps are the schedule's)
    assert gaps.min() > 0.0, "a sample published twice or out of order"
    assert gaps.max() < 0.006, f"a gap of {gaps.max():.3f} s at {t[gaps.argmax()] - t[0]:.2f} s"
    assert abs(len(t) - 250 * (t[-1] - t[0])) <= 2, (len(t), t[-1] - t[0])
    assert t[-1] - t[0] > 3.0

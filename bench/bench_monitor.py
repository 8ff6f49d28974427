"""Torque monitor cost per joint-state message (7-joint Panda, identified model, band
learned): the core step (filter, differences, prediction, band) and the node's whole
callback (message to numpy, step, three messages out), without DDS.

    .venv/bin/python bench/bench_monitor.py
"""
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "test"))
from test_monitor import RATE, TAU_NOISE, Sim  # noqa: E402

from figaroh_ros import identify  # noqa: E402
from figaroh_ros.identification.monitor import (  # noqa: E402
    DynamicsModel, TorqueMonitor, learn_band
)


def main() -> None:
    sim = Sim()

    def experiment(seed):
        traj = sim.motion(seed, 30.0, 100.0)
        tau = sim.torques(traj) + np.random.default_rng(seed).normal(0, TAU_NOISE,
                                                                      traj.q.shape)
        return traj.q, traj.dq, traj.ddq, tau
    model = DynamicsModel.from_result(identify(sim.arm, *experiment(1),
                                               validation=experiment(2)))
    _, q, tau = sim.recording(3, 20.0)
    band = learn_band(model, q, tau, RATE)
    _, q, tau = sim.recording(4, 20.0)
    mon = TorqueMonitor(model, band, RATE)
    times = np.empty(len(q))
    for i, (qi, ti) in enumerate(zip(q, tau)):
        t0 = time.perf_counter()
        mon.step(qi, ti)
        times[i] = time.perf_counter() - t0
    print(f"core step, {len(q)} samples: median {1e6 * np.median(times):.0f} us, "
          f"99th percentile {1e6 * np.percentile(times, 99):.0f} us, "
          f"max {1e6 * times.max():.0f} us (goal <= 1000 us)")
    t0 = time.perf_counter()
    for _ in range(2000):
        model.torque(q[0], q[1] - q[0], q[2] - q[0])
    print(f"prediction alone: {1e6 * (time.perf_counter() - t0) / 2000:.0f} us")
    node_callback(model, band, q, tau)


def node_callback(model, band, q, tau) -> None:
    """The node's callback on real messages (rclpy message classes, no transport)."""
    import rclpy  # reason: the node part of the bench only; the core bench needs no ROS
    from rclpy.node import Node
    from sensor_msgs.msg import JointState

    from figaroh_ros.ros import dynamics_monitor as dm
    rclpy.init()
    node = Node("bench_monitor")
    fake = dm.DynamicsMonitor.__new__(dm.DynamicsMonitor)
    fake.joints, fake.max_gap, fake.previous = model.joints, 5.0 / RATE, None
    fake.monitor = TorqueMonitor(model, band, RATE)
    fake.pub_predicted = node.create_publisher(JointState, "~/predicted", 10)
    fake.pub_residual = node.create_publisher(JointState, "~/residual", 10)
    fake.pub_contact = node.create_publisher(dm.Bool, "~/contact", 10)
    msgs = []
    for i, (qi, ti) in enumerate(zip(q, tau)):
        m = JointState(name=list(model.joints), position=qi.tolist(), effort=ti.tolist())
        m.header.stamp.sec, m.header.stamp.nanosec = 1000 + i // 250, (i % 250) * 4_000_000
        msgs.append(m)
    t0 = time.perf_counter()
    for m in msgs:
        fake.on_joint_states(m)
    per = (time.perf_counter() - t0) / len(msgs)
    print(f"node callback (parse, step, publish 3 messages): {1e6 * per:.0f} us per message")
    node.destroy_node()
    rclpy.try_shutdown()


if __name__ == "__main__":
    main()

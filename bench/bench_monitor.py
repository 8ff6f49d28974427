"""Torque monitor cost per joint-state message (7-joint Panda, identified model, band
learned): the core step (filter, differences, prediction and its gravity / friction /
inertial parts, band) and the real node's whole callback (message to numpy, step, six
messages out), without the transport.

    .venv/bin/python bench/bench_monitor.py
"""
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "test"))
import yaml  # noqa: E402
from test_monitor import PANDA, RATE, TAU_NOISE, Sim  # noqa: E402

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
    result = identify(sim.arm, *experiment(1), validation=experiment(2))
    model = DynamicsModel.from_result(result)
    _, q, tau = sim.recording(3, 20.0)
    band = learn_band(model, q, tau, RATE)
    _, q, tau = sim.recording(4, 20.0)
    mon = TorqueMonitor(model, band, RATE)
    times = np.empty(len(q))
    for i, (qi, ti) in enumerate(zip(q, tau)):
        t0 = time.perf_counter()
        mon.step(qi, ti)
        times[i] = time.perf_counter() - t0
    report("core step", times)
    args = (q[0], q[1] - q[0], q[2] - q[0])
    report("prediction alone (parts)", timed(lambda: model.parts(*args)))
    with tempfile.TemporaryDirectory() as work:
        path = os.path.join(work, "result.yaml")
        with open(path, "w") as f:
            yaml.safe_dump(result.to_dict(), f)
        band.save(os.path.join(work, "band.yaml"))
        node_callback(work, q, tau)


def timed(f, n: int = 2000) -> np.ndarray:
    times = np.empty(n)
    for i in range(n):
        t0 = time.perf_counter()
        f()
        times[i] = time.perf_counter() - t0
    return times


def report(what: str, times: np.ndarray) -> None:
    print(f"{what}, {len(times)} samples: median {1e6 * np.median(times):.0f} us, "
          f"99th percentile {1e6 * np.percentile(times, 99):.0f} us, "
          f"max {1e6 * times.max():.0f} us (goal <= 1000 us)")


def node_callback(work: str, q, tau) -> None:
    """The real node's callback on real messages (rclpy message classes, publishers on
    the graph without readers: no transport)."""
    import rclpy  # reason: the node part of the bench only; the core bench needs no ROS
    from rclpy.parameter import Parameter
    from sensor_msgs.msg import JointState

    from figaroh_ros.ros.dynamics_monitor import DynamicsMonitor
    rclpy.init()
    node = DynamicsMonitor(parameter_overrides=[
        Parameter("result", value=os.path.join(work, "result.yaml")),
        Parameter("urdf", value=PANDA), Parameter("band", value=os.path.join(work,
                                                                            "band.yaml"))])
    msgs = []
    for i, (qi, ti) in enumerate(zip(q, tau)):
        m = JointState(name=list(node.joints), position=qi.tolist(), effort=ti.tolist())
        m.header.stamp.sec, m.header.stamp.nanosec = 1000 + i // 250, (i % 250) * 4_000_000
        msgs.append(m)
    it = iter(msgs)
    report("node callback (parse, step, publish 6 messages)",
           timed(lambda: node.on_joint_states(next(it)), len(msgs)))
    node.destroy_node()
    rclpy.try_shutdown()


if __name__ == "__main__":
    main()

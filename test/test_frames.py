"""Frames from TF without tf2_ros: the transform tree's lookups compose
and interpolate like tf2, refuse what they cannot know, and the ROS buffer fed from
``/tf`` and ``/tf_static`` of another process returns the true transform between samples."""
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pinocchio as pin
import pytest
from conftest import ROOT, ros_graph_environment, said_line, stop_processes
from hypothesis import given, settings, strategies as st

from figaroh_ros.errors import DataError
from figaroh_ros.model.transform_tree import TransformTree


def _pose(rng) -> pin.SE3:
    return pin.SE3(pin.exp3(rng.normal(0, 1, 3)), rng.normal(0, 1, 3))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31), n=st.integers(2, 8))
def test_lookups_compose_along_any_tree(seed, n):
    rng = np.random.default_rng(seed)
    tree, world = TransformTree(), {"f0": pin.SE3.Identity()}
    for k in range(1, n):
        parent = f"f{rng.integers(0, k)}"
        T = _pose(rng)
        tree.add(parent, f"f{k}", 0, T, static=True)
        world[f"f{k}"] = world[parent] * T
    a, b = f"f{rng.integers(0, n)}", f"f{rng.integers(0, n)}"
    got = tree.lookup(a, b)
    want = world[a].inverse() * world[b]
    assert np.allclose(got.homogeneous, want.homogeneous, atol=1e-9)


def test_dynamic_edges_interpolate_and_never_extrapolate():
    tree = TransformTree()
    tree.add("world", "arm", 0, pin.SE3(np.eye(3), np.array([1.0, 0, 0])), static=True)
    for k in range(5):                       # 1 rad/s about z, sampled every 0.1 s
        tree.add("arm", "hand", k * 10**8, pin.SE3(pin.exp3(np.array([0, 0, 0.1 * k])),
                                                  np.array([0.0, 0.1 * k, 0])))
    T = tree.lookup("world", "hand", 250_000_000)
    assert np.allclose(pin.log3(T.rotation), [0, 0, 0.25], atol=1e-12)
    assert np.allclose(T.translation, [1.0, 0.25, 0], atol=1e-12)
    assert np.allclose(pin.log3(tree.lookup("world", "hand").rotation), [0, 0, 0.4])
    with pytest.raises(DataError, match="known from"):
        tree.lookup("world", "hand", 5 * 10**8)
    with pytest.raises(DataError, match="unknown frame 'camera'"):
        tree.lookup("world", "camera")
    tree.add("map", "base", 0, pin.SE3.Identity(), static=True)
    with pytest.raises(DataError, match="not connected"):
        tree.lookup("map", "hand")


def test_the_buffer_hears_another_process_tf(tmp_path):
    rclpy = pytest.importorskip("rclpy")
    from rclpy.executors import SingleThreadedExecutor

    from figaroh_ros.ros.frames import FrameBuffer
    before = dict(os.environ)
    ros_graph_environment()
    proc = subprocess.Popen([sys.executable, os.path.join(ROOT, "test", "tf_publisher.py")],
                            env=dict(os.environ), stdout=subprocess.PIPE, text=True)
    context = rclpy.Context()
    try:
        t0 = int(said_line(proc, r"-?\d+"))
        rclpy.init(context=context)
        node = rclpy.create_node("frames_test", context=context)
        ex = SingleThreadedExecutor(context=context)
        ex.add_node(node)
        buf = FrameBuffer(node, prefer_tf2=False)
        threading.Thread(target=ex.spin, daemon=True).start()
        buf.lookup("world", "hand", timeout=20.0)                # static + dynamic arrived
        time.sleep(0.5)                                          # a history to look into
        latest = buf.lookup("world", "hand")
        stamp = t0 + int(np.round(pin.log3(latest.rotation)[2] * 1e9)) - 15_000_000
        T = buf.lookup("world", "hand", stamp, timeout=5.0)      # between two samples
        angle = (stamp - t0) * 1e-9
        assert np.allclose(pin.log3(T.rotation), [0, 0, angle], atol=1e-6)
        assert np.allclose(T.translation, [1.0, 0.5, 0], atol=1e-9)
        assert buf.backend == "figaroh_ros"
        ex.shutdown(timeout_sec=1.0)
        node.destroy_node()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        rclpy.try_shutdown(context=context)
        os.environ.clear()
        os.environ.update(before)


def test_a_late_listener_hears_every_static_publisher(tmp_path):
    """Three processes latch one /tf_static message each (robot_state_publisher, a driver,
    our calibration node): a buffer created after all of them receives the three at once
    and keeps them all (a subscription of depth 1 kept one)."""
    rclpy = pytest.importorskip("rclpy")
    from rclpy.executors import SingleThreadedExecutor

    from figaroh_ros.ros.frames import FrameBuffer
    before = dict(os.environ)
    ros_graph_environment()
    script = os.path.join(ROOT, "test", "tf_publisher.py")
    procs = [subprocess.Popen([sys.executable, script, p, c], env=dict(os.environ),
                              stdout=subprocess.PIPE, text=True)
             for p, c in (("world", "base"), ("base", "tool"), ("tool", "sensor"))]
    context = rclpy.Context()
    try:
        for p in procs:
            said_line(p, r"-?\d+")
        rclpy.init(context=context)
        node = rclpy.create_node("frames_static_test", context=context)
        ex = SingleThreadedExecutor(context=context)
        ex.add_node(node)
        time.sleep(2.0)                       # discovered: their samples come in one burst
        buf = FrameBuffer(node, prefer_tf2=False)
        threading.Thread(target=ex.spin, daemon=True).start()
        T = buf.lookup("world", "sensor", timeout=20.0)
        assert np.allclose(T.translation, [3.0, 0, 0], atol=1e-9)
        ex.shutdown(timeout_sec=1.0)
        node.destroy_node()
    finally:
        stop_processes(procs)
        rclpy.try_shutdown(context=context)
        os.environ.clear()
        os.environ.update(before)

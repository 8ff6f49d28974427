"""The simulated robot's joint-rate sensors after a stall of its process (ros/sim_robot.py,
``next_due``): the samples it missed are published once it runs again, each with the state
and stamp of its period, so a recording's stamps stay regular.  The stall here is a
SIGSTOP of 0.8 s (in test runs: rclpy's ``publish`` holding the GIL while FastDDS waited
333 ms to 1 s on a dead reader's shared-memory port; the simulated TIAGo's joint states fell
to 37.6 Hz).  A longer stop (the executor's watchdog tests) is not caught up."""
import contextlib
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import rclpy
from conftest import ROOT, locked_kb, may_lock_memory, ros_graph_environment, stop_processes
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState

pytestmark = pytest.mark.xdist_group("ros_graph_2")   # the second worker's graphs

SIM = os.path.join(ROOT, "config", "sim_ur10.yaml")    # joint states at 250 Hz


def _stamps(msgs) -> np.ndarray:
    return np.array([m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec for m in msgs])


def _spin(executor, seconds: float):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        executor.spin_once(timeout_sec=0.01)


@contextlib.contextmanager
def _simulator_and_listener(tmp_path):
    """The simulated UR10 in a process of its own (a fresh ROS domain) and a node of this
    process with its executor: ``(sim, node, executor)``; all stopped after."""
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
        yield sim, node, executor
        node.destroy_node()
    finally:
        stop_processes([sim])
        if context.ok():
            rclpy.shutdown(context=context)
        log.close()
        os.environ.clear()
        os.environ.update(before)


STALL_S = 0.8       # s the simulator is stopped (SIGSTOP)


def _stall(sim, seconds: float = STALL_S) -> None:
    os.kill(sim.pid, signal.SIGSTOP)
    time.sleep(seconds)
    os.kill(sim.pid, signal.SIGCONT)



def test_the_joint_states_missed_during_a_stall_follow_it(tmp_path):
    with _simulator_and_listener(tmp_path) as (sim, node, executor):
        msgs = []
        node.create_subscription(JointState, "/joint_states", msgs.append,
                                 QoSProfile(depth=5000))
        deadline = time.monotonic() + 60.0
        while len(msgs) < 250 and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.05)
        assert len(msgs) >= 250, "the simulator published no joint states"
        # its memory locked (lock_memory, the default) where this process may lock: then
        # no page of it waits on the disk (ros/memory_lock.py)
        locked, may_lock = locked_kb(sim.pid), may_lock_memory()
        assert (locked > 10_000) == may_lock, (locked, may_lock)
        msgs.clear()
        _spin(executor, 1.0)
        _stall(sim)
        _spin(executor, 1.5)
    t = _stamps(msgs)
    gaps = np.diff(t)
    # every period present, once, in order: 4 ms apart (the stamps are the schedule's)
    assert gaps.min() > 0.0, "a sample published twice or out of order"
    assert gaps.max() < 0.006, f"a gap of {gaps.max():.3f} s at {t[gaps.argmax()] - t[0]:.2f} s"
    assert abs(len(t) - 250 * (t[-1] - t[0])) <= 2, (len(t), t[-1] - t[0])
    assert t[-1] - t[0] > 3.0


def test_mocap_frames_after_a_stall_show_the_time_they_are_stamped_with(tmp_path):
    """The arm moving (0.6 rad of shoulder pan in 4 s), the simulator stopped 0.8 s: every
    mocap frame is the true marker pose at the joint positions of its stamp (the joint
    states interpolated there) within 10 mm.  Stamped when taken while the joint-rate
    loop published what the stall missed, frames showed positions up to 2.7 s old (a
    suspension fitted 5 times worse from such a bag, CI on da4c13d)."""
    from control_msgs.action import FollowJointTrajectory
    from geometry_msgs.msg import PoseStamped
    from rclpy.action import ActionClient
    from trajectory_msgs.msg import JointTrajectoryPoint

    from figaroh_ros.sim.truth import TrueRobot, load_sim_config
    cfg = load_sim_config(SIM)
    with _simulator_and_listener(tmp_path) as (sim, node, executor):
        joints, poses = [], []
        node.create_subscription(JointState, "/joint_states", joints.append,
                                 QoSProfile(depth=5000))
        # best effort like the mocap publisher, but every frame kept until this
        # single-threaded listener takes it: a 5-deep queue (qos_profile_sensor_data)
        # lost frames while it took the 200 joint states of the catch-up (290 of the 300
        # frames the check needs, in a clean clone)
        node.create_subscription(PoseStamped, "/mocap/pose", poses.append,
                                 QoSProfile(depth=5000,
                                            reliability=ReliabilityPolicy.BEST_EFFORT))
        client = ActionClient(node, FollowJointTrajectory, "/arm_controller/follow_joint_trajectory")
        assert client.wait_for_server(timeout_sec=60.0), "no arm_controller"
        deadline = time.monotonic() + 60.0
        while not joints and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.05)
        assert joints, "the simulator published no joint states"
        q0 = np.array(joints[-1].position)
        goal = FollowJointTrajectory.Goal()
        goal.trajectory.joint_names = list(joints[-1].name)
        point = JointTrajectoryPoint(positions=(q0 + [0.6, 0, 0, 0, 0, 0]).tolist(),
                                     velocities=[0.0] * 6)
        point.time_from_start.sec = 4
        goal.trajectory.points = [point]
        sent = client.send_goal_async(goal)
        while not sent.done() and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.05)
        assert sent.done() and sent.result().accepted
        _spin(executor, 1.0)
        _stall(sim)
        _spin(executor, 3.0)
    truth = TrueRobot(cfg)
    names = list(joints[0].name)
    tj = _stamps(joints)
    Q = np.array([m.position for m in joints])
    errors = []
    for m in poses:
        t = _stamps([m])[0]
        if not tj[0] <= t <= tj[-1]:
            continue
        q = np.array([np.interp(t, tj, Q[:, k]) for k in range(Q.shape[1])])
        p = truth.marker_pose(truth.chain_positions(names, q)).translation
        errors.append(np.linalg.norm(p - [m.pose.position.x, m.pose.position.y,
                                          m.pose.position.z]))
    errors = np.array(errors)
    tp = np.sort(_stamps(poses))
    tp = tp[(tp >= tj[0]) & (tp <= tj[-1])]
    print(f"mocap: {len(tp)} frames, largest gap {np.diff(tp).max():.3f} s")
    assert len(errors) > 300, len(errors)
    # and the stall's 0.8 s keeps frames: those taken while the joint-rate loop caught up
    # carry their samples' stamps.  Skipping them leaves the whole stall and more between
    # two frames (0.89-0.95 s measured, never under the SIGSTOP's STALL_S; and most of a
    # loaded run's TIAGo sweep).  The largest gap kept is how far the catch-up had
    # got when the mocap loop next ran: 0.14-0.33 s, 0.65 s on a loaded machine (a bound
    # of 0.6 s is too tight): the bound is just under the stall
    assert np.diff(tp).max() < STALL_S - 0.05, np.diff(tp).max()
    worst = int(np.argmax(errors))
    assert errors.max() < 0.010, f"{(errors > 0.010).sum()} frames off, worst " \
        f"{1000 * errors[worst]:.1f} mm"


def test_the_simulators_clock_is_the_ros_clock_whichever_drives_it():
    """``common.now_ns`` (the stamps' clock): the system clock while no /clock drives the
    ROS clock, the ROS clock's override once one does (``use_sim_time``)."""
    from rclpy.clock import ROSClock
    from rclpy.time import Time

    from figaroh_ros.ros.common import now_ns
    rclpy.init()
    try:
        clock = ROSClock()
        before, ns, after = time.time_ns(), now_ns(clock), time.time_ns()
        assert before <= ns <= after
        clock._set_ros_time_is_active(True)
        clock.set_ros_time_override(Time(seconds=12, nanoseconds=5))
        assert now_ns(clock) == 12_000_000_005
    finally:
        rclpy.try_shutdown()

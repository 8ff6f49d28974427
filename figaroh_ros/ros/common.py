"""Conversions and helpers shared by the nodes (rclpy message types <-> numpy / pinocchio)."""
from __future__ import annotations

import importlib
import os
import signal
import sys
import threading
import time

import numpy as np
import pinocchio as pin
import rclpy
from rclpy.exceptions import InvalidHandle
from rclpy.impl.implementation_singleton import rclpy_implementation as _rclpy
from rclpy.executors import (
    ExternalShutdownException, MultiThreadedExecutor, SingleThreadedExecutor
)
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from figaroh_ros.errors import FigarohError, RosError

# robot_description is latched, as robot_state_publisher publishes it
LATCHED = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                     reliability=ReliabilityPolicy.RELIABLE, history=HistoryPolicy.KEEP_LAST)
# 10 000 messages queued per recorded topic: 20 s of a 500 Hz driver, so that a recorder
# that falls behind on a loaded machine catches up instead of losing samples
SENSOR = QoSProfile(depth=10_000, reliability=ReliabilityPolicy.RELIABLE,
                    history=HistoryPolicy.KEEP_LAST)


def message_class(type_name: str):
    """``sensor_msgs/msg/JointState`` -> the rclpy message class (ValueError if unknown)."""
    parts = type_name.split("/")
    if len(parts) != 3 or parts[1] not in ("msg", "srv", "action"):
        raise ValueError(f"not a ROS interface type name: {type_name!r}")
    try:
        return getattr(importlib.import_module(f"{parts[0]}.{parts[1]}"), parts[2])
    except (ImportError, AttributeError):
        raise ValueError(f"unknown message type {type_name!r}") from None


def now_ns(clock) -> int:
    """``clock.now().nanoseconds`` of a node's ROS clock, read as ``time.time_ns()`` (the
    system clock rcl reads, without a ``Time`` object: 0.1 us instead of 3 us, and far less
    code for a loop woken at the joint states' rate) unless /clock drives it
    (``use_sim_time``)."""
    return clock.now().nanoseconds if clock.ros_time_is_active else time.time_ns()


def se3_to_pose(T: pin.SE3, pose):
    q = pin.Quaternion(T.rotation)
    pose.position.x, pose.position.y, pose.position.z = map(float, T.translation)
    pose.orientation.x, pose.orientation.y = float(q.x), float(q.y)
    pose.orientation.z, pose.orientation.w = float(q.z), float(q.w)
    return pose


def duration_to_sec(d) -> float:
    return float(d.sec) + 1e-9 * float(d.nanosec)


def sec_to_duration(t: float, msg):
    msg.sec = int(np.floor(t))
    msg.nanosec = int(round((t - np.floor(t)) * 1e9)) % 1_000_000_000
    return msg


# s an interrupted node's process may take to exit once its node is destroyed, and in all
# from the end of its spin (its node's destruction included: a bag closed), before it is
# ended (``run_node``)
SHUTDOWN_GRACE = 5.0
SHUTDOWN_LIMIT = 15.0
# s a node's spin waits at most before it looks again at its context and at SIGTERM
SPIN_LOOK = 0.5
# set by SIGTERM (``run_node``), looked at by ``spin_through_destruction``
TERMINATED = threading.Event()


def run_node(make_node, label: str, threads: int | None = None, args=None) -> int:
    """Create a node and spin it until interrupted (returns 0, also when interrupted
    while it started); a node that cannot start (a bad parameter, config or model: a
    :class:`FigarohError`) prints why in one line and returns 2.  ``threads``: a multi-threaded
    executor of that many threads (actions that wait), else single-threaded (the
    recorder, whose bag writer must stay in one thread).  Once the node is destroyed, the
    process ends within ``SHUTDOWN_GRACE`` s, and within ``SHUTDOWN_LIMIT`` s of the end of
    its spin whatever holds it (:func:`_end_within`)."""
    _catch_sigterm()
    rclpy.init(args=args)
    try:
        node = make_node()
    except (Exception, KeyboardInterrupt) as exc:
        return _start_failed(exc, label)
    try:
        ex = _executor(node, threads)
        if ex is not None:              # None: refused by a shutdown as the node started
            spin_through_destruction(ex, node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        _end_within(SHUTDOWN_LIMIT, label, "its destruction or exit held")
        node.destroy_node()
        rclpy.try_shutdown()
        _end_within(SHUTDOWN_GRACE, label, "a callback that does not return")
    return 0


def _end_within(seconds: float, label: str, why: str) -> None:
    """End the process ``seconds`` s from now if it is still exiting then (one line on
    stderr saying ``why`` it may be, exit 0): Python's exit joins every thread of the
    multi-threaded executor's pool, and a callback that never returns (a goal's loop that
    does not look at the shutdown) kept a node alive after SIGTERM, up to the test's
    SIGKILL (docs/troubleshooting.md)."""
    def end():
        print(f"{label}: still exiting {seconds:g} s after its shutdown ({why}): ended",
              file=sys.stderr, flush=True)
        sys.stdout.flush()
        os._exit(0)
    timer = threading.Timer(seconds, end)
    timer.daemon = True
    timer.start()


def _catch_sigterm() -> None:
    """Make SIGTERM set :data:`TERMINATED` as well.  Installed before ``rclpy.init``, so
    rclpy's handler (which shuts the context down and wakes the executors from a thread of
    its own) chains to it.  Under load, a calibration node given SIGTERM as a goal's worker
    started had the signal caught yet stayed in ``rcl_wait``, never woken (1 of 6 SIGTERMs on
    a loaded machine): the spin looks at the event every ``SPIN_LOOK`` s instead of trusting
    the wake-up alone.  The timed wait also lets Python's own SIGINT handler run."""
    if threading.current_thread() is not threading.main_thread():
        return                      # only the main thread sets handlers; rclpy's stay alone
    signal.signal(signal.SIGTERM, lambda signum, frame: TERMINATED.set())


def _executor(node, threads: int | None):
    """The node's executor (``run_node``); None when a shutdown that landed as the node
    started refuses it."""
    try:
        ex = MultiThreadedExecutor(num_threads=threads) if threads else SingleThreadedExecutor()
        ex.add_node(node)
    except _rclpy.RCLError:
        if rclpy.ok():
            raise
        return None
    return ex


def _start_failed(exc: BaseException, label: str) -> int:
    """The exit code of a node whose construction raised ``exc``.  A shutdown while it
    started (Ctrl-C or SIGTERM: rclpy's handler shuts the context down, and rcl then
    refuses the next node, service or publisher with "context is invalid") is the shutdown:
    0, no traceback (at random moments of the executor's, recorder's and simulator's
    start-ups, 4 of 24 SIGTERMs ended in such a traceback, exit 1).  A node that cannot
    start (a bad parameter, config or model) says why in one line: 2.  Anything else is a
    bug, raised."""
    interrupted = isinstance(exc, KeyboardInterrupt) or not rclpy.ok()
    rclpy.try_shutdown()
    if interrupted:
        return 0
    if isinstance(exc, FigarohError):
        print(f"{label}: {exc}", file=sys.stderr)
        return 2
    raise exc


def spin_through_destruction(ex, node) -> None:
    """Spin until the context is shut down or SIGTERM came (:data:`TERMINATED`, looked at
    every ``SPIN_LOOK`` s), resumed when a goal's thread destroyed one of the node's entities
    (the executor's joint-state subscription at a goal's end, the pre-flight's listeners)
    while the spinning thread was putting it into the wait set: rclpy then raises
    ``InvalidHandle`` out of ``spin`` (the executor process died with it, its goal's result
    never sent).  The next wait set is built without the destroyed entity.

    A callback that fails because the context was shut down while it ran (a timer publishing
    as Ctrl-C or ``try_shutdown`` lands: rcl's "publisher's context is invalid") ends the
    spin as the shutdown does, instead of leaving the node with a traceback and exit 1."""
    while ex.context.ok() and not TERMINATED.is_set():
        try:
            ex.spin_once(timeout_sec=SPIN_LOOK)
        except InvalidHandle as exc:
            node.get_logger().debug(f"wait set rebuilt after a destroyed entity: {exc}")
        except _rclpy.RCLError:
            if ex.context.ok():
                raise
            return


def _sleep_until(done, seconds: float) -> bool:
    """Poll ``done()`` for ``seconds`` (another thread spins the node)."""
    end = time.monotonic() + seconds
    while not done():
        if time.monotonic() >= end:
            return False
        time.sleep(0.005)
    return True


def first_answer(client, request, timeout: float, what: str, every: float = 1.0,
                 wait=_sleep_until):
    """The first answer to ``request``, sent again every ``every`` s without one: a
    request written before the client's writer matched the server's reader is lost
    (volatile samples are not replayed).  A server answers requests in order, so a
    repeated request's answer comes after the first one and is dropped.  ``wait(done,
    seconds)``: how to wait (default: poll while another thread spins the node).
    RosError after ``timeout`` s waiting for ``what``."""
    deadline = time.monotonic() + timeout
    futures = []
    try:
        while True:
            futures.append(client.call_async(request))
            left = max(0.0, min(every, deadline - time.monotonic()))
            if wait(lambda: any(f.done() for f in futures), left):
                return next(f for f in futures if f.done()).result()
            if time.monotonic() >= deadline:
                raise RosError(f"timed out after {timeout:g} s waiting for {what}")
    finally:
        for f in futures:
            if not f.done():
                client.remove_pending_request(f)


class GoalRefused(Exception):
    """An action goal is invalid (error_code INVALID_GOAL); the message says why.  Raised
    before anything moves or runs."""


class CanceledBeforeStart(Exception):
    """An action goal canceled before anything moved or ran (error_code CANCELED)."""


class ResultWatch:
    """The result of an accepted goal ``gh``, requested again every ``every`` s once it is
    overdue (``due``, monotonic s): a result request written just after discovery can be
    lost (DDS does not replay volatile samples), and each request gets the same answer."""

    def __init__(self, gh, due: float, every: float = 2.0):
        self.gh, self.due, self.every = gh, due, every
        self.futures = [gh.get_result_async()]

    def done(self) -> bool:
        if any(f.done() for f in self.futures):
            return True
        if time.monotonic() > self.due:
            self.futures.append(self.gh.get_result_async())
            self.due = time.monotonic() + self.every
        return False

    @property
    def requests(self) -> int:
        """How many times the result was asked."""
        return len(self.futures)

    def result(self):
        return next(f for f in self.futures if f.done()).result().result

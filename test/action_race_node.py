"""Goals sent by an action client while a multi-threaded executor handles their answers,
the windows between a request, the filing of its future and the attaching of its callbacks
widened to 50 ms each (the client's handle pauses after sending, its table of pending
goals after filing), as a loaded machine widens them.
``python action_race_node.py N [plain]``: prints ``answered N`` and exits 0 when every goal
was accepted and its result came; ``plain`` uses rclpy's own ``ActionClient``, which loses
the race (ros2/rclpy#878, ros2/rclpy#1123)."""
import sys
import threading
import time

import rclpy
from control_msgs.action import FollowJointTrajectory
from rclpy.action import ActionServer
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor

from figaroh_ros.ros.action_client import ActionClient

WINDOW = 0.05


class _SlowRequests:
    """The client's rcl handle, pausing ``WINDOW`` s after sending each request (before the
    client files its future), as a preempted thread would; everything else passes through."""

    def __init__(self, handle):
        self._handle = handle

    def __getattr__(self, name):
        attr = getattr(self._handle, name)
        if not name.startswith("send_"):
            return attr

        def send(request):
            sequence = attr(request)
            time.sleep(WINDOW)
            return sequence
        return send

    def __enter__(self):
        return self._handle.__enter__()

    def __exit__(self, *exc):
        return self._handle.__exit__(*exc)


class _SlowFiling(dict):
    """The client's pending goal requests, pausing ``WINDOW`` s after a future is filed
    (before its done callback is attached and the executor is told of it)."""

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        time.sleep(WINDOW)


def _client(node, group, plain: bool):
    kind = rclpy.action.ActionClient if plain else ActionClient
    client = kind(node, FollowJointTrajectory, "race/follow_joint_trajectory",
                  callback_group=group)
    client._client_handle = _SlowRequests(client._client_handle)
    client._pending_goal_requests = _SlowFiling()
    return client


def _succeed(handle):
    handle.succeed()
    return FollowJointTrajectory.Result()


def main(count: int, plain: bool) -> int:
    rclpy.init()
    node = rclpy.create_node("action_race")
    group = ReentrantCallbackGroup()
    ActionServer(node, FollowJointTrajectory, "race/follow_joint_trajectory", _succeed,
                 callback_group=group)
    client = _client(node, group, plain)
    ex = MultiThreadedExecutor(4)
    ex.add_node(node)
    failures = []
    spinner = threading.Thread(target=lambda: _spin(ex, failures))
    spinner.start()
    try:
        return _goals(client, count, failures)
    finally:                # the spinning thread ends before the interpreter does
        rclpy.try_shutdown()
        spinner.join(10.0)
        ex.shutdown()
        node.destroy_node()


def _goals(client, count: int, failures: list) -> int:
    """Send ``count`` goals one after the other; 0 when each was answered."""
    if not client.wait_for_server(timeout_sec=30.0):
        print("no server", file=sys.stderr)
        return 3
    for i in range(count):
        try:
            sent = client.send_goal_async(FollowJointTrajectory.Goal())
        except ValueError as exc:
            print(f"goal {i}: send raised {exc!r}", file=sys.stderr)
            return 1
        if not _wait(sent, 5.0) or not sent.result().accepted:
            print(f"goal {i}: no acceptance in 5 s", file=sys.stderr)
            return 1
        if not _wait(sent.result().get_result_async(), 5.0):
            print(f"goal {i}: no result in 5 s", file=sys.stderr)
            return 1
        if failures:
            print(f"goal {i}: the executor raised {failures[0]!r}", file=sys.stderr)
            return 1
    print(f"answered {count}", flush=True)
    return 0


def _spin(ex, failures):
    try:
        ex.spin()
    except Exception as exc:       # noqa: BLE001 - reported by the main thread
        failures.append(exc)


def _wait(future, seconds: float) -> bool:
    end = time.monotonic() + seconds
    while not future.done():
        if time.monotonic() > end:
            return False
        time.sleep(0.005)
    return True


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]), "plain" in sys.argv[2:]))

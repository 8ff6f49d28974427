"""An rclpy ``ActionClient`` whose requests and their answers cannot cross.

rclpy's action client sends a request (goal, cancel or result) and only then files the
future its answer will complete.  With a multi-threaded executor the answer can be handled
in between (ros2/rclpy#878, ros2/rclpy#1123): Jazzy drops it ("Ignoring unexpected goal response"),
so the future never completes, and both distros can complete the future before it is
registered with the client, whose done callback then raises ``ValueError: list.remove(x):
x not in list`` in the sending thread.  The latter kills the executor node mid-experiment
(its goal "assumed aborted").

Here sending a request and handling the client's answers hold one lock, so an answer is
handled only once its request is filed.  The lock is re-entrant: a done callback run by
the answer (in the executor's thread) may itself send the next request, as the executor's
cancellation of a late-accepted goal does.
"""
from __future__ import annotations

import threading

from rclpy.action import ActionClient as _RclpyActionClient


class ActionClient(_RclpyActionClient):
    """``rclpy.action.ActionClient`` with its requests and answers serialised."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._exchange = threading.RLock()

    def send_goal_async(self, *args, **kwargs):
        with self._exchange:
            return super().send_goal_async(*args, **kwargs)

    def _cancel_goal_async(self, *args, **kwargs):
        with self._exchange:
            return super()._cancel_goal_async(*args, **kwargs)

    def _get_result_async(self, *args, **kwargs):
        with self._exchange:
            return super()._get_result_async(*args, **kwargs)

    async def execute(self, taken_data):
        """Handle the answers taken from the wait set once no request is being filed (the
        base class's ``execute`` never suspends: the lock is not held across a yield)."""
        with self._exchange:
            await super().execute(taken_data)

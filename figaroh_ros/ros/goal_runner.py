"""How the package's action servers run a goal: one goal of each action at a time, its end
with an error code and a message scrubbed of the files the goal named
(``ros/goal_paths.py``), a bug inside it answered rather than left to rclpy's empty result.

:class:`GoalLifecycle` is that shared part; the experiment executor's RunExperiment and
Preflight goals use it as they are (they run in the node's process: a RunExperiment that
fails once started calls the goal's ``stop``, the controllers hold and the recorder stops).
:class:`GoalRunner` adds the work of a goal in a worker process (``ros/worker.py``) with
its progress as feedback, bounded by ``max_goal_seconds``: the calibration node's
Calibrate, PlanTrajectory and IdentifyPayload actions (and the StartCalibration service,
which starts a Calibrate goal) share one.
"""
from __future__ import annotations

import os
import threading
import time
import traceback

from figaroh_ros.errors import (CANCELED, INVALID_GOAL, ROS_ERROR, SUCCESSFUL,
                                FigarohError)
from figaroh_ros.progress import Progress
from figaroh_ros.ros.common import CanceledBeforeStart, GoalRefused
from figaroh_ros.ros.worker import Failure, Job, run_job


class GoalLifecycle:
    """The goal side of ``node`` (its logger, ``paths`` and ``params``) for the actions
    named in ``actions`` and those :meth:`add` adds."""

    def __init__(self, node, actions=()):
        self.node = node
        self.busy: dict[str, threading.Lock] = {}
        self.called: dict[str, str] = {}
        self.after_bug: dict[str, str] = {}
        for a in actions:
            self.add(a)
        self.runs = 0

    def add(self, action: str, called: str = "", after_bug: str = "nothing published"
            ) -> None:
        """One more action, one goal at a time: ``called``, how a refusal names its goal
        (default "a ACTION goal"); ``after_bug``, what the answer of an internal error
        says was left undone."""
        self.busy[action] = threading.Lock()
        self.called[action] = called or f"a {action} goal"
        self.after_bug[action] = after_bug

    def run_folder(self) -> str:
        """A new timestamped folder under output_dir for a goal's files."""
        self.runs += 1
        return os.path.join(os.path.abspath(self.node.params.output_dir),
                            time.strftime("%Y%m%d_%H%M%S") + f"_{self.runs}")

    def end(self, handle, result, code: int, message: str):
        """End the goal; its message scrubbed of the files the goal named (the log keeps
        it whole).  Its status: succeeded, canceled when it ends CANCELED after its cancel
        was requested, else aborted."""
        result.error_code = code
        result.message = self.node.paths.answer(message, handle.request)
        log = self.node.get_logger()
        if code == SUCCESSFUL:
            log.info(message)
            handle.succeed()
        else:
            log.warning(f"goal ended ({code}): {message}")
            handle.canceled() if code == CANCELED and handle.is_cancel_requested \
                else handle.abort()
        return result

    def exclusive(self, action: str, handle, result, body, stop=None):
        """Run ``body()`` unless a goal of the same action is running (INVALID_GOAL).
        A GoalRefused ends the goal INVALID_GOAL, a CanceledBeforeStart CANCELED, a
        FigarohError with its code, any other exception (a bug) ROS_ERROR "internal error"
        with its traceback logged, rather than rclpy's empty result.  ``stop(why)``: what a
        goal acting from this process undoes after a FigarohError or a bug; with it, a
        FigarohError raised once the goal's cancel was requested ends it CANCELED."""
        lock = self.busy[action]
        if not lock.acquire(blocking=False):
            called = self.called.get(action, f"a {action} goal")
            return self.end(handle, result, INVALID_GOAL, f"{called} is running already; "
                            "retry when it ends")
        try:
            return body()
        except GoalRefused as exc:
            return self.end(handle, result, INVALID_GOAL, str(exc))
        except CanceledBeforeStart as exc:
            return self.end(handle, result, CANCELED, str(exc))
        except FigarohError as exc:
            code = exc.code
            if stop is not None:
                stop(str(exc))
                code = CANCELED if handle.is_cancel_requested else code
            return self.end(handle, result, code, str(exc))
        except Exception as exc:    # noqa: BLE001 - a bug must still answer (and stop)
            why = (f"internal error, {self.after_bug.get(action, 'nothing published')}: "
                   f"{type(exc).__name__}: {exc}")
            self.node.get_logger().error(f"{why}\n{traceback.format_exc()}")
            if stop is not None:
                stop(why)
            return self.end(handle, result, ROS_ERROR, why)
        finally:
            lock.release()


class GoalRunner(GoalLifecycle):
    """:class:`GoalLifecycle` whose goals work in a worker process."""

    def work(self, handle, job: Job, Feedback, on_partial=lambda p: None):
        """Run ``job`` in a worker, its progress as feedback; its outcome or Failure."""
        def feedback(p: Progress):
            handle.publish_feedback(Feedback(stage=int(p.stage), fraction=float(p.fraction),
                                             message=p.message))

        def started(pid):
            self.node.get_logger().info(f"{job.task} goal: worker {pid}, output {job.out}")
        limit = self.node.params.max_goal_seconds
        end = time.monotonic() + limit
        ended = run_job(job, feedback,
                        lambda: handle.is_cancel_requested or time.monotonic() > end,
                        started, on_partial=on_partial)
        if isinstance(ended, Failure) and ended.kind == "Canceled" and \
                not handle.is_cancel_requested:
            return Failure(ROS_ERROR, "Timeout", f"the {job.task} worker ran longer than "
                           f"max_goal_seconds ({limit:g} s): ended, nothing published")
        return ended

"""How the calibration node's actions run a goal: one goal of each action at a time, its
work in a worker process (``ros/worker.py``) with the progress as feedback, its end with an
error code and a message scrubbed of the files the goal named (``ros/goal_paths.py``).

The Calibrate, PlanTrajectory and IdentifyPayload actions (and the StartCalibration
service, which starts a Calibrate goal) share one :class:`GoalRunner`.  The experiment
executor keeps its own loop: its goals drive the robot from the node's process, no worker.
"""
from __future__ import annotations

import os
import threading
import time
import traceback

from figaroh_ros.errors import INVALID_GOAL, ROS_ERROR, SUCCESSFUL, FigarohError
from figaroh_ros.progress import Progress
from figaroh_ros.ros.common import GoalRefused
from figaroh_ros.ros.worker import Failure, Job, run_job


class GoalRunner:
    """The goal side of ``node`` (its logger, ``paths`` and ``params``)."""

    def __init__(self, node, actions=()):
        self.node = node
        self.busy = {a: threading.Lock() for a in actions}
        self.runs = 0

    def run_folder(self) -> str:
        """A new timestamped folder under output_dir for a goal's files."""
        self.runs += 1
        return os.path.join(os.path.abspath(self.node.params.output_dir),
                            time.strftime("%Y%m%d_%H%M%S") + f"_{self.runs}")

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

    def end(self, handle, result, code: int, message: str):
        """End the goal; its message scrubbed of the files the goal named (the log keeps
        it whole)."""
        result.error_code = code
        result.message = self.node.paths.answer(message, handle.request)
        log = self.node.get_logger()
        if code == SUCCESSFUL:
            log.info(message)
            handle.succeed()
        else:
            log.warning(f"goal ended ({code}): {message}")
            handle.canceled() if handle.is_cancel_requested else handle.abort()
        return result

    def exclusive(self, action: str, handle, result, body):
        """Run ``body()`` unless a goal of the same action is running (INVALID_GOAL);
        a GoalRefused or a FigarohError raised before the worker ends the goal, and so
        does any other exception (a bug: ROS_ERROR "internal error", its traceback
        logged), rather than rclpy's empty result."""
        lock = self.busy[action]
        if not lock.acquire(blocking=False):
            return self.end(handle, result, INVALID_GOAL,
                            f"a {action} goal is running already; retry when it ends")
        try:
            return body()
        except GoalRefused as exc:
            return self.end(handle, result, INVALID_GOAL, str(exc))
        except FigarohError as exc:
            return self.end(handle, result, exc.code, str(exc))
        except Exception as exc:    # noqa: BLE001 - a bug must still answer, nothing published
            why = f"internal error, nothing published: {type(exc).__name__}: {exc}"
            self.node.get_logger().error(f"{why}\n{traceback.format_exc()}")
            return self.end(handle, result, ROS_ERROR, why)
        finally:
            lock.release()

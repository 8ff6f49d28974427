"""The executor's checks of a RunExperiment goal that need no file of the goal's own:
its timing, and the pre-flight of the graph before anything moves.

Every goal, once its files passed (``Executor.check``: joints, limits, identifiability),
runs the Preflight action's live checks (``ros/preflight_action.py``, the same functions):
every controller's FollowJointTrajectory server answers, every required topic of the
driver section speaks within 1 s (``preflight_topic_window`` 0, the default: no rate
checked, about 0.05 s per goal) or arrives over ``preflight_topic_window`` s with the joint
states at their stated rate (0.8 s per goal for 0.5 s: a simulator on a loaded machine
falls below its rate), with publishers whose QoS matches the recorder's, the sensor frames
reach the model's links by TF lookups, and the model holds the joints of the controllers
(and of ``preflight_identification_config`` for a trajectory).  Each check that passes is
logged and reported as feedback (stage ``PREFLIGHT``, the check's line in ``check``);
a failed one ends the goal INVALID_GOAL naming every failed check and
its numbers, nothing moved and nothing recorded.
"""
from __future__ import annotations

import math
import time

import numpy as np

from figaroh_ros.action import Preflight, RunExperiment
from figaroh_ros.errors import FigarohError
from figaroh_ros.ros.common import CanceledBeforeStart, GoalRefused
from figaroh_ros.ros.parameters import ExecutorParameters
from figaroh_ros.ros.preflight_action import live_stages, run_stages

# s a goal waits for each controller's action server: what the executor waits when sending
# (a goal right after start-up, discovery under way, is served as before)
CONTROLLER_WAIT = 10.0


def goal_timing(g, params: ExecutorParameters) -> tuple[float, float, float]:
    """max_velocity, settle_time, dwell_time of a goal (the node's unless overridden)."""
    if not g.override_timing:
        return params.max_velocity, params.settle_time, params.dwell_time
    timing = (g.max_velocity, g.settle_time, g.dwell_time)
    if not all(math.isfinite(v) for v in timing) or g.max_velocity <= 0.0 \
            or g.settle_time < 0.0 or g.dwell_time < 0.0:
        raise GoalRefused(f"override_timing: max_velocity {g.max_velocity} must be > 0, "
                          f"settle_time {g.settle_time} and dwell_time {g.dwell_time} >= 0")
    return timing


def play_seconds(x) -> float:
    """About how long the Experiment ``x`` moves and holds the robot (s): a trajectory's
    length, or each posture's move at ``max_velocity`` (its largest joint travel), settle
    and dwell times."""
    if x.times is not None:
        return float(x.times[-1] - x.times[0]) + x.settle_time
    travel = np.abs(np.diff(np.asarray(x.Q, float), axis=0)).max(axis=1).sum() \
        if len(x.Q) > 1 else 0.0
    return float(travel / x.max_velocity + len(x.Q) * (x.settle_time + x.dwell_time))


def preflight_goal(ex, handle, postures_total: int) -> float:
    """The live pre-flight of the goal of ``handle`` on the executor ``ex``: its duration
    (s); GoalRefused naming the failed checks; CanceledBeforeStart when the goal's cancel
    arrives during it (heard after each check: a cancel need not wait for the others)."""
    g, t0 = handle.request, time.monotonic()
    stages = live_stages(ex, Preflight.Goal(postures=g.postures_file,
                                            trajectory=g.trajectory_file),
                         ex.params.preflight_topic_window, CONTROLLER_WAIT)
    log = ex.get_logger()

    def passed(c, _fraction):
        if handle.is_cancel_requested:
            raise CanceledBeforeStart(f"canceled during the pre-flight (after {c.name}), "
                                      "nothing moved")
        if c.passed:
            log.info(f"pre-flight {c.line()}")
            handle.publish_feedback(RunExperiment.Feedback(
                stage=RunExperiment.Feedback.PREFLIGHT, posture=0,
                postures_total=postures_total, fraction=0.0, check=c.line()))
    try:
        failed = [c for c in run_stages(stages, passed) if not c.passed]
    except FigarohError as exc:      # a check that could not run: refused, nothing started
        raise GoalRefused(f"pre-flight could not run, nothing moved: {exc}") from None
    if failed:
        raise GoalRefused("pre-flight FAILED, nothing moved: " + "; ".join(
            c.line() for c in failed))
    return time.monotonic() - t0

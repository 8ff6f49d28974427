"""The timing of a RunExperiment goal (``ros.goal_checks.goal_timing``): the executor's
parameters unless the goal overrides them, and an override refused, before anything
moves, when a speed is not positive, a wait negative or a value not finite."""
import math

import pytest

from figaroh_ros.action import RunExperiment
from figaroh_ros.ros.common import GoalRefused
from figaroh_ros.ros.goal_checks import goal_timing
from figaroh_ros.ros.parameters import ExecutorParameters

PARAMS = ExecutorParameters(max_velocity=0.7, settle_time=0.3, dwell_time=1.5)


def goal(override: bool, v: float, settle: float, dwell: float):
    return RunExperiment.Goal(override_timing=override, max_velocity=v, settle_time=settle,
                              dwell_time=dwell)


def test_the_nodes_timing_unless_overridden():
    assert goal_timing(goal(False, -1.0, -1.0, math.nan), PARAMS) == (0.7, 0.3, 1.5)
    assert goal_timing(goal(True, 0.25, 0.0, 0.0), PARAMS) == (0.25, 0.0, 0.0)
    assert goal_timing(goal(True, 2.0, 4.0, 8.0), PARAMS) == (2.0, 4.0, 8.0)


@pytest.mark.parametrize("v, settle, dwell", [
    (0.0, 0.2, 0.5), (-0.1, 0.2, 0.5), (0.5, -1e-9, 0.5), (0.5, 0.2, -1e-9),
    (math.inf, 0.2, 0.5), (0.5, math.nan, 0.5), (0.5, 0.2, math.inf)])
def test_an_override_out_of_range_is_refused(v, settle, dwell):
    with pytest.raises(GoalRefused) as exc:
        goal_timing(goal(True, v, settle, dwell), PARAMS)
    assert str(exc.value) == (f"override_timing: max_velocity {v} must be > 0, settle_time "
                              f"{settle} and dwell_time {dwell} >= 0")

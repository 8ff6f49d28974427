"""One error tree for the whole package.

Every error the package raises on purpose is a :class:`FigarohError`; its subclass says
whose fault it is, and :attr:`FigarohError.code` is the ``error_code`` the action results
report (the constants of the same names in ``action/*.action``).  The command line exits
with 2 for every one of them and prints the message once, without a traceback.
"""
from __future__ import annotations

# error codes shared with action/Calibrate.action, PlanTrajectory.action, RunExperiment.action
SUCCESSFUL = 0
INVALID_GOAL = 1
CONFIG_ERROR = 2
DATA_ERROR = 3
MODEL_ERROR = 4
SOLVER_ERROR = 5
ROS_ERROR = 6
CANCELED = 7
WORKER_CRASHED = 8
CONTROLLER_ABORTED = 9


class FigarohError(Exception):
    """Base of every error raised on purpose by figaroh_ros."""

    code = INVALID_GOAL

    def __str__(self) -> str:
        text = super().__str__()
        return text[len("error: "):] if text.startswith("error: ") else text


class ConfigError(FigarohError, ValueError):
    """A configuration (YAML file, launch file, node parameter, goal field) is invalid."""

    code = CONFIG_ERROR


class DataError(FigarohError, ValueError):
    """A recording, table, bag or experiment file cannot be used as it is."""

    code = DATA_ERROR


class ModelError(FigarohError, ValueError):
    """A robot model (URDF, xacro, robot_description) is unusable, or a model cannot be
    written back into it exactly."""

    code = MODEL_ERROR


class SolverError(FigarohError, RuntimeError):
    """An estimation or planning problem has no usable solution: not identifiable, not
    excited, not converged, infeasible."""

    code = SOLVER_ERROR


class RosError(FigarohError, RuntimeError):
    """Communication with the ROS graph failed: a server, topic or service is missing or
    did not answer in time."""

    code = ROS_ERROR


__all__ = ["FigarohError", "ConfigError", "DataError", "ModelError", "SolverError",
           "RosError"]

"""Tasks: a config file (and recordings) in, result files out.

Each task module has one ``run(config_path, *, ..., out, progress=None) -> TaskOutcome``
that loads and validates the config, reads the recordings (``figaroh_ros.io``), calls the
public array API and writes ``result.yaml`` (plus models and plots) into ``out``.  The
command line prints a :class:`TaskOutcome`; the calibration node's worker process sends it
back to the node.  Nothing here imports rclpy.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from figaroh_ros.lazy import lazy_names


@dataclass
class TaskOutcome:
    summary: dict                                   # the content of result.yaml
    paths: dict[str, str] = field(default_factory=dict)   # result, urdf, plots, trajectory ...


# the task modules, each loaded at its first ``tasks.name`` (a node imports ``tasks`` at
# start and the task a goal runs when the goal comes)
__getattr__, __dir__ = lazy_names(globals(), {}, (
    "backlash", "calibrate", "camera_bag", "camera_calibrate", "gains", "identify", "payload",
    "plan_postures", "plan_trajectory", "preflight", "suspension"))

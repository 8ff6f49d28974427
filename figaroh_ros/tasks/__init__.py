"""Tasks: a config file (and recordings) in, result files out.

Each task module has one ``run(config_path, *, ..., out, progress=None) -> TaskOutcome``
that loads and validates the config, reads the recordings (``figaroh_ros.io``), calls the
public array API and writes ``result.yaml`` (plus models and plots) into ``out``.  The
command line prints a :class:`TaskOutcome`; the calibration node's worker process sends it
back to the node.  Nothing here imports rclpy.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class TaskOutcome:
    summary: dict                                   # the content of result.yaml
    paths: dict[str, str] = field(default_factory=dict)   # result, urdf, plots, trajectory ...

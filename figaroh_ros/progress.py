"""Structured progress of a long task: a stage, the fraction done and a line for people.

The core functions take an optional ``progress`` callable and call it with a
:class:`Progress`; the command line prints ``message``, the calibration node turns it into
the action feedback (the stage numbers are the feedback constants of
``action/Calibrate.action`` and ``action/PlanTrajectory.action``).
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum
from typing import Callable, Optional


class Stage(IntEnum):
    STARTING = 0
    LOADING_DATA = 1
    IDENTIFIABILITY = 2
    ESTIMATION = 3
    VALIDATION = 4
    EXPORTING = 5
    PUBLISHING = 6
    PLANNING = 8


@dataclass(frozen=True)
class Progress:
    stage: Stage
    fraction: float       # 0..1 of the whole task
    message: str


Reporter = Callable[[Progress], None]


def reporter(progress: Optional[Reporter]) -> Callable[[Stage, float, str], None]:
    """``say(stage, fraction, message)`` that forwards to ``progress`` (or to nothing)."""
    if progress is None:
        return lambda stage, fraction, message: None
    return lambda stage, fraction, message: progress(Progress(Stage(stage), float(fraction),
                                                              str(message)))

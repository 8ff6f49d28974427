"""Geometric calibration (seed 000 §II.A-D; seed 002 §II.C), from arrays: ROS-free, no
file read or written.

* :func:`calibrate` -> :class:`CalibrationResult` (``.parameters``, ``.rmse``,
  ``.validation_rmse``, ``.predict(q)``, ``.to_urdf()``, ``.to_dict()``);
* :func:`plan_postures` -> :class:`PosturePlan` (D-optimal static postures, Eq. 12).

The names are loaded on first use (PEP 562): a calibration does not load the posture
planner's IPOPT (cyipopt), a plan does not load the calibration solver.
"""
from importlib import import_module

_PUBLIC = {
    "calibrate": "figaroh_ros.calibration.procedure",
    "CalibrationResult": "figaroh_ros.calibration.result",
    "Parameters": "figaroh_ros.calibration.result",
    "plan_postures": "figaroh_ros.calibration.planning",
    "PosturePlan": "figaroh_ros.calibration.postures",
    "SelfCollision": "figaroh_ros.calibration.postures",
}
__all__ = sorted(_PUBLIC)


def __getattr__(name: str):
    if name not in _PUBLIC:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(_PUBLIC[name]), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_PUBLIC))

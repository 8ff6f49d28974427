"""Geometric calibration (Nguyen et al. 2023 §II.A-D; Nguyen et al. 2024 §II.C), from arrays: ROS-free, no
file read or written.

* :func:`calibrate` -> :class:`CalibrationResult` (``.parameters``, ``.rmse``,
  ``.validation_rmse``, ``.predict(q)``, ``.to_urdf()``, ``.to_dict()``);
* :func:`plan_postures` -> :class:`PosturePlan` (D-optimal static postures, Eq. 12).

The names are loaded on first use (PEP 562): a calibration does not load the posture
planner's IPOPT (cyipopt), a plan does not load the calibration solver.
"""
from figaroh_ros.lazy import lazy_names

_PUBLIC = {
    "calibrate": "figaroh_ros.calibration.procedure",
    "CalibrationResult": "figaroh_ros.calibration.result",
    "Parameters": "figaroh_ros.calibration.result",
    "plan_postures": "figaroh_ros.calibration.planning",
    "PosturePlan": "figaroh_ros.calibration.postures",
    "SelfCollision": "figaroh_ros.calibration.postures",
}
__all__ = sorted(_PUBLIC)


__getattr__, __dir__ = lazy_names(globals(), _PUBLIC)

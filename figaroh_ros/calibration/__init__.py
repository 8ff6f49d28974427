"""Geometric calibration (seed 000 §II.A-D; seed 002 §II.C), from arrays: ROS-free, no
file read or written.

* :func:`calibrate` -> :class:`CalibrationResult` (``.parameters``, ``.rmse``,
  ``.validation_rmse``, ``.predict(q)``, ``.to_urdf()``, ``.to_dict()``);
* :func:`plan_postures` -> :class:`PosturePlan` (D-optimal static postures, Eq. 12).
"""
from figaroh_ros.calibration.planning import plan_postures
from figaroh_ros.calibration.postures import PosturePlan, SelfCollision
from figaroh_ros.calibration.procedure import calibrate
from figaroh_ros.calibration.result import CalibrationResult, Parameters

__all__ = ["calibrate", "CalibrationResult", "Parameters", "plan_postures", "PosturePlan",
           "SelfCollision"]

"""Camera calibration: targets, detection in images, simulated images, the pixel
measurement model and its solver (ROS-free).

* :func:`calibrate_camera` -> :class:`CameraCalibrationResult` (``.camera_mount``,
  ``.parameters``, ``.rmse``, ``.validation_rmse``, ``.to_urdf()``,
  ``.camera_info_yaml()``, ``.to_dict()``), from detected board features and the robot's
  joint configurations;
* :class:`Board`, :class:`Detection` (targets), :class:`Intrinsics` and :func:`project`
  (the pinhole model with OpenCV's distortion);
* :func:`plan_camera_postures`: postures that keep the board in view, D-optimal over the
  pixel residuals.

Names are loaded on first use (PEP 562).
"""
from figaroh_ros.lazy import lazy_names

_PUBLIC = {
    "Board": "figaroh_ros.camera.targets",
    "Detection": "figaroh_ros.camera.targets",
    "Intrinsics": "figaroh_ros.camera.model",
    "project": "figaroh_ros.camera.model",
    "calibrate_camera": "figaroh_ros.camera.solve",
    "CameraCalibrationResult": "figaroh_ros.camera.result",
    "plan_camera_postures": "figaroh_ros.camera.postures",
}
__all__ = sorted(_PUBLIC)


__getattr__, __dir__ = lazy_names(globals(), _PUBLIC)

"""figaroh_ros: on-robot geometric calibration and dynamic identification.

The public array API (arrays and a robot model in, a result object out, no file read or
written), in the style of ``scipy.optimize.least_squares``::

    from figaroh_ros import load_model, identify, calibrate
    arm = load_model("example-robot-data:panda_description/urdf/panda.urdf",
                     [f"panda_joint{i}" for i in range(1, 8)])
    result = identify(arm, q, dq, ddq, tau, validation=(q2, dq2, ddq2, tau2))
    result.base_parameters, result.condition_number, result.predict(q2, dq2, ddq2)

The names below are loaded on first use, so that ``import figaroh_ros.msg`` (the generated
ROS interfaces, which may live in another ``figaroh_ros`` folder: the package path is
extended for them) does not load pinocchio.
"""
from figaroh_ros.lazy import lazy_names
from pkgutil import extend_path

__path__ = extend_path(__path__, __name__)

_PUBLIC = {
    "load_model": "figaroh_ros.model",
    "RobotModel": "figaroh_ros.model",
    "identify": "figaroh_ros.identification",
    "IdentificationResult": "figaroh_ros.identification",
    "identify_gains": "figaroh_ros.identification",
    "GainsResult": "figaroh_ros.identification",
    "calibrate": "figaroh_ros.calibration",
    "CalibrationResult": "figaroh_ros.calibration",
    "plan_postures": "figaroh_ros.calibration",
    "calibrate_camera": "figaroh_ros.camera",
    "CameraCalibrationResult": "figaroh_ros.camera",
    "PosturePlan": "figaroh_ros.calibration",
    "plan_trajectory": "figaroh_ros.excitation",
    "PlannedTrajectory": "figaroh_ros.excitation",
    "identify_backlash": "figaroh_ros.phenomena",
    "BacklashResult": "figaroh_ros.phenomena",
    "identify_suspension": "figaroh_ros.phenomena",
    "SuspensionResult": "figaroh_ros.phenomena",
    "export": "figaroh_ros.io.export",
    "identify_payload": "figaroh_ros.identification.payload",
    "FigarohError": "figaroh_ros.errors",
    "ConfigError": "figaroh_ros.errors",
    "DataError": "figaroh_ros.errors",
    "ModelError": "figaroh_ros.errors",
    "SolverError": "figaroh_ros.errors",
    "RosError": "figaroh_ros.errors",
}
__all__ = sorted(_PUBLIC)


__getattr__, __dir__ = lazy_names(globals(), _PUBLIC)

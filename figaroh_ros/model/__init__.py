"""Robot models: a pinocchio model, its active joints and its drive chain (names loaded on
first use, PEP 562: ``model.sources`` or ``model.urdf_checks`` alone do not load the rest)."""
from figaroh_ros.lazy import lazy_names

_PUBLIC = {
    "load_model": "figaroh_ros.model.loading",
    "RobotModel": "figaroh_ros.model.robot",
    "Transmission": "figaroh_ros.model.robot",
    "example_robot_urdf": "figaroh_ros.model.robot",
    "load_urdf_model": "figaroh_ros.model.robot",
    "random_states": "figaroh_ros.model.robot",
    "resolve_urdf": "figaroh_ros.model.robot",
}
__all__ = sorted(_PUBLIC)


__getattr__, __dir__ = lazy_names(globals(), _PUBLIC)

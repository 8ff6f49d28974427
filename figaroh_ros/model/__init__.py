"""Robot models: a pinocchio model, its active joints and its drive chain (names loaded on
first use, PEP 562: ``model.sources`` or ``model.urdf_checks`` alone do not load the rest)."""
from importlib import import_module

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


def __getattr__(name: str):
    if name not in _PUBLIC:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(_PUBLIC[name]), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_PUBLIC))

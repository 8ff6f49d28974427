"""Seed 002's non-geometric phenomena: joint backlash / encoder discrepancy and the
mobile base's suspension.  Arrays in, result objects out, no files.  Names loaded on first
use (PEP 562): a backlash task does not load the suspension model, nor the reverse."""
from importlib import import_module

_PUBLIC = {
    "identify_backlash": "figaroh_ros.phenomena.backlash_identification",
    "BacklashResult": "figaroh_ros.phenomena.backlash_identification",
    "JointBacklash": "figaroh_ros.phenomena.backlash_identification",
    "identify_suspension": "figaroh_ros.phenomena.suspension_identification",
    "SuspensionResult": "figaroh_ros.phenomena.suspension_identification",
    "sweep_trajectory": "figaroh_ros.phenomena.sweep",
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

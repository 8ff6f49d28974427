"""Nguyen et al. 2024's non-geometric phenomena: joint backlash / encoder discrepancy and the
mobile base's suspension.  Arrays in, result objects out, no files.  Names loaded on first
use (PEP 562): a backlash task does not load the suspension model, nor the reverse."""
from figaroh_ros.lazy import lazy_names

_PUBLIC = {
    "identify_backlash": "figaroh_ros.phenomena.backlash_identification",
    "BacklashResult": "figaroh_ros.phenomena.backlash_identification",
    "JointBacklash": "figaroh_ros.phenomena.backlash_identification",
    "identify_suspension": "figaroh_ros.phenomena.suspension_identification",
    "SuspensionResult": "figaroh_ros.phenomena.suspension_identification",
    "sweep_trajectory": "figaroh_ros.phenomena.sweep",
}
__all__ = sorted(_PUBLIC)


__getattr__, __dir__ = lazy_names(globals(), _PUBLIC)

"""Seed 002's non-geometric phenomena: joint backlash / encoder discrepancy and the
mobile base's suspension.  Arrays in, result objects out, no files."""
from figaroh_ros.phenomena.backlash_identification import (
    BacklashResult, JointBacklash, identify_backlash
)
from figaroh_ros.phenomena.suspension_identification import (
    SuspensionResult, identify_suspension
)
from figaroh_ros.phenomena.sweep import sweep_trajectory

__all__ = ["identify_backlash", "BacklashResult", "JointBacklash", "identify_suspension",
           "SuspensionResult", "sweep_trajectory"]

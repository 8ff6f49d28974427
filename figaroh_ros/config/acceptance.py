"""Acceptance section shared by the calibration and identification configs: the
publication gate's margins and plausibility bounds, the user's acceptance thresholds and
the residual sanity limit (``figaroh_ros.tasks.gate``)."""
from __future__ import annotations

from pydantic import Field

from figaroh_ros.config.base import Section


class Acceptance(Section):
    """When a model may be published (the publication gate) and when a fit is refused."""

    position_rmse_mm: float | None = Field(None, gt=0, le=1e4, description="geometric: "
                                           "held-out position RMSE required, mm (none: no "
                                           "threshold)")
    torque_relative_error: float | None = Field(None, gt=0, le=10, description="dynamic: "
                                                "held-out torque RMS over the RMS of the "
                                                "measured torques required (none: no "
                                                "threshold)")
    improvement_margin: float = Field(0.05, ge=0, lt=1, description="held-out error must "
                                      "fall by at least this fraction of the nominal model's")
    p_value: float = Field(0.01, gt=0, lt=0.5, description="one-sided paired test over "
                           "the held-out postures (samples): calibrated better than nominal")
    joint_limit_tolerance_rad: float = Field(0.02, ge=0, le=10, description="readings "
                                             "beyond the URDF limits by more than this are "
                                             "refused (m for prismatic joints)")
    sensor_range_m: float = Field(100.0, gt=0, le=1e6, description="measured positions "
                                  "farther than this from the measurement frame's origin "
                                  "are refused, m")
    max_placement_mm: float = Field(20.0, gt=0, le=1e4, description="largest joint "
                                    "placement translation change, mm")
    max_placement_deg: float = Field(2.0, gt=0, le=180, description="largest joint "
                                     "placement rotation change, deg")
    max_offset_deg: float = Field(5.0, gt=0, le=180, description="largest joint offset, "
                                  "deg (prismatic joints: max_placement_mm)")
    max_mass_change: float = Field(0.5, gt=0, le=100, description="dynamic: largest "
                                   "relative change of a link mass from the URDF's")
    residual_limit: float = Field(10.0, gt=1, le=1e6, description="residual RMS over the "
                                  "stated noise above which the fit is refused (DataError)")
    accept_poor_fit: bool = Field(False, description="warn in the result instead of "
                                  "refusing a fit above residual_limit (never published)")

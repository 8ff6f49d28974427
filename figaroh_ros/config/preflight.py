"""The ``preflight`` section of an identification config: what the pre-flight of a
planned exciting trajectory (``figaroh-ros preflight --trajectory``, the executor's
``preflight_identification_config``) assumes of the recording to come."""
from __future__ import annotations

from pydantic import Field

from figaroh_ros.config.base import Refused, Section
from figaroh_ros.config.fields import Numbers

DEFAULT_MAX_CONDITION = 1e3


class TrajectoryPreflight(Section):
    """The noise and rate of the recording to come, and the accepted conditioning
    (docs/methods/excitation.md: the pre-flight)."""

    torque_noise: Numbers | None = Field(None, description="torque noise std, N.m: one "
                                         "value or one per joint of robot.joints (default "
                                         "1: expected std per N.m of noise)")
    rate_hz: float | None = Field(None, gt=0, le=100_000, description="rate of the samples "
                                  "to be recorded, Hz (default: data.resample_hz, "
                                  "1/data.sample_time, else the trajectory file's own)")
    max_condition: float = Field(DEFAULT_MAX_CONDITION, gt=1, le=1e12, description="largest "
                                 "condition number of the noise-weighted base regressor "
                                 "accepted")


def check_preflight(joints: list[str], p: TrajectoryPreflight) -> None:
    """One noise level, or one per joint; every one positive."""
    noise = p.torque_noise
    if noise is not None and (len(noise) not in (1, len(joints)) or min(noise) <= 0):
        raise Refused("preflight.torque_noise", f"expected 1 or {len(joints)} positive "
                      "values (N.m)", noise)

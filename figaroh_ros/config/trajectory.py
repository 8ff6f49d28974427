"""Exciting-trajectory config (``figaroh-ros plan-trajectory``): the robot and drive model
of the identification config, plus a ``trajectory`` section.

Fourier series at rest at both ends (Tröbinger et al. Eq. 12-13) or clamped cubic splines between
postures (Nguyen et al. 2023 Eq. 14); the criterion is the condition number, log-determinant or
smallest singular value of the weighted base regressor.  The stated maxima bound the size
of the optimisation: ``grid_points`` x joints x ``harmonics`` variables per start.
"""
from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from figaroh_ros.config.base import Refused, Section, parse
from figaroh_ros.config.fields import Name, Numbers, Path, Seed, check_per_joint, ordered_box
from figaroh_ros.config.identification import ArmRobot, DriveModel
from figaroh_ros.config.workspace import Workspace
from figaroh_ros.config.yaml_file import read_mapping

MAX_PLAN_BYTES = 1_000_000_000     # memory a plan may take (estimate, :func:`plan_bytes`)


class Trajectory(Workspace):
    """The trajectory, its limits and the optimiser."""

    tool_frame: Name | None = Field(None, description="frame kept in the workspace box")
    parameterisation: Literal["fourier", "spline"] = Field("fourier", description="finite "
                                                           "Fourier series or splines "
                                                           "through postures")
    duration: float = Field(10.0, gt=0, le=3600, description="Fourier period, s")
    harmonics: int = Field(5, ge=2, le=50, description="Fourier harmonics (rest at both "
                           "ends takes 3 conditions)")
    start_posture: Numbers | None = Field(None, description="Fourier rest posture, one per "
                                          "joint (default: mid-range)")
    postures_file: Path | None = Field(None, description="spline: the postures to join "
                                       "(CSV)")
    segment_duration: float = Field(2.0, gt=0, le=600, description="spline: s per "
                                    "posture-to-posture move")
    waypoints: int = Field(4, ge=1, le=100, description="spline: free waypoints per segment")
    rate_hz: float = Field(100.0, gt=0, le=10_000, description="control rate of the file "
                           "and of the checks, Hz")
    grid_points: int = Field(60, ge=10, le=10_000, description="samples the optimisation "
                             "sees")
    criterion: Literal["cond", "logdet", "sigma_min"] = Field("cond", description="what is "
                                                              "optimised")
    velocity_scale: float = Field(0.8, gt=0, le=1, description="fraction of the URDF "
                                  "velocity limits")
    acceleration_limit: float = Field(5.0, gt=0, le=1000, description="rad/s^2 (m/s^2)")
    torque_scale: float = Field(0.8, gt=0, le=1, description="fraction of the URDF effort "
                                "limits")
    joint_margin: float = Field(0.05, ge=0, le=10, description="rad (m) inside the position "
                                "limits")
    torque_noise: Numbers | None = Field(None, description="torque noise std per joint: the "
                                         "regressor's weights")
    starts: int = Field(3, ge=1, le=100, description="random starts, best kept")
    max_iterations: int = Field(200, ge=1, le=100_000, description="IPOPT iterations per "
                                "start")
    seed: Seed = Field(0, description="seed of the random starts")


class TrajectoryConfig(Section):
    """An optimal exciting trajectory for dynamic identification (`figaroh-ros
    plan-trajectory`)."""

    robot: ArmRobot
    model: DriveModel = Field(default_factory=DriveModel)
    trajectory: Trajectory = Field(default_factory=Trajectory)

    @model_validator(mode="after")
    def _consistent(self):
        t, n = self.trajectory, len(self.robot.joints)
        if t.parameterisation == "spline" and t.postures_file is None:
            raise Refused("trajectory.postures_file", "is required with parameterisation "
                          "spline")
        for key in ("start_posture", "torque_noise"):
            if not check_per_joint(getattr(t, key), self.robot.joints):
                raise Refused(f"trajectory.{key}", f"expected {n} values (one per joint)",
                              getattr(t, key))
        if t.torque_noise is not None and min(t.torque_noise) <= 0:
            raise Refused("trajectory.torque_noise", "expected positive standard "
                          "deviations", t.torque_noise)
        check_workspace(t)
        need = plan_bytes(t, n)
        if need > MAX_PLAN_BYTES:
            raise Refused("trajectory", f"the plan would take about {need / 1e9:.3g} GB "
                          f"(at most {MAX_PLAN_BYTES / 1e9:.3g} GB): lower duration x "
                          "rate_hz, grid_points or harmonics",
                          {k: getattr(t, k) for k in ("duration", "rate_hz", "grid_points",
                                                      "harmonics")})
        return self

    def with_trajectory(self, **fields) -> TrajectoryConfig:
        """A copy whose ``trajectory`` section has ``fields`` (its field names) in place."""
        return self.model_copy(update={"trajectory": self.trajectory.model_copy(
            update=fields)})


def plan_bytes(t: Trajectory, n: int) -> float:
    """Memory of the largest arrays of a plan (8-byte numbers): position, velocity and
    acceleration bases at the control rate (dense x m per joint, m coefficients), the
    regressor on the 4x finer scoring grid (13 n parameters at most per joint row) and
    the torque constraints' Jacobian on the grid (grid n x n m)."""
    m = 2 * t.harmonics if t.parameterisation == "fourier" else 3 * t.waypoints
    dense = t.duration * t.rate_hz + 1
    return 8.0 * (3 * dense * (m + n) + 4 * t.grid_points * n * 13 * n
                  + t.grid_points * n * n * m)


def check_workspace(t: Trajectory) -> None:
    """A workspace box: both corners, in order, and the frame kept inside."""
    if (t.workspace_min is None) != (t.workspace_max is None):
        raise Refused("trajectory.workspace_min", "give both workspace_min and "
                      "workspace_max")
    if t.workspace_min is None:
        return
    if t.tool_frame is None:
        raise Refused("trajectory.tool_frame", "is required with a workspace box")
    if not ordered_box(t.workspace_min, t.workspace_max):
        raise Refused("trajectory.workspace_max", "expected [x y z] above workspace_min",
                      t.workspace_max)


def load_trajectory_config(path: str) -> TrajectoryConfig:
    """The trajectory config at ``path``, validated (its paths absolute)."""
    return parse(TrajectoryConfig, read_mapping(path), path)

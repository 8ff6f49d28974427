"""Simulated robot config (``config/sim_<robot>.yaml``): the robot and its controllers
(``figaroh_ros.config.robot``) plus what only a simulation has: the hidden truth (placement
errors, perturbed dynamics, Nguyen et al. 2024's suspension and joint play), the sensors' noise and
the publishing rates.  The simulator itself (``figaroh_ros.sim.truth``) builds the true
robot from this."""
from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from figaroh_ros.config.base import Refused, Section, parse
from figaroh_ros.config.fields import Interval, Name, Names, Seed, Vector3
from figaroh_ros.config.robot import RobotFileConfig
from figaroh_ros.config.yaml_file import read_mapping


class Placement(Section):
    """A rigid placement: translation then roll-pitch-yaw."""

    xyz: Vector3 = Field([0.0, 0.0, 0.0], description="translation, m")
    rpy: Vector3 = Field([0.0, 0.0, 0.0], description="roll, pitch, yaw, rad")


class Ranged(Section):
    """Hidden values drawn uniformly in `[low, high]` intervals."""

    @model_validator(mode="after")
    def _ordered(self):
        for key, value in self:
            interval = isinstance(value, list) and len(value) == 2 and all(
                isinstance(v, float) for v in value)
            if interval and not 0 <= value[0] <= value[1]:
                raise Refused(key, "expected [low, high] with 0 <= low <= high", value)
        return self


class SimSuspension(Ranged):
    """Six spring-damper wheels under the base (Nguyen et al. 2024 Eq. 1-5)."""

    seed: Seed = Field(5, description="seed of the hidden wheel parameters")
    stiffness: Interval = Field([5e3, 5e4], description="N/m per wheel and axis (torsion: "
                                "a tenth, N.m/rad)")
    wheels: Literal["tiago"] | list[Vector3] = Field("tiago", description="`tiago` or six "
                                                     "[x, y, z] in `frame`, m")
    frame: Name = Field("base_link", description="frame of the wheel positions")

    @model_validator(mode="after")
    def _six_wheels(self):
        if isinstance(self.wheels, list) and len(self.wheels) != 6:
            raise Refused("wheels", "expected 'tiago' or six [x, y, z]", self.wheels)
        return self


class JointPlay(Ranged):
    """Gear play, eccentric link encoders and compliant shafts (Nguyen et al. 2024 Eq. 6-7)."""

    seed: Seed = Field(6, description="seed of the hidden values")
    joints: Names | None = Field(None, description="joints with play")
    gap: Interval = Field([0.002, 0.006], description="play, rad, drawn per joint")
    eccentricity: Interval = Field([0.001, 0.003], description="link encoder eccentricity, "
                                   "rad")
    compliance: Interval = Field([5e-5, 2e-4], description="shaft compliance, rad/N.m")


class SimPayload(Section):
    """A rigid load fixed to a frame of the robot (payload identification)."""

    frame: Name = Field("tool0", description="frame the payload is fixed to")
    mass: float = Field(gt=0, le=1000, description="kg")
    com: Vector3 = Field([0.0, 0.0, 0.0], description="centre of mass in `frame`, m")
    inertia: Vector3 = Field([0.0, 0.0, 0.0], description="principal moments about the "
                             "centre of mass, axes of `frame`, kg.m^2")

    @model_validator(mode="after")
    def _physical(self):
        a, b, c = self.inertia
        if min(a, b, c) < 0 or a + b < c or b + c < a or a + c < b:
            raise Refused("inertia", "expected non-negative moments meeting the triangle "
                          "inequalities", self.inertia)
        return self


class Truth(Section):
    """The hidden robot the simulator measures on."""

    seed: Seed = Field(0, description="seed of the hidden joint placement errors")
    position_mm: float = Field(1.0, ge=0, le=1000, description="std of the placement "
                               "translations, mm")
    rotation_mrad: float = Field(1.0, ge=0, le=1000, description="std of the placement "
                                 "rotations, mrad")
    tool_frame: Name = Field(description="frame the mocap body is fixed to")
    marker: Placement = Field(default_factory=Placement, description="mocap body in the "
                              "tool frame")
    mocap: Placement = Field(default_factory=Placement, description="mocap world -> robot "
                             "root")
    dynamics_seed: Seed = Field(3, description="seed of the hidden inertias and drives "
                                "(URDF perturbed)")
    dynamics_scale: float = Field(1.0, ge=0, le=10, description="size of the hidden "
                                  "dynamics' departure from the URDF (1: masses and "
                                  "inertias within 20 %, friction 0.5-3 N.m; 0: the URDF's "
                                  "inertias, no friction, rotor inertia nor torque offset)")
    coulomb_model: Literal["sign", "tanh"] = Field("sign", description="friction model of "
                                                   "the drives")
    suspension: SimSuspension | None = Field(None, description="a suspended mobile base")
    joint_play: JointPlay | None = Field(None, description="joints with play")
    payload: SimPayload | None = Field(None, description="a load on the tool: in the joint "
                                       "torques and in a wrist force-torque sensor")


class Noise(Section):
    """Standard deviations of the simulated sensors."""

    joint_position_rad: float = Field(1e-5, ge=0, le=1, description="joint encoders, rad")
    mocap_position_mm: float = Field(0.1, ge=0, le=1000, description="mocap position, mm")
    mocap_orientation_mrad: float = Field(0.5, ge=0, le=1000, description="mocap "
                                          "orientation, mrad")
    current_a: float = Field(0.01, ge=0, le=1000, description="motor torque (current gain "
                             "1), N.m")
    link_encoder_rad: float = Field(1e-4, ge=0, le=1, description="link encoders, rad")
    plate_force_n: float = Field(0.5, ge=0, le=1e4, description="force plate forces, N")
    plate_moment_nm: float = Field(0.2, ge=0, le=1e4, description="force plate moments, N.m")


class Rates(Section):
    """Publishing rates of the simulated sensors."""

    joint_states_hz: float = Field(250.0, gt=0, le=10_000, description="joint states, "
                                   "motor currents, the wrench and link encoders, Hz")
    mocap_hz: float = Field(100.0, gt=0, le=10_000, description="mocap poses and /tf, Hz")


class SimConfig(RobotFileConfig):
    """A simulated robot: controllers, hidden truth, noise, rates (`config/sim_*.yaml`)."""

    truth: Truth
    noise: Noise = Field(default_factory=Noise)
    rates: Rates = Field(default_factory=Rates)


def load_sim_file(path: str) -> SimConfig:
    """The simulation config at ``path``, validated: ``robot``, ``controllers``, ``driver``
    and ``truth``, ``noise``, ``rates`` with every default filled in (``truth.suspension``,
    ``truth.joint_play``, ``truth.payload``: None when absent)."""
    return parse(SimConfig, read_mapping(path), path)

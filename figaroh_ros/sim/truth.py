"""The hidden "true" robot of a simulation config (ROS-free; shared by the simulated robot
node, which measures on it, and by the demo and tests, which score models against it).

Config (``config/sim_<robot>.yaml``)::

    robot: {name, urdf}            # urdf may be example-robot-data:<relative path>
    controllers: {<name>: [joints...]}
    truth:
      seed: 7                      # hidden kinematic errors, drawn once from the seed
      position_mm: 1.0             # std of the joint placement translations
      rotation_mrad: 1.0           # std of the joint placement rotations
      tool_frame: tool0            # the frame the mocap body is fixed to
      marker: {xyz: [...], rpy: [...]}   # mocap body in the tool frame
      mocap: {xyz: [...], rpy: [...]}    # mocap world -> robot root
      dynamics_seed: 3             # hidden inertial and drive parameters (URDF perturbed)
      coulomb_model: sign          # friction model of the drives (sign | tanh)
      suspension:                  # optional (seed 002): six spring-damper wheels
        seed: 5
        stiffness: [5.0e3, 5.0e4]  # N/m per wheel and axis (torsion: a tenth, N.m/rad)
        wheels: tiago              # or a list of [x, y, z] in ``frame``
        frame: base_link
      joint_play:                  # optional (seed 002): gear play, eccentric encoder, sag
        seed: 6
        joints: [arm_1_joint, ...]
        gap: [0.002, 0.006]        # rad, drawn per joint
        eccentricity: [0.001, 0.003]
        compliance: [5.0e-5, 2.0e-4]   # rad per N.m
    noise: {joint_position_rad, mocap_position_mm, mocap_orientation_mrad, current_a,
            link_encoder_rad, plate_force_n, plate_moment_nm}
    rates: {joint_states_hz, mocap_hz}
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from figaroh_ros.calibration.kinematic_model import KinematicModel, Measurement
from figaroh_ros.config.identification import read_yaml
from figaroh_ros.config.robot import robot_config_from_dict
from figaroh_ros.errors import ConfigError
from figaroh_ros.identification.parameters import DriveOptions, parameter_layout
from figaroh_ros.identification.regressor import joint_torques_from_parameters
from figaroh_ros.model.robot import load_urdf_model
from figaroh_ros.phenomena.backlash import JointPlay, PlayTracker
from figaroh_ros.phenomena.suspension import (
    TIAGO_WHEELS, displacement, ground_reaction, random_parameters, stiffness_matrix
)
from figaroh_ros.sim.dynamics import perturbed_parameters
from figaroh_ros.sim.kinematics import hidden_errors


def _pose(d: dict | None, field: str) -> pin.SE3:
    d = d or {}
    try:
        xyz = np.array(d.get("xyz", [0, 0, 0]), float)
        rpy = np.array(d.get("rpy", [0, 0, 0]), float)
        assert xyz.shape == (3,) and rpy.shape == (3,)
    except (TypeError, ValueError, AssertionError):
        raise ConfigError(f"{field}: expected {{xyz: [x, y, z], rpy: [r, p, y]}}") from None
    return pin.SE3(pin.rpy.rpyToMatrix(*rpy), xyz)


@dataclass
class SimRobotConfig:
    name: str
    urdf: str
    controllers: dict[str, list[str]]
    truth: dict
    noise: dict
    rates: dict

    @property
    def joints(self) -> list[str]:
        return [j for js in self.controllers.values() for j in js]


def load_sim_config(path: str) -> SimRobotConfig:
    raw = read_yaml(path)
    robot = robot_config_from_dict(raw, path)
    noise = {"joint_position_rad": 1e-5, "mocap_position_mm": 0.1,
             "mocap_orientation_mrad": 0.5, "current_a": 0.01, "link_encoder_rad": 1e-4,
             "plate_force_n": 0.5, "plate_moment_nm": 0.2}
    noise.update(raw.get("noise") or {})
    rates = {"joint_states_hz": 250.0, "mocap_hz": 100.0}
    rates.update(raw.get("rates") or {})
    truth = {"seed": 0, "position_mm": 1.0, "rotation_mrad": 1.0, "tool_frame": None,
             "dynamics_seed": 3, "coulomb_model": "sign"}
    truth.update(raw.get("truth") or {})
    return SimRobotConfig(robot.name, robot.urdf, robot.controllers, truth, noise, rates)


class TrueRobot:
    """The simulated robot's true kinematics: nominal URDF + hidden placement errors, the
    mocap frame and the mocap body on the tool."""

    def __init__(self, cfg: SimRobotConfig):
        self.cfg = cfg
        self.model = pin.buildModelFromUrdf(cfg.urdf)
        for j in cfg.joints:
            if not self.model.existJointName(j):
                raise ConfigError(f"controllers: unknown joint '{j}' in {cfg.urdf}")
        t = cfg.truth
        if not t.get("tool_frame"):
            raise ConfigError("truth.tool_frame is required")
        self.km = KinematicModel(self.model, t["tool_frame"], level="full",
                                 measurement=Measurement("pose"))
        self.km.base0 = _pose(t.get("mocap"), "truth.mocap")
        self.km.tool0 = _pose(t.get("marker"), "truth.marker")
        rng = np.random.default_rng(int(t["seed"]))
        self.x = hidden_errors(self.km, rng, position_mm=float(t["position_mm"]),
                               rotation_mrad=float(t["rotation_mrad"]))
        self.x[self.km.groups["tool"]] = 0.0          # the marker pose is as configured
        self.x[self.km.groups["base"]] = 0.0          # so is the mocap frame
        # dynamics: the controller joints with perturbed inertias and drive parameters
        self.robot = load_urdf_model(cfg.urdf, cfg.joints)
        self.drive = DriveOptions(coulomb_model=t["coulomb_model"])
        self.layout = parameter_layout(self.robot, self.drive)
        self.phi = perturbed_parameters(self.robot, self.layout, seed=int(t["dynamics_seed"]))
        self.gdata = self.model.createData()
        self.suspension = _suspension(t.get("suspension"), self.model, self.km)
        if self.suspension is not None:
            self.km.base_motion = self.base_displacement
        self.plays = _plays(t.get("joint_play"), self.model)

    def _full(self, q_chain: np.ndarray) -> np.ndarray:
        return self.km.configuration(np.asarray(q_chain, float))

    def ground_reaction(self, q_chain: np.ndarray) -> np.ndarray:
        """Static reaction of the ground on the robot (force, moment) in the suspension
        frame (the plate frame), for the chain posture ``q_chain``."""
        frame = self.suspension["frame"] if self.suspension else "base_link"
        if not self.model.existFrame(frame):
            frame = self.model.frames[1].name
        return ground_reaction(self.model, self._full(q_chain), frame, self.gdata)

    def plate_reading(self, names: list[str], positions, rng: np.random.Generator,
                      noise: dict) -> np.ndarray:
        """A force plate under the robot at the link positions of ``names``: the static
        reaction of its weight (moment included) with the ``plate_force_n`` and
        ``plate_moment_nm`` noise of ``noise``."""
        R = self.ground_reaction(self.chain_positions(names, positions))
        return R + rng.normal(0, 1.0, 6) * np.repeat(
            [float(noise["plate_force_n"]), float(noise["plate_moment_nm"])], 3)

    def base_displacement(self, q_chain: np.ndarray) -> pin.SE3:
        """The base's displacement on its suspension under the posture's weight, as a
        transform of the model's root frame (the suspension acts in its own frame)."""
        s = self.suspension
        D = displacement(s["K"], self.ground_reaction(q_chain) - s["rest"])
        return s["root_M_frame"] * D * s["root_M_frame"].inverse()

    def base_marker_pose(self, q_chain: np.ndarray) -> pin.SE3:
        """The suspension frame's pose in the mocap frame (a mocap body on the base)."""
        return (self.km.base_pose(self.x) * self.base_displacement(q_chain)
                * self.suspension["root_M_frame"])

    def gravity_torques(self, names: list[str], q_chain: np.ndarray) -> np.ndarray:
        g = pin.computeGeneralizedGravity(self.model, self.gdata, self._full(q_chain))
        return np.array([g[self.model.joints[self.model.getJointId(j)].idx_v] for j in names])

    def joint_torques(self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
        """True joint torques (N x n) of the controller joints (config order)."""
        return joint_torques_from_parameters(self.robot, self.layout, self.drive, self.phi,
                                             np.atleast_2d(q), np.atleast_2d(dq),
                                             np.atleast_2d(ddq))

    def chain_positions(self, names: list[str], positions) -> np.ndarray:
        d = dict(zip(names, positions))
        return np.array([d.get(j, 0.0) for j in self.km.chain])

    def marker_pose(self, q_chain: np.ndarray) -> pin.SE3:
        """True pose of the mocap body in the mocap frame."""
        return self.km.predict(q_chain[None, :], self.x)[0]

    def marker_poses(self, Q: np.ndarray) -> list[pin.SE3]:
        return self.km.predict(Q, self.x)

    def play_tracker(self, names: list[str], q_motor: np.ndarray):
        """A PlayTracker of the joints of ``names`` (positions ``q_motor``) that have
        play (``truth.joint_play``), or None if none has."""
        self.play_names = [j for j in names if j in self.plays]
        if not self.play_names:
            return None
        self.play_idx = [names.index(j) for j in self.play_names]
        return PlayTracker([self.plays[j] for j in self.play_names],
                           np.asarray(q_motor, float)[self.play_idx])

    def link_positions(self, tracker, names: list[str], q_motor: np.ndarray) -> np.ndarray:
        """Link-side positions of the joints of ``names`` for the motor positions
        ``q_motor``: through the play (deadband followed in time by ``tracker``), the
        eccentric encoder and the sag under the gravity torque for the joints with play,
        the motor positions for the others."""
        q = np.array(q_motor, float)
        tau = self.gravity_torques(self.play_names, self.chain_positions(names, q))
        q[self.play_idx] = tracker.update(q[self.play_idx], tau)
        return q


def noisy_pose(T: pin.SE3, rng: np.random.Generator, noise: dict) -> pin.SE3:
    """``T`` as a mocap system measures it: rotation and translation perturbed by the
    ``mocap_orientation_mrad`` and ``mocap_position_mm`` of ``noise`` (std)."""
    return pin.SE3(T.rotation @ pin.exp3(rng.normal(
        0, 1e-3 * float(noise["mocap_orientation_mrad"]), 3)),
        T.translation + rng.normal(0, 1e-3 * float(noise["mocap_position_mm"]), 3))


def _range(d: dict, key: str, default, field: str):
    v = d.get(key, default)
    try:
        lo, hi = (float(x) for x in v)
    except (TypeError, ValueError):
        raise ConfigError(f"{field}.{key}: expected [low, high], got {v!r}") from None
    if not 0 <= lo <= hi:
        raise ConfigError(f"{field}.{key}: expected 0 <= low <= high, got {v!r}")
    return lo, hi


def _suspension(cfg: dict | None, model: pin.Model, km: KinematicModel):
    """The hidden suspension of ``truth.suspension`` (None when absent)."""
    if not cfg:
        return None
    wheels = cfg.get("wheels", "tiago")
    W = TIAGO_WHEELS if wheels == "tiago" else np.asarray(wheels, float)
    if W.shape != (6, 3):
        raise ConfigError("truth.suspension.wheels: expected 'tiago' or six [x, y, z]")
    frame = cfg.get("frame", "base_link")
    if not model.existFrame(frame):
        raise ConfigError(f"truth.suspension.frame: no frame {frame!r} in the URDF")
    lo, hi = _range(cfg, "stiffness", [5e3, 5e4], "truth.suspension")
    rest = ground_reaction(model, km.configuration(np.zeros(len(km.chain))), frame)
    P = random_parameters(np.random.default_rng(int(cfg.get("seed", 5))), (lo, hi), rest)
    data = model.createData()
    pin.framesForwardKinematics(model, data, km.configuration(np.zeros(len(km.chain))))
    return {"P": P, "K": stiffness_matrix(P, None, W), "rest": rest,
            "frame": frame, "wheels": W,
            "root_M_frame": data.oMf[model.getFrameId(frame)].copy()}


def _plays(cfg: dict | None, model: pin.Model) -> dict:
    """The hidden joint play of ``truth.joint_play`` (joint -> JointPlay)."""
    if not cfg:
        return {}
    joints = cfg.get("joints") or []
    for j in joints:
        if not model.existJointName(j):
            raise ConfigError(f"truth.joint_play.joints: unknown joint {j!r}")
    rng = np.random.default_rng(int(cfg.get("seed", 6)))
    g = _range(cfg, "gap", [0.002, 0.006], "truth.joint_play")
    e = _range(cfg, "eccentricity", [0.001, 0.003], "truth.joint_play")
    c = _range(cfg, "compliance", [5e-5, 2e-4], "truth.joint_play")
    return {j: JointPlay(rng.uniform(*g), rng.uniform(*e), rng.uniform(0, 2 * np.pi),
                         rng.uniform(*c)) for j in joints}

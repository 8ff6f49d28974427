"""The hidden "true" robot of a simulation config (ROS-free; shared by the simulated robot
node, which measures on it, and by the demo and tests, which score models against it).

The config (``config/sim_<robot>.yaml``, every field declared in ``figaroh_ros.config.sim``):
the robot and its controllers, and ``truth`` (the seeds of the hidden placement errors and
dynamics, the mocap frame and the marker, and optionally Nguyen et al. 2024's ``suspension`` and
``joint_play``), ``noise`` and ``rates`` of the simulated sensors.
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from figaroh_ros.calibration.kinematic_model import KinematicModel, Measurement
from figaroh_ros.config.robot import RobotConfig, RobotModelSection
from figaroh_ros.config.sim import JointPlay as SimJointPlay
from figaroh_ros.config.sim import (
    Noise, Placement, Rates, SimPayload, SimSuspension, Truth, load_sim_file
)
from figaroh_ros.errors import ConfigError
from figaroh_ros.identification.parameters import DriveOptions, parameter_layout
from figaroh_ros.identification.regressor import ParameterTorques
from figaroh_ros.model.robot import load_urdf_model
from figaroh_ros.model.sources import resolve_model_source, write_model
from figaroh_ros.phenomena.suspension import (
    TIAGO_WHEELS, displacement, ground_reaction, stiffness_matrix
)
from figaroh_ros.sim.dynamics import perturbed_parameters
from figaroh_ros.sim.kinematics import hidden_errors
from figaroh_ros.sim.phenomena import JointPlay, PlayTracker, random_suspension
from figaroh_ros.sim.torques import PayloadTorques


@dataclass
class SimRobotConfig(RobotConfig):
    """The robot and its controllers (``config.robot``) plus what only a simulation has:
    the hidden truth, the sensors' noise and the publishing rates (``config.sim``)."""

    truth: Truth | None = None
    noise: Noise = field(default_factory=Noise)
    rates: Rates = field(default_factory=Rates)


MODEL_CACHE = os.path.join(tempfile.gettempdir(), "figaroh_ros_sim_models")


def _sim_urdf(robot: RobotModelSection, path: str) -> str:
    """The simulated robot's nominal URDF file: ``robot.xacro`` expanded with
    ``robot.xacro_args`` (saved once per text under :data:`MODEL_CACHE`) with source
    xacro, else ``robot.urdf``.  The simulator is the robot and publishes its model: with a
    live or recorded source (which the executor of the same config follows) it still needs
    the file."""
    if (robot.source or "urdf") == "xacro":
        text, _ = resolve_model_source(robot, os.path.dirname(os.path.abspath(path)))
        return write_model(text, MODEL_CACHE)
    if not robot.urdf:
        raise ConfigError(f"{path}: robot.urdf: a simulated robot needs its model as a file "
                          f"(robot.urdf) or a xacro (source: xacro), not only "
                          f"source: {robot.source}")
    return robot.urdf


def load_sim_config(path: str) -> SimRobotConfig:
    """The simulation config at ``path``, every default filled in (``config.sim``)."""
    c = load_sim_file(path)
    return SimRobotConfig(c.robot.name, _sim_urdf(c.robot, path), c.controllers, c.driver,
                          truth=c.truth, noise=c.noise, rates=c.rates)


class TrueRobot:
    """The simulated robot's hidden truth: its kinematics (nominal URDF + placement
    errors, the mocap frame and the mocap body on the tool), its dynamics (perturbed
    inertias and drives) and, when configured, its suspension and joint play."""

    def __init__(self, cfg: SimRobotConfig):
        self.cfg = cfg
        self.model = pin.buildModelFromUrdf(cfg.urdf)
        for j in cfg.joints:
            if not self.model.existJointName(j):
                raise ConfigError(f"controllers: unknown joint '{j}' in {cfg.urdf}")
        self.km, self.x = _kinematics(self.model, cfg.truth)
        # dynamics: the controller joints with perturbed inertias and drive parameters
        self.robot = load_urdf_model(cfg.urdf, cfg.joints)
        self.drive = DriveOptions(coulomb_model=cfg.truth.coulomb_model)
        self.layout = parameter_layout(self.robot, self.drive)
        k = float(cfg.truth.dynamics_scale)
        self.phi = perturbed_parameters(self.robot, self.layout,
                                        seed=int(cfg.truth.dynamics_seed),
                                        inertial_scale=0.2 * k, friction=(0.5 * k, 3.0 * k),
                                        rotor=0.3 * k, offset=0.5 * k)
        self.gdata = self.model.createData()
        self.pdata = self.robot.model.createData()
        self.suspension = _suspension(cfg.truth.suspension, self.model, self.km)
        if self.suspension is not None:
            self.km.base_motion = self.base_displacement
        self.plays = _plays(cfg.truth.joint_play, self.model)
        self.payload = _payload(cfg.truth.payload, self.robot.model)
        # the true torques' models, built once (a simulator asks them at every tick)
        self.torques = ParameterTorques(self.robot, self.layout, self.drive, self.phi)
        self._payload_torques = (None if self.payload is None
                                 else PayloadTorques(self.robot, *self.payload))
        self._memo = {}    # the last value of a function of the posture (see _last)
        self._chain_index = {}   # joint names -> where each chain joint is among them
        self._idx_v = {}         # joint names -> their velocity indices

    def _full(self, q_chain: np.ndarray) -> np.ndarray:
        return self.km.configuration(np.asarray(q_chain, float))

    def ground_reaction(self, q_chain: np.ndarray) -> np.ndarray:
        """Static reaction of the ground on the robot (force, moment) in the suspension
        frame (the plate frame), for the chain posture ``q_chain``."""
        return self._last("ground_reaction", q_chain, self._ground_reaction)

    def _ground_reaction(self, q_chain: np.ndarray) -> np.ndarray:
        frame = self.suspension["frame"] if self.suspension else "base_link"
        if not self.model.existFrame(frame):
            frame = self.model.frames[1].name
        return ground_reaction(self.model, self._full(q_chain), frame, self.gdata)

    def _last(self, what: str, q_chain: np.ndarray, compute):
        """``compute(q_chain)``, computed again only for another posture than the last
        one asked: a simulator's force plate and mocap loops ask the same posture's ground
        reaction and base displacement up to three times, and a robot at rest has the
        same torques and marker pose at every tick."""
        q_chain = np.asarray(q_chain, float)
        key = (q_chain.shape, q_chain.tobytes())
        last = self._memo.get(what)
        if last is None or last[0] != key:
            last = self._memo[what] = (key, compute(q_chain))
        return last[1].copy()

    def plate_reading(self, names: list[str], positions, rng: np.random.Generator,
                      noise: Noise) -> np.ndarray:
        """A force plate under the robot at the link positions of ``names``: the static
        reaction of its weight (moment included) with the ``plate_force_n`` and
        ``plate_moment_nm`` noise of ``noise``."""
        R = self.ground_reaction(self.chain_positions(names, positions))
        return R + rng.normal(0, 1.0, 6) * np.repeat(
            [float(noise.plate_force_n), float(noise.plate_moment_nm)], 3)

    def base_displacement(self, q_chain: np.ndarray) -> pin.SE3:
        """The base's displacement on its suspension under the posture's weight, as a
        transform of the model's root frame (the suspension acts in its own frame)."""
        return self._last("base_displacement", q_chain, self._base_displacement)

    def _base_displacement(self, q_chain: np.ndarray) -> pin.SE3:
        s = self.suspension
        D = displacement(s["K"], self.ground_reaction(q_chain) - s["rest"])
        return s["root_M_frame"] * D * s["root_M_frame"].inverse()

    def base_marker_pose(self, q_chain: np.ndarray) -> pin.SE3:
        """The suspension frame's pose in the mocap frame (a mocap body on the base)."""
        return self._last("base_marker_pose", q_chain, lambda q: (
            self.km.base_pose(self.x) * self.base_displacement(q)
            * self.suspension["root_M_frame"]))

    def gravity_torques(self, names: list[str], q_chain: np.ndarray) -> np.ndarray:
        g = pin.computeGeneralizedGravity(self.model, self.gdata, self._full(q_chain))
        idx_v = self._idx_v.get(tuple(names))
        if idx_v is None:
            idx_v = self._idx_v[tuple(names)] = np.array(
                [self.model.joints[self.model.getJointId(j)].idx_v for j in names], int)
        return g[idx_v]

    def joint_torques(self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
        """True joint torques (N x n) of the controller joints (config order), the
        payload's included."""
        Q, dQ, ddQ = (np.atleast_2d(np.asarray(v, float)) for v in (q, dq, ddq))
        return self._last("joint_torques", np.vstack([Q, dQ, ddQ]), lambda _: (
            self.torques(Q, dQ, ddQ) if self.payload is None
            else self.torques(Q, dQ, ddQ) + self.payload_torques(Q, dQ, ddQ)))

    def payload_torques(self, Q: np.ndarray, dQ: np.ndarray, ddQ: np.ndarray) -> np.ndarray:
        """The payload's share of the joint torques: RNEA with it minus RNEA without."""
        if self._payload_torques is None:
            raise ConfigError("truth.payload: this simulated robot carries no payload")
        return self._payload_torques(Q, dQ, ddQ)

    def payload_wrench(self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
        """The wrench (force, moment) a wrist sensor at the payload's frame applies to
        it, in that frame: I (a - g) + v x* I v (Newton-Euler); zero without payload."""
        if self.payload is None:
            return np.zeros(6)
        r, (frame, inertia) = self.robot, self.payload
        m, d = r.model, self.pdata
        fid = m.getFrameId(frame)
        pin.forwardKinematics(m, d, *(v[0] for v in (r.full_configuration(np.atleast_2d(q)),
                                                     r.full_velocity(np.atleast_2d(dq)),
                                                     r.full_velocity(np.atleast_2d(ddq)))))
        pin.updateFramePlacement(m, d, fid)
        vf = pin.getFrameVelocity(m, d, fid, pin.LOCAL)
        af = pin.getFrameAcceleration(m, d, fid, pin.LOCAL)
        g = d.oMf[fid].rotation.T @ m.gravity.linear
        return (inertia * pin.Motion(af.linear - g, af.angular) + vf.cross(inertia * vf)).vector

    def chain_positions(self, names: list[str], positions) -> np.ndarray:
        at = self._chain_index.get(tuple(names))
        if at is None:                   # the chain joints among names, where they are
            chain = self.km.chain
            at = self._chain_index[tuple(names)] = (
                np.array([k for k, j in enumerate(chain) if j in names], int),
                np.array([names.index(j) for j in chain if j in names], int))
        q = np.zeros(len(self.km.chain))
        q[at[0]] = np.asarray(positions, float)[at[1]]
        return q

    def marker_pose(self, q_chain: np.ndarray) -> pin.SE3:
        """True pose of the mocap body in the mocap frame."""
        return self._last("marker_pose", q_chain,
                          lambda q: self.km.predict(q[None, :], self.x)[0])

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


def noisy_pose(T: pin.SE3, rng: np.random.Generator, noise: Noise) -> pin.SE3:
    """``T`` as a mocap system measures it: rotation and translation perturbed by the
    ``mocap_orientation_mrad`` and ``mocap_position_mm`` of ``noise`` (std)."""
    return pin.SE3(T.rotation @ pin.exp3(rng.normal(
        0, 1e-3 * float(noise.mocap_orientation_mrad), 3)),
        T.translation + rng.normal(0, 1e-3 * float(noise.mocap_position_mm), 3))


def _kinematics(model: pin.Model, t: Truth):
    """The kinematic model from the mocap frame to the marker, with hidden placement
    errors drawn from ``truth.seed`` (the mocap frame and the marker pose as
    configured)."""
    km = KinematicModel(model, t.tool_frame, level="full", measurement=Measurement("pose"))
    km.base0, km.tool0 = _placement(t.mocap), _placement(t.marker)
    x = hidden_errors(km, np.random.default_rng(int(t.seed)),
                      position_mm=float(t.position_mm),
                      rotation_mrad=float(t.rotation_mrad))
    x[km.groups["tool"]] = 0.0
    x[km.groups["base"]] = 0.0
    return km, x


def _payload(p: SimPayload | None, model: pin.Model):
    """(frame, pinocchio Inertia) of ``truth.payload``, or None."""
    if p is None:
        return None
    if not model.existFrame(p.frame):
        raise ConfigError(f"truth.payload.frame: no frame '{p.frame}' in the model")
    return p.frame, pin.Inertia(float(p.mass), np.asarray(p.com, float),
                                np.diag(np.asarray(p.inertia, float)))


def _placement(d: Placement) -> pin.SE3:
    """``{xyz, rpy}`` as a transform."""
    return pin.SE3(pin.rpy.rpyToMatrix(*d.rpy), np.array(d.xyz, float))


def _suspension(cfg: SimSuspension | None, model: pin.Model, km: KinematicModel):
    """The hidden suspension of ``truth.suspension`` (None when absent): wheel parameters
    drawn from its seed, the rest wrench of the robot in its zero posture."""
    if not cfg:
        return None
    W = TIAGO_WHEELS if cfg.wheels == "tiago" else np.asarray(cfg.wheels, float)
    frame = cfg.frame
    if not model.existFrame(frame):
        raise ConfigError(f"truth.suspension.frame: no frame {frame!r} in the URDF")
    q0 = km.configuration(np.zeros(len(km.chain)))
    rest = ground_reaction(model, q0, frame)
    P = random_suspension(np.random.default_rng(int(cfg.seed)), cfg.stiffness, rest)
    data = model.createData()
    pin.framesForwardKinematics(model, data, q0)
    return {"P": P, "K": stiffness_matrix(P, None, W), "rest": rest, "frame": frame,
            "wheels": W, "root_M_frame": data.oMf[model.getFrameId(frame)].copy()}


def _plays(cfg: SimJointPlay | None, model: pin.Model) -> dict:
    """The hidden joint play of ``truth.joint_play`` (joint -> JointPlay), drawn from its
    seed."""
    if not cfg:
        return {}
    joints = cfg.joints or []
    for j in joints:
        if not model.existJointName(j):
            raise ConfigError(f"truth.joint_play.joints: unknown joint {j!r}")
    rng = np.random.default_rng(int(cfg.seed))
    return {j: JointPlay(rng.uniform(*cfg.gap), rng.uniform(*cfg.eccentricity),
                         rng.uniform(0, 2 * np.pi), rng.uniform(*cfg.compliance))
            for j in joints}

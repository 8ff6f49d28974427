"""Robot model for identification: a pinocchio model, its active joints and its drives.

The kinematic/dynamic model comes from the URDF through pinocchio (seed 000 §II.A).
What identification adds on top of it is the choice of *active joints* (the ones whose
torques are measured and whose parameters are identified) and the *drive chain*: gear
ratios and the motor-to-joint transmission matrix of coupled wrists (seed 000 Eq. 3).

Transmission convention used everywhere in the package::

    theta_m = diag(r) @ K @ q          (motor angles from joint angles)
    tau     = K.T @ diag(r) @ tau_m    (joint torques from motor torques)

``K`` is the identity plus the coupling entries; a motor whose row of ``K`` has more than
one non-zero entry is a *coupled motor* and brings its own rotor inertia and motor-side
friction parameters (``Iam6``, ``fvm6``, ``fsm6`` for motor 6 of the Staubli TX40).
"""
from __future__ import annotations

import os
import sysconfig
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from figaroh_ros.errors import ConfigError, ModelError


@dataclass
class Transmission:
    """Gear ratios ``r`` and coupling matrix ``K`` between motors and active joints."""

    ratios: np.ndarray
    K: np.ndarray

    @classmethod
    def identity(cls, n: int) -> "Transmission":
        return cls(np.ones(n), np.eye(n))

    @property
    def coupled_motors(self) -> list[int]:
        """Indices (0-based) of motors that turn with more than one joint."""
        return [k for k in range(self.K.shape[0])
                if np.count_nonzero(np.abs(self.K[k]) > 1e-12) > 1]

    def joint_positions(self, theta_m: np.ndarray) -> np.ndarray:
        """q from motor angles, per sample: q = K^-1 diag(r)^-1 theta_m."""
        A = np.diag(self.ratios) @ self.K
        return np.linalg.solve(A, np.asarray(theta_m, float).T).T

    def joint_torques(self, tau_m: np.ndarray) -> np.ndarray:
        """Joint torques from motor torques, per sample: tau = K^T diag(r) tau_m."""
        A = self.K.T @ np.diag(self.ratios)
        return (A @ np.asarray(tau_m, float).T).T


@dataclass
class RobotModel:
    """A pinocchio model with the active joints used for identification."""

    model: pin.Model
    active_joints: list[str]
    urdf_path: str
    floating_base: bool = False
    transmission: Transmission | None = None
    urdf_xml: str | None = None          # the URDF text when the model was built from it
    # index of each active joint in q / v and pinocchio joint id
    idx_q: list[int] = field(default_factory=list)
    idx_v: list[int] = field(default_factory=list)
    joint_ids: list[int] = field(default_factory=list)

    def __post_init__(self):
        names = list(self.model.names)
        for j in self.active_joints:
            if j not in names:
                raise ModelError(
                    f"unknown joint '{j}': the URDF {os.path.basename(self.urdf_path)} has "
                    f"{[n for n in names if n != 'universe']}")
        self.joint_ids = [self.model.getJointId(j) for j in self.active_joints]
        for j, jid in zip(self.active_joints, self.joint_ids):
            jm = self.model.joints[jid]
            if jm.nv != 1 or jm.nq != 1:
                raise ModelError(f"joint '{j}' ({jm.shortname()}) has nq={jm.nq}, nv={jm.nv}; "
                                 "only revolute or prismatic joints with limits can be active")
        self.idx_q = [self.model.joints[i].idx_q for i in self.joint_ids]
        self.idx_v = [self.model.joints[i].idx_v for i in self.joint_ids]
        if self.transmission is None:
            self.transmission = Transmission.identity(self.n_joints)
        if self.transmission.K.shape != (self.n_joints, self.n_joints):
            raise ModelError(f"transmission matrix is {self.transmission.K.shape}, "
                             f"expected {(self.n_joints, self.n_joints)}")

    @property
    def n_joints(self) -> int:
        return len(self.active_joints)

    def urdf_text(self) -> str:
        """The URDF this model was built from, as text."""
        if self.urdf_xml is not None:
            return self.urdf_xml
        try:
            with open(self.urdf_path) as f:
                return f.read()
        except OSError as exc:
            raise ModelError(f"cannot read URDF {self.urdf_path}: {exc}") from exc

    @property
    def link_joint_ids(self) -> list[int]:
        """Pinocchio joint ids whose body parameters are identified (every joint of the
        model but the universe; a floating base joint counts as link 0 of the tree)."""
        return list(range(1, self.model.njoints))

    def full_configuration(self, q_active: np.ndarray, q_rest: np.ndarray | None = None):
        """Place active joint values into full configuration vectors (N x nq)."""
        q_active = np.atleast_2d(q_active)
        base = pin.neutral(self.model) if q_rest is None else q_rest
        Q = np.tile(base, (q_active.shape[0], 1))
        Q[:, self.idx_q] = q_active
        return Q

    def full_velocity(self, v_active: np.ndarray) -> np.ndarray:
        v_active = np.atleast_2d(v_active)
        V = np.zeros((v_active.shape[0], self.model.nv))
        V[:, self.idx_v] = v_active
        return V

    def position_limits(self) -> tuple[np.ndarray, np.ndarray]:
        return (self.model.lowerPositionLimit[self.idx_q].copy(),
                self.model.upperPositionLimit[self.idx_q].copy())

    def velocity_limits(self) -> np.ndarray:
        return self.model.velocityLimit[self.idx_v].copy()

    def effort_limits(self) -> np.ndarray:
        return self.model.effortLimit[self.idx_v].copy()


def load_urdf_model(urdf_path: str, active_joints: list[str] | None = None,
                    floating_base: bool = False,
                    transmission: Transmission | None = None) -> RobotModel:
    """Build a :class:`RobotModel` from a URDF file (meshes are never loaded).

    Joints that are not active are kept in the model (their bodies still move the
    active ones) and are locked at their neutral value unless the caller gives values.
    """
    if not os.path.isfile(urdf_path):
        raise ModelError(f"URDF not found: {urdf_path}")
    try:
        if floating_base:
            model = pin.buildModelFromUrdf(urdf_path, pin.JointModelFreeFlyer())
        else:
            model = pin.buildModelFromUrdf(urdf_path)
    except Exception as exc:  # pinocchio raises RuntimeError / ValueError
        raise ModelError(f"cannot parse URDF {urdf_path}: {exc}") from exc
    if active_joints is None:
        active_joints = [n for i, n in enumerate(model.names)
                         if i > 0 and model.joints[i].nv == 1]
    return RobotModel(model=model, active_joints=list(active_joints),
                      urdf_path=urdf_path, floating_base=floating_base,
                      transmission=transmission)


def example_robot_urdf(relative: str) -> str:
    """Path of a URDF shipped by the ``example-robot-data`` wheel (cmeel prefix)."""
    for root in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}:
        p = os.path.join(root, "cmeel.prefix", "share", "example-robot-data", "robots",
                         relative)
        if os.path.isfile(p):
            return p
    raise ModelError(f"example-robot-data URDF not found: {relative}")


def resolve_urdf(path: str, base_dir: str = ".") -> str:
    """A URDF path, ``example-robot-data:<relative>`` or relative to ``base_dir``."""
    if path.startswith("example-robot-data:"):
        try:
            return example_robot_urdf(path.split(":", 1)[1])
        except ModelError as exc:
            raise ConfigError(f"robot.urdf: {exc}") from exc
    p = path if os.path.isabs(path) else os.path.normpath(os.path.join(base_dir, path))
    if not os.path.isfile(p):
        raise ConfigError(f"robot.urdf: file not found: {p}")
    return p


def example_robot_package_dirs() -> list[str]:
    """Where example-robot-data (pip) keeps its meshes, for ``package://`` URIs."""
    out = []
    for root in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}:
        share = os.path.join(root, "cmeel.prefix", "share")
        if os.path.isdir(share):
            out += [share, os.path.join(share, "example-robot-data", "robots")]
    return out


def random_states(robot: RobotModel, rng: np.random.Generator, samples: int):
    """Random positions within the joint limits (+-pi where unbounded), velocities in
    [-1, 1] rad/s and accelerations in [-3, 3] rad/s^2 (N x n each): what a rich excitation
    visits, for structural base parameters."""
    lo, hi = robot.position_limits()
    lo = np.where(np.isfinite(lo) & (lo > -1e3), lo, -np.pi)
    hi = np.where(np.isfinite(hi) & (hi < 1e3), hi, np.pi)
    n = robot.n_joints
    return (rng.uniform(lo, hi, (samples, n)), rng.uniform(-1, 1, (samples, n)),
            rng.uniform(-3, 3, (samples, n)))

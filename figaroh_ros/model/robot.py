"""Robot model for identification: a pinocchio model, its active joints and its drives.

The kinematic/dynamic model comes from the URDF through pinocchio (Nguyen et al. 2023 §II.A).
What identification adds on top of it is the choice of *active joints* (the ones whose
torques are measured and whose parameters are identified) and the *drive chain*: gear
ratios and the motor-to-joint transmission matrix of coupled wrists (Nguyen et al. 2023 Eq. 3).

Transmission convention used everywhere in the package::

    theta_m = diag(r) @ K @ q          (motor angles from joint angles)
    tau     = K.T @ diag(r) @ tau_m    (joint torques from motor torques)

``K`` is the identity plus the coupling entries; a motor whose row of ``K`` has more than
one non-zero entry is a *coupled motor* and brings its own rotor inertia and motor-side
friction parameters (``Iam6``, ``fvm6``, ``fsm6`` for motor 6 of the Staubli TX40).

Which bodies the model has is part of the configuration: ``remove_links`` drops links and
their whole subtree from the URDF before it is built (a hand or gripper that the recording
did not carry: their inertia is not added to the arm), ``lock_joints`` fixes joints at
given values (pinocchio's ``buildReducedModel``: the bodies stay, rigidly attached, their
inertia merged into the parent).  Continuous joints (pinocchio ``nq = 2``: ``cos``,
``sin``; ``nv = 1``) are read and written as one angle everywhere in the package.
"""
from __future__ import annotations

import dataclasses
import os
import sysconfig
import xml.etree.ElementTree as ET
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
            if jm.nv != 1 or jm.nq not in (1, 2):
                raise ModelError(f"joint '{j}' ({jm.shortname()}) has nq={jm.nq}, nv={jm.nv}; "
                                 "only revolute, continuous or prismatic joints can be active")
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
        set_joint_angles(self.model, Q, self.joint_ids, q_active)
        return Q

    def full_velocity(self, v_active: np.ndarray) -> np.ndarray:
        v_active = np.atleast_2d(v_active)
        V = np.zeros((v_active.shape[0], self.model.nv))
        V[:, self.idx_v] = v_active
        return V

    def position_limits(self) -> tuple[np.ndarray, np.ndarray]:
        return angle_limits(self.model, self.joint_ids)

    def velocity_limits(self) -> np.ndarray:
        return self.model.velocityLimit[self.idx_v].copy()

    def effort_limits(self) -> np.ndarray:
        return self.model.effortLimit[self.idx_v].copy()


def load_urdf_model(urdf_path: str, active_joints: list[str] | None = None,
                    floating_base: bool = False,
                    transmission: Transmission | None = None, *,
                    lock_joints: dict[str, float] | None = None,
                    remove_links: list[str] | None = None) -> RobotModel:
    """Build a :class:`RobotModel` from a URDF file (meshes are never loaded).

    Joints that are not active are kept in the model (their bodies still move the
    active ones) and are locked at their neutral value unless the caller gives values.
    ``remove_links``: links dropped with their subtrees (:func:`without_links`);
    ``lock_joints``: ``{joint: value}`` fixed for good (:func:`with_locked_joints`).
    """
    if not os.path.isfile(urdf_path):
        raise ModelError(f"URDF not found: {urdf_path}")
    text = None
    if remove_links:
        with open(urdf_path) as f:
            text = without_links(f.read(), remove_links)
    root = pin.JointModelFreeFlyer() if floating_base else None
    try:
        if text is not None:
            model = (pin.buildModelFromXML(text, root) if root is not None
                     else pin.buildModelFromXML(text))
        else:
            model = (pin.buildModelFromUrdf(urdf_path, root) if root is not None
                     else pin.buildModelFromUrdf(urdf_path))
    except Exception as exc:  # pinocchio raises RuntimeError / ValueError
        raise ModelError(f"cannot parse URDF {urdf_path}: {exc}") from exc
    if lock_joints:
        model = locked_model(model, lock_joints)
    if active_joints is None:
        active_joints = [n for i, n in enumerate(model.names)
                         if i > 0 and model.joints[i].nv == 1]
    return RobotModel(model=model, active_joints=list(active_joints),
                      urdf_path=urdf_path, floating_base=floating_base,
                      transmission=transmission, urdf_xml=text)


# ------------------------------------------------------------------ continuous joints
def is_continuous(joint) -> bool:
    """A pinocchio joint model stored as ``(cos, sin)`` with one velocity."""
    return joint.nq == 2 and joint.nv == 1


def set_joint_angles(model: pin.Model, Q: np.ndarray, joint_ids, angles) -> None:
    """Write one angle (or displacement) per joint into configurations ``Q`` (N x nq),
    ``(cos, sin)`` for continuous joints."""
    angles = np.atleast_2d(np.asarray(angles, float))
    for k, jid in enumerate(joint_ids):
        jm = model.joints[jid]
        if is_continuous(jm):
            Q[:, jm.idx_q] = np.cos(angles[:, k])
            Q[:, jm.idx_q + 1] = np.sin(angles[:, k])
        else:
            Q[:, jm.idx_q] = angles[:, k]


def joint_angles(model: pin.Model, Q: np.ndarray, joint_ids) -> np.ndarray:
    """One angle per joint (N x n) from configurations ``Q`` (N x nq)."""
    Q = np.atleast_2d(np.asarray(Q, float))
    cols = []
    for jid in joint_ids:
        jm = model.joints[jid]
        cols.append(np.arctan2(Q[:, jm.idx_q + 1], Q[:, jm.idx_q]) if is_continuous(jm)
                    else Q[:, jm.idx_q])
    return np.column_stack(cols) if cols else np.zeros((len(Q), 0))


def angle_limits(model: pin.Model, joint_ids) -> tuple[np.ndarray, np.ndarray]:
    """Lower and upper position of each joint: its URDF limits, ``-pi, pi`` for a
    continuous joint (whose ``cos``/``sin`` bounds are not angles)."""
    lo, hi = [], []
    for jid in joint_ids:
        jm = model.joints[jid]
        cont = is_continuous(jm)
        lo.append(-np.pi if cont else model.lowerPositionLimit[jm.idx_q])
        hi.append(np.pi if cont else model.upperPositionLimit[jm.idx_q])
    return np.array(lo, float), np.array(hi, float)


# ------------------------------------------------------------------ bodies of the model
def without_links(urdf_text: str, links: list[str]) -> str:
    """The URDF text without ``links``, every link below them and the joints (and
    transmissions) leading to those: a hand or tool the recording did not carry."""
    if "<!ENTITY" in urdf_text:
        raise ModelError("remove_links: URDF entity declarations (<!ENTITY) are refused")
    try:
        root = ET.fromstring(urdf_text)
    except ET.ParseError as exc:
        raise ModelError(f"remove_links: the URDF is not well-formed XML: {exc}") from None
    names = [e.get("name") for e in root.findall("link")]
    unknown = [n for n in links if n not in names]
    if unknown:
        raise ModelError(f"remove_links: no link {unknown} in the URDF (links: {names})")
    below: dict[str, list[tuple]] = {}
    for j in root.findall("joint"):
        parent, child = j.find("parent"), j.find("child")
        if parent is not None and child is not None:
            below.setdefault(parent.get("link"), []).append((j, child.get("link")))
    gone, stack, joints = set(), list(links), set()
    while stack:
        link = stack.pop()
        gone.add(link)
        for j, child in below.get(link, []):
            stack.append(child)
    for j in root.findall("joint"):
        child = j.find("child")
        if child is not None and child.get("link") in gone:
            joints.add(j.get("name"))
            root.remove(j)
    if len(gone) == len(names):
        raise ModelError(f"remove_links: {links} would remove every link")
    for e in root.findall("link"):
        if e.get("name") in gone:
            root.remove(e)
    for t in root.findall("transmission"):
        if any(j.get("name") in joints for j in t.findall("joint")):
            root.remove(t)
    return ET.tostring(root, encoding="unicode")


def configured_urdf(urdf: str, remove_links: list[str] | None) -> str:
    """``urdf`` (a path, ``example-robot-data:...`` or text) unchanged, or as the text of
    the URDF without ``remove_links`` (:func:`without_links`)."""
    if not remove_links:
        return urdf
    if urdf.lstrip().startswith("<"):
        return without_links(urdf, remove_links)
    path = example_robot_urdf(urdf.split(":", 1)[1]) \
        if urdf.startswith("example-robot-data:") else urdf
    try:
        with open(path) as f:
            return without_links(f.read(), remove_links)
    except OSError as exc:
        raise ModelError(f"cannot read URDF {path}: {exc}") from exc


def locked_model(model: pin.Model, values: dict[str, float]) -> pin.Model:
    """``model`` with the joints of ``values`` fixed at those positions (within limits)."""
    ids = []
    q_ref = pin.neutral(model)[None, :]
    for name, value in values.items():
        if not model.existJointName(name) or name == "universe":
            raise ModelError(f"lock_joints: no joint '{name}' in the URDF")
        jid = model.getJointId(name)
        if model.joints[jid].nv != 1:
            raise ModelError(f"lock_joints: '{name}' is not a 1-dof joint")
        lo, hi = angle_limits(model, [jid])
        if not lo[0] - 1e-9 <= value <= hi[0] + 1e-9:
            raise ModelError(f"lock_joints: {name} = {value} is outside its limits "
                             f"[{lo[0]:g}, {hi[0]:g}]")
        set_joint_angles(model, q_ref, [jid], [[value]])
        ids.append(jid)
    reduced = pin.buildReducedModel(model, sorted(ids), q_ref[0])
    reduced.gravity = model.gravity
    return reduced


def with_locked_joints(robot: RobotModel, values: dict[str, float] | None) -> RobotModel:
    """The same robot with the joints of ``values`` fixed (not active joints)."""
    if not values:
        return robot
    active = [j for j in values if j in robot.active_joints]
    if active:
        raise ModelError(f"lock_joints: {active} are active joints (robot.joints)")
    return dataclasses.replace(robot, model=locked_model(robot.model, values), idx_q=[],
                               idx_v=[], joint_ids=[])


def example_robot_shares() -> list[str]:
    """The ``share`` folders that may hold ``example-robot-data``: the pip wheel's cmeel
    prefix first, then every prefix of ``AMENT_PREFIX_PATH`` in order (a ROS install's
    ``ros-<distro>-example-robot-data`` puts it in ``<prefix>/share/example-robot-data``)."""
    paths = sysconfig.get_paths()
    roots = [os.path.join(r, "cmeel.prefix")
             for r in dict.fromkeys([paths["purelib"], paths["platlib"]])]
    roots += [p for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
    return [os.path.join(r, "share") for r in roots]


def example_robot_urdf(relative: str) -> str:
    """Path of a URDF of ``example-robot-data``: the pip wheel's (cmeel prefix), else a
    ROS install's (``AMENT_PREFIX_PATH``: ``<prefix>/share/example-robot-data/robots``)."""
    shares = example_robot_shares()
    for share in shares:
        p = os.path.join(share, "example-robot-data", "robots", relative)
        if os.path.isfile(p):
            return p
    raise ModelError(f"example-robot-data URDF not found: {relative} (looked under "
                     f"<share>/example-robot-data/robots of {shares}: pip install "
                     "example-robot-data, or source a ROS install providing it)")


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
    """Where example-robot-data keeps its meshes (pip wheel, then ROS install), for
    ``package://`` URIs."""
    out = []
    for share in example_robot_shares():
        if os.path.isdir(os.path.join(share, "example-robot-data")):
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

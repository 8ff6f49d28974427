"""Forward kinematics with placement variations and the kinematic regressor.

Seed 000 Eq. 1 / seed 002 Eq. 8: the pose of the measured frame is the product

    T_w,m(q, Phi_g) = T_w,b(Phi_base) * T_b,1(Phi_1) * ... * T_n,tool * T_tool,m(Phi_tool)

where every joint placement ``M_j`` (the joint origin of the URDF) is varied as
``M_j * SE3(exp3(dphi_j), dp_j)`` with ``Phi_gj = [dpx dpy dpz dphix dphiy dphiz]`` (full
level), or the joint reading is shifted, ``q_j + dq_j`` (offset level).  The base frame
(measurement frame -> chain start frame) is varied the same way around an initial guess,
and the measured points (``points``) or the measured frame (``pose``) are fixed in the
tool frame.

The kinematic regressor (seed 000 Eq. 4, ``dP = R_g dPhi``) is the exact Jacobian of the
predicted measurements with respect to the parameters: every parameter moves a frame of
the chain by a body twist ``xi`` (placement: ``[R(dphi)^T dp ; Jr(dphi) dphi]``; offset: the
joint's motion subspace ``S``), which moves the tool by the twist ``Ad xi`` expressed at the
tool origin in measurement axes.  Frames and motion subspaces come from pinocchio.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from figaroh_ros.errors import ModelError
from figaroh_ros.model.robot import angle_limits, joint_angles, set_joint_angles

LEVELS = ("offset", "full")
KINDS = ("points", "pose")
PLACEMENT_NAMES = ("px", "py", "pz", "phix", "phiy", "phiz")


def skew(r: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -r[2], r[1]], [r[2], 0.0, -r[0]], [-r[1], r[0], 0.0]])


def placement_variation(d: np.ndarray) -> pin.SE3:
    """``SE3(exp3(dphi), dp)`` for ``d = [dp, dphi]``."""
    return pin.SE3(pin.exp3(np.asarray(d[3:6], float)), np.asarray(d[:3], float))


def body_to_point_twist(T_wF: pin.SE3, target: np.ndarray) -> np.ndarray:
    """6x6 map from a body twist of frame F to the twist of the rigid motion at ``target``
    in world axes (linear on top, angular below)."""
    R = T_wF.rotation
    A = np.zeros((6, 6))
    A[:3, :3] = R
    A[:3, 3:] = -skew(target - T_wF.translation) @ R
    A[3:, 3:] = R
    return A


def joint_twist_at(T_wJ: pin.SE3, S: np.ndarray, target: np.ndarray) -> np.ndarray:
    """``body_to_point_twist(T_wJ, target) @ S`` for a joint's motion subspace ``S``
    (linear on top): ``[R v + (R w) x (target - p) ; R w]``, without the 6x6 map."""
    R = T_wJ.rotation
    w = R @ S[3:]
    r = target - T_wJ.translation
    out = np.empty(6)
    out[:3] = R @ S[:3]                   # + w x r, written out (np.cross is slow on 3-vectors)
    out[0] += w[1] * r[2] - w[2] * r[1]
    out[1] += w[2] * r[0] - w[0] * r[2]
    out[2] += w[0] * r[1] - w[1] * r[0]
    out[3:] = w
    return out


def placement_twist_columns(T_wF: pin.SE3, d: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Columns for the 6 variations ``d`` of a placement ``M * SE3(exp3(dphi), dp)`` whose
    result is the world frame ``T_wF``: body twist ``[R(dphi)^T dp ; Jr(dphi) dphi]``."""
    B = np.zeros((6, 6))
    B[:3, :3] = pin.exp3(np.asarray(d[3:6], float)).T
    B[3:, 3:] = pin.Jexp3(np.asarray(d[3:6], float))
    return body_to_point_twist(T_wF, target) @ B


@dataclass
class Measurement:
    """What is measured at each posture.

    ``points``: positions of ``n_points`` points fixed to the tool (one marker, or several
    points of one rigid body), ``[x1 y1 z1 x2 ...]`` in the measurement frame.
    ``pose``: the full pose of a frame fixed to the tool (position, then orientation).
    ``mask`` keeps some axes only (a point on a plane keeps z of the plane frame).
    """

    kind: str = "points"
    n_points: int = 1
    mask: np.ndarray | None = None
    sigma_position: float = 1e-3       # m
    sigma_orientation: float = 1e-3    # rad

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ModelError(f"measurement kind must be one of {KINDS}, got {self.kind!r}")
        if self.kind == "pose":
            self.n_points = 1
        if self.n_points < 1:
            raise ModelError("a points measurement needs at least one point")
        full = self.size
        if self.mask is None:
            self.mask = np.ones(full, bool)
        self.mask = np.asarray(self.mask, bool)
        if self.mask.shape != (full,):
            # a 3- (or 6-) mask given for one point applies to every point
            if self.kind == "points" and self.mask.shape == (3,):
                self.mask = np.tile(self.mask, self.n_points)
            else:
                raise ModelError(f"measurement mask has {self.mask.size} entries, "
                                 f"expected {full}")
        if not self.mask.any():
            raise ModelError("measurement mask keeps no axis")

    @property
    def size(self) -> int:
        return 3 * self.n_points if self.kind == "points" else 6

    @property
    def labels(self) -> list[str]:
        if self.kind == "pose":
            return ["x", "y", "z", "rx", "ry", "rz"]
        return [f"{a}{k + 1}" for k in range(self.n_points) for a in "xyz"]

    @property
    def sigma(self) -> np.ndarray:
        """Standard deviation of each measured axis (for whitening)."""
        s = np.full(self.size, self.sigma_position)
        if self.kind == "pose":
            s[3:] = self.sigma_orientation
        return s

    @property
    def is_position(self) -> np.ndarray:
        p = np.ones(self.size, bool)
        if self.kind == "pose":
            p[3:] = False
        return p


@dataclass
class KinematicModel:
    """A kinematic chain of a pinocchio model with its calibration parameters.

    ``chain``: the 1-dof joints between ``start_frame`` and ``tool_frame`` whose readings
    are inputs (data columns); ``joints``: the ones whose placement (or offset) is calibrated
    (default: all of the chain).  Joints off the chain never matter.
    """

    model: pin.Model
    tool_frame: str
    level: str = "full"
    joints: list[str] | None = None
    start_frame: str | None = None
    measurement: Measurement = field(default_factory=Measurement)
    estimate_base: bool = True
    # joints with a compliance parameter (seed 000 Table I, last row): the joint yields to
    # the gravity torque ``tau_j`` it holds (pinocchio's generalized gravity, the URDF's
    # inertias, at the measured configuration): the link sags, ``q_j -> q_j - c_j tau_j``
    elastic_joints: list[str] | None = None
    # the robot's base displaced per posture (e.g. a suspension under the arm's weight,
    # seed 002): q_chain -> SE3 between the base frame and the chain, identity by default
    base_motion: object | None = None

    def __post_init__(self):
        m = self.model
        if self.level not in LEVELS:
            raise ModelError(f"calibration level must be one of {LEVELS}, got {self.level!r}")
        if not m.existFrame(self.tool_frame):
            raise ModelError(f"unknown tool frame '{self.tool_frame}'")
        self.tool_fid = m.getFrameId(self.tool_frame)
        tool_joint = m.frames[self.tool_fid].parentJoint
        path = list(m.supports[tool_joint])
        if self.start_frame is None or self.start_frame == "universe":
            self.start_fid = None
            start_joint = 0
        else:
            if not m.existFrame(self.start_frame):
                raise ModelError(f"unknown start frame '{self.start_frame}'")
            self.start_fid = m.getFrameId(self.start_frame)
            start_joint = m.frames[self.start_fid].parentJoint
            if start_joint not in path:
                raise ModelError(f"start frame '{self.start_frame}' is not on the path from "
                                 f"the root to '{self.tool_frame}'")
        path = path[path.index(start_joint) + 1:]
        for jid in path:
            jm = m.joints[jid]
            if not (jm.nq in (1, 2) and jm.nv == 1):
                raise ModelError(f"joint '{m.names[jid]}' on the chain has nq={jm.nq}, "
                                 f"nv={jm.nv}: only revolute, continuous or prismatic joints "
                                 "are supported")
        self.chain = [m.names[j] for j in path]
        self.chain_ids = list(path)
        if self.joints is None:
            self.joints = list(self.chain)
        for j in self.joints:
            if j not in self.chain:
                raise ModelError(f"calibrated joint '{j}' is not on the chain from "
                                 f"'{self.start_frame or 'universe'}' to '{self.tool_frame}': "
                                 f"{self.chain}")
        self.joints = [j for j in self.chain if j in self.joints]   # chain order
        for j in self.elastic_joints or []:
            if j not in self.chain:
                raise ModelError(f"elastic joint '{j}' is not on the chain {self.chain}")
        self.elastic = [j for j in self.chain if j in (self.elastic_joints or [])]
        self.elastic_ids = [m.getJointId(j) for j in self.elastic]
        self.gdata = m.createData()
        self.joint_ids = [m.getJointId(j) for j in self.joints]
        self.chain_idx_q = [m.joints[j].idx_q for j in self.chain_ids]
        self.M0 = [m.jointPlacements[j].copy() for j in self.joint_ids]
        self.work = m.copy()
        self.data = self.work.createData()
        self.q_neutral = pin.neutral(m)
        # one angle per configuration entry on the chain (no continuous joint): the fast path
        self.plain_idx_q = (np.array(self.chain_idx_q) if all(
            m.joints[j].nq == 1 for j in self.chain_ids) else None)
        self.S = {j: self._motion_subspace(j) for j in self.joint_ids + self.elastic_ids}
        self.base0 = pin.SE3.Identity()
        self.tool0 = pin.SE3.Identity()      # pose measurement: tool -> measured frame
        self._build_names()

    # ---------------------------------------------------------------- parameters
    def _build_names(self):
        names, groups = [], {}
        if self.estimate_base:
            groups["base"] = slice(0, 6)
            names += [f"base_{a}" for a in PLACEMENT_NAMES]
        for j in self.joints:
            start = len(names)
            if self.level == "full":
                names += [f"d{a}_{j}" for a in PLACEMENT_NAMES]
            else:
                names.append(f"offset_{j}")
            groups[j] = slice(start, len(names))
        for j in self.elastic:
            groups[f"compliance_{j}"] = slice(len(names), len(names) + 1)
            names.append(f"compliance_{j}")
        start = len(names)
        if self.measurement.kind == "points":
            for k in range(self.measurement.n_points):
                names += [f"point{k + 1}_{a}" for a in "xyz"]
        else:
            names += [f"tool_{a}" for a in PLACEMENT_NAMES]
        groups["tool"] = slice(start, len(names))
        self.names = names
        self.groups = groups

    @property
    def n_params(self) -> int:
        return len(self.names)

    def nominal_parameters(self, tool_points: np.ndarray | None = None) -> np.ndarray:
        """Parameters of the nominal model: no variation, measured points at ``tool_points``
        (n_points x 3, tool frame) or at the tool origin."""
        x = np.zeros(self.n_params)
        if self.measurement.kind == "points" and tool_points is not None:
            x[self.groups["tool"]] = np.asarray(tool_points, float).ravel()
        return x

    def tool_points(self, x: np.ndarray) -> np.ndarray:
        return x[self.groups["tool"]].reshape(-1, 3)

    def base_pose(self, x: np.ndarray) -> pin.SE3:
        if not self.estimate_base:
            return self.base0
        return self.base0 * placement_variation(x[self.groups["base"]])

    def tool_pose(self, x: np.ndarray) -> pin.SE3:
        """Tool -> measured frame (pose measurements)."""
        return self.tool0 * placement_variation(x[self.groups["tool"]])

    def joint_placements(self, x: np.ndarray) -> dict[str, pin.SE3]:
        """Calibrated joint origins (full level) or nominal ones with the offset folded in
        as a rotation/translation along the joint axis (offset level): same kinematics."""
        out = {}
        for k, (j, jid) in enumerate(zip(self.joints, self.joint_ids)):
            d = x[self.groups[j]]
            if self.level == "full":
                out[j] = self.M0[k] * placement_variation(d)
            else:
                S = self._motion_subspace(jid)
                out[j] = self.M0[k] * pin.exp6(pin.Motion(S * d[0]))
        return out

    def _motion_subspace(self, jid: int) -> np.ndarray:
        jm = self.model.joints[jid]
        jd = jm.createData()
        jm.calc(jd, self.q_neutral[jm.idx_q:jm.idx_q + jm.nq])
        return np.asarray(jd.S).reshape(6)

    # ---------------------------------------------------------------- kinematics
    def _apply(self, x: np.ndarray):
        for k, (j, jid) in enumerate(zip(self.joints, self.joint_ids)):
            if self.level == "full":
                self.work.jointPlacements[jid] = self.M0[k] * placement_variation(x[self.groups[j]])
            else:
                self.work.jointPlacements[jid] = self.M0[k]

    def gravity_torques(self, q_chain: np.ndarray) -> np.ndarray:
        """Gravity torque of each elastic joint at the measured configuration (N.m)."""
        if not self.elastic:
            return np.zeros(0)
        q = self.configuration(q_chain)
        g = pin.computeGeneralizedGravity(self.model, self.gdata, q)
        return np.array([g[self.model.joints[j].idx_v] for j in self.elastic_ids])

    def configuration(self, q_chain: np.ndarray, x: np.ndarray | None = None) -> np.ndarray:
        """Full pinocchio configuration from the chain joint readings (+ offsets, - joint
        deflections ``c_j tau_j``)."""
        theta = np.array(q_chain, float).reshape(-1)
        if x is not None and self.level == "offset":
            for j in self.joints:
                theta[self.chain.index(j)] += x[self.groups[j]][0]
        if x is not None and self.elastic:
            tau = self.gravity_torques(q_chain)
            for k, j in enumerate(self.elastic):
                theta[self.chain.index(j)] -= x[self.groups[f"compliance_{j}"]][0] * tau[k]
        if self.plain_idx_q is not None:
            q = self.q_neutral.copy()
            q[self.plain_idx_q] = theta
            return q
        q = self.q_neutral.copy()[None, :]
        set_joint_angles(self.model, q, self.chain_ids, theta[None, :])
        return q[0]

    def chain_angles(self, Q: np.ndarray) -> np.ndarray:
        """Chain joint readings (P x n_chain) from full configurations (P x nq)."""
        return joint_angles(self.model, Q, self.chain_ids)

    def _chain_pose(self, q_chain, x, twists: bool):
        """World pose of the tool frame and, if asked, the twist columns (6 x n_params,
        tool parameters excluded) at the tool origin, measurement-frame axes."""
        m, d = self.work, self.data
        q = self.configuration(q_chain, x)
        pin.forwardKinematics(m, d, q)
        oMt = d.oMi[m.frames[self.tool_fid].parentJoint] * m.frames[self.tool_fid].placement
        if self.start_fid is None:
            oMs = pin.SE3.Identity()
        else:
            f = m.frames[self.start_fid]
            oMs = d.oMi[f.parentJoint] * f.placement
        T_wb = self.base_pose(x)
        if self.base_motion is not None:
            T_wb = T_wb * self.base_motion(np.asarray(q_chain, float))
        T_wu = T_wb * oMs.inverse()          # universe -> measurement frame
        T_wt = T_wu * oMt
        if not twists:
            return T_wt, None
        o = T_wt.translation
        C = np.zeros((6, self.n_params))
        if self.estimate_base:
            # the base variation acts before the displacement: rigid downstream, so the
            # column is that of the base frame itself
            C[:, self.groups["base"]] = placement_twist_columns(
                self.base_pose(x), x[self.groups["base"]], o)
        for j, jid in zip(self.joints, self.joint_ids):
            parent = m.parents[jid]
            if self.level == "full":
                T_wF = T_wu * d.oMi[parent] * m.jointPlacements[jid]
                C[:, self.groups[j]] = placement_twist_columns(T_wF, x[self.groups[j]], o)
            else:
                C[:, self.groups[j]] = joint_twist_at(T_wu * d.oMi[jid], self.S[jid],
                                                      o)[:, None]
        if self.elastic:
            tau = self.gravity_torques(q_chain)
            for k, (j, jid) in enumerate(zip(self.elastic, self.elastic_ids)):
                C[:, self.groups[f"compliance_{j}"]] = (
                    -joint_twist_at(T_wu * d.oMi[jid], self.S[jid], o) * tau[k])[:, None]
        return T_wt, C

    def tool_frame_poses(self, Q: np.ndarray, x: np.ndarray) -> list[pin.SE3]:
        """Pose of the tool frame in the measurement frame, per posture."""
        self._apply(x)
        return [self._chain_pose(q, x, False)[0] for q in np.atleast_2d(Q)]

    def predict(self, Q: np.ndarray, x: np.ndarray) -> list[pin.SE3]:
        """Pose of the measured frame (pose) or of the tool frame (points) per posture."""
        poses = self.tool_frame_poses(Q, x)
        if self.measurement.kind == "pose":
            return [T * self.tool_pose(x) for T in poses]
        return poses

    def predict_points(self, Q: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Predicted positions (N x n_points x 3) of the measured points / frame origin."""
        poses = self.predict(Q, x)
        if self.measurement.kind == "pose":
            return np.array([T.translation for T in poses])[:, None, :]
        P = self.tool_points(x)
        return np.array([(T.rotation @ P.T).T + T.translation for T in poses])

    # ---------------------------------------------------------------- residuals
    def residuals(self, Q: np.ndarray, Y: np.ndarray, x: np.ndarray,
                  jacobian: bool = False):
        """Prediction minus measurement, per posture and measured axis (N x size, metres
        and radians, before mask and whitening), and the Jacobian (N x size x n_params).

        ``Y`` is N x size; for ``pose`` its last three columns are the measured orientation
        as a rotation vector and the orientation residual is ``-log3(R_meas R_pred^T)``.
        """
        meas = self.measurement
        Q = np.atleast_2d(Q)
        Y = np.atleast_2d(Y)
        N = Q.shape[0]
        F = np.zeros((N, meas.size))
        J = np.zeros((N, meas.size, self.n_params)) if jacobian else None
        self._apply(x)
        tg = self.groups["tool"]
        for i in range(N):
            T_wt, C = self._chain_pose(Q[i], x, jacobian)
            if meas.kind == "points":
                P = self.tool_points(x)
                for k in range(meas.n_points):
                    p = T_wt.rotation @ P[k] + T_wt.translation
                    F[i, 3 * k:3 * k + 3] = p - Y[i, 3 * k:3 * k + 3]
                    if jacobian:
                        rows = slice(3 * k, 3 * k + 3)
                        r = p - T_wt.translation
                        J[i, rows] = C[:3] - skew(r) @ C[3:]
                        J[i, rows, tg.start + 3 * k:tg.start + 3 * k + 3] = T_wt.rotation
            else:
                T_wm = T_wt * self.tool_pose(x)
                F[i, :3] = T_wm.translation - Y[i, :3]
                E = pin.exp3(Y[i, 3:6]) @ T_wm.rotation.T
                F[i, 3:] = -pin.log3(E)
                if jacobian:
                    o = T_wm.translation
                    shift = np.eye(6)
                    shift[:3, 3:] = -skew(o - T_wt.translation)
                    Cm = shift @ C
                    Cm[:, tg] = placement_twist_columns(T_wm, x[tg], o)
                    J[i, :3] = Cm[:3]
                    J[i, 3:] = pin.Jlog3(E) @ Cm[3:]
        return F, J


def chain_limits(km: KinematicModel, margin: float) -> tuple[np.ndarray, np.ndarray]:
    lo, hi = angle_limits(km.model, km.chain_ids)
    lo = np.where(np.isfinite(lo) & (np.abs(lo) < 1e10), lo, -np.pi)
    hi = np.where(np.isfinite(hi) & (np.abs(hi) < 1e10), hi, np.pi)
    lo2, hi2 = lo + margin, hi - margin
    narrow = lo2 >= hi2
    mid = 0.5 * (lo + hi)
    return np.where(narrow, mid, lo2), np.where(narrow, mid, hi2)


def parameter_unit(km: KinematicModel, name: str) -> str:
    """``m`` or ``rad`` (``rad/N.m`` for a compliance) of the parameter ``name``."""
    if name.startswith("compliance_"):
        return "rad/N.m"
    if name.startswith("offset_"):
        S = km._motion_subspace(km.model.getJointId(name[len("offset_"):]))
        return "m" if np.linalg.norm(S[:3]) > 0.5 else "rad"
    return "rad" if "_phi" in name or name.startswith("dphi") else "m"

"""Forward kinematics with placement variations and the kinematic regressor.

Nguyen et al. 2023 Eq. 1 / Nguyen et al. 2024 Eq. 8: the pose of the measured frame is the product

    T_w,m(q, Phi_g) = T_w,b(Phi_base) * T_b,1(Phi_1) * ... * T_n,tool * T_tool,m(Phi_tool)

where every joint placement ``M_j`` (the joint origin of the URDF) is varied as
``M_j * SE3(exp3(dphi_j), dp_j)`` with ``Phi_gj = [dpx dpy dpz dphix dphiy dphiz]`` (full
level), or the joint reading is shifted, ``q_j + dq_j`` (offset level).  The base frame
(measurement frame -> chain start frame) is varied the same way around an initial guess,
and the measured points (``points``) or the measured frame (``pose``) are fixed in the
tool frame.

The kinematic regressor (Nguyen et al. 2023 Eq. 4, ``dP = R_g dPhi``) is the exact Jacobian of the
predicted measurements with respect to the parameters: every parameter moves a frame of
the chain by a body twist ``xi`` (placement: ``[R(dphi)^T dp ; Jr(dphi) dphi]``; offset: the
joint's motion subspace ``S``), which moves the tool by the twist ``Ad xi`` expressed at the
tool origin in measurement axes.  Frames and motion subspaces come from pinocchio; the
chain is evaluated at every posture at once (:mod:`.chain_batch`).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

import figaroh_ros.calibration.chain_batch as batch
from figaroh_ros.calibration.measurement import Measurement
from figaroh_ros.errors import ModelError
from figaroh_ros.model.robot import angle_limits, joint_angles, set_joint_angles

LEVELS = ("offset", "full")
PLACEMENT_NAMES = ("px", "py", "pz", "phix", "phiy", "phiz")
MOTION_CACHE = 8          # posture sets whose joint motions are kept


def placement_variation(d: np.ndarray) -> pin.SE3:
    """``SE3(exp3(dphi), dp)`` for ``d = [dp, dphi]``."""
    return pin.SE3(pin.exp3(np.asarray(d[3:6], float)), np.asarray(d[:3], float))


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
    # joints with a compliance parameter (Nguyen et al. 2023 Table I, last row): the joint yields to
    # the gravity torque ``tau_j`` it holds (pinocchio's generalized gravity, the URDF's
    # inertias, at the measured configuration): the link sags, ``q_j -> q_j - c_j tau_j``
    elastic_joints: list[str] | None = None
    # the robot's base displaced per posture (e.g. a suspension under the arm's weight,
    # Nguyen et al. 2024): q_chain -> SE3 between the base frame and the chain, identity by default
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
        self.q_neutral = pin.neutral(m)
        # one angle per configuration entry on the chain (no continuous joint): the fast path
        self.plain_idx_q = (np.array(self.chain_idx_q) if all(
            m.joints[j].nq == 1 for j in self.chain_ids) else None)
        self.S_chain = [self._motion_subspace(j) for j in self.chain_ids]
        self._motion_cache: dict = {}        # posture set -> joint motions at the readings
        self._last_chain = (None, None)      # (inputs, poses) of the last evaluation
        self.base0 = pin.SE3.Identity()
        self.tool0 = pin.SE3.Identity()      # pose measurement: tool -> measured frame
        self._build_names()
        self._index_parameters()

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

    def _index_parameters(self):
        """Chain positions and parameter columns of the calibrated and elastic joints."""
        self.joint_pos = [self.chain.index(j) for j in self.joints]
        self.elastic_pos = [self.chain.index(j) for j in self.elastic]
        self.joint_cols = np.array([i for j in self.joints
                                    for i in range(*self.groups[j].indices(self.n_params))],
                                   int)
        self.elastic_cols = np.array([self.groups[f"compliance_{j}"].start
                                      for j in self.elastic], int)
        S = np.array(self.S_chain).reshape(-1, 6)
        self.S_joints, self.S_elastic = S[self.joint_pos], S[self.elastic_pos]

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
        if x is not None:
            theta = self._angles(theta[None, :], x)[0]
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

    def _torques(self, Q: np.ndarray) -> np.ndarray:    # elastic joints', P x n_elastic
        return np.array([self.gravity_torques(q) for q in Q]).reshape(len(Q),
                                                                      len(self.elastic))

    def _angles(self, Q: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Chain joint angles (P x n_chain): readings + offsets - deflections."""
        theta = np.array(Q, float)
        if self.level == "offset":
            for j, k in zip(self.joints, self.joint_pos):
                theta[:, k] += x[self.groups[j]][0]
        if self.elastic:
            tau = self._torques(Q)
            for i, (j, k) in enumerate(zip(self.elastic, self.elastic_pos)):
                theta[:, k] -= x[self.groups[f"compliance_{j}"]][0] * tau[:, i]
        return theta

    def _placements(self, x: np.ndarray) -> list[pin.SE3]:
        """Joint origin of every chain joint, varied by ``x`` at the full level."""
        out = [self.model.jointPlacements[jid] for jid in self.chain_ids]
        if self.level == "full":
            for k, M in zip(self.joint_pos, self.joint_placements(x).values()):
                out[k] = M
        return out

    def _start_poses(self, Q: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Measurement-frame pose of the chain's start joint at every posture (P x 4 x 4):
        ``T_wb (* base displacement) * start_frame^-1``."""
        s_inv = (pin.SE3.Identity() if self.start_fid is None
                 else self.model.frames[self.start_fid].placement.inverse())
        T_wb = self.base_pose(x)
        if self.base_motion is None:
            return np.broadcast_to((T_wb * s_inv).homogeneous, (len(Q), 4, 4))
        return np.array([(T_wb * self.base_motion(np.asarray(q, float)) * s_inv).homogeneous
                         for q in Q])

    def _motions(self, Q: np.ndarray, x: np.ndarray) -> list:
        """``exp6(S_k theta_k)`` of every chain joint at every posture (P x 4 x 4 each).
        The readings' part is computed once per posture set; an offset composes with it,
        ``exp6(S (q + d)) = exp6(S q) exp6(S d)`` (one twist commutes with itself); joints
        with a deflection follow ``x`` posture by posture."""
        key = (Q.shape, Q.tobytes())
        out = self._motion_cache.get(key)
        if out is None:
            out = [batch.joint_motion(S, Q[:, k]) for k, S in enumerate(self.S_chain)]
            for old in list(self._motion_cache)[:1 - MOTION_CACHE]:
                self._motion_cache.pop(old, None)
            self._motion_cache[key] = out
        out = list(out)
        if self.level == "offset":
            for j, k in zip(self.joints, self.joint_pos):
                D = pin.exp6(pin.Motion(self.S_chain[k] * x[self.groups[j]][0]))
                out[k] = out[k] @ D.homogeneous
        if self.elastic:
            theta = self._angles(Q, x)
            for k in self.elastic_pos:
                out[k] = batch.joint_motion(self.S_chain[k], theta[:, k])
        return out

    def _chain(self, Q: np.ndarray, x: np.ndarray):
        """Stacked world poses (4 x 4) of the tool frame (P) and of every chain joint's
        varied origin (``placed``, n_chain x P) and moved joint frame (``moved``); the last
        evaluation is kept (the regressor is asked at the point just evaluated)."""
        Q, x = np.asarray(Q, float), np.asarray(x, float)
        key = (Q.shape, Q.tobytes(), x.tobytes(), self.base0.homogeneous.tobytes())
        if self.base_motion is None and self._last_chain[0] == key:
            return self._last_chain[1]
        T = self._start_poses(Q, x)
        placed = np.empty((len(self.chain_ids), len(Q), 4, 4))
        moved = np.empty_like(placed)
        motions = self._motions(Q, x)
        for k, M in enumerate(self._placements(x)):
            np.matmul(T, M.homogeneous, out=placed[k])
            T = np.matmul(placed[k], motions[k], out=moved[k])
        T = T @ self.model.frames[self.tool_fid].placement.homogeneous
        if self.base_motion is None:        # a base motion is not in the key: never kept
            self._last_chain = (key, (T, placed, moved))
        return T, placed, moved

    def _twists(self, Q, x, o, placed, moved) -> np.ndarray:
        """Twist columns (P x 6 x n_params, tool parameters zero) at the points ``o``
        (P x 3), measurement-frame axes."""
        C = np.zeros((len(o), 6, self.n_params))
        if self.estimate_base:
            # the base variation acts before the displacement: rigid downstream, so the
            # column is that of the base frame itself
            Tb, gb = self.base_pose(x), self.groups["base"]
            C[:, :, gb] = batch.placement_columns(Tb.rotation, Tb.translation, x[gb], o)
        if self.joints and self.level == "full":
            F = placed[self.joint_pos]
            cols = batch.placement_columns(F[..., :3, :3], F[..., :3, 3], x[self.joint_cols]
                                           .reshape(-1, 6), o)        # J x P x 6 x 6
            C[:, :, self.joint_cols] = cols.transpose(1, 2, 0, 3).reshape(len(o), 6, -1)
        elif self.joints:
            Jm = moved[self.joint_pos]
            cols = batch.joint_columns(Jm[..., :3, :3], Jm[..., :3, 3], self.S_joints, o)
            C[:, :, self.joint_cols] = cols.transpose(1, 2, 0)
        if self.elastic:
            Jm, tau = moved[self.elastic_pos], self._torques(Q)
            cols = batch.joint_columns(Jm[..., :3, :3], Jm[..., :3, 3], self.S_elastic, o)
            C[:, :, self.elastic_cols] = -cols.transpose(1, 2, 0) * tau[:, None, :]
        return C

    def tool_frames(self, Q: np.ndarray, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Pose of the tool frame in the measurement frame at every posture: rotations
        (P x 3 x 3) and positions (P x 3)."""
        T = self._chain(np.atleast_2d(Q), x)[0]
        return T[:, :3, :3].copy(), T[:, :3, 3].copy()     # not views of the kept chain

    def tool_frame_poses(self, Q: np.ndarray, x: np.ndarray) -> list[pin.SE3]:
        """Pose of the tool frame in the measurement frame, per posture."""
        return [pin.SE3(R, p) for R, p in zip(*self.tool_frames(Q, x))]

    def _measured_frames(self, Q: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Stacked poses (P x 4 x 4) of the measured frame (pose) or of the tool frame."""
        T = self._chain(np.atleast_2d(Q), x)[0]
        if self.measurement.kind == "pose":
            return T @ self.tool_pose(x).homogeneous
        return T

    def predict(self, Q: np.ndarray, x: np.ndarray) -> list[pin.SE3]:
        """Pose of the measured frame (pose) or of the tool frame (points) per posture."""
        return batch.poses(self._measured_frames(Q, x))

    def predict_points(self, Q: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Predicted positions (N x n_points x 3) of the measured points / frame origin."""
        T = self._measured_frames(Q, x)
        if self.measurement.kind == "pose":
            return T[:, None, :3, 3]
        return np.einsum("nij,kj->nki", T[:, :3, :3], self.tool_points(x)) + T[:, None, :3, 3]

    # ---------------------------------------------------------------- residuals
    def residuals(self, Q: np.ndarray, Y: np.ndarray, x: np.ndarray,
                  jacobian: bool = False):
        """Prediction minus measurement, per posture and measured axis (N x size, metres
        and radians, before mask and whitening), and the Jacobian (N x size x n_params).

        ``Y`` is N x size; for ``pose`` its last three columns are the measured orientation
        as a rotation vector and the orientation residual is ``-log3(R_meas R_pred^T)``.
        All postures at once (:mod:`.chain_batch`).
        """
        Q = np.atleast_2d(np.asarray(Q, float))
        Y = np.atleast_2d(Y)
        chain = self._chain(Q, x)
        if self.measurement.kind == "points":
            return self._point_residuals(Q, Y, x, chain, jacobian)
        return self._pose_residuals(Q, Y, x, chain, jacobian)

    def _point_residuals(self, Q, Y, x, chain, jacobian):
        """Points fixed in the tool frame: ``p_k = R P_k + t``; the regressor rows move the
        tool twist to each point, ``v - (p_k - t) x w``, the point's own columns are R."""
        T, placed, moved = chain
        R, t = T[:, :3, :3], T[:, :3, 3]
        n, k = len(Q), self.measurement.n_points
        pts = np.einsum("nij,kj->nki", R, self.tool_points(x)) + t[:, None, :]
        F = (pts - Y.reshape(n, k, 3)).reshape(n, 3 * k)
        if not jacobian:
            return F, None
        C = self._twists(Q, x, t, placed, moved)
        J = np.empty((n, 3 * k, self.n_params))
        tg = self.groups["tool"].start
        for i in range(k):
            J[:, 3 * i:3 * i + 3] = C[:, :3] - batch.skews(pts[:, i] - t) @ C[:, 3:]
            J[:, 3 * i:3 * i + 3, tg + 3 * i:tg + 3 * i + 3] = R
        return F, J

    def _pose_residuals(self, Q, Y, x, chain, jacobian):
        """A frame fixed to the tool: position and ``-log3(R_meas R_pred^T)``; the
        orientation rows go through ``Jlog3``."""
        T, placed, moved = chain
        t = T[:, :3, 3]
        tg = self.groups["tool"]
        Tm = T @ self.tool_pose(x).homogeneous
        Rm, pm = Tm[:, :3, :3], Tm[:, :3, 3]
        E = [pin.exp3(y[3:6]) @ r.T for y, r in zip(Y, Rm)]
        F = np.empty((len(Q), 6))
        F[:, :3] = pm - Y[:, :3]
        F[:, 3:] = [-pin.log3(e) for e in E]
        if not jacobian:
            return F, None
        C = self._twists(Q, x, t, placed, moved)
        C[:, :3] -= batch.skews(pm - t) @ C[:, 3:]
        C[:, :, tg] = batch.placement_columns(Rm, pm, x[tg], pm)
        J = np.empty((len(Q), 6, self.n_params))
        J[:, :3] = C[:, :3]
        J[:, 3:] = np.array([pin.Jlog3(e) for e in E]) @ C[:, 3:]
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

"""pinocchio's joint torque regressor of many samples at once (Newton-Euler, world frame).

The torque of joint ``j`` is linear in the dynamic parameters ``pi_i`` of every body ``i``
it carries (Atkeson, An & Hollerbach 1986; Khalil & Dombre, Modeling, Identification and
Control of Robots, §9.3 and §12.3): ``tau_j = sum_i Y_ji pi_i``.  Body ``i``'s wrench at
its frame origin, in its frame, is ``f_i = A(v_i, a_i) pi_i`` with, for ``pi = (m, m c,
I)`` (pinocchio's order: ``I`` at the frame origin, entries ``xx xy yy xz yz zz``)::

    f = m a_c + alpha x (m c) + w x (w x m c),     n = I alpha + w x (I w) + m c x a_c

``w, v, alpha, a`` the body's spatial velocity and acceleration in its frame, gravity
included as ``a_0 = -g`` (RNEA), ``a_c = a + w x v`` the classical acceleration of the
origin.  Joint ``j`` with world axis ``z_j`` through ``p_j`` projects the body's world
wrench on its motion subspace: ``tau = z_j . (N - p_j x F)`` (revolute) or ``z_j . F``
(prismatic).  With ``F = R_i f``, ``N = R_i n + p_i x F`` this is ``a . n + b . f``,
``a = R_i^T z_j`` and ``b = R_i^T (z_j x (p_i - p_j))`` (prismatic: ``a = 0``,
``b = R_i^T z_j``): two 3-vectors per (joint, body) pair, and each of the ten columns of
``Y_ji`` a short product of them with ``w, alpha, a_c``.

Every operation is elementwise over the samples: numpy does them on a block of samples at
a time, where pinocchio's Python binding takes one sample per call (6 us each on a 7-joint
arm).  A sample's result does not depend on the block it is computed in: the sines and
cosines of the joint angles are given (computed once over all samples), the rest is
products and sums.  Joints: revolute, continuous and prismatic about any fixed axis
(pinocchio's ``R[XYZ]``, ``RUB[XYZ]``, ``P[XYZ]``, ``RevoluteUnaligned``,
``PrismaticUnaligned``); a model with any other joint (free-flyer, spherical, planar,
mimic, an unaligned continuous joint, whose axis pinocchio's Python does not bind) is not
:func:`supported`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

ONE_AXIS = {"X": (1.0, 0.0, 0.0), "Y": (0.0, 1.0, 0.0), "Z": (0.0, 0.0, 1.0)}


def joint_axis(joint: pin.JointModel) -> tuple[bool, np.ndarray] | None:
    """``(revolute, axis in the joint frame)`` of a one-axis joint (revolute, continuous or
    prismatic), else ``None``."""
    name = joint.shortname()
    if name in ("JointModelRevoluteUnaligned", "JointModelPrismaticUnaligned",
                "JointModelRevoluteUnboundedUnaligned"):
        axis = getattr(joint.extract(), "axis", None)     # not bound for every joint type
        return None if axis is None else (name[10] == "R", np.asarray(axis, float).copy())
    kind, axis = name[10:-1], name[-1:]
    if name.startswith("JointModel") and kind in ("R", "P", "RUB") and axis in ONE_AXIS:
        return kind != "P", np.array(ONE_AXIS[axis])
    return None


def supported(model: pin.Model) -> bool:
    """Whether every joint of ``model`` is revolute, continuous or prismatic about a
    fixed axis."""
    return model.njoints > 1 and all(joint_axis(model.joints[i]) is not None
                                     for i in range(1, model.njoints))


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a x b`` of 3-vectors along the first axis (any broadcastable trailing shape); the
    same bits as ``numpy.cross(a, b, axis=0)`` in half its time (which moves the axis and
    copies)."""
    out = np.empty((3,) + np.broadcast_shapes(a.shape[1:], b.shape[1:]))
    for k, (i, j) in enumerate(((1, 2), (2, 0), (0, 1))):
        np.subtract(a[i] * b[j], a[j] * b[i], out=out[k])
    return out


def _dot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def _rotate(R: np.ndarray, x) -> np.ndarray:
    """``R x``: ``R`` (3, 3, ...), ``x`` (3, ...) or a constant 3-vector."""
    return R[:, 0] * x[0] + R[:, 1] * x[1] + R[:, 2] * x[2]


def _rotate_back(R: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``R^T x``: ``R`` (3, 3, ...), ``x`` (3, ...)."""
    return R[0] * x[0] + R[1] * x[1] + R[2] * x[2]


def _product(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``A B`` of 3 x 3 matrices, sample by sample: ``A``, ``B`` (3, 3, n) (sums of
    products: no BLAS call, whose rounding may depend on the block's length)."""
    return A[:, 0, None] * B[0] + A[:, 1, None] * B[1] + A[:, 2, None] * B[2]


@dataclass(frozen=True)
class Pairs:
    """The (joint, body) pairs with a nonzero block: body ``i`` and each joint from ``i``
    up to the root, ordered body by body; ``start[i]`` the first pair of body ``i``."""

    body: np.ndarray          # pair -> body (joint id - 1)
    joint: np.ndarray         # pair -> carrying joint (joint id - 1)
    start: np.ndarray         # body -> its first pair; start[-1] = number of pairs

    def index(self) -> dict[tuple[int, int], int]:
        """``(carrying joint, body) -> pair`` (joint ids - 1)."""
        return {(int(j), int(i)): p for p, (j, i) in enumerate(zip(self.joint, self.body))}


def pairs(model: pin.Model) -> Pairs:
    """The :class:`Pairs` of ``model``: a joint carries its body and every descendant's."""
    body, joint, start = [], [], [0]
    for i in range(1, model.njoints):
        k = i
        while k > 0:
            body.append(i - 1)
            joint.append(k - 1)
            k = model.parents[k]
        start.append(len(body))
    return Pairs(np.array(body), np.array(joint), np.array(start))


def trigonometry(model: pin.Model, Q: np.ndarray) -> tuple[np.ndarray, ...]:
    """``(sin q, cos q, q)`` (nj x N) of every joint of ``model`` at the configurations
    ``Q`` (N x nq): a continuous joint's are its ``(cos, sin)`` pair as configured.  Computed
    once for every sample, so that a block of samples never decides their last bit."""
    rows = []
    for i in range(1, model.njoints):
        k = model.joints[i].idx_q
        if model.joints[i].nq == 2:
            c, s = Q[:, k], Q[:, k + 1]
            rows.append((s, c, np.arctan2(s, c)))
        else:
            rows.append((np.sin(Q[:, k]), np.cos(Q[:, k]), Q[:, k]))
    return tuple(np.array([r[m] for r in rows]) for m in range(3))


class NewtonEulerRegressor:
    """Joint torque regressor blocks of a model whose joints all have one fixed axis (the
    joints' order in the samples is the model's)."""

    def __init__(self, model: pin.Model):
        if not supported(model):
            raise ValueError("the batched regressor needs revolute, continuous or prismatic "
                             "joints only")
        self.model, self.pairs = model, pairs(model)
        self.axes = [joint_axis(model.joints[i]) for i in range(1, model.njoints)]
        self.revolute = np.array([rev for rev, _ in self.axes])
        self.rotations, self._work = [], {}
        for i, (revolute, u) in enumerate(self.axes):
            E, K = model.jointPlacements[i + 1].rotation, pin.skew(u)
            self.rotations.append((E, E @ K, E @ K @ K) if revolute else (E, None, None))

    def __call__(self, trig: tuple[np.ndarray, np.ndarray, np.ndarray], dq: np.ndarray,
                 ddq: np.ndarray, out: np.ndarray) -> np.ndarray:
        """Write into ``out`` (10, pairs, n) the block ``Y_ji`` of every pair, parameters
        in pinocchio's order: ``pinocchio.computeJointTorqueRegressor(q_s)[j, 10 i:10 i +
        10]`` for sample ``s``.  ``dq, ddq``: (nv, n), joints in model order; ``trig``:
        ``(sin q, cos q, q)`` of the joints (:func:`trigonometry`)."""
        frames = self._kinematics(trig, dq, ddq)
        for i in range(len(self.axes)):
            p0, p1 = self.pairs.start[i], self.pairs.start[i + 1]
            self._body_blocks(i, self.pairs.joint[p0:p1], frames, out[:, p0:p1])
        return out

    def _kinematics(self, trig, dq, ddq):
        """World poses ``R (3, 3, nj, n)``, ``p (3, nj, n)``, joint axes ``z (3, nj, n)``
        and every body's local ``w, v, alpha, a_c`` (4, 3, nj, n)."""
        model, n = self.model, dq.shape[1]
        R, p, z, local, V, A = self._arrays(n)
        V[:, 0], A[:, 0] = 0.0, -model.gravity.vector[:, None]     # RNEA: a_0 = -g
        for i, (revolute, u) in enumerate(self.axes):
            parent, M = model.parents[i + 1], model.jointPlacements[i + 1]
            E, t, zl = self._joint_rotation(i, trig), M.translation, M.rotation @ u
            if parent == 0:
                R[:, :, i] = E
                pa, zi = np.repeat(t[:, None], n, 1), np.repeat(zl[:, None], n, 1)
            else:
                Rp = R[:, :, parent - 1]
                R[:, :, i] = _product(Rp, E)
                pa, zi = p[:, parent - 1] + _rotate(Rp, t), _rotate(Rp, zl)
            z[:, i] = zi
            if revolute:
                p[:, i], s = pa, (_cross(pa, zi), zi)
            else:
                p[:, i], s = pa + zi * trig[2][i], (zi, None)
            self._velocities(V, A, parent, i + 1, s, dq[i], ddq[i])
            self._local(R[:, :, i], p[:, i], V[:, i + 1], A[:, i + 1], local[:, :, i])
        return R, p, z, local

    def _arrays(self, n: int) -> tuple[np.ndarray, ...]:
        """The kinematics' arrays for blocks of ``n`` samples, allocated once: at 8192
        samples, arrays allocated at every block cost 4000 page faults a block (numpy
        asks huge pages from 4 MB)."""
        if n not in self._work:
            nj = len(self.axes)
            self._work = {n: (np.empty((3, 3, nj, n)), np.empty((3, nj, n)),
                              np.empty((3, nj, n)), np.empty((4, 3, nj, n)),
                              np.empty((6, nj + 1, n)), np.empty((6, nj + 1, n))),
                          **{k: v for k, v in self._work.items() if k > n}}
        return self._work[n]

    def _joint_rotation(self, i: int, trig) -> np.ndarray:
        """The rotation of joint ``i``'s frame in its parent's, (3, 3, n): its placement's
        times the joint's, ``E (I + sin q [u]x + (1 - cos q) [u]x^2)`` (Rodrigues) for a
        revolute joint, ``E`` for a prismatic one."""
        E0, E1, E2 = self.rotations[i]
        if E1 is None:
            return np.repeat(E0[:, :, None], trig[0].shape[1], 2)
        return E0[:, :, None] + E1[:, :, None] * trig[0][i] + E2[:, :, None] * (1 - trig[1][i])

    @staticmethod
    def _velocities(V, A, parent, i, s, dq, ddq):
        """Spatial velocity and acceleration of body ``i`` at the world origin (Featherstone
        2008, Eq. 5.7-5.8): ``V_i = V_p + s dq``, ``A_i = A_p + s ddq + V_p x s dq``, motion
        subspace ``s = (p x z, z)`` (revolute) or ``(z, 0)`` (prismatic)."""
        (lin, ang), Vp, Ap = s, V[:, parent], A[:, parent]
        V[:3, i] = Vp[:3] + lin * dq
        A[:3, i] = Ap[:3] + lin * ddq + _cross(Vp[3:], lin * dq)
        if ang is None:
            V[3:, i], A[3:, i] = Vp[3:], Ap[3:]
            return
        V[3:, i] = Vp[3:] + ang * dq
        A[:3, i] += _cross(Vp[:3], ang * dq)
        A[3:, i] = Ap[3:] + ang * ddq + _cross(Vp[3:], ang * dq)

    @staticmethod
    def _local(R, p, V, A, out):
        """The body's ``w, v, alpha`` and classical acceleration ``a_c = a + w x v`` in its
        frame, from ``V, A`` at the world origin (a motion vector moved to ``p``)."""
        out[0] = _rotate_back(R, V[3:])
        out[1] = _rotate_back(R, V[:3] + _cross(V[3:], p))
        out[2] = _rotate_back(R, A[3:])
        out[3] = _rotate_back(R, A[:3] + _cross(A[3:], p)) + _cross(out[0], out[1])

    def _body_blocks(self, i, joints, frames, out):
        """``Y_ji`` (10, pairs of body ``i``, n) of body ``i`` and its carrying joints."""
        R, p, z, local = frames
        Ri, (w, _, al, ac) = R[:, :, i, None], (x[:, None] for x in local[:, :, i])
        zj = z[:, joints]
        rev = self.revolute[joints][:, None]
        b = _rotate_back(Ri, np.where(rev, _cross(zj, p[:, i, None] - p[:, joints]), zj))
        a = _rotate_back(Ri, zj * rev)
        out[0] = _dot(b, ac)
        out[1:4] = _cross(b, al) + _dot(b, w) * w - _dot(w, w) * b + _cross(ac, a)
        c = _cross(a, w)          # a . (I alpha + w x I w) = a^T L(alpha) + (a x w)^T L(w)
        out[4] = a[0] * al[0] + c[0] * w[0]
        out[5] = a[0] * al[1] + a[1] * al[0] + c[0] * w[1] + c[1] * w[0]
        out[6] = a[1] * al[1] + c[1] * w[1]
        out[7] = a[0] * al[2] + a[2] * al[0] + c[0] * w[2] + c[2] * w[0]
        out[8] = a[1] * al[2] + a[2] * al[1] + c[1] * w[2] + c[2] * w[1]
        out[9] = a[2] * al[2] + c[2] * w[2]

"""``identify_payload``: the mass, centre of mass and inertia of a load fixed to the tool
(Nguyen et al. 2023 Eq. 2-5 and 11; Khalil & Dombre §14.5; Wensing, Kim & Slotine 2017).

From joint torques: the robot's own torques (its identified model, or the URDF's) are
subtracted and the residual fitted with ``tau - tau_robot = J_f^T Y pi``
(``payload_regressor``).  From a wrist force-torque sensor in the tool frame: the
reading is ``Y pi + F_0`` with an unknown constant offset ``F_0``.  Rows are weighted by
the inverse noise std (weighted least squares, Nguyen et al. 2023 Eq. 6); the standard deviations
come from the unconstrained covariance ``sigma^2 (W^T W)^-1`` with ``sigma^2`` the
whitened residual variance.  The estimate is then made physically consistent: positive
mass, pseudo-inertia ``J(pi)`` positive semidefinite and the centre of mass in an
optional box (``m c_lo <= h <= m c_hi``), a semidefinite program solved by Clarabel as in
``physical/convex.py``; when the unconstrained estimate already satisfies them it is the
solution itself.
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin

from figaroh_ros.errors import DataError
from figaroh_ros.identification.payload_regressor import (
    WRENCH_COMPONENTS, check_motion, frame_regressors, require_observable, torque_regressor,
    wrench_regressor
)
from figaroh_ros.identification.payload_result import PayloadResult, mci_std, mci_vector
from figaroh_ros.identification.physical.convex import _cvxpy, _solve
from figaroh_ros.identification.physical.inertia import check_link, pseudo_inertia_basis
from figaroh_ros.model import RobotModel, load_model

DEFAULT_NOISE = {"torque": 0.3, "wrench": (0.5, 0.02)}     # N.m; N and N.m
MIN_MASS = 1e-3                                              # kg


def row_std(kind: str, noise, n_groups: int) -> np.ndarray:
    """Noise std of each row group (joint, or wrench component): a scalar or one value
    per group (``wrench``: also ``(force, moment)``)."""
    s = np.atleast_1d(np.asarray(DEFAULT_NOISE[kind] if noise is None else noise, float))
    if kind == "wrench" and s.size == 2:
        s = np.repeat(s, 3)
    if s.size == 1:
        s = np.repeat(s, n_groups)
    if s.size != n_groups:
        raise DataError(f"noise: expected 1 or {n_groups} values, got {s.size}")
    if not np.all(np.isfinite(s)) or np.any(s <= 0):
        raise DataError(f"noise: every std must be positive and finite, got {s.tolist()}")
    return s


def measured(name: str, x, N: int, width: int) -> np.ndarray:
    """``x`` as a finite N x width array (a DataError naming ``name`` otherwise)."""
    x = np.atleast_2d(np.asarray(x, float))
    if x.shape != (N, width):
        raise DataError(f"{name}: expected {N} x {width} values, got shape {x.shape}")
    bad = np.argwhere(~np.isfinite(x))
    if len(bad):
        raise DataError(f"{name}: non-finite value at sample {bad[0][0]}, column {bad[0][1]}")
    return x


def robot_torques(robot: RobotModel, robot_parameters, q, dq, ddq) -> np.ndarray:
    """The torques of the robot without payload: ``robot_parameters.predict`` (an
    IdentificationResult), ``robot_parameters(q, dq, ddq)`` (a callable) or the URDF's
    inverse dynamics (``None``)."""
    if robot_parameters is None:
        data = robot.model.createData()
        Q, V, A = (robot.full_configuration(q), robot.full_velocity(dq),
                   robot.full_velocity(ddq))
        return np.array([pin.rnea(robot.model, data, Q[i], V[i], A[i])[robot.idx_v]
                         for i in range(len(Q))])
    f = getattr(robot_parameters, "predict", robot_parameters)
    return measured("robot_parameters torques", f(q, dq, ddq), len(q), robot.n_joints)


def equations(robot, tool_frame, q, dq, ddq, tau, wrench, robot_parameters, wrench_sign):
    """``(kind, W, y, groups)``: the stacked regressor, measurements and row groups."""
    if (tau is None) == (wrench is None):
        raise DataError("give either tau (joint torques) or wrench (wrist sensor), not "
                        + ("both" if tau is not None else "neither"))
    N = len(q)
    Y, J = frame_regressors(robot, tool_frame, q, dq, ddq)
    if tau is not None:
        tau = measured("tau", tau, N, robot.n_joints)
        r = tau - robot_torques(robot, robot_parameters, q, dq, ddq)
        return "torque", torque_regressor(Y, J), r.T.ravel(), list(robot.active_joints)
    wrench = measured("wrench", wrench, N, 6)
    return ("wrench", wrench_regressor(Y), wrench_sign * wrench.T.ravel(),
            list(WRENCH_COMPONENTS))


def least_squares(Ww: np.ndarray, yw: np.ndarray):
    """``(x, cov, whitened residual)`` of the weighted least squares problem."""
    x, *_ = np.linalg.lstsq(Ww, yw, rcond=None)
    r = yw - Ww @ x
    dof = max(len(yw) - Ww.shape[1], 1)
    cov = (r @ r / dof) * np.linalg.pinv(Ww.T @ Ww)
    return x, cov, r


def feasible(pi: np.ndarray, com_box) -> bool:
    """Positive mass, consistent inertia and the centre of mass in the box."""
    if pi[0] < MIN_MASS or not check_link(pi).ok:
        return False
    if com_box is None:
        return True
    c = pi[1:4] / pi[0]
    return bool(np.all(c >= com_box[0]) and np.all(c <= com_box[1]))


def constrained_fit(Ww: np.ndarray, yw: np.ndarray, com_box, epsilon: float = 1e-9):
    """The least-squares parameters with the payload's pseudo-inertia positive
    semidefinite, ``m >= MIN_MASS`` and the centre of mass in ``com_box`` (lo, hi)."""
    cp = _cvxpy()
    Qr, R = np.linalg.qr(Ww)
    b = Qr.T @ yw
    x = cp.Variable(Ww.shape[1])
    pi = x[:10]
    J = sum(pi[k] * E for k, E in enumerate(pseudo_inertia_basis()))
    Jv = cp.Variable((4, 4), symmetric=True)
    cons = [Jv == J, Jv - epsilon * np.eye(4) >> 0, pi[0] >= MIN_MASS]
    if com_box is not None:
        cons += [pi[1:4] >= pi[0] * com_box[0], pi[1:4] <= pi[0] * com_box[1]]
    prob = cp.Problem(cp.Minimize(cp.sum_squares(R @ x - b) / len(b)), cons)
    _solve(cp, prob, "payload", "is com_box too tight?")
    return np.asarray(x.value, float)


def box_of(com_box):
    """``com_box`` as two 3-vectors (lo, hi), or None."""
    if com_box is None:
        return None
    lo, hi = (np.asarray(v, float).reshape(3) for v in com_box)
    if not np.all(lo < hi):
        raise DataError(f"com_box: lower corner {lo.tolist()} not below upper {hi.tolist()}")
    return lo, hi


def identify_payload(model, q, dq, ddq, *, tool_frame: str, tau=None, wrench=None,
                     robot_parameters=None, noise=None, com_box=None,
                     max_condition: float = 1e4, wrench_sign: int = 1) -> PayloadResult:
    """The payload fixed to ``tool_frame`` from joint torques ``tau`` (N x n_joints) or
    the wrist sensor's ``wrench`` (N x 6: force then moment, in ``tool_frame`` at its
    origin: the wrench the sensor exerts on the payload, gravity included), along the
    motion ``q, dq, ddq`` (N x n_joints).

    model: a :class:`RobotModel` or a URDF path / text (without the payload).
    robot_parameters: the robot's own dynamics for ``tau``: an IdentificationResult (its
    ``predict``), a callable ``(q, dq, ddq) -> torques`` or None (the URDF's).
    noise: std per joint (N.m) or per wrench component (or ``(force, moment)``).
    com_box: ``(lo, hi)`` corners (m, tool frame) the centre of mass must lie in.
    max_condition: a motion whose (column-normalised) regressor is worse conditioned is
    refused, naming the parameters it cannot identify.
    wrench_sign: ``-1`` for a sensor reporting the wrench the payload applies to it (the
    estimated offset is then that of the negated reading).
    """
    robot = model if isinstance(model, RobotModel) else load_model(model)
    q, dq, ddq = check_motion(robot, q, dq, ddq)
    box = box_of(com_box)
    if wrench_sign not in (1, -1):
        raise DataError(f"wrench_sign: 1 or -1, got {wrench_sign!r}")
    kind, W, y, groups = equations(robot, tool_frame, q, dq, ddq, tau, wrench,
                                   robot_parameters, wrench_sign)
    s = np.repeat(row_std(kind, noise, len(groups)), len(q))
    Ww, yw = W / s[:, None], y / s
    cond = require_observable(Ww, kind, max_condition)
    x0, cov, _ = least_squares(Ww, yw)
    x = x0 if feasible(x0[:10], box) else constrained_fit(Ww, yw, box)
    return result(tool_frame, kind, x, x0, cov, W, y, groups, cond)


def result(tool_frame, kind, x, x0, cov, W, y, groups, cond) -> PayloadResult:
    """The :class:`PayloadResult` of the estimate ``x`` (unconstrained ``x0``)."""
    pi = x[:10]
    v, sd = mci_vector(pi), mci_std(pi, cov[:10, :10])
    r = (y - W @ x).reshape(len(groups), -1)
    rms = dict(zip(groups, np.sqrt(np.mean(r ** 2, axis=1))))
    wrench = kind == "wrench"
    return PayloadResult(
        tool_frame, kind, float(v[0]), v[1:4], v[4:].reshape(3, 3), float(sd[0]), sd[1:4],
        sd[4:].reshape(3, 3), rms, cond, pi, x0[:10], not np.allclose(x, x0),
        x[10:] if wrench else None, np.sqrt(np.diag(cov)[10:]) if wrench else None,
        r.shape[1])

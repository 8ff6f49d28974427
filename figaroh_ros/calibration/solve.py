"""Estimating the kinematic parameters (Nguyen et al. 2023 §II.C; Nguyen et al. 2024 Eq. 9-10).

1. Initial guess of the unknown frames (measurement frame -> robot, tool -> markers) by
   alternating closed-form registrations on the nominal model (Kabsch / least squares).
2. Identifiability: the kinematic regressor (whitened, masked Jacobian) at that guess goes
   through the QR base-parameter analysis; parameters that are zero columns are
   unidentifiable, dependent ones are grouped into a base parameter and stay at their
   initial value (the base parameter carries their effect).
3. Nonlinear least squares on the base parameters, ``min ||Y - Y_hat(Phi_b)||^2``
   (Eq. 10): Levenberg-Marquardt (scipy MINPACK), iterative linearised least squares
   (Gauss-Newton on Eq. 9), or a robust loss (scipy trust-region), optionally with
   posture outlier rejection.  Standard deviations from ``s^2 (J^T J)^-1``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin
import scipy.linalg as sla
from scipy.optimize import least_squares

import figaroh_ros.calibration.chain_batch as batch
from figaroh_ros.calibration.kinematic_model import KinematicModel, chain_limits
from figaroh_ros.calibration.rigid_fit import kabsch, mean_rotation, plane_frame
from figaroh_ros.errors import DataError, SolverError
from figaroh_ros.identification.base_parameters import (
    TOL_RANK, BaseParameters, base_parameters
)

METHODS = ("lm", "ils", "robust")


@dataclass
class PostureSet:
    """Static postures: chain joint readings ``Q`` (N x n_chain) and measurements ``Y``
    (N x measurement size; orientation as a rotation vector)."""

    Q: np.ndarray
    Y: np.ndarray
    ids: list[str] = field(default_factory=list)

    def __post_init__(self):
        self.Q = np.atleast_2d(np.asarray(self.Q, float))
        self.Y = np.atleast_2d(np.asarray(self.Y, float))
        if self.Q.shape[0] != self.Y.shape[0]:
            raise DataError(f"{self.Q.shape[0]} joint postures but "
                            f"{self.Y.shape[0]} measurements")
        if not self.ids:
            self.ids = [str(i) for i in range(len(self))]

    def __len__(self):
        return self.Q.shape[0]

    def subset(self, idx) -> "PostureSet":
        idx = np.asarray(idx, int)
        return PostureSet(self.Q[idx], self.Y[idx], [self.ids[i] for i in idx])


# ------------------------------------------------------------------ initial frames
def initial_frames(km: KinematicModel, data: PostureSet, x: np.ndarray,
                   iterations: int = 30, plane: bool = False) -> np.ndarray:
    """Set ``km.base0`` (and ``km.tool0`` for poses) and the tool points in ``x`` from the
    nominal model by alternating registrations; returns the updated parameters."""
    x = x.copy()
    if not km.estimate_base:
        iterations = min(iterations, 1)
    if km.estimate_base:
        x[km.groups["base"]] = 0.0
    R, p = km.tool_frames(data.Q, x)                 # with the base frame base0
    Rb0, pb0 = km.base0.rotation, km.base0.translation
    rel = (Rb0.T @ R, batch.apply(Rb0.T, p - pb0))  # start frame -> tool, per posture
    if km.measurement.kind == "pose":
        km.base0, km.tool0 = _pose_frames(km, data, rel, max(iterations, 1))
        return x
    km.base0, P = _point_frames(km, data, rel, km.tool_points(x).copy(),
                                max(iterations, 1), plane)
    x[km.groups["tool"]] = P.ravel()
    return x


def _pose_frames(km, data, rel, iterations) -> tuple[pin.SE3, pin.SE3]:
    """Base and tool frames of pose measurements: ``T_meas = base * rel_i * tool``, each
    the mean (chordal rotation, mean position) of its per-posture candidates in turn."""
    Rr, pr = rel
    Rm = np.array([pin.exp3(y[3:6]) for y in data.Y])
    pm = data.Y[:, :3]
    base, tool = km.base0, km.tool0
    for _ in range(iterations):
        if km.estimate_base:
            RA = Rr @ tool.rotation                       # rel_i * tool
            pA = batch.apply(Rr, tool.translation) + pr
            Rc = Rm @ np.swapaxes(RA, 1, 2)               # T_meas (rel_i * tool)^-1
            base = pin.SE3(mean_rotation(Rc), np.mean(pm - batch.apply(Rc, pA), 0))
        RB = base.rotation @ Rr                           # base * rel_i
        pB = batch.apply(base.rotation, pr) + base.translation
        RBt = np.swapaxes(RB, 1, 2)
        tool = pin.SE3(mean_rotation(RBt @ Rm), np.mean(batch.apply(RBt, pm - pB), 0))
    return base, tool


def _point_frames(km, data, rel, P, iterations, plane) -> tuple[pin.SE3, np.ndarray]:
    """Base frame (Kabsch, or the plane's frame) and tool points (linear least squares,
    ``y = Rb (R_i p + t_i) + tb`` on the masked axes) in turn."""
    meas = km.measurement
    Rr, pr = rel
    Y = data.Y.reshape(len(data), meas.n_points, 3)
    mask = meas.mask.reshape(meas.n_points, 3)
    base = km.base0
    for _ in range(iterations):
        pts = np.einsum("nij,kj->nki", Rr, P) + pr[:, None, :]
        if km.estimate_base:
            base = (plane_frame(pts.reshape(-1, 3)).inverse() if plane
                    else kabsch(pts.reshape(-1, 3), Y.reshape(-1, 3)))
        Rw = base.rotation @ Rr
        tw = batch.apply(base.rotation, pr) + base.translation
        for k in range(meas.n_points):
            A = Rw[:, mask[k], :].reshape(-1, 3)
            b = (Y[:, k] - tw)[:, mask[k]].ravel()
            sol, *_ = np.linalg.lstsq(A, b, rcond=None)
            if plane:   # a point on a plane: keep its in-plane coordinates (unobservable)
                sol = P[k] + np.linalg.lstsq(A, b - A @ P[k], rcond=None)[0]
            P[k] = sol
    return base, P


# ------------------------------------------------------------------ regressor / QR
def whitened(km: KinematicModel, data: PostureSet, x: np.ndarray, jacobian: bool = True):
    """Residuals and Jacobian with the mask applied and every axis divided by its noise."""
    F, J = km.residuals(data.Q, data.Y, x, jacobian)
    m = km.measurement
    w = 1.0 / m.sigma[m.mask]
    f = (F[:, m.mask] * w).ravel()
    if J is None:
        return f, None
    return f, (J[:, m.mask, :] * w[None, :, None]).reshape(-1, km.n_params)


def priority_order(km: KinematicModel) -> np.ndarray:
    """QR column order: base frame or planes, tool frame / points, then the joints from the
    base out, so that frames the user must estimate keep their own names and joint
    placements that duplicate them are the ones grouped."""
    idx = list(range(km.groups["base"].start, km.groups["base"].stop)) if km.estimate_base \
        else []
    idx += [int(i) for i in getattr(km, "plane_columns", ())]    # planes: like the base
    tg = km.groups["tool"]
    idx += list(range(tg.start, tg.stop))
    for j in km.joints:
        s = km.groups[j]
        idx += list(range(s.start, s.stop))
    for j in km.elastic:                      # compliances last: offsets keep their names
        idx.append(km.groups[f"compliance_{j}"].start)
    return np.array(idx)


def identifiable_parameters(km: KinematicModel, data: PostureSet, x: np.ndarray,
                            tol: float = TOL_RANK) -> BaseParameters:
    """Base parameters of the kinematic regressor at ``x`` (indices in ``km.names``), by
    the same numerical-rank rule as the dynamic regressor (scaled columns, singular values
    above ``tol`` times the largest)."""
    _, R = whitened(km, data, x)
    order = priority_order(km)
    bp = base_parameters(R[:, order], [km.names[i] for i in order], tol=tol)
    # map the indices back to the model's own parameter order
    M = np.zeros_like(bp.M)
    M[:, order] = bp.M
    return BaseParameters(bp.names, order[bp.base_index], order[bp.dependent_index],
                          order[bp.zero_index], bp.beta, M)


def structural_parameters(km: KinematicModel, x: np.ndarray, n: int = 100,
                          seed: int = 0) -> BaseParameters:
    """Base parameters of the model itself, from random postures within the joint limits
    (what an exciting enough set of postures would identify)."""
    lo, hi = chain_limits(km, 0.0)
    Q = np.random.default_rng(seed).uniform(lo, hi, size=(n, len(lo)))
    F, _ = km.residuals(Q, np.zeros((n, km.measurement.size)), x)
    Y = F.copy()                     # measurements equal to the predictions
    if km.measurement.kind == "pose":
        Y[:, 3:] = [pin.log3(T.rotation) for T in km.predict(Q, x)]
    return identifiable_parameters(km, PostureSet(Q, Y), x)


def is_angle(name: str) -> bool:
    """Whether a placement or frame parameter is an angle (``...phi...``)."""
    return "phi" in name


def prune_poorly_excited(km: KinematicModel, data: PostureSet, x: np.ndarray,
                         bp: BaseParameters, max_std_position: float,
                         max_std_rotation: float, sigma_scale: float = 1.0,
                         ) -> tuple[BaseParameters, list[str]]:
    """Fix the base parameters the postures do not determine: while the standard
    deviation of some base parameter (at the stated measurement noise times
    ``sigma_scale``, the a-posteriori residual scale of a first fit) exceeds its bound
    (metres or radians), the one furthest beyond is removed from the estimated set and
    kept at its initial value.  Kinematic errors are millimetres and milliradians, so a
    parameter known only to centimetres or tens of milliradians carries no information and
    would only let the fit wander.  Returns the pruned analysis and the removed
    expressions."""
    _, R = whitened(km, data, x)
    keep = list(range(bp.size))
    removed = []
    bounds = np.array([max_std_rotation if (km.names[i].startswith("offset_") and
                                            _offset_is_angle(km, km.names[i]))
                       or (not km.names[i].startswith("offset_") and is_angle(km.names[i]))
                       else max_std_position for i in bp.base_index])
    # a compliance (rad/N.m) is judged by the deflection it explains, not by these bounds
    bounds[[km.names[i].startswith("compliance_") for i in bp.base_index]] = np.inf
    while len(keep) > 1:
        J = R[:, bp.base_index[keep]]
        _, Rq = np.linalg.qr(J)
        d = np.abs(np.diag(Rq))
        if d.min() <= 1e-14 * d.max():
            ratio = np.zeros(len(keep))
            ratio[np.argmin(d)] = np.inf
        else:
            Rinv = sla.solve_triangular(Rq, np.eye(len(keep)))
            std = sigma_scale * np.sqrt(np.einsum("ij,ij->i", Rinv, Rinv))
            ratio = std / bounds[keep]
        worst = int(np.argmax(ratio))
        if ratio[worst] <= 1.0:
            break
        removed.append(bp.names[keep[worst]])
        del keep[worst]
    if not removed:
        return bp, []
    k = np.array(keep)
    pruned = BaseParameters([bp.names[i] for i in k], bp.base_index[k], bp.dependent_index,
                            bp.zero_index, bp.beta[k], bp.M[k])
    return pruned, removed


def _offset_is_angle(km: KinematicModel, name: str) -> bool:
    S = km._motion_subspace(km.model.getJointId(name[len("offset_"):]))
    return bool(np.linalg.norm(S[3:]) > 0.5)


# ------------------------------------------------------------------ solving
@dataclass
class Estimate:
    x: np.ndarray                 # all parameters (dependent ones at their initial value)
    free: np.ndarray              # indices of the estimated (base) parameters
    expressions: list[str]        # grouped expression of each estimated parameter
    std: np.ndarray               # standard deviation of each estimated parameter
    sigma: float                  # residual std of the whitened equations (1 = as stated)
    unidentifiable: list[str]
    grouped: list[str]
    rejected: list[str]           # posture ids rejected as outliers
    iterations: int
    method: str
    kept: np.ndarray              # indices of the postures used in the final fit
    condition_number: float = float("nan")
    converged: bool = True


def _covariance_std(J: np.ndarray, f: np.ndarray) -> tuple[np.ndarray, float]:
    m, n = J.shape
    if m <= n:
        raise SolverError(f"{m} measured values for {n} identifiable parameters: "
                          "measure more postures")
    _, R = np.linalg.qr(J)
    d = np.abs(np.diag(R))
    if d.min() <= 1e-12 * d.max():
        raise SolverError("the kinematic regressor is rank deficient at the solution")
    s2 = float(f @ f) / (m - n)
    Rinv = sla.solve_triangular(R, np.eye(n))
    return np.sqrt(s2 * np.einsum("ij,ij->i", Rinv, Rinv)), float(np.sqrt(s2))


class Evaluations:
    """Whitened residuals ``fun(z)`` and regressor ``jac(z)`` of the free parameters ``z``
    (the others at ``x0``), each computed once per ``z``: scipy asks again at points it
    has already evaluated (start, accepted steps, solution)."""

    KEEP = 4

    def __init__(self, km, data, x0, free):
        self.km, self.data, self.x0, self.free = km, data, x0, free
        self.f, self.J = {}, {}

    def _x(self, z):
        x = self.x0.copy()
        x[self.free] = z
        return x

    def _keep(self, memo, key, value):
        if len(memo) >= self.KEEP:
            memo.pop(next(iter(memo)))
        memo[key] = value
        return value.copy()

    def fun(self, z):
        key = np.asarray(z, float).tobytes()
        if key in self.f:
            return self.f[key].copy()
        return self._keep(self.f, key, whitened(self.km, self.data, self._x(z), False)[0])

    def jac(self, z):
        key = np.asarray(z, float).tobytes()
        if key in self.J:
            return self.J[key].copy()
        f, J = whitened(self.km, self.data, self._x(z))
        self._keep(self.f, key, f)
        return self._keep(self.J, key, J[:, self.free])


def fit_parameters(km, data, x0, free, method, max_iterations):
    ev = Evaluations(km, data, x0, free)
    fun, jac = ev.fun, ev.jac
    z0 = x0[free].copy()
    if method == "lm":
        sol = least_squares(fun, z0, jac=jac, method="lm", xtol=1e-10, ftol=1e-12,
                            gtol=1e-10, max_nfev=max_iterations * (len(z0) + 1))
        z, it, ok = sol.x, sol.nfev, sol.status > 0
    elif method == "robust":
        sol = least_squares(fun, z0, jac=jac, method="trf", loss="soft_l1", f_scale=3.0,
                            xtol=1e-12, ftol=1e-12, max_nfev=max_iterations)
        z, it, ok = sol.x, sol.nfev, sol.status > 0
    elif method == "ils":
        z, it, ok = z0, 0, False
        for it in range(1, max_iterations + 1):
            f, J = fun(z), jac(z)
            dz = np.linalg.lstsq(J, -f, rcond=None)[0]
            z = z + dz
            if np.linalg.norm(dz) <= 1e-10 * (1.0 + np.linalg.norm(z)):
                ok = True
                break
    else:
        raise SolverError(f"unknown solver {method!r}; expected one of {METHODS}")
    x = x0.copy()
    x[free] = z
    return x, it, ok


def posture_errors(km: KinematicModel, data: PostureSet, x: np.ndarray) -> np.ndarray:
    """Position error norm (m) of each measured point, N x n_points (masked axes only)."""
    F, _ = km.residuals(data.Q, data.Y, x)
    m = km.measurement
    pos = np.where(m.mask & m.is_position, F, 0.0)
    if m.kind == "pose":
        return np.linalg.norm(pos[:, :3], axis=1)[:, None]
    return np.linalg.norm(pos.reshape(len(data), m.n_points, 3), axis=2)


def _same_fit(first_fit: tuple | None, x0, free, method: str) -> tuple | None:
    """The answer of ``first_fit`` if it was made from ``x0`` on ``free`` with ``method``."""
    if first_fit is None:
        return None
    x_start, fit_free, fit_method, answer = first_fit
    same = fit_method == method and np.array_equal(fit_free, free) and \
        np.array_equal(x_start, x0)
    return answer if same else None


def estimate(km: KinematicModel, data: PostureSet, x0: np.ndarray, method: str = "lm",
             outlier_threshold: float | None = None, max_iterations: int = 100,
             bp: BaseParameters | None = None, first_fit: tuple | None = None) -> Estimate:
    """Estimate the base kinematic parameters from ``data`` starting at ``x0``.

    ``outlier_threshold`` (m): postures whose largest point error exceeds it after a fit
    are rejected and the fit is repeated (at most a quarter of the postures).
    ``first_fit``: ``(x0, free, method, answer)`` of a ``fit_parameters`` call on ``data``
    already made (the pruning step's); its answer is this fit's only when its start, free
    parameters and method are this fit's, otherwise the fit is done again."""
    if method not in METHODS:
        raise SolverError(f"unknown solver {method!r}; expected one of {METHODS}")
    if bp is None:
        bp = identifiable_parameters(km, data, x0)
    free = bp.base_index
    first_fit = _same_fit(first_fit, x0, free, method)
    kept = np.arange(len(data))
    x = x0
    total_it = 0
    while True:
        x, it, converged = first_fit or fit_parameters(km, data.subset(kept), x0, free, method,
                                                       max_iterations)
        first_fit = None
        total_it += it
        if outlier_threshold is None:
            break
        err = posture_errors(km, data.subset(kept), x).max(axis=1)
        bad = err > outlier_threshold
        if not bad.any() or len(kept) - bad.sum() < 0.75 * len(data):
            break
        kept = kept[~bad]
        x0 = x
    sub = data.subset(kept)
    f, J = whitened(km, sub, x)
    Jf = J[:, free]
    std, sigma = _covariance_std(Jf, f)
    s = np.linalg.svd(Jf / np.linalg.norm(Jf, axis=0), compute_uv=False)
    rejected = [data.ids[i] for i in np.setdiff1d(np.arange(len(data)), kept)]
    grouped = [e for e in bp.names if " " in e]
    return Estimate(x=x, free=free, expressions=list(bp.names), std=std, sigma=sigma,
                    unidentifiable=[km.names[i] for i in bp.zero_index],
                    grouped=grouped, rejected=rejected, iterations=total_it,
                    method=method, kept=kept,
                    condition_number=float(s[0] / s[-1]), converged=converged)


def leave_one_out(km: KinematicModel, data: PostureSet, x_start: np.ndarray,
                  free: np.ndarray, method: str = "lm", max_iterations: int = 100) -> np.ndarray:
    """Cross-validated position error of each posture (m, largest point): the model is
    fitted without that posture and scored on it.  For sets too small to spare a
    validation file."""
    out = np.zeros(len(data))
    for i in range(len(data)):
        rest = data.subset([k for k in range(len(data)) if k != i])
        x, _, _ = fit_parameters(km, rest, x_start, free, method, max_iterations)
        out[i] = posture_errors(km, data.subset([i]), x).max()
    return out


@dataclass
class Accuracy:
    """Errors of a model on a posture set (metres / radians)."""

    rmse: float               # sqrt(mean ||e_i||^2) over postures and points (position)
    max: float
    per_axis_rmse: dict       # per measured axis label
    per_posture: np.ndarray   # largest point error of each posture
    orientation_rmse: float | None = None

    def to_dict(self) -> dict:
        d = {"rmse_mm": 1e3 * self.rmse, "max_mm": 1e3 * self.max,
             "per_axis_rmse_mm": {k: 1e3 * v for k, v in self.per_axis_rmse.items()}}
        if self.orientation_rmse is not None:
            d["orientation_rmse_mrad"] = 1e3 * self.orientation_rmse
        return d


def accuracy(km: KinematicModel, data: PostureSet, x: np.ndarray,
             points: list[int] | None = None) -> Accuracy:
    """Position RMSE as ``sqrt(mean ||e||^2)`` of the per-point 3D errors (the convention
    of FIGAROH's reports), on the points ``points`` (0-based; default all)."""
    F, _ = km.residuals(data.Q, data.Y, x)
    m = km.measurement
    Fm = np.where(m.mask, F, 0.0)
    if m.kind == "pose":
        E = Fm[:, None, :3]
    else:
        E = Fm.reshape(len(data), m.n_points, 3)
    if points is not None:
        E = E[:, points]
    norms = np.linalg.norm(E, axis=2)
    labels = m.labels
    per_axis = {labels[a]: float(np.sqrt(np.mean(F[:, a] ** 2)))
                for a in range(m.size) if m.mask[a]}
    orient = None
    if m.kind == "pose" and m.mask[3:].any():
        orient = float(np.sqrt(np.mean(np.sum(Fm[:, 3:] ** 2, axis=1))))
    return Accuracy(float(np.sqrt(np.mean(norms ** 2))), float(norms.max()), per_axis,
                    norms.max(axis=1), orient)

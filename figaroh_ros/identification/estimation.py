"""Least-squares estimation of base parameters and its statistics (Nguyen et al. 2023 Eq. 6-7).

* OLS: ``phi_b = argmin ||Y - W_b phi_b||`` (Eq. 6), from the triangular factor of the
  QR decomposition of ``[W_b | Y]`` (never the normal equations): its top rows are
  ``[R | Q^T Y]`` and its last diagonal entry is the residual norm, so ``Q`` is never
  formed.
* WLS (Gautier 1997): each joint's equations are divided by the standard deviation of its
  own OLS residual, ``sigma_j^2 = ||Y_j - W_j phi_ols||^2 / (N_j - c_j)`` (Eq. 7).  Both
  fits from one QR factorisation of each joint's rows (``row_blocks.py``).
* Relative standard deviation: ``sigma_rho^2 = ||Y - W phi||^2 / (r - c)``,
  ``C = sigma_rho^2 (W^T W)^-1`` (kept whole: exported beside the URDF and propagated to
  predicted-torque bands), ``%sigma_i = 100 sqrt(C_ii) / |phi_i|`` (Presse & Gautier).
* IRLS (Holland & Welsch 1977): Huber's M-estimate, robust to outlier samples (a torque
  spike, a dropped message read as zero).  Each joint's residual is scaled by its own
  robust std (the normalised median absolute deviation, as Gautier's WLS scales by the
  std), rows are weighted by ``w = min(1, c / |u|)`` of their scaled residual ``u``
  (``c = 1.345``: 95 % efficiency on gaussian noise) and the weighted least squares solved
  again until the estimate settles.  Its covariance is Huber's asymptotic one (Huber,
  Robust Statistics, 1981, §7.6): ``K^2 [sum psi(u)^2 / (N - p)] / mean(psi'(u))^2
  (W_s^T W_s)^-1`` on the scaled system ``W_s``, ``K = 1 + p/N var(psi') / mean(psi')^2``.
* Essential parameters (Pham & Gautier 1991): remove the base parameter of largest %sigma,
  re-estimate, until max %sigma / min %sigma is below a ratio.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
from scipy.stats import median_abs_deviation

from figaroh_ros.errors import DataError
from figaroh_ros.identification.row_blocks import RowBlocks, row_blocks

Factor = tuple   # (R, Q^T Y, residual sum of squares, rows) of a compressed system


@dataclass
class Estimate:
    """Identified parameters with their statistics."""

    phi: np.ndarray
    std: np.ndarray             # absolute standard deviation
    residual_sigma: float       # sigma_rho of the (weighted) system
    joint_sigma: np.ndarray | None = None  # per-joint residual std used by WLS
    cov: np.ndarray | None = None          # covariance sigma_rho^2 (W^T W)^-1
    row_weights: np.ndarray | None = None  # IRLS: the final weight of every row

    @property
    def std_percent(self) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return 100.0 * self.std / np.abs(self.phi)


def _check(W: np.ndarray, Y: np.ndarray):
    if W.ndim != 2 or Y.ndim != 1 or W.shape[0] != Y.shape[0]:
        raise DataError(f"observation matrix {W.shape} and measurements {Y.shape} do not match")
    if W.shape[0] <= W.shape[1]:
        raise DataError(f"{W.shape[0]} equations for {W.shape[1]} parameters: "
                         "record more samples")
    if not (np.all(np.isfinite(W)) and np.all(np.isfinite(Y))):
        raise DataError("observation matrix or measurements contain NaN or inf")


def ordinary_least_squares(W: np.ndarray, Y: np.ndarray) -> Estimate:
    """OLS estimate (Nguyen et al. 2023 Eq. 6) and its covariance sigma^2 (W^T W)^-1, both from one
    QR factorisation W = QR (never the normal equations)."""
    _check(W, Y)
    return _least_squares(W, Y, W.shape[0], 0.0)


def compressed(W: np.ndarray, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """``(R, Q^T Y, ||Y - Q Q^T Y||^2)`` of ``W = QR``, from the R factor of ``[W | Y]``."""
    p = W.shape[1]
    R = np.linalg.qr(np.column_stack([W, Y]), mode="r")
    return R[:p, :p], R[:p, p], float(R[p, p] ** 2) if R.shape[0] > p else 0.0


def _least_squares(W: np.ndarray, Y: np.ndarray, rows: int, rss_rest: float) -> Estimate:
    """OLS on ``W x = Y`` standing for ``rows`` equations whose part outside the column
    space of ``W`` has the residual sum of squares ``rss_rest`` (0 unless ``W`` is the R
    factor of a larger system)."""
    R, b, rss = compressed(W, Y)
    return _solve(R, b, rss + rss_rest, rows)


def _solve(R: np.ndarray, b: np.ndarray, rss: float, rows: int) -> Estimate:
    """The estimate of the compressed system ``R x = b`` (residual sum of squares ``rss``)
    of ``rows`` equations, and its covariance ``sigma^2 R^-1 R^-T``."""
    d = np.abs(np.diag(R))
    if d.min() <= 1e-12 * d.max():
        raise np.linalg.LinAlgError("the base regressor is rank deficient on this data: "
                                    "the recording does not excite every base parameter")
    phi = sla.solve_triangular(R, b)
    s2 = rss / (rows - R.shape[1])
    Rinv = sla.solve_triangular(R, np.eye(R.shape[0]))
    cov = s2 * Rinv @ Rinv.T
    return Estimate(phi, np.sqrt(np.diag(cov)), np.sqrt(s2), cov=cov)


def group_factors(W: np.ndarray, Y: np.ndarray, row_joint: np.ndarray, n_joints: int,
                  row_block: np.ndarray | None = None, n_blocks: int = 1) -> RowBlocks:
    """The equations checked and factored per joint (row group) and time block
    (``row_blocks.py``)."""
    _check(W, Y)
    return row_blocks(W, Y, row_joint, n_joints, row_block, n_blocks)


def _stacked_fit(S: np.ndarray, rows: int) -> tuple[Estimate, Factor]:
    """OLS on the stacked block factors ``S = [A | y]`` of ``rows`` equations, and its
    compressed system."""
    if rows <= S.shape[1] - 1:
        raise DataError(f"{rows} equations for {S.shape[1] - 1} parameters: "
                         "record more samples")
    R, b, rss = compressed(S[:, :-1], S[:, -1])
    return _solve(R, b, rss, rows), (R, b, rss, rows)


def block_ordinary_least_squares(blocks: RowBlocks) -> tuple[Estimate, Factor]:
    """OLS (Eq. 6) on every row of ``blocks``, and its compressed system."""
    return _stacked_fit(blocks.stacked(), blocks.size)


def block_weighted_least_squares(blocks: RowBlocks, ols: Estimate | None = None
                                 ) -> tuple[Estimate, Factor]:
    """Gautier's WLS (Eq. 7) on every row of ``blocks`` (``ols``: their OLS estimate if
    known), and its compressed weighted system.  Each joint's residual std has the joint's
    own degrees of freedom: its rows minus the parameters that appear in them."""
    if ols is None:
        ols = block_ordinary_least_squares(blocks)[0]
    dof = np.maximum(blocks.rows.sum(axis=1) - blocks.parameters_seen(), 1)
    sig = np.sqrt(blocks.residual_sums(ols.phi) / dof)
    if np.any(sig <= 0):
        bad = [j for j in range(len(sig)) if sig[j] <= 0]
        raise DataError(f"joint(s) {bad} have zero residual: WLS weights undefined")
    est, factor = _stacked_fit(blocks.stacked(1.0 / sig), blocks.size)
    est.joint_sigma = sig
    return est, factor


def weighted_least_squares(W: np.ndarray, Y: np.ndarray, row_joint: np.ndarray,
                           n_joints: int) -> Estimate:
    """Gautier's WLS: per-joint weights 1/sigma_j from the OLS residual (Nguyen et al. 2023 Eq. 7).
    The returned ``std`` is that of the weighted system (the WLS covariance)."""
    return block_weighted_least_squares(group_factors(W, Y, row_joint, n_joints))[0]


HUBER_C = 1.345          # Huber's tuning constant: 95 % efficiency on gaussian noise
IRLS_ITERATIONS = 100
IRLS_TOLERANCE = 1e-10   # relative change of the estimate that ends the iterations


def robust_scales(r: np.ndarray, row_joint: np.ndarray, n_joints: int) -> np.ndarray:
    """Per joint the normalised median absolute deviation of its residuals ``r`` (the std
    on gaussian noise; an outlier moves it little); a :class:`DataError` when a joint's
    residuals are mostly zero (the scale, and every weight, undefined)."""
    s = np.array([median_abs_deviation(r[row_joint == j], scale="normal")
                  if np.any(row_joint == j) else 1.0 for j in range(n_joints)])
    if np.any(~(s > 0)):
        bad = [j for j in range(n_joints) if not s[j] > 0]
        raise DataError(f"joint(s) {bad}: most residuals are zero: IRLS weights undefined")
    return s


def iteratively_reweighted_least_squares(W: np.ndarray, Y: np.ndarray,
                                         row_joint: np.ndarray | None = None,
                                         n_joints: int = 1, c: float = HUBER_C
                                         ) -> tuple[Estimate, Factor]:
    """Huber's M-estimate of ``W phi = Y`` by IRLS (Holland & Welsch 1977), each row group
    (joint) scaled by the robust std of its residual; started from OLS.  Returns the
    estimate (``joint_sigma``: the final robust scales, ``row_weights``: the final Huber
    weights, ``cov``: Huber's asymptotic covariance) and the compressed system of the
    final weighted equations (for the essential parameters)."""
    _check(W, Y)
    g = np.zeros(len(Y), int) if row_joint is None else np.asarray(row_joint, int)
    n_joints = max(n_joints, int(g.max()) + 1)
    phi = ordinary_least_squares(W, Y).phi
    for _ in range(IRLS_ITERATIONS):
        r = Y - W @ phi
        s = robust_scales(r, g, n_joints)
        u = r / s[g]
        w = np.minimum(1.0, c / np.maximum(np.abs(u), 1e-300))
        a = np.sqrt(w) / s[g]
        R, b, rss = compressed(W * a[:, None], Y * a)
        new = _solve(R, b, rss, len(Y)).phi
        done = np.linalg.norm(new - phi) <= IRLS_TOLERANCE * (np.linalg.norm(phi) + 1e-300)
        phi = new
        if done:
            break
    r = Y - W @ phi
    s = robust_scales(r, g, n_joints)
    u = r / s[g]
    w = np.minimum(1.0, c / np.maximum(np.abs(u), 1e-300))
    a = np.sqrt(w) / s[g]
    factor = compressed(W * a[:, None], Y * a)
    N, p = W.shape
    inside = (np.abs(u) <= c).astype(float)             # psi'(u) of Huber's psi
    m = inside.mean()
    if m <= 0:
        raise DataError("IRLS: every row is an outlier of the fit: no estimate")
    K = 1.0 + p / N * inside.var() / m ** 2
    scale2 = K ** 2 * np.sum(np.clip(u, -c, c) ** 2) / (N - p) / m ** 2
    Rs = compressed(W / s[g][:, None], Y / s[g])[0]
    Rinv = sla.solve_triangular(Rs, np.eye(p))
    cov = scale2 * Rinv @ Rinv.T
    est = Estimate(phi, np.sqrt(np.diag(cov)), float(np.sqrt(scale2)), joint_sigma=s,
                   cov=cov, row_weights=w)
    return est, (factor[0], factor[1], factor[2], N)


def essential_parameters(W: np.ndarray, Y: np.ndarray, ratio: float = 30.0,
                         row_joint: np.ndarray | None = None, n_joints: int = 0,
                         weighted: bool = False,
                         joint_sigma: np.ndarray | None = None) -> tuple[np.ndarray, Estimate]:
    """Indices (into the columns of W) of the essential parameters and their estimate
    (:func:`essential_set`). ``weighted``: on Gautier's WLS system (``joint_sigma``: its
    weights if known)."""
    if weighted and joint_sigma is None:
        return essential_set(block_weighted_least_squares(
            group_factors(W, Y, row_joint, n_joints))[1], ratio)
    if weighted:
        # Gautier's weights come from the residual of the full base model, computed once
        w = 1.0 / joint_sigma[row_joint]
        W, Y = W * w[:, None], Y * w
    _check(W, Y)
    R, b, rss = compressed(W, Y)
    return essential_set((R, b, rss, W.shape[0]), ratio)


def essential_set(factor: Factor, ratio: float = 30.0) -> tuple[np.ndarray, Estimate]:
    """Iteratively drop the parameter of worst %sigma until max %sigma <= ratio * min
    %sigma, on the compressed system ``factor`` (every subset of columns is fitted on
    ``(R, Q^T Y)``: the same estimate and residual, P rows instead of N)."""
    R, b, rss_rest, rows = factor
    keep = np.arange(R.shape[1])

    def fit(cols):
        return _least_squares(R[:, cols], b, rows, rss_rest)

    est = fit(keep)
    while len(keep) > 1:
        sp = est.std_percent
        if sp.max() <= ratio * sp.min():
            break
        keep = np.delete(keep, int(np.argmax(sp)))
        est = fit(keep)
    return keep, est


def rmse_per_joint(Y: np.ndarray, Y_hat: np.ndarray, row_joint: np.ndarray,
                   n_joints: int) -> np.ndarray:
    err = Y - Y_hat
    return np.array([np.sqrt(np.mean(err[row_joint == j] ** 2)) for j in range(n_joints)])

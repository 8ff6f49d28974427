"""Least-squares estimation of base parameters and its statistics (seed 000 Eq. 6-7).

* OLS: ``phi_b = argmin ||Y - W_b phi_b||`` (Eq. 6), from the triangular factor of the
  QR decomposition of ``[W_b | Y]`` (never the normal equations): its top rows are
  ``[R | Q^T Y]`` and its last diagonal entry is the residual norm, so ``Q`` is never
  formed.
* WLS (Gautier 1997): each joint's equations are divided by the standard deviation of its
  own OLS residual, ``sigma_j^2 = ||Y_j - W_j phi_ols||^2 / (N_j - c_j)`` (Eq. 7).
* Relative standard deviation: ``sigma_rho^2 = ||Y - W phi||^2 / (r - c)``,
  ``C = sigma_rho^2 (W^T W)^-1`` (kept whole: exported beside the URDF and propagated to
  predicted-torque bands), ``%sigma_i = 100 sqrt(C_ii) / |phi_i|`` (Presse & Gautier).
* Essential parameters (Pham & Gautier 1991): remove the base parameter of largest %sigma,
  re-estimate, until max %sigma / min %sigma is below a ratio.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla

from figaroh_ros.errors import DataError


@dataclass
class Estimate:
    """Identified parameters with their statistics."""

    phi: np.ndarray
    std: np.ndarray             # absolute standard deviation
    residual_sigma: float       # sigma_rho of the (weighted) system
    joint_sigma: np.ndarray | None = None  # per-joint residual std used by WLS
    cov: np.ndarray | None = None          # covariance sigma_rho^2 (W^T W)^-1

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
    """OLS estimate (seed 000 Eq. 6) and its covariance sigma^2 (W^T W)^-1, both from one
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
    d = np.abs(np.diag(R))
    if d.min() <= 1e-12 * d.max():
        raise np.linalg.LinAlgError("the base regressor is rank deficient on this data: "
                                    "the recording does not excite every base parameter")
    phi = sla.solve_triangular(R, b)
    s2 = (rss + rss_rest) / (rows - W.shape[1])
    Rinv = sla.solve_triangular(R, np.eye(R.shape[0]))
    cov = s2 * Rinv @ Rinv.T
    return Estimate(phi, np.sqrt(np.diag(cov)), np.sqrt(s2), cov=cov)


def joint_residual_sigma(W: np.ndarray, Y: np.ndarray, phi: np.ndarray,
                         row_joint: np.ndarray, n_joints: int) -> np.ndarray:
    """Per-joint residual std with the joint's own degrees of freedom (rows minus the
    number of parameters that appear in its rows)."""
    res = Y - W @ phi
    sig = np.zeros(n_joints)
    for j in range(n_joints):
        rows = row_joint == j
        c = int(np.count_nonzero(np.any(np.abs(W[rows]) > 0, axis=0)))
        dof = max(int(rows.sum()) - c, 1)
        sig[j] = np.sqrt(float(res[rows] @ res[rows]) / dof)
    return sig


def weighted_least_squares(W: np.ndarray, Y: np.ndarray, row_joint: np.ndarray,
                           n_joints: int) -> Estimate:
    """Gautier's WLS: per-joint weights 1/sigma_j from the OLS residual (seed 000 Eq. 7).
    The returned ``std`` is that of the weighted system (the WLS covariance)."""
    ols = ordinary_least_squares(W, Y)
    sig = joint_residual_sigma(W, Y, ols.phi, row_joint, n_joints)
    if np.any(sig <= 0):
        bad = [j for j in range(n_joints) if sig[j] <= 0]
        raise DataError(f"joint(s) {bad} have zero residual: WLS weights undefined")
    w = 1.0 / sig[row_joint]
    est = ordinary_least_squares(W * w[:, None], Y * w)
    est.joint_sigma = sig
    return est


def essential_parameters(W: np.ndarray, Y: np.ndarray, ratio: float = 30.0,
                         row_joint: np.ndarray | None = None, n_joints: int = 0,
                         weighted: bool = False,
                         joint_sigma: np.ndarray | None = None) -> tuple[np.ndarray, Estimate]:
    """Indices (into the columns of W) of the essential parameters and their estimate:
    iteratively drop the parameter of worst %sigma until max %sigma <= ratio * min %sigma.
    ``weighted``: on Gautier's WLS system (``joint_sigma``: its weights if known)."""
    keep = np.arange(W.shape[1])
    if weighted:
        # Gautier's weights come from the residual of the full base model, computed once
        sig = joint_sigma if joint_sigma is not None else \
            weighted_least_squares(W, Y, row_joint, n_joints).joint_sigma
        w = 1.0 / sig[row_joint]
        W, Y = W * w[:, None], Y * w

    # every subset of columns is fitted on the QR-compressed system (R, Q^T Y): the same
    # estimate and residual, P rows instead of N
    _check(W, Y)
    R, b, rss_rest = compressed(W, Y)

    def fit(cols):
        return _least_squares(R[:, cols], b, W.shape[0], rss_rest)

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

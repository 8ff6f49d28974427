"""Excitation criteria of a (weighted) base regressor ``W`` (Nguyen et al. 2023 Table II; Tröbinger et al.
Eq. 11), each returned with its gradient ``G = d criterion / d W`` so that the chain rule
through the regressor gives exact derivatives.  All are minimised.

* ``cond``: the log condition number ``log(s_1 / s_p)``.  It is not differentiable where
  the largest or smallest singular values cross, which is exactly where an optimiser
  drives them, so the optimiser sees its smooth upper bound
  ``(1/r) log sum_i s_i^r + (1/r) log sum_i s_i^-r  >=  log(s_1 / s_p)`` (log-sum-exp of
  the log singular values; equal as ``r -> inf``, off by at most ``2 log(p) / r``), with
  ``d/dW = U diag((a_i - b_i) / s_i) V^T``, ``a`` and ``b`` the soft-max weights of the
  largest and smallest values.
* ``logdet``: ``-log det(W^T W)`` (D-optimal, the Fisher information with the noise in
  the weights); ``G = -2 W (W^T W)^-1``.
* ``sigma_min``: ``-log s_min``; ``G = -u_p v_p^T / s_p``.
"""
from __future__ import annotations

import numpy as np

CRITERIA = ("cond", "logdet", "sigma_min")
SOFT_MAX_EXPONENT = 10.0      # r above: cond = 40 is seen as at most ~1.2x larger


def criterion(W: np.ndarray, kind: str,
              r: float = SOFT_MAX_EXPONENT) -> tuple[float, np.ndarray]:
    """(value, dvalue/dW) of the smooth criterion the optimiser minimises."""
    if kind not in CRITERIA:
        raise ValueError(f"criterion must be one of {CRITERIA}, got {kind!r}")
    if kind == "logdet":
        M = W.T @ W
        L = np.linalg.cholesky(M)
        value = -2.0 * float(np.sum(np.log(np.diag(L))))
        Minv = np.linalg.inv(M)
        return value, -2.0 * W @ Minv
    U, s, Vt = np.linalg.svd(W, full_matrices=False)
    if s[-1] <= 0:
        return float("inf"), np.zeros_like(W)
    if kind == "sigma_min":
        return -float(np.log(s[-1])), -np.outer(U[:, -1], Vt[-1]) / s[-1]
    ls = np.log(s)
    a = np.exp(r * (ls - ls[0]))
    b = np.exp(-r * (ls - ls[-1]))
    value = (ls[0] + np.log(a.sum()) / r) - (ls[-1] - np.log(b.sum()) / r)
    return float(value), (U * ((a / a.sum() - b / b.sum()) / s)) @ Vt


def criterion_value(W: np.ndarray, kind: str) -> float:
    """The exact criterion (for ``cond`` the log condition number itself)."""
    if kind == "logdet":
        return criterion(W, kind)[0]
    e = np.linalg.eigvalsh(W.T @ W)          # squared singular values, ascending
    if e[0] <= 0:
        return float("inf")
    return 0.5 * float(np.log(e[-1] / e[0])) if kind == "cond" else -0.5 * float(np.log(e[0]))

"""Excitation criteria of a (weighted) base regressor ``W`` (seed 000 Table II; seed 003
Eq. 11), each returned with its gradient ``G = d criterion / d W`` so that the chain rule
through the regressor gives exact derivatives.  All are minimised.

* ``cond``: log of the condition number ``log(s_max / s_min)``;
  ``G = u_1 v_1^T / s_1 - u_p v_p^T / s_p`` (simple extreme singular values).
* ``logdet``: ``-log det(W^T W)`` (D-optimal, the Fisher information with the noise in
  the weights); ``G = -2 W (W^T W)^-1``.
* ``sigma_min``: ``-log s_min``; ``G = -u_p v_p^T / s_p``.
"""
from __future__ import annotations

import numpy as np

CRITERIA = ("cond", "logdet", "sigma_min")


def criterion(W: np.ndarray, kind: str) -> tuple[float, np.ndarray]:
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
    g_min = np.outer(U[:, -1], Vt[-1]) / s[-1]
    if kind == "sigma_min":
        return -float(np.log(s[-1])), -g_min
    return float(np.log(s[0] / s[-1])), np.outer(U[:, 0], Vt[0]) / s[0] - g_min


def condition_number(W: np.ndarray) -> float:
    s = np.linalg.svd(W, compute_uv=False)
    return float(s[0] / s[-1]) if s[-1] > 0 else float("inf")

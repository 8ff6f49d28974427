"""Base parameters by QR decomposition (seed 000 §II.B; Gautier 1990, Khalil & Dombre).

The standard regressor W is rank deficient. Its columns split into

* zero columns: parameters with no effect on the measured torques;
* independent columns W1 (the base set), chosen greedily in the standard order: a column
  is independent when it is not a linear combination of the columns before it (diagonal
  of R of the QR decomposition), so the first parameter of each group carries the name;
* dependent columns W2 = W1 beta.

The base parameters are ``phi_b = phi_1 + beta phi_2``, i.e. ``phi_b = M phi`` with
``M = [I beta]`` permuted back into the standard order, and ``W phi = W_b phi_b``.
The numerical rank is confirmed by QR with column pivoting, which is rank revealing.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla

TOL_RANK = 1e-8      # relative to the largest diagonal of R
TOL_BETA = 1e-6      # coefficients below this are printed as zero
MAX_QR_ROWS = 6000   # base parameters from a random subset of this many rows


@dataclass
class BaseParameters:
    """Result of the base-parameter analysis of a standard regressor."""

    names: list[str]                 # grouped expressions, in base order
    base_index: np.ndarray           # standard columns chosen as base (in order)
    dependent_index: np.ndarray      # standard columns expressed through the base ones
    zero_index: np.ndarray           # standard columns with no effect on the data
    beta: np.ndarray                 # W[:, dependent] = W[:, base] @ beta
    M: np.ndarray                    # phi_b = M @ phi  (n_base x n_standard)

    @property
    def size(self) -> int:
        return len(self.base_index)

    def base_regressor(self, W: np.ndarray) -> np.ndarray:
        """Base regressor: since W2 = W1 beta, W phi = W1 (phi1 + beta phi2) = W1 phi_b, so
        W_b is the base columns of any regressor built with the same layout."""
        return W[:, self.base_index]

    def from_standard(self, phi: np.ndarray) -> np.ndarray:
        return self.M @ phi


def _row_sample(W: np.ndarray, max_rows: int, seed: int = 0) -> np.ndarray:
    if W.shape[0] <= max_rows:
        return W
    rng = np.random.default_rng(seed)
    return W[np.sort(rng.choice(W.shape[0], max_rows, replace=False))]


def _independent_columns(W: np.ndarray, tol: float) -> np.ndarray:
    """Columns that are not combinations of earlier columns (greedy in column order)."""
    # Orthonormalise column by column (two Gram-Schmidt passes on the R factor, which
    # spans the same column space but is only n x n).
    R = np.linalg.qr(W, mode="r")
    scale = max(np.linalg.norm(R, axis=0).max(), 1e-300)
    Qb = np.zeros((R.shape[0], 0))
    keep = []
    for j in range(R.shape[1]):
        c = R[:, j].copy()
        for _ in range(2):
            c -= Qb @ (Qb.T @ c)
        nrm = np.linalg.norm(c)
        if nrm > tol * scale:
            keep.append(j)
            Qb = np.column_stack([Qb, c / nrm])
    return np.array(keep, dtype=int)


def base_parameters(W: np.ndarray, names: list[str], tol: float = TOL_RANK,
                    decimals: int = 6) -> BaseParameters:
    """Base parameters of the standard regressor ``W`` with standard names ``names``."""
    if W.shape[1] != len(names):
        raise ValueError(f"regressor has {W.shape[1]} columns but {len(names)} names")
    Ws = _row_sample(W, MAX_QR_ROWS)
    col_norm = np.linalg.norm(Ws, axis=0)
    scale = col_norm.max()
    nonzero = np.flatnonzero(col_norm > tol * scale * 1e-2)
    zero = np.setdiff1d(np.arange(W.shape[1]), nonzero)
    # scale columns so that units (kg vs kg m^2) do not bias the independence test
    Wn = Ws[:, nonzero] / col_norm[nonzero]
    keep = _independent_columns(Wn, tol)
    # rank check with the rank-revealing pivoted QR
    _, Rp, _ = sla.qr(Wn, mode="economic", pivoting=True)
    d = np.abs(np.diag(Rp))
    rank = int(np.sum(d > tol * d[0]))
    if rank != len(keep):
        raise np.linalg.LinAlgError(
            f"base parameter selection found {len(keep)} independent columns but the "
            f"pivoted QR rank is {rank}: the excitation is too poor to separate them")
    base = nonzero[keep]
    dep = np.setdiff1d(nonzero, base)
    W1, W2 = Ws[:, base], Ws[:, dep]
    beta = np.linalg.lstsq(W1, W2, rcond=None)[0] if len(dep) else np.zeros((len(base), 0))
    beta[np.abs(beta) < TOL_BETA] = 0.0
    M = np.zeros((len(base), W.shape[1]))
    M[np.arange(len(base)), base] = 1.0
    M[:, dep] = beta
    exprs = []
    for i, b in enumerate(base):
        terms = [names[b]]
        for jj, c in enumerate(dep):
            coef = round(float(beta[i, jj]), decimals)
            if coef != 0.0:
                sign = "-" if coef < 0 else "+"
                terms.append(f"{sign} {abs(coef):g}*{names[c]}" if abs(coef) != 1.0
                             else f"{sign} {names[c]}")
        exprs.append(" ".join(terms))
    return BaseParameters(exprs, base, dep, zero, beta, M)


def condition_number(W: np.ndarray) -> float:
    s = np.linalg.svd(W, compute_uv=False)
    return float(s[0] / s[-1]) if s[-1] > 0 else float("inf")

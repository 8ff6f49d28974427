"""Base parameters by QR decomposition (Nguyen et al. 2023 §II.B; Gautier 1990, Khalil & Dombre).

The standard regressor W is rank deficient. Its columns split into

* zero columns: parameters with no effect on the measured torques;
* independent columns W1 (the base set), chosen greedily in the standard order: a column
  is independent when it is not a linear combination of the columns before it, so the
  first parameter of each group carries the name;
* dependent columns W2 = W1 beta.

The base parameters are ``phi_b = phi_1 + beta phi_2``, i.e. ``phi_b = M phi`` with
``M = [I beta]`` permuted back into the standard order, and ``W phi = W_b phi_b``.

One rule decides the rank, for dynamics and geometric calibration alike: the columns are
scaled to unit norm (units -- kg against kg.m^2, metres against radians -- must not
decide) and the rank ``r`` is the number of singular values above ``tol`` times the
largest (numerical rank, Golub & Van Loan §5.4.1).  The greedy choice is then made on the
columns of ``V_r^T``, the row space of that rank-``r`` regressor: it has the same exact
column dependencies as ``W`` but not its near-dependencies, which on long serial chains
(a 7-joint arm at the full kinematic level) would otherwise pass as independent columns
and disagree with the rank.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

TOL_RANK = 1e-8      # singular values above TOL_RANK x the largest count in the rank
TOL_SELECT = 1e-3    # residual (row space, unit rows) below which a column is dependent
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


def row_space(Wn: np.ndarray, tol: float) -> np.ndarray:
    """``V_r^T`` (r x n): the right singular vectors of ``Wn`` whose singular values exceed
    ``tol`` times the largest (computed on the n x n R factor, same singular values)."""
    R = np.linalg.qr(Wn, mode="r")
    _, s, Vt = np.linalg.svd(R)
    if s.size == 0 or s[0] == 0.0:
        return Vt[:0]
    return Vt[: int(np.sum(s > tol * s[0]))]


def independent_columns(Vr: np.ndarray, tol: float = TOL_SELECT) -> np.ndarray:
    """Columns of ``V_r^T`` that are not combinations of the columns before them (greedy
    in column order, Gram-Schmidt applied twice).  The rows of ``V_r^T`` are orthonormal,
    so some column keeps a residual of at least ``1/sqrt(n)`` along any direction still
    missing: the greedy pass ends with exactly ``r`` columns whenever ``tol`` is smaller."""
    Qb = np.zeros((Vr.shape[0], 0))
    keep = []
    for j in range(Vr.shape[1]):
        if len(keep) == Vr.shape[0]:
            break
        c = Vr[:, j].copy()
        for _ in range(2):
            c -= Qb @ (Qb.T @ c)
        nrm = np.linalg.norm(c)
        if nrm > tol:
            keep.append(j)
            Qb = np.column_stack([Qb, c / nrm])
    if len(keep) != Vr.shape[0]:
        raise np.linalg.LinAlgError(
            f"base parameter selection found {len(keep)} independent columns for a rank "
            f"of {Vr.shape[0]}")
    return np.array(keep, dtype=int)


def grouping(W: np.ndarray, names: list[str], tol: float = TOL_RANK):
    """(zero, base, dependent column indices, beta) of the standard regressor ``W``."""
    col_norm = np.linalg.norm(W, axis=0)
    scale = col_norm.max() if col_norm.size else 0.0
    nonzero = np.flatnonzero(col_norm > tol * scale * 1e-2) if scale > 0 \
        else np.zeros(0, int)
    zero = np.setdiff1d(np.arange(W.shape[1]), nonzero)
    n = col_norm[nonzero]
    Vr = row_space(W[:, nonzero] / n, tol)
    keep = independent_columns(Vr)
    base = nonzero[keep]
    rest = np.setdiff1d(np.arange(len(nonzero)), keep)
    # V_r^T[:, dep] = V_r^T[:, base] beta_n (square and regular), back to the columns' units
    beta_n = np.linalg.solve(Vr[:, keep], Vr[:, rest]) if len(rest) \
        else np.zeros((len(keep), 0))
    beta = beta_n / n[keep][:, None] * n[rest][None, :]
    return zero, base, nonzero[rest], beta


def expressions(names: list[str], base, dep, beta, decimals: int = 6) -> list[str]:
    """``m7 + 0.5*mx7 - Izz6``: each base column with the dependent ones it carries."""
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
    return exprs


def base_parameters(W: np.ndarray, names: list[str], tol: float = TOL_RANK,
                    decimals: int = 6) -> BaseParameters:
    """Base parameters of the standard regressor ``W`` with standard names ``names``;
    ``tol``: numerical rank threshold relative to the largest singular value of the
    column-scaled regressor."""
    if W.shape[1] != len(names):
        raise ValueError(f"regressor has {W.shape[1]} columns but {len(names)} names")
    zero, base, dep, beta = grouping(_row_sample(W, MAX_QR_ROWS), names, tol)
    beta[np.abs(beta) < TOL_BETA] = 0.0
    M = np.zeros((len(base), W.shape[1]))
    M[np.arange(len(base)), base] = 1.0
    M[:, dep] = beta
    return BaseParameters(expressions(names, base, dep, beta, decimals), base, dep, zero,
                          beta, M)


def condition_number(W: np.ndarray) -> float:
    s = np.linalg.svd(W, compute_uv=False)
    return float(s[0] / s[-1]) if s[-1] > 0 else float("inf")

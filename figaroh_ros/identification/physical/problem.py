"""The data every physically consistent estimator shares.

All three estimators (``lmi``, ``qp``, ``cholesky``) fit the *standard* parameter vector
``phi`` (every link's ten inertial parameters plus the drive chain), not the base
parameters, so the result can be written into a URDF.  The torque equations are whitened
by each joint's residual standard deviation (the WLS weights of Nguyen et al. 2023 Eq. 7) and
compressed by one QR factorisation, ``||L (W phi - Y)||^2 = ||R phi - Q^T L Y||^2 + const``:
every solver then works on a P x P system whatever the number of samples.

The data alone do not determine the standard parameters (only their base combinations);
what the data leave free is fixed by a Gaussian prior around the nominal (CAD / URDF)
values, ``sum_k ((phi_k - phi_r,k) / s_k)^2`` (the ``alpha ||Phi_r - Phi||^2`` term of
Nguyen et al. 2023 Eq. 11, with per-parameter scales so that kilograms, kg.m and kg.m^2 compare).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from figaroh_ros.identification.parameters import ParameterLayout
from figaroh_ros.identification.physical.inertia import LinkCheck, check_parameters


@dataclass
class WhitenedData:
    R: np.ndarray          # P x P upper triangular
    b: np.ndarray          # Q^T L Y
    rest: float            # ||L Y||^2 - ||b||^2: the part no parameter can explain
    rows: int

    def cost(self, phi: np.ndarray) -> float:
        """``||L (W phi - Y)||^2`` (whitened residual sum of squares)."""
        r = self.R @ phi - self.b
        return float(r @ r + self.rest)


def whiten(W: np.ndarray, Y: np.ndarray, row_sigma: np.ndarray | None = None) -> WhitenedData:
    """QR-compress the equations ``W phi = Y`` divided row by row by ``row_sigma``: the R
    factor of ``[L W | L Y]`` holds ``R``, ``b = Q^T L Y`` and, below them, the residual
    no parameter explains (Q never formed)."""
    w = 1.0 if row_sigma is None else 1.0 / np.asarray(row_sigma, float)
    p = W.shape[1]
    F = np.linalg.qr(np.column_stack([W, Y]) * (w[:, None] if np.ndim(w) else w), mode="r")
    return WhitenedData(F[:p, :p], F[:p, p], float(np.sum(F[p:, p] ** 2)), W.shape[0])


def prior_scales(phi_r: np.ndarray, layout: ParameterLayout, relative: float = 0.3,
                 min_mass: float = 0.1, length: float = 0.1,
                 drive: float = 10.0) -> np.ndarray:
    """Standard deviations ``s`` of the prior: for a link of nominal mass ``m`` (at least
    ``min_mass``), ``relative * m`` on the mass, ``relative * m * length`` on the first
    moments and ``relative * m * length^2`` on the inertias; ``drive`` on drive-chain
    parameters (weak: friction and rotor inertia are left to the data)."""
    s = np.full(layout.size, float(drive))
    for cols in layout.inertial_cols.values():
        m = max(abs(phi_r[cols[0]]), min_mass)
        s[cols[0]] = relative * m
        s[cols[1:4]] = relative * m * length
        s[cols[4:]] = relative * m * length ** 2
    return s


def nonnegative_drive_columns(layout: ParameterLayout, coupled_convention: str) -> np.ndarray:
    """Rotor inertias and friction coefficients are >= 0 (a coupled motor's too, unless
    the ``lumped`` convention leaves only signed cross terms on it)."""
    cols = [c for arr in (layout.ia_col, layout.fv_col, layout.fs_col) for c in arr if c >= 0]
    if coupled_convention == "motor":
        cols += [c for t in layout.motor_cols.values() for c in t if c >= 0]
    return np.array(sorted(cols), dtype=int)


@dataclass
class PhysicalEstimate:
    """Standard parameters from a physically consistent estimator."""

    method: str
    phi: np.ndarray
    checks: list[LinkCheck]
    data_cost: float                # whitened residual sum of squares
    prior_cost: float
    seconds: float
    solver: str
    cov: np.ndarray | None = None   # Laplace covariance (R^T R + alpha S^-2)^-1
    info: dict = field(default_factory=dict)

    @property
    def consistent(self) -> bool:
        return all(c.ok for c in self.checks)


def finish(method: str, phi: np.ndarray, data: WhitenedData, phi_r: np.ndarray,
           s: np.ndarray, layout: ParameterLayout, seconds: float, solver: str,
           link_names: dict | None = None, alpha: float = 1.0, **info) -> PhysicalEstimate:
    """Package a solution with its link checks and its covariance: the equations are
    whitened, so the posterior of the Gaussian data and prior terms has precision
    ``R^T R + alpha S^-2`` (Laplace approximation; active constraints ignored)."""
    prior = float(np.sum(((phi - phi_r) / s) ** 2))
    precision = data.R.T @ data.R + np.diag(alpha / s ** 2)
    try:
        cov = np.linalg.inv(precision)
    except np.linalg.LinAlgError:
        cov = None
    return PhysicalEstimate(method, phi, check_parameters(phi, layout, link_names),
                            data.cost(phi), prior, seconds, solver, cov, info)

"""Exciting-trajectory parameterisations, both linear in their decision variables.

For every joint ``j``: ``q_j(t) = c_j + B_q(t) z_j``, ``dq_j = B_v(t) z_j``,
``ddq_j = B_a(t) z_j``, with the same basis matrices for every joint.  Limits on positions,
velocities and accelerations are therefore linear constraints, and derivatives of anything
computed from (q, dq, ddq) follow by the chain rule through constant matrices.

* Finite Fourier series with rest at both ends (seed 003 Eq. 12-13):
  ``q = q0 + sum_k a_k sin(k w t) + b_k cos(k w t)`` over one period ``T = 2 pi / w``; the
  three conditions ``q(0) = q0``, ``dq(0) = 0``, ``ddq(0) = 0`` (``sum b_k = 0``,
  ``sum k a_k = 0``, ``sum k^2 b_k = 0``) hold for every z by construction: the
  coefficients are ``N y`` with ``N`` a basis of their null space.  Periodicity gives the
  same rest state at ``t = T``.
* Cubic splines through waypoints between consecutive postures (seed 000 Eq. 14): each
  segment joins posture ``p`` to ``p + 1`` in ``segment_duration`` through ``n_waypoints``
  free interior waypoints, with zero velocity at both postures (clamped spline); the
  spline is linear in its knot values, so its basis is the spline of each unit vector.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
from scipy.interpolate import CubicSpline


@dataclass
class LinearTrajectory:
    """``q = c + B_q z`` per joint on a time grid (the same bases for every joint)."""

    t: np.ndarray            # G sample times
    Bq: np.ndarray           # G x m
    Bv: np.ndarray
    Ba: np.ndarray
    c: np.ndarray            # G x n position offsets
    kind: str = ""
    cv: np.ndarray | None = None   # G x n velocity / acceleration offsets (splines)
    ca: np.ndarray | None = None
    initial: np.ndarray | None = None   # a feasible starting point (m x n), if known

    def __post_init__(self):
        if self.cv is None:
            self.cv = np.zeros_like(self.c)
        if self.ca is None:
            self.ca = np.zeros_like(self.c)

    @property
    def n_vars_per_joint(self) -> int:
        return self.Bq.shape[1]

    def evaluate(self, Z: np.ndarray):
        """(q, dq, ddq), each G x n, for variables Z (m x n)."""
        return self.c + self.Bq @ Z, self.cv + self.Bv @ Z, self.ca + self.Ba @ Z


def fourier_basis(t: np.ndarray, period: float, harmonics: int):
    """Bases (G x 2N) of the Fourier coefficients [a_1..a_N, b_1..b_N]."""
    w = 2 * np.pi / period
    k = np.arange(1, harmonics + 1)
    wt = np.outer(t, k * w)
    S, C = np.sin(wt), np.cos(wt)
    Bq = np.hstack([S, C])
    Bv = np.hstack([C * (k * w), -S * (k * w)])
    Ba = np.hstack([-S * (k * w) ** 2, -C * (k * w) ** 2])
    return Bq, Bv, Ba


def rest_null_space(harmonics: int) -> np.ndarray:
    """Basis (2N x 2N-3) of the coefficients with q(0) = q0, dq(0) = 0, ddq(0) = 0."""
    k = np.arange(1, harmonics + 1, dtype=float)
    z = np.zeros(harmonics)
    A = np.vstack([np.r_[z, np.ones(harmonics)],       # sum b_k = 0
                   np.r_[k, z],                         # sum k a_k = 0
                   np.r_[z, k ** 2]])                   # sum k^2 b_k = 0
    return sla.null_space(A)


def fourier_with_rest(q0: np.ndarray, period: float, harmonics: int,
                      t: np.ndarray) -> LinearTrajectory:
    """Finite Fourier series starting and ending at rest at ``q0`` (seed 003 Eq. 12-13)."""
    if harmonics < 2:
        raise ValueError("a Fourier trajectory at rest at both ends needs >= 2 harmonics")
    Bq, Bv, Ba = fourier_basis(t, period, harmonics)
    N = rest_null_space(harmonics)
    c = np.tile(np.asarray(q0, float), (len(t), 1))
    return LinearTrajectory(t, Bq @ N, Bv @ N, Ba @ N, c, "fourier")


def spline_through_postures(postures: np.ndarray, segment_duration: float,
                            n_waypoints: int, t: np.ndarray) -> LinearTrajectory:
    """Clamped cubic splines from posture to posture through free waypoints (Eq. 14).

    Variables per joint: the interior waypoints of every segment (equally spaced in time);
    the postures are fixed (offset ``c``)."""
    P = np.atleast_2d(np.asarray(postures, float))
    n_seg = P.shape[0] - 1
    if n_seg < 1:
        raise ValueError("a spline trajectory needs at least two postures")
    knots_per_seg = n_waypoints + 1
    tk = np.linspace(0.0, n_seg * segment_duration, n_seg * knots_per_seg + 1)
    fixed = np.arange(0, len(tk), knots_per_seg)            # the postures
    free = np.setdiff1d(np.arange(len(tk)), fixed)
    m = len(free)

    def basis(values):
        s = CubicSpline(tk, values, bc_type="clamped")
        return s(t), s(t, 1), s(t, 2)

    Bq, Bv, Ba = (np.zeros((len(t), m)) for _ in range(3))
    for i, k in enumerate(free):
        e = np.zeros(len(tk))
        e[k] = 1.0
        Bq[:, i], Bv[:, i], Ba[:, i] = basis(e)
    # the fixed postures contribute positions, velocities and accelerations: offsets
    c, cv, ca = (np.zeros((len(t), P.shape[1])) for _ in range(3))
    for j in range(P.shape[1]):
        e = np.zeros(len(tk))
        e[fixed] = P[:, j]
        c[:, j], cv[:, j], ca[:, j] = basis(e)
    initial = np.array([np.interp(tk[free], tk[fixed], P[:, j])
                        for j in range(P.shape[1])]).T
    return LinearTrajectory(t, Bq, Bv, Ba, c, "spline", cv, ca, initial)

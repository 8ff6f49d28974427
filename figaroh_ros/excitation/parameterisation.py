"""Exciting-trajectory parameterisations, both linear in their decision variables.

For every joint ``j``: ``q_j(t) = c_j + B_q(t) z_j``, ``dq_j = B_v(t) z_j``,
``ddq_j = B_a(t) z_j``, with the same basis matrices for every joint.  Limits on positions,
velocities and accelerations are therefore linear constraints, and derivatives of anything
computed from (q, dq, ddq) follow by the chain rule through constant matrices.

* Finite Fourier series with rest at both ends (Tröbinger et al. Eq. 12-13):
  ``q = q0 + sum_k a_k sin(k w t) + b_k cos(k w t)`` over one period ``T = 2 pi / w``; the
  three conditions ``q(0) = q0``, ``dq(0) = 0``, ``ddq(0) = 0`` (``sum b_k = 0``,
  ``sum k a_k = 0``, ``sum k^2 b_k = 0``) hold for every z by construction: the
  coefficients are ``N y`` with ``N`` a basis of their null space.  Periodicity gives the
  same rest state at ``t = T``.
* Cubic splines through waypoints between consecutive postures (Nguyen et al. 2023 Eq. 14): each
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
    """Finite Fourier series starting and ending at rest at ``q0`` (Tröbinger et al. Eq. 12-13)."""
    if harmonics < 2:
        raise ValueError("a Fourier trajectory at rest at both ends needs >= 2 harmonics")
    Bq, Bv, Ba = fourier_basis(t, period, harmonics)
    N = rest_null_space(harmonics)
    c = np.tile(np.asarray(q0, float), (len(t), 1))
    return LinearTrajectory(t, Bq @ N, Bv @ N, Ba @ N, c, "fourier")


def spline_through_postures(postures: np.ndarray, segment_duration: float,
                            n_waypoints: int, t: np.ndarray) -> LinearTrajectory:
    """Clamped cubic splines from posture to posture through free waypoints (Eq. 14).

    Segment ``k`` joins posture ``k`` to ``k + 1`` in ``segment_duration`` through its own
    ``n_waypoints`` interior waypoints (equally spaced in time), with zero velocity at both
    postures.  Variables per joint: every segment's waypoints; the postures are fixed
    (offsets)."""
    P = np.atleast_2d(np.asarray(postures, float))
    n_seg = P.shape[0] - 1
    if n_seg < 1:
        raise ValueError("a spline trajectory needs at least two postures")
    tk = np.linspace(0.0, segment_duration, n_waypoints + 2)
    seg = np.clip((t // segment_duration).astype(int), 0, n_seg - 1)
    local = t - seg * segment_duration
    m = n_seg * n_waypoints
    Bq, Bv, Ba = (np.zeros((len(t), m)) for _ in range(3))
    c, cv, ca = (np.zeros((len(t), P.shape[1])) for _ in range(3))

    def unit(values, rows):
        sp = CubicSpline(tk, values, bc_type="clamped")
        x = local[rows]
        return sp(x), sp(x, 1), sp(x, 2)

    for k in range(n_seg):
        rows = seg == k
        for i in range(n_waypoints):
            e = np.zeros(len(tk))
            e[i + 1] = 1.0
            col = k * n_waypoints + i
            Bq[rows, col], Bv[rows, col], Ba[rows, col] = unit(e, rows)
        for j in range(P.shape[1]):
            e = np.zeros(len(tk))
            e[0], e[-1] = P[k, j], P[k + 1, j]
            c[rows, j], cv[rows, j], ca[rows, j] = unit(e, rows)
    # start: the waypoints on the straight line between the postures
    frac = tk[1:-1] / segment_duration
    initial = np.vstack([P[k] + np.outer(frac, P[k + 1] - P[k]) for k in range(n_seg)])
    return LinearTrajectory(t, Bq, Bv, Ba, c, "spline", cv, ca, initial)

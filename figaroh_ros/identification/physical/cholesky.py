"""Physically consistent identification in consistent coordinates (the Maestro arm note), by IPOPT.

Every link with a nominal mass is written as ``psi = [z, c, u, log d]``
(``inertia.link_from_cholesky``): ``m = z^2``, centre of mass ``c``, and the second
moment about it ``Sigma_C = U D U^T`` (``U`` unit upper triangular, ``D = diag(d) > 0``),
so that *every* ``psi`` is a realisable link (positive mass, positive definite inertia,
triangle inequalities).  The Maestro arm note factors the inertia itself; factoring ``Sigma_C``
instead (``I_C = tr(Sigma_C) 1 - Sigma_C``) adds the triangle inequalities for free.
Drive-chain parameters stay linear (rotor inertia and friction bounded below by 0).

    min_psi  ||R phi(psi) - b||^2 + alpha sum ((phi - phi_r) / s)^2      (inverse-dynamics
                                                                           residual)
    s.t.     (z^2 - m_r)^2 <= (mass_tol m_r)^2,   ||c - c_r||^2 <= com_margin^2,
             ||u - u_r||^2 <= shape_tol^2,         ||log d - log d_r||^2 <= log(scale_tol)^2

(the neighbourhood constraints of the Maestro arm note).  ``alpha = 0`` is the Maestro arm note's problem as
written; the default keeps the same prior as the convex estimators so that they compare.
Exact gradients through ``d phi / d psi``; Gauss-Newton Hessian of the residual.
"""
from __future__ import annotations

import time

import cyipopt
import numpy as np

from figaroh_ros.errors import SolverError
from figaroh_ros.identification.parameters import ParameterLayout
from figaroh_ros.identification.physical.inertia import (
    cholesky_parameters, link_from_cholesky, pseudo_inertia
)
from figaroh_ros.identification.physical.problem import PhysicalEstimate, WhitenedData, finish


def _consistent_start(pi: np.ndarray) -> np.ndarray:
    """Cholesky coordinates of a nominal link, nudged inside the consistent set if the URDF
    gives a boundary case (point mass, rod)."""
    pi = np.array(pi, float)
    m = pi[0]
    for k in range(12):
        e = np.linalg.eigvalsh(pseudo_inertia(pi))
        if e[0] > 1e-9 * max(e[-1], 1e-12):
            return cholesky_parameters(pi)
        pi[[4, 7, 9]] += 10.0 ** (k - 10) * m      # add a small isotropic inertia
    raise SolverError("a nominal link cannot be written in Cholesky coordinates")


class _Problem:
    """cyipopt callbacks; variables: 10 Cholesky coordinates per link with a nominal mass,
    then the drive-chain parameters (massless links stay at their nominal zeros)."""

    def __init__(self, data, phi_r, s, alpha, links, drive_cols):
        self.data, self.phi_r, self.s, self.alpha = data, phi_r, s, alpha
        self.links, self.drive_cols = links, drive_cols
        self.k = 1.0 / max(data.rows, 1)
        self.H = data.R.T @ data.R
        self.g0 = data.R.T @ data.b
        self.centre = []                  # per link: psi_r

    def phi(self, x):
        """(phi, d phi / d x as a P x n matrix) at x."""
        phi = self.phi_r.copy()
        Jx = np.zeros((len(self.phi_r), len(x)))
        for i, cols in enumerate(self.links):
            phi[cols], Jx[cols, 10 * i:10 * i + 10] = link_from_cholesky(x[10 * i:10 * i + 10])
        phi[self.drive_cols] = x[10 * len(self.links):]
        Jx[self.drive_cols, 10 * len(self.links) + np.arange(len(self.drive_cols))] = 1.0
        return phi, Jx

    def objective(self, x):
        phi, _ = self.phi(x)
        r = (phi - self.phi_r) / self.s
        return self.k * (float(phi @ self.H @ phi - 2 * self.g0 @ phi + self.data.b @ self.data.b)
                         + self.alpha * float(r @ r))

    def gradient(self, x):
        phi, Jx = self.phi(x)
        g_phi = 2 * self.k * (self.H @ phi - self.g0
                              + self.alpha * (phi - self.phi_r) / self.s ** 2)
        return Jx.T @ g_phi

    def hessianstructure(self):
        n = 10 * len(self.links) + len(self.drive_cols)
        return np.tril_indices(n)

    def hessian(self, x, lagrange, obj_factor):
        """Gauss-Newton for the objective (``2k J^T (H + alpha S^-2) J``, positive
        semidefinite), exact for the neighbourhood constraints."""
        _, Jx = self.phi(x)
        Hphi = self.H + np.diag(self.alpha / self.s ** 2)
        Hx = obj_factor * 2 * self.k * Jx.T @ Hphi @ Jx
        for i in range(len(self.links)):
            o = 10 * i
            z, m_r = x[o], self.centre[i][0] ** 2
            Hx[o, o] += lagrange[4 * i] * (12 * z * z - 4 * m_r)
            idx = np.arange(o + 1, o + 10)
            w = np.repeat(lagrange[4 * i + 1:4 * i + 4], 3)
            Hx[idx, idx] += 2 * w
        return Hx[self.hessianstructure()]

    def constraints(self, x):
        out = []
        for i in range(len(self.links)):
            p, c = x[10 * i:10 * i + 10], self.centre[i]
            m_r = c[0] ** 2
            out += [(p[0] ** 2 - m_r) ** 2, np.sum((p[1:4] - c[1:4]) ** 2),
                    np.sum((p[4:7] - c[4:7]) ** 2), np.sum((p[7:10] - c[7:10]) ** 2)]
        return np.array(out)

    def jacobianstructure(self):
        rows, cols = [], []
        for i in range(len(self.links)):
            for r, (a, b) in enumerate(((0, 1), (1, 4), (4, 7), (7, 10))):
                rows += [4 * i + r] * (b - a)
                cols += list(range(10 * i + a, 10 * i + b))
        return np.array(rows), np.array(cols)

    def jacobian(self, x):
        out = []
        for i in range(len(self.links)):
            p, c = x[10 * i:10 * i + 10], self.centre[i]
            out += [4 * p[0] * (p[0] ** 2 - c[0] ** 2)]
            out += list(2 * (p[1:4] - c[1:4])) + list(2 * (p[4:7] - c[4:7]))
            out += list(2 * (p[7:10] - c[7:10]))
        return np.array(out)


def cholesky_estimate(data: WhitenedData, layout: ParameterLayout, phi_r: np.ndarray,
                      s: np.ndarray, nonneg: np.ndarray, alpha: float = 1.0,
                      mass_tol: float = 0.5, com_margin: float = 0.05,
                      shape_tol: float = 0.5, scale_tol: float = 3.0,
                      max_iter: int = 500, link_names=None) -> PhysicalEstimate:
    """the Maestro arm note's consistent coordinates solved by IPOPT (see the module docstring)."""
    t0 = time.perf_counter()
    links = [cols for cols in layout.inertial_cols.values() if phi_r[cols[0]] > 0]
    inertial = set(np.concatenate(list(layout.inertial_cols.values())).tolist())
    drive_cols = np.array([c for c in range(layout.size) if c not in inertial], dtype=int)
    prob = _Problem(data, phi_r, s, alpha, links, drive_cols)
    x0, cu = [], []
    for cols in links:
        psi = _consistent_start(phi_r[cols])
        prob.centre.append(psi)
        x0.append(psi)
        m_r = psi[0] ** 2
        cu += [(mass_tol * m_r) ** 2, com_margin ** 2, shape_tol ** 2, np.log(scale_tol) ** 2]
    x0 = np.concatenate(x0 + [phi_r[drive_cols]])
    lb = np.full(len(x0), -1e19)
    ub = np.full(len(x0), 1e19)
    off = 10 * len(links)
    for k, c in enumerate(drive_cols):
        if c in set(nonneg.tolist()):
            lb[off + k] = 0.0
            x0[off + k] = max(x0[off + k], 0.0)
    nlp = cyipopt.Problem(n=len(x0), m=len(cu), problem_obj=prob, lb=lb, ub=ub,
                          cl=np.full(len(cu), -1e19), cu=np.array(cu))
    nlp.add_option("max_iter", max_iter)
    nlp.add_option("tol", 1e-8)
    nlp.add_option("print_level", 0)
    nlp.add_option("sb", "yes")
    x, info = nlp.solve(x0)
    if info["status"] not in (0, 1):                     # solved / solved to acceptable
        msg = info["status_msg"]
        msg = msg.decode(errors="replace") if isinstance(msg, bytes) else str(msg)
        raise SolverError(f"Cholesky/IPOPT did not converge: {msg}")
    phi, _ = prob.phi(x)
    return finish("cholesky", phi, data, phi_r, s, layout, time.perf_counter() - t0,
                  "ipopt", link_names, alpha)

"""Convex physically consistent estimators, solved by a conic interior-point solver
(Clarabel, through cvxpy).

* ``lmi_estimate`` (Wensing, Kim & Slotine 2017): every link's pseudo-inertia
  ``J(pi_j)`` (``inertia.pseudo_inertia``, linear in the parameters) constrained positive
  semidefinite: an exact semidefinite program over the set of realisable links.
* ``qp_estimate`` (Nguyen et al. 2023 Eq. 11, after Jovic et al.): positive masses, an optional
  total mass, a box on each centre of mass (``m c^- <= h <= m c^+``, linear) and
  ``v^T T(I_j) v >= eps`` for a set of unit vectors ``v``: quadratic programs with linear
  constraints (see ``qp_estimate`` for ``T``).

Both minimise the whitened torque residual plus the prior of ``problem``:

    min_phi ||R phi - b||^2 + alpha sum_k ((phi_k - phi_r,k) / s_k)^2
"""
from __future__ import annotations

import time

import numpy as np

from figaroh_ros.errors import SolverError
from figaroh_ros.identification.parameters import ParameterLayout
from figaroh_ros.identification.physical.inertia import inertia_matrix, pseudo_inertia_basis
from figaroh_ros.identification.physical.problem import PhysicalEstimate, WhitenedData, finish


def _cvxpy():
    """cvxpy, imported on first use: 1.4 s of import that only physical.method lmi / qp
    needs."""
    import cvxpy  # lazy: heavy (1.4 s), used by two estimators only
    return cvxpy


def _objective(cp, phi, data: WhitenedData, phi_r, s, alpha):
    # scale the data term to O(1): the solver's tolerances are absolute
    k = 1.0 / max(data.rows, 1)
    return cp.Minimize(k * cp.sum_squares(data.R @ phi - data.b)
                       + k * alpha * cp.sum_squares(cp.multiply(1.0 / s, phi - phi_r)))


def _solve(cp, problem, name: str, hint: str = "") -> str:
    try:
        problem.solve(solver=cp.CLARABEL)
    except cp.error.SolverError as e:
        raise SolverError(f"{name}: the conic solver failed: {e}") from e
    if problem.status not in ("optimal", "optimal_inaccurate"):
        raise SolverError(f"{name}: the solver ended with status {problem.status!r}"
                               + (f" ({hint})" if hint else ""))
    return problem.status


def lmi_estimate(data: WhitenedData, layout: ParameterLayout, phi_r: np.ndarray,
                 s: np.ndarray, nonneg: np.ndarray, alpha: float = 1.0,
                 epsilon: float = 1e-8, link_names=None) -> PhysicalEstimate:
    """Standard parameters with every link's pseudo-inertia ``J >= epsilon * m_r 1``."""
    cp = _cvxpy()
    t0 = time.perf_counter()
    phi = cp.Variable(layout.size)
    E = pseudo_inertia_basis()
    cons = []
    for cols in layout.inertial_cols.values():
        J = sum(phi[c] * E[k] for k, c in enumerate(cols))
        Jv = cp.Variable((4, 4), symmetric=True)
        eps = epsilon * max(abs(phi_r[cols[0]]), 1e-3)
        cons += [Jv == J, Jv - eps * np.eye(4) >> 0]
    if len(nonneg):
        cons.append(phi[nonneg] >= 0)
    prob = cp.Problem(_objective(cp, phi, data, phi_r, s, alpha), cons)
    status = _solve(cp, prob, "LMI")
    return finish("lmi", np.asarray(phi.value, float), data, phi_r, s, layout,
                  time.perf_counter() - t0, f"clarabel ({status})", link_names, alpha)


def sphere_directions(n: int) -> np.ndarray:
    """``n`` unit vectors spread evenly over the sphere (Fibonacci lattice)."""
    k = np.arange(n) + 0.5
    z = 1 - 2 * k / n
    r = np.sqrt(1 - z * z)
    a = np.pi * (1 + 5 ** 0.5) * k
    return np.column_stack([r * np.cos(a), r * np.sin(a), z])


_SYM = np.array([[0, 1, 2], [1, 3, 4], [2, 4, 5]])     # vech index -> symmetric 3 x 3


def second_moment_map(c: np.ndarray) -> np.ndarray:
    """``A`` (6 x 10) with ``vech(Sigma_c(pi)) = A pi``: the density's second moment about
    the point ``c``, ``Sigma_c = tr(I_O)/2 1 - I_O - h c^T - c h^T + m c c^T`` (linear in
    ``pi``; equal to ``Sigma_C + m (c_true - c)(c_true - c)^T``)."""
    A = np.empty((6, 10))
    for k in range(10):
        pi = np.eye(10)[k]
        I = inertia_matrix(pi)
        h = pi[1:4]
        S = 0.5 * np.trace(I) * np.eye(3) - I - np.outer(h, c) - np.outer(c, h) \
            + pi[0] * np.outer(c, c)
        A[:, k] = S[np.triu_indices(3)]
    return A


def qp_estimate(data: WhitenedData, layout: ParameterLayout, phi_r: np.ndarray,
                s: np.ndarray, nonneg: np.ndarray, alpha: float = 1.0,
                total_mass: float | None = None, com_margin: float = 0.05,
                directions: int = 2000, epsilon: float = 1e-6,
                min_mass_fraction: float = 0.05, passes: int = 8,
                link_names=None) -> PhysicalEstimate:
    """Nguyen et al. 2023 Eq. 11: masses above ``min_mass_fraction`` of nominal, the total mass (if
    given), each centre of mass within ``com_margin`` metres of nominal on every axis, and
    ``v^T T(I_j) v >= epsilon m_r`` along ``directions`` unit vectors.  We take ``T(I_j)``
    to be the density's second moment about the link's centre of mass (``Sigma_C``: its
    positivity is positive definite inertia *and* the triangle inequalities), written about
    the previous pass's centre of mass so that it stays linear, and each pass adds the
    direction of the smallest second moment of every link that is not yet consistent (a
    cutting plane between the sampled directions).  Each pass is one QP; a few converge."""
    cp = _cvxpy()
    t0 = time.perf_counter()
    V = sphere_directions(directions)
    # v^T S v from vech(S) = [Sxx, Sxy, Sxz, Syy, Syz, Szz]
    quad = np.column_stack([V[:, 0] ** 2, 2 * V[:, 0] * V[:, 1], 2 * V[:, 0] * V[:, 2],
                            V[:, 1] ** 2, 2 * V[:, 1] * V[:, 2], V[:, 2] ** 2])
    links = list(layout.inertial_cols.values())
    centres = [phi_r[c[1:4]] / phi_r[c[0]] if phi_r[c[0]] > 0 else np.zeros(3) for c in links]
    cuts = [quad for _ in links]            # per link: directions (as quadratic rows)
    for k in range(passes):
        phi = cp.Variable(layout.size)
        cons, masses = [], []
        for cols, c_k, rows in zip(links, centres, cuts):
            m_r = float(phi_r[cols[0]])
            m, h = phi[cols[0]], phi[cols[1:4]]
            masses.append(m)
            if m_r <= 0:
                cons += [m >= 0]
                continue
            c_r = phi_r[cols[1:4]] / m_r
            cons += [m >= min_mass_fraction * m_r,
                     h >= m * (c_r - com_margin), h <= m * (c_r + com_margin),
                     (rows @ second_moment_map(c_k)) @ phi[cols] >= epsilon * m_r]
        if total_mass is not None:
            cons.append(sum(masses) == float(total_mass))
        if len(nonneg):
            cons.append(phi[nonneg] >= 0)
        prob = cp.Problem(_objective(cp, phi, data, phi_r, s, alpha), cons)
        status = _solve(cp, prob, "QP", "infeasible bounds? check physical.total_mass and "
                        "physical.com_margin")
        value = np.asarray(phi.value, float)
        est = finish("qp", value, data, phi_r, s, layout, time.perf_counter() - t0,
                     f"clarabel ({status})", link_names, alpha, passes=k + 1)
        if est.consistent:
            break
        centres = [value[c[1:4]] / value[c[0]] if value[c[0]] > 0 else np.zeros(3)
                   for c in links]
        for i, (cols, c_k) in enumerate(zip(links, centres)):
            # cutting plane: the direction of the smallest second moment of this pass
            w, U = np.linalg.eigh((second_moment_map(c_k) @ value[cols])[_SYM])
            if w[0] < epsilon * phi_r[cols[0]]:
                v = U[:, 0]
                cuts[i] = np.vstack([cuts[i], [v[0] ** 2, 2 * v[0] * v[1], 2 * v[0] * v[2],
                                               v[1] ** 2, 2 * v[1] * v[2], v[2] ** 2]])
    return est

"""Physical consistency of a link's ten inertial parameters (Nguyen et al. 2023 Eq. 11; the Maestro arm note;
Wensing, Kim & Slotine 2017).

A link's standard vector ``pi = [m, mx, my, mz, Ixx, Ixy, Ixz, Iyy, Iyz, Izz]`` is its
mass, first moment ``h = m c`` and rotational inertia ``I_O`` about the joint-frame origin.
It is *physically consistent* (some non-negative mass density produces it) iff its
pseudo-inertia matrix

    J(pi) = [[ tr(I_O)/2 * 1 - I_O,  h ],
             [ h^T,                  m ]]          (linear in pi)

is positive semidefinite (Wensing et al.): then ``m >= 0`` and the inertia about the centre
of mass ``I_C = I_O - m S(c)^T S(c)`` is positive semidefinite *and* its principal moments
satisfy the triangle inequalities ``I_1 + I_2 >= I_3``.  With ``Sigma_C = tr(I_C)/2 * 1 - I_C``
(the density's second moment about the centre of mass) ``J`` is PSD iff ``Sigma_C`` is,
which is how ``cholesky_parameters`` builds consistent links from unconstrained numbers.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# position of Ixx, Ixy, Ixz, Iyy, Iyz, Izz in the standard vector
_I = (4, 5, 6, 7, 8, 9)


def inertia_matrix(pi: np.ndarray) -> np.ndarray:
    """Rotational inertia about the joint-frame origin (3 x 3) of a standard 10-vector."""
    xx, xy, xz, yy, yz, zz = (pi[k] for k in _I)
    return np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])


def pseudo_inertia(pi: np.ndarray) -> np.ndarray:
    """The 4 x 4 pseudo-inertia ``J(pi)`` (linear in ``pi``)."""
    I = inertia_matrix(pi)
    J = np.empty((4, 4))
    J[:3, :3] = 0.5 * np.trace(I) * np.eye(3) - I
    J[:3, 3] = J[3, :3] = pi[1:4]
    J[3, 3] = pi[0]
    return J


def pseudo_inertia_basis() -> np.ndarray:
    """``E`` (10 x 4 x 4) with ``J(pi) = sum_k pi_k E_k`` (for the LMI)."""
    return np.array([pseudo_inertia(np.eye(10)[k]) for k in range(10)])


def skew(v: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


def standard_vector(m: float, c: np.ndarray, I_C: np.ndarray) -> np.ndarray:
    """The standard vector of mass ``m``, centre of mass ``c`` and inertia ``I_C`` about it
    (parallel-axis theorem: ``I_O = I_C + m S(c)^T S(c)``)."""
    S = skew(c)
    I = I_C + m * S.T @ S
    return np.array([m, *(m * np.asarray(c)), I[0, 0], I[0, 1], I[0, 2], I[1, 1], I[1, 2],
                     I[2, 2]])


def mass_centre_inertia(pi: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """(m, c, I_C) of a standard vector with ``m > 0``."""
    m = float(pi[0])
    c = np.asarray(pi[1:4]) / m
    S = skew(c)
    return m, c, inertia_matrix(pi) - m * S.T @ S


@dataclass
class LinkCheck:
    """The consistency verdict of one link."""

    name: str
    mass: float
    principal: np.ndarray          # principal moments about the centre of mass (ascending)
    pseudo_min_eig: float          # smallest eigenvalue of J / its scale
    ok: bool
    why: str = ""


def check_link(pi: np.ndarray, name: str = "", tol: float = 1e-9) -> LinkCheck:
    """Positive mass, positive definite ``I_C`` and the triangle inequalities (``J`` PD up
    to ``tol`` relative to its largest eigenvalue).  A massless link (``pi == 0``) passes:
    URDFs hold such frames."""
    pi = np.asarray(pi, float)
    scale = max(np.abs(pi).max(), 1e-300)
    if np.abs(pi).max() <= 1e-12:
        return LinkCheck(name, 0.0, np.zeros(3), 0.0, True, "massless")
    e = np.linalg.eigvalsh(pseudo_inertia(pi))
    if pi[0] <= 0:
        return LinkCheck(name, float(pi[0]), np.full(3, np.nan), float(e[0] / scale), False,
                         f"mass {pi[0]:.4g} kg is not positive")
    _, _, I_C = mass_centre_inertia(pi)
    p = np.linalg.eigvalsh(I_C)
    why = []
    if p[0] <= tol * max(p[-1], 1e-300):
        why.append(f"inertia about the centre of mass not positive definite "
                   f"(principal moments {np.array2string(p, precision=4)})")
    elif p[0] + p[1] < p[2] * (1 - 1e-9):
        why.append(f"triangle inequality violated: {p[0]:.4g} + {p[1]:.4g} < {p[2]:.4g}")
    rel = float(e[0] / max(e[-1], 1e-300))
    if not why and rel <= -tol:
        why.append(f"pseudo-inertia not positive semidefinite (min eigenvalue {e[0]:.3g})")
    return LinkCheck(name, float(pi[0]), p, rel, not why, "; ".join(why))


def check_parameters(phi: np.ndarray, layout, names: dict | None = None) -> list[LinkCheck]:
    """``check_link`` for every link of a standard parameter vector (``layout``:
    ``parameters.ParameterLayout``); ``names`` maps joint ids to link names."""
    return [check_link(phi[cols], (names or {}).get(jid, f"link{jid}"))
            for jid, cols in layout.inertial_cols.items()]


# ------------------------------------------------------------ m = z^2 and Cholesky parametrisation
def cholesky_parameters(pi: np.ndarray) -> np.ndarray:
    """Unconstrained coordinates ``psi = [z, c(3), u(3), log d(3)]`` of a consistent link
    (the Maestro arm note: ``m = z^2``, inertia through a unit-upper-triangular ``U`` and diagonal
    ``D``): ``Sigma_C = U D U^T`` with ``I_C = tr(Sigma_C) 1 - Sigma_C``.  The inverse of
    ``link_from_cholesky``; needs ``J(pi)`` positive definite."""
    m, c, I_C = mass_centre_inertia(pi)
    Sig = 0.5 * np.trace(I_C) * np.eye(3) - I_C
    # Sigma = U D U^T with U unit upper triangular: the LDL^T of the reversed matrix
    P = np.eye(3)[::-1]
    L = np.linalg.cholesky(P @ Sig @ P)
    dL = np.diag(L)
    Lu = L / dL
    U = P @ Lu @ P
    d = (P @ dL) ** 2
    return np.r_[np.sqrt(m), c, U[0, 1], U[0, 2], U[1, 2], np.log(d)]


def link_from_cholesky(psi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(pi, d pi / d psi (10 x 10)) of coordinates ``psi``: every ``psi`` is consistent."""
    z, c, u, ld = psi[0], psi[1:4], psi[4:7], psi[7:10]
    m = z * z
    U = np.array([[1.0, u[0], u[1]], [0.0, 1.0, u[2]], [0.0, 0.0, 1.0]])
    d = np.exp(ld)
    Sig = U @ np.diag(d) @ U.T
    I_C = np.trace(Sig) * np.eye(3) - Sig
    pi = standard_vector(m, c, I_C)
    # derivatives: pi = [m, m c, vech(I_C + m S(c)^T S(c))]
    D = np.zeros((10, 10))
    S = skew(c)
    SS = S.T @ S                               # = |c|^2 1 - c c^T
    vech = lambda A: np.array([A[0, 0], A[0, 1], A[0, 2], A[1, 1], A[1, 2], A[2, 2]])
    D[0, 0] = 2 * z
    D[1:4, 0] = 2 * z * c
    D[4:, 0] = 2 * z * vech(SS)
    D[1:4, 1:4] = m * np.eye(3)
    for k in range(3):
        e = np.eye(3)[k]
        dSS = 2 * c[k] * np.eye(3) - (np.outer(e, c) + np.outer(c, e))
        D[4:, 1 + k] = m * vech(dSS)

    def dI(dSig):
        return vech(np.trace(dSig) * np.eye(3) - dSig)
    for k, (i, j) in enumerate(((0, 1), (0, 2), (1, 2))):
        dU = np.zeros((3, 3))
        dU[i, j] = 1.0
        dSig = dU @ np.diag(d) @ U.T + U @ np.diag(d) @ dU.T
        D[4:, 4 + k] = dI(dSig)
    for k in range(3):
        dSig = d[k] * np.outer(U[:, k], U[:, k])
        D[4:, 7 + k] = dI(dSig)
    return pi, D

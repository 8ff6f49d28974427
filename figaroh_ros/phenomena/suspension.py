"""Mobile-base suspension: six wheels as linear and torsional spring-dampers (Nguyen et al. 2024
Eq. 1-5).

The robot frame ``F_r`` moves by a small displacement ``(t, theta)`` from its rest pose
``F_0``; the origin of wheel ``i`` (at ``r_i`` in ``F_r``) moves by (Eq. 1)

    dr_i = t - [r_i]x theta.

Each wheel pushes back with diagonal stiffness and damping ``K_ti, C_ti`` (Eq. 2), and the
torsional parts of the six wheels only act through their sums ``K_theta, C_theta`` (Eq. 3),
so the ground reaction on the robot is (Eq. 4)

    F = F_N - sum_i (K_ti dr_i + C_ti d(dr_i)/dt)
    M = M_N - K_theta theta - C_theta dtheta/dt - sum_i [r_i]x (K_ti dr_i + C_ti d(dr_i)/dt)

(the springs push back: a base that sinks, ``t_z < 0``, is pushed up.  Nguyen et al. 2024 writes the
terms with ``+``, its displacement taken the other way; with ``-`` here, stiffness and
damping are non-negative for the displacement of ``F_r`` in ``F_0``.)

which is *linear* in the 48 parameters ``P = {k_ti, c_ti (i = 1..6, x y z), K_theta,
C_theta, F_N, M_N}``: ``W(t, theta, dt, dtheta) P = [F; M]``.  Eq. 5 is then a bounded linear
least-squares problem (stiffness and damping >= 0; rest wrench free), solved by scipy's
``lsq_linear``.

Observability: wheels lying in one plane, symmetric placements and a base that hardly
moves along some axis make columns of ``W`` zero or dependent.  ``observability`` runs the
same column QR as the inertial base parameters and reports, for every parameter, whether it
is identifiable alone, only within a group (the grouped expression, identified as one
number), or not at all, instead of silently setting parameters to zero (as Nguyen et al. 2024 Table
II does).  Identification is done on the identifiable combinations.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin
import scipy.optimize as so

from figaroh_ros.identification.base_parameters import BaseParameters, base_parameters

AXES = "xyz"
# TIAGo's wheel centres in base_link (tiago.urdf): driving wheels, then the four casters
TIAGO_WHEELS = np.array([[0.0, 0.2022, 0.0], [0.0, -0.2022, 0.0],
                         [0.1535, 0.102, -0.0735], [0.1535, -0.102, -0.0735],
                         [-0.1895, 0.102, -0.0735], [-0.1895, -0.102, -0.0735]])


def parameter_names(n_wheels: int = 6) -> list[str]:
    names = []
    for i in range(1, n_wheels + 1):
        names += [f"k_t{i}{a}" for a in AXES] + [f"c_t{i}{a}" for a in AXES]
    names += [f"k_theta{a}" for a in AXES] + [f"c_theta{a}" for a in AXES]
    names += [f"F_N{a}" for a in AXES] + [f"M_N{a}" for a in AXES]
    return names


def nonnegative(names: list[str]) -> np.ndarray:
    """Stiffness and damping are >= 0; the rest wrench is free."""
    return np.array([not n.startswith(("F_N", "M_N")) for n in names])


def _skew(r):
    return np.array([[0.0, -r[2], r[1]], [r[2], 0.0, -r[0]], [-r[1], r[0], 0.0]])


def suspension_regressor(wheels: np.ndarray, t: np.ndarray, theta: np.ndarray,
                         dt: np.ndarray, dtheta: np.ndarray) -> np.ndarray:
    """``W`` (6N x 48 for six wheels) of Eq. 4, rows component-major (``Fx`` for every
    sample, then ``Fy`` ... ``Mz``, as ``wrench.contact_wrench_regressor``).  ``wheels``:
    n_wheels x 3 positions in ``F_r``; the others N x 3."""
    wheels = np.asarray(wheels, float)
    N = t.shape[0]
    nw = wheels.shape[0]
    P = 6 * nw + 12
    W = np.zeros((6, N, P))
    for i, r in enumerate(wheels):
        S = _skew(r)
        d = t - theta @ S.T                  # dr_i = t - [r]x theta  (N x 3)
        dd = dt - dtheta @ S.T
        for a in range(3):
            for off, x in ((0, d[:, a]), (3, dd[:, a])):
                col = 6 * i + off + a
                W[a, :, col] = -x                             # force along a
                W[3:, :, col] = -np.outer(S[:, a], x)         # [r]x e_a x
    base = 6 * nw
    for a in range(3):
        W[3 + a, :, base + a] = -theta[:, a]
        W[3 + a, :, base + 3 + a] = -dtheta[:, a]
        W[a, :, base + 6 + a] = 1.0
        W[3 + a, :, base + 9 + a] = 1.0
    return W.reshape(6 * N, P)


@dataclass
class Observability:
    """Which suspension parameters the data identify (``base_parameters`` on ``W``)."""

    base: BaseParameters
    names: list[str]

    def _grouped(self, i: int) -> bool:
        return bool(self.base.M[i, self.base.dependent_index].any())

    @property
    def identifiable(self) -> list[str]:
        """Parameters identified alone (an independent column with nothing grouped in)."""
        return [self.names[b] for i, b in enumerate(self.base.base_index)
                if not self._grouped(i)]

    @property
    def groups(self) -> list[str]:
        """Grouped expressions (identified as one number each)."""
        return [e for i, e in enumerate(self.base.names) if self._grouped(i)]

    @property
    def unobservable(self) -> list[str]:
        return [self.names[i] for i in self.base.zero_index]

    def report(self) -> str:
        lines = [f"{len(self.base.names)} identifiable combinations of "
                 f"{len(self.names)} parameters"]
        lines.append("alone: " + (", ".join(self.identifiable) or "none"))
        lines.append("grouped: " + ("; ".join(self.groups) or "none"))
        lines.append("unobservable (no effect on the data): "
                     + (", ".join(self.unobservable) or "none"))
        return "\n".join(lines)


def observability(W: np.ndarray, names: list[str]) -> Observability:
    return Observability(base_parameters(W, names), names)


@dataclass
class SuspensionEstimate:
    values: np.ndarray              # identifiable combinations (obs.base order)
    std: np.ndarray
    observability: Observability
    rmse: np.ndarray                # per wrench component
    active_bounds: list[str]        # combinations held at 0 by the bounds


def _lower_bounds(obs: Observability, names: list[str]) -> np.ndarray:
    """0 for a combination of non-negative parameters with non-negative coefficients (a
    sum of stiffnesses or dampings), -inf for the others."""
    nn = nonnegative(names)
    lb = np.full(obs.base.size, -np.inf)
    for i in range(obs.base.size):
        coef = obs.base.M[i]
        used = np.flatnonzero(coef)
        if np.all(nn[used]) and np.all(coef[used] > 0):
            lb[i] = 0.0
    return lb


def _standard_deviations(A: np.ndarray, weighted_residual: np.ndarray) -> np.ndarray:
    """Standard deviations of a least-squares solution of ``A x = y``: ``sqrt(diag(
    s^2 (A^T A)^-1))`` through the QR factor of ``A`` (``s^2``: the residual variance)."""
    dof = max(A.shape[0] - A.shape[1], 1)
    s2 = float(np.sum(weighted_residual ** 2)) / dof
    Rinv = np.linalg.inv(np.linalg.qr(A, mode="r"))
    return np.sqrt(s2 * np.einsum("ij,ij->i", Rinv, Rinv))


def estimate_suspension(W: np.ndarray, wrench: np.ndarray, names: list[str],
                        sigma: np.ndarray | None = None) -> SuspensionEstimate:
    """Eq. 5 on the identifiable combinations of the regressor ``W``, bounded below by
    ``_lower_bounds``.  ``wrench`` (6N, component-major) in ``F_0``; ``sigma``:
    per-component noise for the weights."""
    obs = observability(W, names)
    Wb = obs.base.base_regressor(W)
    N = W.shape[0] // 6
    w = np.ones(W.shape[0]) if sigma is None else np.repeat(1.0 / np.asarray(sigma), N)
    lb = _lower_bounds(obs, names)
    A = Wb * w[:, None]
    scale = np.linalg.norm(A, axis=0)
    scale[scale == 0] = 1.0
    sol = so.lsq_linear(A / scale, wrench * w, bounds=(lb * scale, np.full_like(lb, np.inf)),
                        method="bvls", tol=1e-12)
    values = sol.x / scale
    res = wrench - Wb @ values
    rmse = np.sqrt(np.mean(res.reshape(6, N) ** 2, axis=1))
    active = [obs.base.names[i] for i in range(obs.base.size)
              if lb[i] == 0.0 and values[i] <= 1e-12]
    return SuspensionEstimate(values, _standard_deviations(A, res * w), obs, rmse, active)


def predict_wrench(est: SuspensionEstimate, W: np.ndarray) -> np.ndarray:
    return est.observability.base.base_regressor(W) @ est.values


def static_displacement(wheels: np.ndarray, P: np.ndarray, wrench_change: np.ndarray):
    """The rest displacement ``[t; theta]`` of the base when the ground reaction must
    change by ``wrench_change`` (what the arm's posture does: its weight moves): the
    stiffness part of Eq. 4, ``-K_s [t; theta] = dR``, solved."""
    nw = len(wheels)
    K = np.zeros((6, 6))
    for i, r in enumerate(wheels):
        S = _skew(r)
        k = np.diag(P[6 * i:6 * i + 3])
        D = np.hstack([np.eye(3), -S])           # dr_i = D [t; theta]
        K[:3] += k @ D
        K[3:] += S @ k @ D
    K[3:, 3:] += np.diag(P[6 * nw:6 * nw + 3])
    return -np.linalg.solve(K, np.asarray(wrench_change, float))


def ground_reaction(model: pin.Model, q: np.ndarray, frame: str = "base_link",
                    data=None) -> np.ndarray:
    """Static ground reaction on the robot (force, moment at ``frame``'s origin, in it):
    the weight carried, ``[0, 0, M g]`` and ``c x [0, 0, M g]`` (``c``: centre of mass)."""
    data = model.createData() if data is None else data
    c = pin.centerOfMass(model, data, q)
    pin.framesForwardKinematics(model, data, q)
    oMf = data.oMf[model.getFrameId(frame)]
    c_f = oMf.actInv(c)
    w = np.array([0.0, 0.0, -model.gravity.linear[2] * data.mass[0]])
    w_f = oMf.rotation.T @ w
    return np.r_[w_f, np.cross(c_f, w_f)]


def stiffness_matrix(values: np.ndarray, base, wheels: np.ndarray) -> np.ndarray:
    """``K_s`` (6 x 6) with ``R = R_N - K_s [t; theta]`` at rest, from identified base
    combinations (``values`` of ``base``, a ``BaseParameters`` of the suspension) or, with
    ``base=None``, from all 48 parameters: the predicted wrench of unit static
    displacements."""
    K = np.zeros((6, 6))
    zero = np.zeros((1, 3))
    cols = (lambda W: W) if base is None else base.base_regressor
    R0 = cols(suspension_regressor(wheels, zero, zero, zero, zero)) @ values
    for k in range(6):
        e = np.eye(6)[k]
        W = suspension_regressor(wheels, e[None, :3], e[None, 3:], zero, zero)
        K[:, k] = -(cols(W) @ values - R0)
    return K


def displacement(K: np.ndarray, dR: np.ndarray) -> pin.SE3:
    """Base displacement for a change ``dR`` of the ground reaction: ``-K [t; theta] = dR``."""
    x = -np.linalg.solve(K, dR)
    return pin.SE3(pin.exp3(x[3:]), x[:3])

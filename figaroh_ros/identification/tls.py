"""Drive gains and joint-torque-sensor gains by total least squares with a known payload
(Nguyen et al. 2023 Eq. 8-10; Gautier & Briot).

Two experiments, unloaded (``u``) and loaded with a payload on the last body (``l``).
Torques are not measured directly: motor currents ``i_m`` (torque ``g_tau,j i_m,j``) and/or
joint torque sensors ``tau_j`` (torque ``K_j tau_j``) are.  With the robot's base
regressor ``R_d`` and the last body's regressor split into the payload's unknown
parameters ``R_dup`` and its known ones ``R_dkp`` (the payload's weighed mass):

    [ -R_du   i_m   0     0       0     ]   [ phi    ]
    [ -R_du   0     tau   0       0     ]   [ g_tau  ]
    [ -R_dl   i_m   0    -R_dup  -R_dkp ] . [ K      ] = 0                   (Eq. 8, 9)
    [ -R_dl   0     tau  -R_dup  -R_dkp ]   [ phi_up ]
                                            [ 1      ]

Every block is noisy, so the system is full rank; its closest rank-deficient matrix in the
Frobenius norm has the null vector ``v_min``, the right singular vector of the smallest
singular value (Eq. 10).  ``v_min`` is defined up to scale: the known payload's
coefficient must be 1, which fixes it.  ``i_m`` and ``tau`` enter column-block-diagonally
(joint ``j``'s rows use column ``j``).  Each block's rows are weighted by the inverse of
its own residual standard deviation from a first, unweighted solve.

TLS perturbs every column, but here only the measured ones (``i_m``, ``tau``) are noisy;
the regressor columns are computed from the joint positions.  Its estimate is biased by
an amount that grows with the square of the noise (a few percent on a weakly loaded wrist
at 0.5 % current noise).  ``refine`` removes the bias: from the TLS solution it fits the
measurements themselves, ``i_m,r = theta_j (R_d phi + R_dup phi_up + R_dkp phi_kp)_r``
with ``theta_j = 1 / g_tau,j`` (the output-error model: noise only on what is measured),
each block weighted by its residual std.  The model is linear in ``(phi, phi_up)`` for
given ``theta``: the fit is a separable least squares, solved by variable projection
(Golub & Pereyra 2003) on ``theta`` alone by Levenberg-Marquardt (scipy ``least_squares``)
with Kaufman's Jacobian.  The minimum is that of the joint fit; only the path differs
(the gains' common scale, a curved valley in the joint unknowns, is a ray in ``theta``),
in a few iterations instead of hundreds on a weakly exciting loaded run.  The refined
result carries the information ``J^T J`` of the whitened residuals: the metric in which
``payload_feasibility`` brings a non-realisable payload onto the realisable set.

Both solves see a joint's rows in an experiment only through the ``R`` of their QR
(``_factors``): its weight and gain are common to the rows, so every residual above is
``Q R z`` and ``R z`` has the same norm, Gram matrix and gradient in at most as many rows
as there are columns.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.optimize as so

from figaroh_ros.errors import SolverError
from figaroh_ros.identification.base_parameters import base_parameters
from figaroh_ros.identification.parameters import INERTIAL


@dataclass
class Experiment:
    """One experiment's rows: base regressor ``Wb`` (joint-major rows), the joint of each
    row, and the measured currents and/or torque-sensor readings (same rows)."""

    Wb: np.ndarray
    row_joint: np.ndarray
    currents: np.ndarray | None = None
    sensor_torques: np.ndarray | None = None


@dataclass
class TLSResult:
    phi_b: np.ndarray                 # robot base parameters
    drive_gains: np.ndarray | None    # g_tau per joint (torque per unit of current)
    sensor_gains: np.ndarray | None   # K per joint (torque per unit of sensor reading)
    payload: np.ndarray               # the payload's unknown (base) parameters
    payload_names: list[str]
    singular_values: np.ndarray       # the two smallest (their ratio: how well determined)
    residual_rms: dict | None = None  # refined: (kind, "unloaded" / "loaded") -> RMS
    drive_gains_std: np.ndarray | None = None     # refined: standard deviations
    sensor_gains_std: np.ndarray | None = None
    payload_std: np.ndarray | None = None
    information: np.ndarray | None = None         # refined: J^T J of the whitened fit


def payload_split(W_last: np.ndarray, names: list[str], known: str = "m"):
    """Columns of the last body's 10 standard parameters ``W_last`` (loaded experiment, in
    standard order; ``names`` for messages): the known one (``known``, one of
    ``parameters.INERTIAL``, default the mass) and an independent set of the others that the
    loaded data excite (by the same QR as the base parameters, the known column first)."""
    k, unknown, _ = payload_structure(W_last, names, known)
    return k, unknown


def payload_structure(W_last: np.ndarray, names: list[str], known: str = "m"):
    """``payload_split``'s (known, unknown) and the dependencies of the others:
    ``{base column: [(dependent column, beta), ...]}`` with ``W[:, d] = sum_b beta W[:, b]``
    (standard indices; a base column's value is its own parameter plus
    ``sum beta p_d``)."""
    k = INERTIAL.index(known)
    order = [k] + [i for i in range(len(names)) if i != k]
    bp = base_parameters(W_last[:, order], [names[i] for i in order])
    if order[bp.base_index[0]] != k:
        raise SolverError(f"the loaded experiment does not excite the payload's {known} "
                       f"({names[k]})")
    unknown = [order[i] for i in bp.base_index[1:]]
    deps = {order[b]: [(order[d], float(bp.beta[j, c]))
                       for c, d in enumerate(bp.dependent_index) if bp.beta[j, c] != 0.0]
            for j, b in enumerate(bp.base_index)}
    return k, unknown, deps


def _factors(unloaded, loaded, Wp_unknown, wp_known, n, kinds) -> list[list]:
    """Per experiment and joint, the ``R`` of the QR of its rows ``[A, b, y_kind...]``:
    ``A = [Wb, Wp_unknown]`` and ``b`` the known payload's torque (0 unloaded).  Every
    residual of a joint's rows here (Eq. 8-9, the output-error model) is ``[A, b, Y] z =
    Q R z`` with ``z`` the same for all its rows, so ``R z`` has its norm, its Jacobian's
    Gram matrix and its gradient, in at most as many rows as columns."""
    pu = Wp_unknown.shape[1]
    exps = [(unloaded, np.zeros((len(unloaded.Wb), pu)), np.zeros(len(unloaded.Wb))),
            (loaded, Wp_unknown, np.asarray(wp_known, float))]
    out = []
    for e, Wp, b in exps:
        C = np.column_stack([e.Wb, Wp, b] + [getattr(e, k) for k in kinds])
        out.append([np.linalg.qr(C[e.row_joint == j], mode="r") for j in range(n)])
    return out


def _tls_rows(factors, pb: int, n: int, n_kinds: int):
    """The rows of Eq. 8-9 compressed per (kind, experiment, joint) group (``_factors``)
    and their group."""
    p = factors[0][0].shape[1] - 1 - n_kinds
    ncol = pb + n * n_kinds + (p - pb) + 1
    blocks, labels = [], []
    for g in range(n_kinds):
        for e, Re in enumerate(factors):
            for j, R in enumerate(Re):
                B = np.zeros((len(R), ncol))
                B[:, :pb] = -R[:, :pb]
                B[:, pb + g * n + j] = R[:, p + 1 + g]
                B[:, pb + n * n_kinds:] = -R[:, pb:p + 1]
                blocks.append(B)
                labels.append(np.full(len(R), j + n * (2 * g + e)))
    return np.vstack(blocks), np.concatenate(labels)


def total_least_squares(unloaded: Experiment, loaded: Experiment, Wp_unknown: np.ndarray,
                        wp_known: np.ndarray, n_joints: int,
                        payload_names: list[str] | None = None,
                        reweight: bool = True) -> TLSResult:
    """Solve Eq. 8-10.  ``Wp_unknown``: the loaded rows of the payload's unknown columns;
    ``wp_known``: the loaded rows of the known part times its known values (one column)."""
    kinds = [k for k in ("currents", "sensor_torques")
             if getattr(unloaded, k) is not None and getattr(loaded, k) is not None]
    if not kinds:
        raise SolverError("neither motor currents nor torque-sensor readings in both experiments")
    pb, n = unloaded.Wb.shape[1], n_joints
    factors = _factors(unloaded, loaded, Wp_unknown, wp_known, n, kinds)
    A, group = _tls_rows(factors, pb, n, len(kinds))
    counts = np.array([np.sum(e.row_joint == j) for _ in kinds for e in (unloaded, loaded)
                       for j in range(n)])
    w = np.ones(A.shape[0])
    for _ in range(2 if reweight else 1):
        _, R = np.linalg.qr(A * w[:, None])
        _, s, Vt = np.linalg.svd(R)
        v = Vt[-1]
        if abs(v[-1]) < 1e-12 * np.abs(v).max():
            raise SolverError("the known payload does not enter the null vector: the loaded "
                           "experiment does not separate the payload")
        v = v / v[-1]
        ss = np.bincount(group, weights=(A @ v) ** 2, minlength=len(counts))
        sig = np.where(counts > 0, np.sqrt(ss / np.maximum(counts, 1)), 1.0)
        w = 1.0 / np.maximum(sig[group], 1e-12 * sig.max())
    gains = [v[pb + g * n:pb + (g + 1) * n] for g in range(len(kinds))]
    out = dict(zip(kinds, gains))
    return TLSResult(v[:pb], out.get("currents"), out.get("sensor_torques"),
                     v[pb + n * len(kinds):-1], list(payload_names or []), s[-2:])


@dataclass
class _Block:
    """The rows of one measured kind in one experiment for the output-error model
    ``y = theta[col] (A x + b)``: ``x = (phi_b, phi_up)``, ``col`` each row's gain in the
    stacked ``theta`` (kind-major), ``b`` the known payload's torque (0 unloaded), ``rows``
    the number of measured rows they stand for (``_factors``)."""

    y: np.ndarray
    col: np.ndarray
    A: np.ndarray
    b: np.ndarray
    rows: int

    def torque(self, x: np.ndarray) -> np.ndarray:
        return self.A @ x + self.b

    def residual(self, theta: np.ndarray, x: np.ndarray) -> np.ndarray:
        return self.y - theta[self.col] * self.torque(x)


def _output_error_blocks(factors, n: int, n_kinds: int, rows: list) -> list[_Block]:
    """Kind-major, unloaded then loaded (the order of ``TLSResult.residual_rms``), each
    joint's rows compressed (``_factors``); ``rows``: each experiment's row count."""
    p = factors[0][0].shape[1] - 1 - n_kinds
    return [_Block(np.concatenate([R[:, p + 1 + g] for R in Re]),
                   np.concatenate([np.full(len(R), g * n + j) for j, R in enumerate(Re)]),
                   np.vstack([R[:, :p] for R in Re]), np.concatenate([R[:, p] for R in Re]),
                   m)
            for g in range(n_kinds) for Re, m in zip(factors, rows)]


def _linear_part(blocks, theta, w):
    """``(M, c)`` with the whitened residual ``c - M x``: linear in ``x`` at fixed
    ``theta``."""
    M = np.vstack([wk * theta[b.col][:, None] * b.A for b, wk in zip(blocks, w)])
    c = np.concatenate([wk * (b.y - theta[b.col] * b.b) for b, wk in zip(blocks, w)])
    return M, c


def _theta_jacobian(blocks, theta, x, w) -> np.ndarray:
    """``d r / d theta`` of the whitened residual at fixed ``x``: ``-w (A x + b)`` in the
    column of each row's gain."""
    col = np.concatenate([b.col for b in blocks])
    J = np.zeros((len(col), len(theta)))
    J[np.arange(len(col)), col] = -np.concatenate([wk * b.torque(x)
                                                   for b, wk in zip(blocks, w)])
    return J


def _projected(blocks, theta, w):
    """Variable projection (Golub & Pereyra 2003): ``x*(theta)`` by linear least squares,
    the residual it leaves and an orthonormal basis ``Q`` of the range of ``M``."""
    M, c = _linear_part(blocks, theta, w)
    Q, R = np.linalg.qr(M)
    x = np.linalg.lstsq(R, Q.T @ c, rcond=None)[0]
    return x, c - M @ x, Q


def _output_error_fit(blocks, theta, w):
    """The whitened output-error least squares over ``(x, theta)``, solved on ``theta``
    alone with ``x = x*(theta)`` (same minimum; the gains' common scale, a curved valley
    in the joint unknowns, is a straight ray in ``theta``), by Levenberg-Marquardt with
    Kaufman's Jacobian ``(1 - Q Q^T) d r / d theta`` (Kaufman 1975)."""
    def residual(t):
        return _projected(blocks, t, w)[1]

    def jacobian(t):
        x, _, Q = _projected(blocks, t, w)
        J = _theta_jacobian(blocks, t, x, w)
        return J - Q @ (Q.T @ J)

    # ftol: the default 1e-8 stops some 1e-5 (relative gains) short of the minimum on a
    # weakly exciting loaded run, whose cost is flat there
    theta = so.least_squares(residual, theta, jac=jacobian, method="lm", xtol=1e-12,
                             ftol=1e-14).x
    return _projected(blocks, theta, w)[0], theta


def refine(unloaded: Experiment, loaded: Experiment, Wp_unknown: np.ndarray,
           wp_known: np.ndarray, n_joints: int, start: TLSResult) -> TLSResult:
    """Output-error refinement of a TLS solution (module docstring)."""
    kinds = [k for k, g in (("currents", start.drive_gains),
                            ("sensor_torques", start.sensor_gains)) if g is not None]
    factors = _factors(unloaded, loaded, Wp_unknown, wp_known, n_joints, kinds)
    blocks = _output_error_blocks(factors, n_joints, len(kinds),
                                  [len(unloaded.Wb), len(loaded.Wb)])
    gains = [start.drive_gains if k == "currents" else start.sensor_gains for k in kinds]
    theta = np.concatenate([1.0 / g for g in gains])
    if np.any(~np.isfinite(theta)):
        raise SolverError("the TLS start has a zero gain")
    sig = np.ones(len(blocks))
    for _ in range(2):      # weights from the residual std of each block, then refit
        x, theta = _output_error_fit(blocks, theta, 1.0 / sig)
        sig = np.array([max(np.sqrt(np.sum(b.residual(theta, x) ** 2) / b.rows), 1e-300)
                        for b in blocks])
    return _refined(start, blocks, x, theta.reshape(len(kinds), n_joints), sig, kinds)


def _refined(start: TLSResult, blocks, x, theta, sig, kinds) -> TLSResult:
    """The refined solution with its standard deviations and information ``J^T J`` at
    the weights ``1 / sig`` of its residual stds."""
    pb, w = len(start.phi_b), 1.0 / sig
    J = np.hstack([-_linear_part(blocks, theta.ravel(), w)[0],
                   _theta_jacobian(blocks, theta.ravel(), x, w)])
    std = _std(J)
    up_std, theta_std = std[pb:len(x)], std[len(x):].reshape(theta.shape)
    gains = dict(zip(kinds, 1.0 / theta))
    std = dict(zip(kinds, theta_std / theta ** 2))      # g = 1/theta: sigma_g = sigma_t / t^2
    rms = {(kind, e): sig[2 * g + i] for g, kind in enumerate(kinds)
           for i, e in enumerate(("unloaded", "loaded"))}
    return TLSResult(x[:pb], gains.get("currents"), gains.get("sensor_torques"), x[pb:],
                     start.payload_names, start.singular_values, rms,
                     std.get("currents"), std.get("sensor_torques"), up_std, J.T @ J)


def _std(J: np.ndarray) -> np.ndarray:
    """Standard deviations of a least-squares solution whose weighted residuals have unit
    variance (each block divided by its own residual std): ``sqrt(diag((J^T J)^-1))``."""
    _, s, Vt = np.linalg.svd(J, full_matrices=False)
    keep = s > s[0] * 1e-12
    return np.sqrt(np.sum((Vt[keep] / s[keep, None]) ** 2, axis=0))

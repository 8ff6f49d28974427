"""Drive gains and joint-torque-sensor gains by total least squares with a known payload
(seed 000 Eq. 8-10; Gautier & Briot).

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
by Gauss-Newton (scipy ``least_squares``), each block weighted by its residual std.  The
refined result carries the information ``J^T J`` of the whitened residuals: the metric in
which ``payload_feasibility`` brings a non-realisable payload onto the realisable set.
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


def _diag_block(values: np.ndarray, row_joint: np.ndarray, n: int) -> np.ndarray:
    D = np.zeros((len(values), n))
    D[np.arange(len(values)), row_joint] = values
    return D


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
    pb, n, pu = unloaded.Wb.shape[1], n_joints, Wp_unknown.shape[1]
    ncol = pb + n * len(kinds) + pu + 1
    blocks, labels = [], []
    for g, kind in enumerate(kinds):
        for exp, is_loaded in ((unloaded, False), (loaded, True)):
            B = np.zeros((exp.Wb.shape[0], ncol))
            B[:, :pb] = -exp.Wb
            B[:, pb + g * n:pb + (g + 1) * n] = _diag_block(getattr(exp, kind), exp.row_joint, n)
            if is_loaded:
                B[:, pb + n * len(kinds):-1] = -Wp_unknown
                B[:, -1] = -wp_known
            blocks.append(B)
            labels.append(exp.row_joint + n * (2 * g + is_loaded))
    A = np.vstack(blocks)
    group = np.concatenate(labels)
    w = np.ones(A.shape[0])
    for _ in range(2 if reweight else 1):
        _, R = np.linalg.qr(A * w[:, None])
        _, s, Vt = np.linalg.svd(R)
        v = Vt[-1]
        if abs(v[-1]) < 1e-12 * np.abs(v).max():
            raise SolverError("the known payload does not enter the null vector: the loaded "
                           "experiment does not separate the payload")
        v = v / v[-1]
        res = A @ v
        sig = np.array([np.sqrt(np.mean(res[group == k] ** 2)) if np.any(group == k)
                        else 1.0 for k in range(group.max() + 1)])
        w = 1.0 / np.maximum(sig[group], 1e-12 * sig.max())
    gains = [v[pb + g * n:pb + (g + 1) * n] for g in range(len(kinds))]
    out = dict(zip(kinds, gains))
    return TLSResult(v[:pb], out.get("currents"), out.get("sensor_torques"),
                     v[pb + n * len(kinds):-1], list(payload_names or []), s[-2:])


def refine(unloaded: Experiment, loaded: Experiment, Wp_unknown: np.ndarray,
           wp_known: np.ndarray, n_joints: int, start: TLSResult) -> TLSResult:
    """Output-error refinement of a TLS solution (module docstring)."""
    kinds = [k for k, g in (("currents", start.drive_gains),
                            ("sensor_torques", start.sensor_gains)) if g is not None]
    pb, pu, n = unloaded.Wb.shape[1], Wp_unknown.shape[1], n_joints
    exps = [(unloaded, False), (loaded, True)]

    def split(x):
        return x[:pb], x[pb:pb + pu], x[pb + pu:].reshape(len(kinds), n)

    def model(x, exp, is_loaded):
        phi, up, _ = split(x)
        tau = exp.Wb @ phi
        if is_loaded:
            tau = tau + Wp_unknown @ up + wp_known
        return tau

    weights = [[1.0, 1.0] for _ in kinds]

    def residuals(x):
        _, _, theta = split(x)
        out = []
        for g, kind in enumerate(kinds):
            for e, (exp, is_loaded) in enumerate(exps):
                th = theta[g][exp.row_joint]
                out.append(weights[g][e] * (getattr(exp, kind) - th * model(x, exp, is_loaded)))
        return np.concatenate(out)

    def jacobian(x):
        _, _, theta = split(x)
        blocks = []
        for g, kind in enumerate(kinds):
            for e, (exp, is_loaded) in enumerate(exps):
                th = theta[g][exp.row_joint][:, None]
                J = np.zeros((exp.Wb.shape[0], len(x)))
                J[:, :pb] = -th * exp.Wb
                if is_loaded:
                    J[:, pb:pb + pu] = -th * Wp_unknown
                tau = model(x, exp, is_loaded)
                J[np.arange(len(tau)), pb + pu + g * n + exp.row_joint] = -tau
                blocks.append(weights[g][e] * J)
        return np.vstack(blocks)

    gains = [start.drive_gains if k == "currents" else start.sensor_gains for k in kinds]
    x = np.concatenate([start.phi_b, start.payload] + [1.0 / g for g in gains])
    if np.any(~np.isfinite(x)):
        raise SolverError("the TLS start has a zero gain")
    for _ in range(2):      # weights from the residual std of each block, then refit
        sol = so.least_squares(residuals, x, jac=jacobian, method="lm", xtol=1e-12)
        x = sol.x
        r = residuals(x)
        k = 0
        for g in range(len(kinds)):
            for e, (exp, _) in enumerate(exps):
                m = exp.Wb.shape[0]
                sig = np.sqrt(np.mean((r[k:k + m] / weights[g][e]) ** 2))
                weights[g][e] = 1.0 / max(sig, 1e-300)
                k += m
    phi, up, theta = split(x)
    out = dict(zip(kinds, 1.0 / theta))
    rms = {(kind, e): 1.0 / weights[g][i] for g, kind in enumerate(kinds)
           for i, e in enumerate(("unloaded", "loaded"))}
    J = jacobian(x)
    _, up_std, theta_std = split(_std(J))
    std = dict(zip(kinds, theta_std / theta ** 2))      # g = 1/theta: sigma_g = sigma_t / t^2
    return TLSResult(phi, out.get("currents"), out.get("sensor_torques"), up,
                     start.payload_names, start.singular_values, rms,
                     std.get("currents"), std.get("sensor_torques"), up_std, J.T @ J)


def _std(J: np.ndarray) -> np.ndarray:
    """Standard deviations of a least-squares solution whose weighted residuals have unit
    variance (each block divided by its own residual std): ``sqrt(diag((J^T J)^-1))``."""
    _, s, Vt = np.linalg.svd(J, full_matrices=False)
    keep = s > s[0] * 1e-12
    return np.sqrt(np.sum((Vt[keep] / s[keep, None]) ** 2, axis=0))

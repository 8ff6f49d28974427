"""Published models scored on our data: reference tables matched by full expression, and a
published standard-parameter model (a URDF) predicting the same torques as ours.

A base parameter is a linear combination ``p . phi`` of the standard parameters.  Two
tables name the same quantity when their expressions are the same combination, whatever
order the terms are printed in, whichever parameter leads the group, and to the rounding
of the published coefficients (``0.0998 m3`` for ``0.099856*m3``).  So a reference row is
read into its vector ``p`` over our standard names and expressed in our base parameters:
``p = M^T c`` (least squares; the row matches when the relative residual is under
``tol``), its value is then ``c . phi_b`` with standard deviation ``sqrt(c^T C c)``.  A
row that no combination of our base parameters reproduces is not identifiable from our
model and data: it is an error, named with its row and expression.  The expressions are
read by ``expressions.py`` (our notation and the ``J``/``c m`` one of Gaz et al. 2019).
"""
from __future__ import annotations

import numpy as np

from figaroh_ros.errors import DataError, ModelError
from figaroh_ros.identification.parameters import standard_parameters
from figaroh_ros.io.expressions import linear_terms
from figaroh_ros.model.robot import RobotModel


def standard_vector(expression: str, names: list[str]) -> np.ndarray:
    """The expression as a vector over the standard parameters ``names``."""
    p = np.zeros(len(names))
    for name, coef in linear_terms(expression).items():
        if name not in names:
            raise DataError(f"expression {expression!r}: no standard parameter {name!r} in "
                            f"this model")
        p[names.index(name)] += coef
    return p


def express_in_base(expressions: list[str], names: list[str], M: np.ndarray,
                    tol: float = 2e-3, where: str = "reference") -> np.ndarray:
    """Coefficients ``C`` (rows x n_base) with ``p_i = M^T C_i`` for every expression, or a
    :class:`DataError` listing the rows that no base combination reproduces (``tol``:
    relative residual, the published coefficients being rounded)."""
    P = np.array([standard_vector(e, names) for e in expressions])
    C = np.linalg.lstsq(M.T, P.T, rcond=None)[0].T
    resid = np.linalg.norm(P - C @ M, axis=1) / np.maximum(np.linalg.norm(P, axis=1), 1e-300)
    bad = np.flatnonzero(resid > tol)
    if bad.size:
        rows = "; ".join(f"row {i + 1} {expressions[i]!r} (residual {resid[i]:.2g})"
                         for i in bad[:10])
        raise DataError(f"{where}: {bad.size} of {len(expressions)} expressions are no "
                        f"combination of our base parameters: {rows}")
    return C


def reference_standard_parameters(robot: RobotModel, reference: RobotModel, layout,
                                  tol: float = 1e-6) -> np.ndarray:
    """The standard parameters of a published model (its URDF inertias; drive terms 0)
    in ``robot``'s layout; a :class:`ModelError` when its joints or their placements are
    not ``robot``'s."""
    ours, theirs = list(robot.model.names), list(reference.model.names)
    if ours != theirs:
        raise ModelError(f"reference model: joints {theirs[1:]} differ from the model's "
                         f"{ours[1:]} (missing {sorted(set(ours) - set(theirs))}, extra "
                         f"{sorted(set(theirs) - set(ours))})")
    for j in range(1, robot.model.njoints):
        a, b = robot.model.jointPlacements[j], reference.model.jointPlacements[j]
        if not np.allclose(a.homogeneous, b.homogeneous, atol=tol):
            raise ModelError(f"reference model: joint {ours[j]!r} is placed differently "
                             "(a standard-parameter model is tied to its kinematics)")
    return standard_parameters(reference, layout)


def relative_errors(tau: np.ndarray, tau_hat: np.ndarray, joints: list[str]) -> dict:
    """Per joint ``RMSE / RMS(tau)`` and the stacked ``||tau - tau_hat|| / ||tau||``."""
    e = np.asarray(tau, float) - np.asarray(tau_hat, float)
    rel = np.sqrt(np.mean(e ** 2, 0) / np.mean(np.asarray(tau) ** 2, 0))
    out = {j: float(r) for j, r in zip(joints, rel)}
    out["stacked"] = float(np.linalg.norm(e) / np.linalg.norm(tau))
    return out


def comparison_table(expressions: list[str], columns: dict[str, np.ndarray],
                     digits: int = 4) -> str:
    """Markdown: one row per expression, one column per named value vector (NaN: -)."""
    head = "| coefficient | " + " | ".join(columns) + " |"
    rule = "|---|" + "---:|" * len(columns)
    lines = [head, rule]
    for i, e in enumerate(expressions):
        cells = ["-" if not np.isfinite(v[i]) else f"{v[i]:.{digits}f}"
                 for v in columns.values()]
        lines.append(f"| {e.replace('|', '/')} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def values_by_expression(reference: list[str], table: list[dict], covariance=None,
                         where: str = "reference") -> list[tuple[float, float]]:
    """Our value and relative std (%) of each reference expression, from ``table``
    (result.yaml's ``[{name: grouped expression, value, std_percent}]``, base order) and
    the base parameters' ``covariance`` (without it the std is known only for rows that
    are one of our base parameters, NaN otherwise)."""
    names = sorted({n for e in list(reference) + [r["name"] for r in table]
                    for n in linear_terms(e)})
    M = np.array([standard_vector(r["name"], names) for r in table])
    C = express_in_base(list(reference), names, M, where=where)
    phi = np.array([r["value"] for r in table], float)
    if covariance is not None:
        var = np.einsum("ij,jk,ik->i", C, np.asarray(covariance, float), C)
    else:
        sd = np.array([abs(r["value"]) * r["std_percent"] / 100.0 for r in table])
        single = (np.abs(C) > 1e-3 * np.abs(C).max(1, keepdims=True)).sum(1) == 1
        var = np.where(single, (np.abs(C) @ sd) ** 2, np.nan)
    values = C @ phi
    return [(float(v), float(100.0 * np.sqrt(s) / abs(v)) if v != 0 else float("inf"))
            for v, s in zip(values, var)]

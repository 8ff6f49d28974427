"""One entry point for the identification pipeline: the ``physical`` config section to a
physically consistent estimate of the standard parameters."""
from __future__ import annotations

import numpy as np
import pinocchio as pin

from figaroh_ros.identification.parameters import DriveOptions, ParameterLayout
from figaroh_ros.identification.physical.cholesky import cholesky_estimate
from figaroh_ros.identification.physical.convex import lmi_estimate, qp_estimate
from figaroh_ros.identification.physical.problem import (
    PhysicalEstimate, nonnegative_drive_columns, prior_scales, whiten
)


def link_names(robot) -> dict:
    """Joint id -> name of the joint's child body, for reports."""
    out = {}
    for f in robot.model.frames:
        if f.type == pin.FrameType.BODY and f.parentJoint not in out:
            out[f.parentJoint] = f.name
    return out


def consistent_parameters(ph: dict, robot, layout: ParameterLayout, drive: DriveOptions,
                          phi_nominal: np.ndarray, W: np.ndarray, Y: np.ndarray,
                          row_sigma: np.ndarray) -> PhysicalEstimate:
    """Fit the standard parameters with the estimator ``ph["method"]`` on the equations
    ``W phi = Y`` (standard columns) whitened by ``row_sigma``."""
    data = whiten(W, Y, row_sigma)
    s = prior_scales(phi_nominal, layout, ph["prior_relative"], length=ph["prior_length"])
    nonneg = nonnegative_drive_columns(layout, drive.coupled_convention)
    names = link_names(robot)
    if ph["method"] == "lmi":
        return lmi_estimate(data, layout, phi_nominal, s, nonneg, ph["alpha"],
                            link_names=names)
    if ph["method"] == "qp":
        return qp_estimate(data, layout, phi_nominal, s, nonneg, ph["alpha"],
                           ph["total_mass"], ph["com_margin"], link_names=names)
    if ph["method"] == "cholesky":
        return cholesky_estimate(data, layout, phi_nominal, s, nonneg, ph["alpha"],
                                 com_margin=ph["com_margin"], link_names=names)
    raise ValueError(f"unknown physical method {ph['method']!r}")


def physical_dict(est: PhysicalEstimate, names: list[str]) -> dict:
    """The ``physical`` block of ``result.yaml``."""
    std = np.sqrt(np.diag(est.cov)) if est.cov is not None else np.full(len(names), np.nan)
    return {
        "method": est.method,
        "solver": est.solver,
        "consistent": bool(est.consistent),
        "seconds": round(float(est.seconds), 3),
        "links": [{"name": c.name, "mass": float(c.mass),
                   "principal_inertia": [float(v) for v in c.principal],
                   "ok": bool(c.ok), **({"why": c.why} if c.why and not c.ok else {})}
                  for c in est.checks],
        "standard_parameters": [{"name": n, "value": float(v), "std": float(s)}
                                for n, v, s in zip(names, est.phi, std)],
    }


def physical_summary(ph: dict, nominal_rmse: dict | None) -> str:
    """The CLI's lines about the consistent estimate."""
    bad = [l for l in ph["links"] if not l["ok"]]
    lines = [f"physically consistent parameters ({ph['method']}, {ph['solver']}, "
             f"{ph['seconds']:.2f} s): " + ("every link consistent" if not bad else
                                           f"{len(bad)} link(s) NOT consistent")]
    if "validation_rmse" in ph and nominal_rmse:
        lines.append("  hold-out RMSE [N.m]: " + ", ".join(
            f"{k} {v:.4g} (nominal {nominal_rmse[k]:.4g})"
            for k, v in ph["validation_rmse"].items()))
    return "\n".join(lines)

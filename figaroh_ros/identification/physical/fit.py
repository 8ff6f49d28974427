"""One entry point for the identification pipeline: the ``physical`` config section to a
physically consistent estimate of the standard parameters."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from figaroh_ros.errors import ConfigError
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


@dataclass(frozen=True)
class PhysicalOptions:
    """How to fit physically consistent standard parameters (the ``physical`` config
    section): the estimator and its prior around the nominal values (Nguyen et al. 2023 Eq. 11)."""

    method: str = "lmi"              # "lmi", "qp" or "cholesky"
    alpha: float = 1.0               # weight of the prior around the URDF values
    prior_relative: float = 0.3      # prior std: fraction of each link's mass ...
    prior_length: float = 0.1        # ... times this length (m) per moment order
    total_mass: float | None = None  # qp: the robot's weighed mass (kg)
    com_margin: float = 0.05         # qp / cholesky: CoM within this of nominal (m)

    def __post_init__(self):
        if self.method not in METHODS:
            raise ConfigError(f"physical method {self.method!r}: expected one of {METHODS}")


METHODS = ("lmi", "qp", "cholesky")


def consistent_parameters(ph: PhysicalOptions, robot, layout: ParameterLayout,
                          drive: DriveOptions, phi_nominal: np.ndarray, W: np.ndarray,
                          Y: np.ndarray, row_sigma: np.ndarray) -> PhysicalEstimate:
    """Fit the standard parameters with the estimator ``ph.method`` on the equations
    ``W phi = Y`` (standard columns) whitened by ``row_sigma``."""
    data = whiten(W, Y, row_sigma)
    s = prior_scales(phi_nominal, layout, ph.prior_relative, length=ph.prior_length)
    nonneg = nonnegative_drive_columns(layout, drive.coupled_convention)
    names = link_names(robot)
    if ph.method == "lmi":
        return lmi_estimate(data, layout, phi_nominal, s, nonneg, ph.alpha,
                            link_names=names)
    if ph.method == "qp":
        return qp_estimate(data, layout, phi_nominal, s, nonneg, ph.alpha,
                           ph.total_mass, ph.com_margin, link_names=names)
    return cholesky_estimate(data, layout, phi_nominal, s, nonneg, ph.alpha,
                             com_margin=ph.com_margin, link_names=names)


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

"""What a set of postures will identify, known before the robot moves (pre-flight).

For planned postures ``Q`` the whitened observation matrix ``R`` (each row a measured axis
divided by its noise, Nguyen et al. 2023 Eq. 9) at the nominal parameters gives, with no measurement
at all:

* the parameters these postures identify (numerical rank of ``R`` on scaled columns, the
  rule of ``identifiable_parameters``) against those of the model itself (``structural``:
  what an exciting enough set identifies); the difference is unobservable with ``Q``;
* the condition number of ``R`` restricted to the identifiable columns, scaled to unit
  norm (the criterion the planners minimise);
* the expected standard deviation of each identifiable parameter,
  ``sqrt(diag((R_b^T R_b)^-1))``: the noise stated in the config propagated through the
  least-squares estimate (Gauss-Markov), in the parameter's unit.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from figaroh_ros.calibration.kinematic_model import KinematicModel
from figaroh_ros.calibration.solve import (
    PostureSet, identifiable_parameters, structural_parameters, whitened
)
from figaroh_ros.errors import DataError


@dataclass
class Identifiability:
    """What postures identify: names, rank against the model's, conditioning, std."""

    identified: list[str]
    structural: list[str]
    condition_number: float
    expected_std: dict[str, float]

    @property
    def rank_deficit(self) -> int:
        """How many fewer parameters these postures identify than the model allows."""
        return max(0, len(self.structural) - len(self.identified))

    @property
    def unobservable(self) -> list[str]:
        """Base parameters of the model missing from those of these postures (combinations
        may be grouped differently: read with :attr:`rank_deficit`)."""
        return [n for n in self.structural if n not in self.identified]


def scaled_condition_number(R: np.ndarray) -> float:
    """Condition number of ``R`` with unit-norm columns (inf when rank deficient)."""
    norms = np.linalg.norm(R, axis=0)
    if R.size == 0 or np.any(norms == 0.0):
        return float("inf")
    s = np.linalg.svd(R / norms, compute_uv=False)
    return float(s[0] / s[-1]) if s[-1] > 0 else float("inf")


def posture_identifiability(km: KinematicModel, Q: np.ndarray,
                            x: np.ndarray | None = None) -> Identifiability:
    """Identifiability of the calibration ``km`` from the chain postures ``Q`` (P x n)."""
    Q = np.atleast_2d(np.asarray(Q, float))
    if Q.shape[1] != len(km.chain):
        raise DataError(f"postures have {Q.shape[1]} joint columns, the chain "
                        f"{km.chain} has {len(km.chain)}")
    if not np.all(np.isfinite(Q)):
        raise DataError("postures hold values that are not finite numbers")
    x = km.nominal_parameters() if x is None else x
    planned = PostureSet(Q, np.zeros((len(Q), km.measurement.size)))
    bp = identifiable_parameters(km, planned, x)
    _, R = whitened(km, planned, x)
    Rb = R[:, bp.base_index]
    std = np.sqrt(np.diag(np.linalg.pinv(Rb.T @ Rb)))
    return Identifiability(list(bp.names), list(structural_parameters(km, x).names),
                           scaled_condition_number(Rb),
                           {n: float(s) for n, s in zip(bp.names, std)})

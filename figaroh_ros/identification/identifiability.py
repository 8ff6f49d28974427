"""What a planned exciting trajectory will identify, known before the robot moves.

On the trajectory's samples, processed as the identification will process the recording
(position low-pass, central differences, parallel decimation, slow samples dropped:
``observation.py``), the regressor of the model's base parameters ``W_b`` (the structural
base: what a rich excitation identifies, Nguyen et al. 2023 §II.B) gives, with no torque measured:

* the numerical rank of ``W_b`` (column-scaled, the rule of ``base_parameters``) against
  the structural base size; the base parameters this trajectory leaves as zero or
  dependent columns of ``W_b`` are named unobservable;
* the condition number of the noise-weighted ``Sigma^-1/2 W_b`` (rows divided by their
  joint's torque noise ``sigma_j``: the criterion ``plan-trajectory`` minimises); the base
  parameters carried by its singular directions below ``s_max / max_condition`` are named
  poorly identified;
* the expected standard deviation of each base parameter, the square roots of the
  diagonal of the covariance of the (weighted) least-squares estimate
  ``C = (W_b^T Sigma^-1 W_b)^-1`` (Gauss-Markov; with one noise level ``sigma^2 (W_b^T
  W_b)^-1``, Gautier & Khalil 1992, Nguyen et al. 2023 Eq. 7), ``Sigma = diag(sigma_j^2 / d)``
  after a parallel decimation by ``d``: its filter passes the band of the regressor with
  gain 1 and keeps the noise density there, that of white noise of variance
  ``sigma^2 / d`` at the decimated rate (the variance of the filtered samples, about
  ``0.8 sigma^2 / d``, would understate the std by ~10 %: measured in the tests).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.linalg as sla

from figaroh_ros.identification.base_parameters import (
    TOL_RANK, BaseParameters, base_parameters, condition_number, row_space
)
from figaroh_ros.identification.observation import Observation

WEAK_SHARE = 0.3        # a parameter's share of a weak singular direction that names it


@dataclass
class TrajectoryIdentifiability:
    """What a trajectory identifies: rank against the structural base, conditioning,
    expected std, the parameters it misses."""

    structural: list[str]              # base parameters of the model
    rank: int                          # numerical rank of W_b on this trajectory
    condition_number: float            # of the noise-weighted W_b
    max_condition: float
    rows: int                          # equations after decimation and slow samples
    expected_std: dict[str, float] = field(default_factory=dict)
    unobservable: list[str] = field(default_factory=list)
    poorly_identified: list[str] = field(default_factory=list)

    @property
    def rank_deficit(self) -> int:
        return max(0, len(self.structural) - self.rank)


def weighted_rows(obs: Observation, sigma: np.ndarray, decimation: int = 1) -> np.ndarray:
    """``Sigma^-1/2 W_b``: each row divided by its joint's noise std, ``sigma_j /
    sqrt(d)`` in the band of the regressor after a decimation by ``d``."""
    scale = np.asarray(sigma, float)[obs.row_joint] / np.sqrt(max(decimation, 1))
    return obs.Wb / scale[:, None]


def numerical_rank(Wb: np.ndarray) -> int:
    """Rank of ``Wb`` with unit-norm columns (singular values above ``TOL_RANK`` times the
    largest, as the base parameters are chosen); 0 columns never count."""
    norms = np.linalg.norm(Wb, axis=0)
    if not np.any(norms > 0):
        return 0
    live = norms > 0
    return int(row_space(Wb[:, live] / norms[live], TOL_RANK).shape[0])


def unobservable(Wb: np.ndarray, names: list[str]) -> list[str]:
    """Base parameters this regressor leaves as zero or dependent columns."""
    bp = base_parameters(Wb, names)
    return [names[k] for k in sorted(np.r_[bp.zero_index, bp.dependent_index].astype(int))]


def weak_parameters(Ww: np.ndarray, names: list[str], max_condition: float) -> list[str]:
    """Parameters carrying at least ``WEAK_SHARE`` of a singular direction of ``Ww`` whose
    singular value is below the largest over ``max_condition``, weakest first."""
    _, s, Vt = np.linalg.svd(Ww, full_matrices=False)
    out: list[str] = []
    for k in np.flatnonzero(s < s[0] / max_condition)[::-1]:
        for i in np.argsort(-np.abs(Vt[k])):
            if abs(Vt[k, i]) < WEAK_SHARE:
                break
            if names[i] not in out:
                out.append(names[i])
    return out


def expected_std(R: np.ndarray, names: list[str], hidden: list[str]) -> dict[str, float]:
    """``sqrt(diag((W^T W)^-1))`` of the weighted system from its R factor (never the
    normal equations); the unobservable parameters' std is infinite."""
    keep = [k for k, n in enumerate(names) if n not in hidden]
    std = dict.fromkeys(names, float("inf"))
    if keep:
        Rk = np.linalg.qr(R[:, keep], mode="r")
        Rinv = sla.solve_triangular(Rk, np.eye(Rk.shape[0]))
        std.update({names[k]: float(s) for k, s in
                    zip(keep, np.sqrt(np.sum(Rinv ** 2, axis=1)))})
    return std


def trajectory_identifiability(base: BaseParameters, obs: Observation, sigma: np.ndarray,
                               decimation: int = 1, max_condition: float = 1e3
                               ) -> TrajectoryIdentifiability:
    """Identifiability of the structural ``base`` from ``obs`` (its base columns on the
    trajectory's processed samples), the torque rows of group ``j`` carrying white noise
    of std ``sigma[j]`` (N.m) before the decimation by ``decimation``.  Everything is
    computed on the R factor of ``Sigma^-1/2 W_b = QR``: the same singular values, right
    singular vectors, column dependencies and ``W^T W``, in p rows instead of N."""
    names = list(base.names)
    R = np.linalg.qr(weighted_rows(obs, sigma, decimation), mode="r")
    hidden = unobservable(R, names)
    cond = condition_number(R) if not hidden else float("inf")
    weak = weak_parameters(R, names, max_condition) if not hidden else []
    return TrajectoryIdentifiability(names, numerical_rank(R), cond, max_condition,
                                     int(obs.Wb.shape[0]), expected_std(R, names, hidden),
                                     hidden, weak)

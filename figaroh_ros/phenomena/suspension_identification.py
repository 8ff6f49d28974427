"""The base suspension from synchronous arrays (Nguyen et al. 2024 Eq. 1-5, ``suspension.py``): the
ground reaction and the pose of the base in, a :class:`SuspensionResult` out, no files.

The displacement of the base is ``T_0^-1 T(t)`` (``T_0``: the mean pose over the rest
samples, the frame ``F_0``): ``t`` its translation, ``theta`` its rotation vector.  It is
low-passed (zero phase) before its rate is taken by central differences; Eq. 5 is solved
on the first part of the usable samples and scored on the last ``validation_fraction``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from figaroh_ros.calibration.rigid_fit import mean_rotation
from figaroh_ros.errors import DataError
from figaroh_ros.identification import signals
from figaroh_ros.identification.wrench import COMPONENTS
from figaroh_ros.phenomena.held_out import split_rows
from figaroh_ros.phenomena.suspension import (
    TIAGO_WHEELS, Observability, SuspensionEstimate, estimate_suspension, parameter_names,
    predict_wrench, stiffness_matrix, suspension_regressor
)
from figaroh_ros.progress import Stage, reporter

FILTER_ORDER = 4


@dataclass
class SuspensionResult:
    estimate: SuspensionEstimate       # identifiable combinations, std, training RMSE
    wheels: np.ndarray                 # n_wheels x 3 in the base frame
    rest_pose: pin.SE3                 # F_0 in the frame of the base poses
    validation_rmse: np.ndarray        # per wrench component
    samples: int                       # training + validation rows

    @property
    def names(self) -> list[str]:
        return list(self.estimate.observability.base.names)

    @property
    def parameters(self) -> np.ndarray:
        return self.estimate.values

    @property
    def std(self) -> np.ndarray:
        return self.estimate.std

    @property
    def observability(self) -> Observability:
        return self.estimate.observability

    def predict(self, displacement, velocity=None) -> np.ndarray:
        """Eq. 4: the ground reaction (N x 6, force then moment, in ``F_0``) for base
        displacements ``[t, theta]`` (N x 6, in ``F_0``) and their rates (default 0)."""
        X = np.atleast_2d(np.asarray(displacement, float))
        dX = np.zeros_like(X) if velocity is None else np.atleast_2d(velocity)
        W = suspension_regressor(self.wheels, X[:, :3], X[:, 3:], dX[:, :3], dX[:, 3:])
        return predict_wrench(self.estimate, W).reshape(6, -1).T

    def stiffness(self) -> np.ndarray:
        """``K_s`` (6 x 6): the static ground reaction changes by ``-K_s [t; theta]``."""
        return stiffness_matrix(self.parameters, self.observability.base, self.wheels)

    def to_dict(self) -> dict:
        obs = self.observability
        return {
            "samples": int(self.samples),
            "identifiable_combinations": [
                {"name": n, "value": float(v), "std": float(sd)}
                for n, v, sd in zip(self.names, self.parameters, self.std)],
            "identified_alone": obs.identifiable, "grouped": obs.groups,
            "unobservable": obs.unobservable,
            "held_at_zero_by_bounds": self.estimate.active_bounds,
            "train_rmse": {c: float(v) for c, v in zip(COMPONENTS, self.estimate.rmse)},
            "validation_rmse": {c: float(v) for c, v in zip(COMPONENTS, self.validation_rmse)},
            "report": obs.report(),
        }


def base_displacement(base_pose: np.ndarray, rest: np.ndarray):
    """``[t, theta]`` (N x 6) of ``T_0^-1 T`` for the poses ``base_pose`` (N x 7, ``x y z
    qx qy qz qw``), ``T_0`` the mean of the poses where ``rest`` is True; and ``T_0``."""
    poses = [pin.XYZQUATToSE3(p) for p in np.asarray(base_pose, float)]
    at_rest = [M for M, r in zip(poses, rest) if r]
    if len(at_rest) < 5:
        raise DataError(f"only {len(at_rest)} base poses at rest: need 5")
    T0 = pin.SE3(mean_rotation([M.rotation for M in at_rest]),
                 np.mean([M.translation for M in at_rest], axis=0))
    D = [T0.actInv(M) for M in poses]
    return np.array([np.r_[M.translation, pin.log3(M.rotation)] for M in D]), T0


def _rest_mask(rest, n: int) -> np.ndarray:
    if np.ndim(rest) == 0:
        return np.arange(n) < int(rest)
    mask = np.asarray(rest, bool)
    if mask.shape != (n,):
        raise DataError(f"rest: expected a sample count or {n} booleans")
    return mask


def _usable(usable, n: int, edge: int) -> np.ndarray:
    """``usable`` (default: every sample) without the filter's transients at both ends."""
    mask = np.ones(n, bool) if usable is None else np.array(usable, bool)
    if mask.shape != (n,):
        raise DataError(f"usable: expected {n} booleans, got shape {mask.shape}")
    mask[:edge] = mask[n - edge:] = False
    return mask


def identify_suspension(wrench, base_pose, *, dt: float, rest, wheels=None, usable=None,
                        cutoff_hz: float | None = None, validation_fraction: float = 0.3,
                        sigma=None, progress=None) -> SuspensionResult:
    """Nguyen et al. 2024 Eq. 5 from ``wrench`` (N x 6: force, moment of the ground on the robot, in
    the base frame at rest) and ``base_pose`` (N x 7: the base in a fixed frame, ``x y z
    qx qy qz qw``), both sampled every ``dt`` seconds.  ``rest``: how many leading samples
    (or which, N booleans) the base is at rest; ``wheels``: n_wheels x 3 in the base frame
    (default: TIAGo's); ``usable``: False on samples to leave out (gaps in a recording);
    ``cutoff_hz``: low-pass of the displacement (None: none); ``sigma``: the wrench noise
    per component, for the weights."""
    say = reporter(progress)
    wrench = np.asarray(wrench, float)
    if wrench.ndim != 2 or wrench.shape[1] != 6 or np.shape(base_pose) != (len(wrench), 7):
        raise DataError(f"wrench N x 6 and base_pose N x 7 expected, got {wrench.shape} and "
                        f"{np.shape(base_pose)}")
    wheels = TIAGO_WHEELS if wheels is None else np.asarray(wheels, float)
    X, T0 = base_displacement(base_pose, _rest_mask(rest, len(wrench)))
    if cutoff_hz:
        X = signals.lowpass_zero_phase(X, cutoff_hz, 1.0 / dt, FILTER_ORDER)
    dX = signals.central_difference(X, dt)
    edge = signals.edge_samples(FILTER_ORDER, cutoff_hz, 1.0 / dt)
    train, valid = split_rows(_usable(usable, len(X), edge), validation_fraction)

    def rows(r):
        W = suspension_regressor(wheels, X[r, :3], X[r, 3:], dX[r, :3], dX[r, 3:])
        return W, wrench[r].T.ravel()
    say(Stage.ESTIMATION, 0.2, f"Eq. 5 on {len(train)} samples")
    est = estimate_suspension(*rows(train), parameter_names(len(wheels)), sigma)
    Wv, Yv = rows(valid)
    rmse = np.sqrt(np.mean((predict_wrench(est, Wv) - Yv).reshape(6, -1) ** 2, axis=1))
    say(Stage.VALIDATION, 1.0, f"hold-out wrench RMSE on {len(valid)} samples")
    return SuspensionResult(est, wheels, T0, rmse, len(train) + len(valid))

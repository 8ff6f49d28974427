"""Simulated calibration experiments with hidden kinematic errors (for tests and demos)."""
from __future__ import annotations

import numpy as np
import pinocchio as pin

from figaroh_ros.calibration.kinematic_model import KinematicModel, chain_limits
from figaroh_ros.calibration.solve import PostureSet


def hidden_errors(km: KinematicModel, rng: np.random.Generator, position_mm: float = 2.0,
                  rotation_mrad: float = 2.0, offset_mrad: float = 5.0,
                  tool_points: np.ndarray | None = None) -> np.ndarray:
    """A "true" parameter vector: random joint placement errors (std ``position_mm`` /
    ``rotation_mrad``) or offsets (``offset_mrad``), a random base frame variation and the
    given tool points (or the tool origin)."""
    x = km.nominal_parameters(tool_points)
    if km.estimate_base:
        x[km.groups["base"]] = np.r_[rng.normal(0, 5e-3, 3), rng.normal(0, 5e-3, 3)]
    for j in km.joints:
        s = km.groups[j]
        if km.level == "full":
            x[s] = np.r_[rng.normal(0, position_mm * 1e-3, 3),
                         rng.normal(0, rotation_mrad * 1e-3, 3)]
        else:
            x[s] = rng.normal(0, offset_mrad * 1e-3)
    if km.measurement.kind == "pose":
        x[km.groups["tool"]] = np.r_[rng.normal(0, 5e-3, 3), rng.normal(0, 5e-3, 3)]
    return x


def measure(km: KinematicModel, Q: np.ndarray, x_true: np.ndarray,
            rng: np.random.Generator) -> PostureSet:
    """Noisy measurements of the postures ``Q`` on the model with parameters ``x_true``
    (position noise ``sigma_position`` per axis, orientation noise ``sigma_orientation``
    as a random rotation vector)."""
    m = km.measurement
    Q = np.atleast_2d(Q)
    Y = np.zeros((len(Q), m.size))
    poses = km.predict(Q, x_true)
    for i, T in enumerate(poses):
        if m.kind == "pose":
            Y[i, :3] = T.translation + rng.normal(0, m.sigma_position, 3)
            R = T.rotation @ pin.exp3(rng.normal(0, m.sigma_orientation, 3))
            Y[i, 3:] = pin.log3(R)
        else:
            P = km.tool_points(x_true)
            pts = (T.rotation @ P.T).T + T.translation
            Y[i] = (pts + rng.normal(0, m.sigma_position, pts.shape)).ravel()
    Y[:, ~m.mask] = 0.0
    return PostureSet(Q, Y)


def random_postures(km: KinematicModel, n: int, rng: np.random.Generator,
                    margin: float = 0.1) -> np.ndarray:
    lo, hi = chain_limits(km, margin)
    return rng.uniform(lo, hi, size=(n, len(lo)))

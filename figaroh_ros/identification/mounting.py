"""Mounting-generalized base parameters (Tröbinger et al.): the gravity direction as a parameter.

The gravitational acceleration in the robot's base frame (Tröbinger et al. Eq. 3),

    a_g(rho, phi) = g [sin(rho) cos(phi), sin(rho) sin(phi), cos(rho)],

enters the inverse dynamics linearly (it acts as a base acceleration), so the standard
regressor of any mounting splits into a motion part and three gravity parts computed once:

    W(q, dq, ddq; a_g) = W(q, dq, ddq; 0) + sum_k a_g,k W(q, 0, 0; e_k).       (Eq. 4)

* A vertical base-axis mount (V-BAM, ``a_g`` parallel to joint 1, ``rho = k pi``) leaves
  the first links' gravity moments about joint 1 unobservable: its base set (VBS) is
  smaller.  Any other mount (H-BAM: ``a_g`` perpendicular to joint 1) identifies the
  generalized base set (GBS), which models every mounting (Eq. 8: the two extra
  parameters only act on joint 1, through ``sin(rho)``).
* ``generalized_base_parameters`` finds both sets numerically (QR on regressors of random
  states, as ``base_parameters``) and names the extra ones.
* ``identify_mounting`` estimates ``(rho, phi)`` together with the GBS values when the
  mounting is not known: variable projection, the base parameters being the linear
  least-squares solution for each gravity direction.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.optimize as so

from figaroh_ros.identification.base_parameters import BaseParameters, base_parameters
from figaroh_ros.identification.parameters import DriveOptions, ParameterLayout
from figaroh_ros.identification.regressor import standard_regressor
from figaroh_ros.model.robot import RobotModel, random_states

G = 9.81


def gravity_vector(rho: float, phi: float, g: float = G) -> np.ndarray:
    """Tröbinger et al. Eq. 3 (``rho = pi``: the usual upright mount, ``a_g = (0, 0, -g)``)."""
    return g * np.array([np.sin(rho) * np.cos(phi), np.sin(rho) * np.sin(phi), np.cos(rho)])


@dataclass
class GravitySplitRegressor:
    """``W(a_g) = W0 + sum_k a_g,k Wg[k]`` for one set of samples."""

    W0: np.ndarray
    Wg: np.ndarray            # 3 x rows x cols

    def at(self, a_g: np.ndarray) -> np.ndarray:
        return self.W0 + np.tensordot(np.asarray(a_g, float), self.Wg, axes=1)


def split_regressor(robot: RobotModel, layout: ParameterLayout, drive: DriveOptions,
                    q, dq, ddq) -> GravitySplitRegressor:
    """The motion and gravity parts of the standard regressor (Eq. 4 above): ``W0`` with no
    gravity; ``Wg[k]`` the difference made by a unit gravity along ``k`` at rest (so that
    everything but gravity, drive columns included, cancels)."""
    model = robot.model
    saved = model.gravity.linear.copy()
    zeros = np.zeros_like(np.asarray(dq, float))
    try:
        model.gravity.linear = np.zeros(3)
        W0 = standard_regressor(robot, layout, drive, q, dq, ddq)
        rest = standard_regressor(robot, layout, drive, q, zeros, zeros)
        parts = []
        for k in range(3):
            model.gravity.linear = np.eye(3)[k]
            parts.append(standard_regressor(robot, layout, drive, q, zeros, zeros) - rest)
    finally:
        model.gravity.linear = saved
    return GravitySplitRegressor(W0, np.array(parts))


@dataclass
class MountingBases:
    generalized: BaseParameters      # GBS: identified on a tilted mount
    vertical: BaseParameters         # VBS: identified upright
    extra: list[str]                 # GBS parameters the upright mount cannot identify


def generalized_base_parameters(robot: RobotModel, layout: ParameterLayout,
                                drive: DriveOptions, samples: int = 1500,
                                seed: int = 0) -> MountingBases:
    """Base sets of the upright (V-BAM, ``rho = pi``) and a horizontal (H-BAM,
    ``rho = pi/2``) mount, from the regressors of random states."""
    S = split_regressor(robot, layout, drive,
                        *random_states(robot, np.random.default_rng(seed), samples))
    gbs = base_parameters(S.at(gravity_vector(np.pi / 2, 0.3)), layout.names)
    vbs = base_parameters(S.at(gravity_vector(np.pi, 0.0)), layout.names)
    # both sets are chosen greedily in the standard order: the extra parameters are the
    # GBS columns the upright regressor does not need
    extra = [n for n, col in zip(gbs.names, gbs.base_index) if col not in vbs.base_index]
    return MountingBases(gbs, vbs, extra)


@dataclass
class MountingEstimate:
    rho: float
    phi: float
    gravity: np.ndarray
    phi_b: np.ndarray          # GBS values
    rms: float                 # residual RMS


def identify_mounting(S: GravitySplitRegressor, base: BaseParameters, tau: np.ndarray,
                      starts: int = 12, seed: int = 0, g: float = G) -> MountingEstimate:
    """Gravity direction and base parameters from torques on an unknown mount:
    ``min_{rho, phi} || tau - W_b(a_g) phi_b(a_g) ||`` with ``phi_b(a_g)`` the linear
    least-squares solution (variable projection), from a spread of starts over the sphere.
    """
    idx = base.base_index
    W0, Wg = S.W0[:, idx], S.Wg[:, :, idx]

    def fit(a):
        W = W0 + np.tensordot(a, Wg, axes=1)
        phi_b = np.linalg.lstsq(W, tau, rcond=None)[0]
        return W, phi_b

    def residual(x):
        W, phi_b = fit(gravity_vector(x[0], x[1], g))
        return tau - W @ phi_b

    rng = np.random.default_rng(seed)
    best = None
    for k in range(starts):
        x0 = np.array([np.arccos(1 - 2 * (k + 0.5) / starts), rng.uniform(-np.pi, np.pi)])
        sol = so.least_squares(residual, x0, method="lm", xtol=1e-12)
        if best is None or sol.cost < best.cost:
            best = sol
    rho, phi = best.x
    # canonical angles: rho in [0, pi], phi in (-pi, pi]
    a = gravity_vector(rho, phi, g)
    rho = float(np.arccos(np.clip(a[2] / g, -1, 1)))
    phi = float(np.arctan2(a[1], a[0]))
    _, phi_b = fit(a)
    r = best.fun
    return MountingEstimate(rho, phi, a, phi_b, float(np.sqrt(np.mean(r ** 2))))

"""``identify(model, q, dq, ddq, tau)``: dynamic identification from arrays in memory.

In the style of ``scipy.optimize.least_squares``: joint-side motion and torques in, an
:class:`IdentificationResult` out, no file read or written.  The model is
``tau = W(q, dq, ddq) phi`` (Nguyen et al. 2023 Eq. 2-5): every link's ten inertial parameters
plus, per joint, the chosen drive-chain terms; the base parameters are estimated by OLS or
Gautier's WLS (Eq. 6-7).  Filtering and differentiation are the caller's (or use
``figaroh_ros.identification.signals``); ``decimation`` applies the same low-pass and
down-sampling to the regressor and the torques (parallel decimation).
"""
from __future__ import annotations

import numpy as np

from figaroh_ros.errors import ConfigError, DataError
from figaroh_ros.identification.fit import EstimationOptions, Setup, identify_equations
from figaroh_ros.identification.observation import Processing
from figaroh_ros.identification.parameters import DriveOptions, parameter_layout
from figaroh_ros.identification.physical.fit import PhysicalOptions
from figaroh_ros.identification.regressor import standard_regressor
from figaroh_ros.identification.result import IdentificationResult
from figaroh_ros.model.robot import RobotModel

FRICTION = ("viscous", "coulomb")


def drive_terms(friction=FRICTION, rotor_inertia: bool = True, torque_offset: bool = True,
                coulomb_model: str = "sign", coupled_convention: str = "motor") -> DriveOptions:
    """The drive-chain parameters of the model: ``friction`` a subset of
    ("viscous", "coulomb"), rotor inertias, torque offsets."""
    unknown = set(friction) - set(FRICTION)
    if unknown:
        raise ConfigError(f"friction: unknown terms {sorted(unknown)}; known {FRICTION}")
    try:
        return DriveOptions("viscous" in friction, "coulomb" in friction, coulomb_model,
                            rotor_inertia=rotor_inertia, torque_offset=torque_offset,
                            coupled_convention=coupled_convention)
    except ValueError as exc:
        raise ConfigError(str(exc)) from exc


def physical_options(physical) -> PhysicalOptions | None:
    """None, a method name ("lmi", "qp", "cholesky"), a mapping or PhysicalOptions."""
    if physical is None or isinstance(physical, PhysicalOptions):
        return physical
    if isinstance(physical, str):
        return PhysicalOptions(physical)
    return PhysicalOptions(**physical)


def _arrays(model: RobotModel, q, dq, ddq, tau, what: str) -> tuple[np.ndarray, ...]:
    arrays = tuple(np.atleast_2d(np.asarray(x, float)) for x in (q, dq, ddq, tau))
    shape = (arrays[0].shape[0], model.n_joints)
    for name, a in zip(("q", "dq", "ddq", "tau"), arrays):
        if a.shape != shape:
            raise DataError(f"{what}: {name} is {a.shape}, expected N x {model.n_joints} "
                            f"like q {shape}")
        if not np.all(np.isfinite(a)):
            raise DataError(f"{what}: {name} contains NaN or inf")
    return arrays


def _equations(model, layout, drive, arrays):
    q, dq, ddq, tau = arrays
    return lambda: (standard_regressor(model, layout, drive, q, dq, ddq), tau.T.ravel(), dq)


def identify(model: RobotModel, q, dq, ddq, tau, *, friction=FRICTION,
             rotor_inertia: bool = True, torque_offset: bool = True, method: str = "wls",
             validation=None, physical=None, essential_ratio: float = 30.0,
             coulomb_model: str = "sign", coupled_convention: str = "motor",
             decimation: int = 1, min_velocity: float = 0.0,
             cross_validation_folds: int = 0, progress=None) -> IdentificationResult:
    """Identify the base dynamic parameters of ``model`` from joint-side samples.

    ``q, dq, ddq, tau``: N x n arrays (n = ``model.n_joints``; torques in N.m).
    ``validation``: an optional held-out ``(q, dq, ddq, tau)`` tuple: the result then has
    ``validation_rmse`` and ``nominal_validation_rmse`` (the URDF model's).
    ``physical``: None, or "lmi" / "qp" / "cholesky" (or :class:`PhysicalOptions`) for a
    physically consistent estimate that :meth:`IdentificationResult.to_urdf` can write.
    ``decimation`` / ``min_velocity``: parallel decimation factor and the speed (rad/s)
    below which a joint's samples are left out.  ``progress``: a callable receiving
    :class:`figaroh_ros.progress.Progress` objects."""
    if method not in ("ols", "wls", "irls"):
        raise ConfigError(f"method: expected 'ols', 'wls' or 'irls', got {method!r}")
    drive = drive_terms(friction, rotor_inertia, torque_offset, coulomb_model,
                        coupled_convention)
    layout = parameter_layout(model, drive)
    data = _equations(model, layout, drive, _arrays(model, q, dq, ddq, tau, "data"))
    test = None if validation is None else _equations(
        model, layout, drive, _arrays(model, *validation, "validation"))
    setup = Setup(model.model.name or "robot", model, layout, drive, list(model.active_joints))
    opts = EstimationOptions(method, essential_ratio, cross_validation_folds,
                             physical_options(physical))
    return identify_equations(setup, data, Processing(None, 4, decimation, min_velocity),
                              opts, test=test, progress=progress)

"""Identification equations -> base parameters, their statistics and a held-out check.

One code path for the array API (``arrays.identify``) and the config-driven task
(``figaroh_ros.tasks.identify``).  The equations are given as builders (functions that
return ``(W, Y, moving)``, see ``observation.py``) so that each part of the data is
built only when needed:

1. base parameters of the standard regressor by QR (Nguyen et al. 2023 §II.B);
2. OLS or WLS, relative standard deviations, essential parameters (Nguyen et al. 2023 Eq. 6-7),
   with every training set of the cross-validation, from one QR factorisation of each row
   group in each time block (``row_blocks.py``);
3. optionally a physically consistent estimate of the standard parameters (Eq. 11);
4. the held-out check: fit on the training part, predict the held-out part, beside the
   nominal (URDF) model; optionally K-fold cross-validation over time blocks.

Options for drives that report efforts, not torques (``drive_gains.py``): per-joint signed
gains from the nominal model and/or from the model of the other fitted joints; only some joints'
rows fitted (``Setup.fitted``); the Stribeck velocity found by a bounded 1D search on the
training part (the other friction parameters being linear, this is variable projection
in one variable).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy.optimize import minimize_scalar

from figaroh_ros.errors import SolverError
from figaroh_ros.identification.base_definition import (
    BaseDefinition, check_excited, definition_from_regressor, model_definition
)
from figaroh_ros.identification.base_parameters import (
    MAX_QR_ROWS, BaseParameters, _row_sample, condition_number
)
from figaroh_ros.identification.drive_gains import nominal_gains, scaled, separated_gains
from figaroh_ros.identification.estimation import (
    Estimate, Factor, block_ordinary_least_squares, block_weighted_least_squares,
    essential_set, group_factors, iteratively_reweighted_least_squares,
    ordinary_least_squares, rmse_per_joint, weighted_least_squares
)
from figaroh_ros.identification.observation import Observation, Processing, observe
from figaroh_ros.identification.parameters import (
    DriveOptions, ParameterLayout, standard_parameters
)
from figaroh_ros.identification.physical.fit import PhysicalOptions, consistent_parameters
from figaroh_ros.identification.regressor import set_stribeck_columns
from figaroh_ros.identification.result import IdentificationResult
from figaroh_ros.identification.row_blocks import RowBlocks
from figaroh_ros.model.robot import RobotModel
from figaroh_ros.progress import Stage, reporter

Equations = Callable[[], tuple]     # () -> (W standard, Y, moving) before decimation


# fields of a config's ``estimation`` section that say how the recording is split, not how
# the parameters are estimated (the task's held-out part)
SPLIT_FIELDS = ("validation_fraction",)


@dataclass(frozen=True)
class EstimationOptions:
    """How the base parameters are estimated and checked."""

    method: str = "wls"                 # "ols", "wls" (Gautier's weights, Eq. 7), "irls"
    essential_ratio: float = 30.0       # max %std / min %std of the essential set
    cross_validation_folds: int = 0     # 0: none, else K >= 2 time blocks
    physical: PhysicalOptions | None = None
    nominal_gains: tuple[bool, ...] | None = None   # per group: gain from the nominal model
    free_gains: tuple[bool, ...] | None = None      # per group: gain from the other joints
    stribeck_range: tuple[float, float] | None = None  # search interval of v_st, rad/s

    @classmethod
    def from_config(cls, estimation, **others) -> "EstimationOptions":
        """The options of an identification config's ``estimation`` section (a pydantic
        model), every field under its own name except :data:`SPLIT_FIELDS`, plus
        ``others`` (``physical``, the gain masks, ``stribeck_range``: from other sections)."""
        return cls(**estimation.model_dump(exclude=set(SPLIT_FIELDS)), **others)


@dataclass
class Setup:
    """The model every equation is written for."""

    name: str
    model: RobotModel
    layout: ParameterLayout
    drive: DriveOptions
    groups: list[str]                   # row groups: active joints or wrench components
    fitted: list[int] | None = None     # active joints whose rows are fitted (None: all)
    absent: tuple[str, ...] = ()        # standard parameters left out (zero columns)

    @property
    def n(self) -> int:
        return len(self.groups)

    def equations(self, builder: Equations) -> tuple:
        """``builder()`` restricted to the rows of the fitted joints."""
        W, Y, moving = builder()
        if self.absent:       # left out of the model: zero in every regressor
            W[:, [self.layout.index(a) for a in self.absent]] = 0.0
        if self.fitted is None:
            return W, Y, moving
        N = moving.shape[0]
        rows = np.concatenate([np.arange(j * N, (j + 1) * N) for j in self.fitted])
        return W[rows], Y[rows], moving[:, self.fitted]

    def definition(self, W: np.ndarray) -> BaseDefinition:
        """The base parameters of joint-torque rows from the model alone
        (``base_definition.py``); those of a force plate's wrench rows from ``W``."""
        if set(self.groups) <= set(self.model.active_joints):
            return model_definition(self.model, self.layout, self.drive, self.groups,
                                    self.fitted, self.absent)
        return definition_from_regressor(_row_sample(W, MAX_QR_ROWS), self.layout.names,
                                         self.groups, "data")


def estimate(method: str, obs: Observation, n: int) -> Estimate:
    """OLS, Gautier's WLS or Huber's IRLS on ``obs`` (``n`` row groups)."""
    if method == "irls":
        return iteratively_reweighted_least_squares(obs.Wb, obs.Y, obs.row_joint, n)[0]
    if method == "wls":
        return weighted_least_squares(obs.Wb, obs.Y, obs.row_joint, n)
    return ordinary_least_squares(obs.Wb, obs.Y)


def block_estimate(method: str, blocks: RowBlocks) -> tuple[Estimate, Factor]:
    """``estimate`` on the rows of ``blocks`` (``row_blocks.py``), and its compressed
    system."""
    if method == "wls":
        return block_weighted_least_squares(blocks)
    return block_ordinary_least_squares(blocks)


def time_blocks(obs: Observation, folds: int) -> tuple[np.ndarray, int]:
    """The time block of every row of ``obs`` and their number: ``folds`` blocks of
    contiguous samples, or one block if ``folds < 2``."""
    if folds < 2:
        return np.zeros(len(obs.Y), int), 1
    edges = np.linspace(0, obs.row_sample.max() + 1, folds + 1).astype(int)
    return np.searchsorted(edges, obs.row_sample, side="right") - 1, folds


def cross_validation(obs: Observation, method: str, n: int, folds: int,
                     phi_nominal: np.ndarray | None = None,
                     blocks: RowBlocks | None = None) -> dict:
    """K-fold cross-validation over contiguous time blocks: fit on ``folds - 1`` blocks,
    predict the remaining one.  (The rows were filtered over the whole recording, so a
    block's edges share a filter length with their neighbours: negligible at the usual
    cut-offs.)  ``blocks``: the factors of ``obs`` per group and time block if known
    (every training set is fitted on them).  Returns per fold and joint the hold-out
    RMSE, and the nominal model's."""
    block, _ = time_blocks(obs, folds)
    if blocks is None:
        blocks = group_factors(obs.Wb, obs.Y, obs.row_joint, n, block, folds)
    rows = []
    for k in range(folds):
        est = (estimate(method, obs.subset(block != k), n) if method == "irls"  # rows
               else block_estimate(method, blocks.without(k))[0])
        te = obs.subset(block == k)
        row = {"fold": k + 1, "rmse": rmse_per_joint(te.Y, te.Wb @ est.phi, te.row_joint, n)}
        if phi_nominal is not None:
            row["nominal_rmse"] = rmse_per_joint(te.Y, te.Wb @ phi_nominal, te.row_joint, n)
        rows.append(row)
    return {"folds": folds, "method": method, "rows": rows}


def _observations(base: BaseParameters, equations: Equations, p: Processing,
                  standard: bool) -> tuple[Observation, Observation | None]:
    """The base-column observation of ``equations`` and, if ``standard``, the
    standard-column one (for the physically consistent fit)."""
    W, Y, moving = equations()
    return observe(base, W, Y, moving, p), (observe(None, W, Y, moving, p) if standard
                                            else None)


def drive_gains(setup: Setup, base: BaseParameters, obs: Observation,
                opts: EstimationOptions, phi_nominal: np.ndarray) -> np.ndarray | None:
    """Row factors ``g`` of the drive gains (``drive_gains.py``), or None if none asked."""
    if opts.nominal_gains is None and opts.free_gains is None:
        return None
    g = np.ones(setup.n)
    if opts.nominal_gains is not None and any(opts.nominal_gains):
        ids = [setup.model.joint_ids[j] for j in (setup.fitted or range(setup.n))]
        g = nominal_gains(obs, base.names, ids, base.from_standard(phi_nominal),
                          np.asarray(opts.nominal_gains, bool))
    if opts.free_gains is not None and any(opts.free_gains):
        g = separated_gains(scaled(obs, g), np.asarray(opts.free_gains, bool), setup.n) * g
    return g


def relative_errors(obs: Observation, phi: np.ndarray, n: int) -> tuple[np.ndarray, float]:
    """Per group ``RMSE / RMS`` of the measurement, and the same over the stacked rows."""
    res = obs.Y - obs.Wb @ phi
    rel = np.array([np.sqrt(np.mean(res[obs.row_joint == j] ** 2)
                            / np.mean(obs.Y[obs.row_joint == j] ** 2)) for j in range(n)])
    return rel, float(np.sqrt(np.mean(res ** 2) / np.mean(obs.Y ** 2)))


def search_stribeck(setup: Setup, equations: Equations, p: Processing,
                    opts: EstimationOptions) -> float:
    """The Stribeck velocity minimising the stacked relative residual of the fit on
    ``equations`` (the ``fst`` terms and every other parameter being linear): a bounded
    search on ``log v_st`` (Brent's method), as for the backlash model."""
    W, Y, dq = equations()
    base = setup.definition(W)

    def cost(log_v):
        set_stribeck_columns(setup.layout, W, dq, float(np.exp(log_v)))
        Ws, Ys, moving = setup.equations(lambda: (W, Y, dq))
        obs = observe(base, Ws, Ys, moving, p)
        try:
            obs = scaled(obs, drive_gains(setup, base, obs, opts,
                                          standard_parameters(setup.model, setup.layout)))
            return relative_errors(obs, estimate(opts.method, obs, setup.n).phi, setup.n)[1]
        except (np.linalg.LinAlgError, SolverError):
            return np.inf     # a Stribeck term indistinguishable from the Coulomb one
    lo, hi = np.log(opts.stribeck_range)
    best = minimize_scalar(cost, bounds=(lo, hi), method="bounded", options={"xatol": 0.02})
    return float(np.exp(best.x))


def _physical(setup: Setup, opts: PhysicalOptions, obs: Observation, est: Estimate,
              phi_nominal: np.ndarray):
    """Consistent standard parameters on ``obs`` (standard columns), rows whitened by the
    per-group residual std of the base-parameter estimate ``est``."""
    sigma = est.joint_sigma if est.joint_sigma is not None else \
        np.full(setup.n, est.residual_sigma)
    try:
        return consistent_parameters(opts, setup.model, setup.layout, setup.drive,
                                     phi_nominal, obs.Wb, obs.Y, sigma[obs.row_joint])
    except SolverError as exc:
        raise SolverError(f"physical method {opts.method}: {exc}") from exc


def _least_squares(setup: Setup, obs: Observation, opts: EstimationOptions,
                   blocks: RowBlocks) -> dict:
    """OLS, WLS and the essential parameters on the factors ``blocks`` of ``obs``; the
    condition number of ``W_b`` is that of its R factor (the same singular values)."""
    n = setup.n
    ols, ols_factor = block_ordinary_least_squares(blocks)
    wls, factor = block_weighted_least_squares(blocks, ols) if opts.method == "wls" \
        else (None, ols_factor)
    est = wls if wls is not None else ols
    if opts.method == "irls":          # robust weights need every row's residual
        est, factor = iteratively_reweighted_least_squares(obs.Wb, obs.Y, obs.row_joint, n)
    ess_idx, ess = essential_set(factor, opts.essential_ratio)
    return {"method": opts.method, "estimate": est, "ols": ols, "wls": wls,
            "rmse": rmse_per_joint(obs.Y, obs.Wb @ est.phi, obs.row_joint, n),
            "condition_number": condition_number(ols_factor[0]),
            "essential_index": ess_idx, "essential": ess}


def _held_out(setup, base, fit, opts, p, train, test, phi_nominal) -> dict:
    """Fit on ``train`` (None: the estimate of all the data), predict ``test``."""
    n, want_std = setup.n, opts.physical is not None
    o_te, _ = _observations(base, lambda: setup.equations(test), p, False)
    e_tr, p_tr, g = fit["estimate"], fit.get("physical"), fit.get("gain_factors")
    if train is not None:
        o_tr, s_tr = _observations(base, lambda: setup.equations(train), p, want_std)
        g = drive_gains(setup, base, o_tr, opts, phi_nominal)
        o_tr, s_tr = scaled(o_tr, g), scaled(s_tr, g)
        e_tr = estimate(opts.method, o_tr, n)
        p_tr = _physical(setup, opts.physical, s_tr, e_tr, phi_nominal) if want_std else None
    o_te = scaled(o_te, g)
    phi_nom_b = base.from_standard(phi_nominal)
    rel, stacked = relative_errors(o_te, e_tr.phi, n)
    nrel, nstacked = relative_errors(o_te, phi_nom_b, n)
    out = {"held_out": o_te, "validation_gain_factors": g,
           "validation_relative_error": rel, "validation_relative_error_stacked": stacked,
           "nominal_validation_relative_error": nrel,
           "nominal_validation_relative_error_stacked": nstacked,
           "validation_rmse": rmse_per_joint(o_te.Y, o_te.Wb @ e_tr.phi, o_te.row_joint, n),
           # the nominal model: URDF inertias, no friction, no rotor inertia, no offset
           "nominal_validation_rmse": rmse_per_joint(
               o_te.Y, o_te.Wb @ phi_nom_b, o_te.row_joint, n)}
    if p_tr is not None:
        out["physical_validation_rmse"] = rmse_per_joint(
            o_te.Y, o_te.Wb @ base.from_standard(p_tr.phi), o_te.row_joint, n)
    return out


def identify_equations(setup: Setup, data: Equations, p: Processing,
                       opts: EstimationOptions, *, train: Equations | None = None,
                       test: Equations | None = None, progress=None) -> IdentificationResult:
    """Identify the base parameters from the equations ``data``; with ``test``, check them
    on held-out equations (fitted again on ``train`` when given)."""
    say = reporter(progress)
    try:
        return _identify(setup, data, p, opts, train, test, say)
    except np.linalg.LinAlgError as exc:
        raise SolverError(str(exc)) from exc


def _identify(setup, data, p, opts, train, test, say) -> IdentificationResult:
    t0 = time.perf_counter()
    W, Y, moving = setup.equations(data)
    say(Stage.IDENTIFIABILITY, 0.2, f"regressor: {W.shape[0]} x {W.shape[1]}")
    base = setup.definition(W)
    say(Stage.IDENTIFIABILITY, 0.35, f"base parameters: {base.size}")
    phi_nominal = standard_parameters(setup.model, setup.layout)
    obs = observe(base, W, Y, moving, p)
    std_obs = observe(None, W, Y, moving, p) if opts.physical is not None else None
    del W
    check_excited(base, obs.Wb)
    g = drive_gains(setup, base, obs, opts, phi_nominal)
    obs, std_obs = scaled(obs, g), scaled(std_obs, g)
    folds = opts.cross_validation_folds
    blocks = group_factors(obs.Wb, obs.Y, obs.row_joint, setup.n, *time_blocks(obs, folds))
    fit = _least_squares(setup, obs, opts, blocks)
    fit["gain_factors"] = g
    say(Stage.ESTIMATION, 0.5, f"estimation ({opts.method}): "
        f"{len(fit['essential_index'])} essential parameters")
    if opts.physical is not None:
        fit["physical"] = _physical(setup, opts.physical, std_obs, fit["estimate"],
                                    phi_nominal)
        say(Stage.ESTIMATION, 0.6, f"physically consistent ({opts.physical.method}): "
            f"{'every link consistent' if fit['physical'].consistent else 'NOT consistent'}"
            f", {fit['physical'].seconds:.2f} s")
    if folds >= 2:
        fit["cross_validation"] = cross_validation(obs, opts.method, setup.n, folds,
                                                   base.from_standard(phi_nominal), blocks)
    if test is not None:
        fit.update(_held_out(setup, base, fit, opts, p, train, test, phi_nominal))
        say(Stage.VALIDATION, 0.75, "hold-out RMSE: " + ", ".join(
            f"{v:.3g}" for v in fit["validation_rmse"]))
    return IdentificationResult(setup.name, list(setup.groups), base, observation=obs,
                                model=setup.model, layout=setup.layout, drive=setup.drive,
                                timings={"total": time.perf_counter() - t0}, **fit)

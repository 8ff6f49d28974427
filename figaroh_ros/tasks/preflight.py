"""Pre-flight of an experiment: will these postures (geometric calibration) or this
exciting trajectory (dynamic identification) identify the model, before anything moves?

``run(config, postures=CSV)`` (``figaroh-ros preflight``) and the executor's goal check
(its ``preflight_config`` parameter) compute, from the calibration config and the planned
postures alone (``figaroh_ros.calibration.identifiability``), four checks with their
numbers:

* ``postures``: enough measured axes for the parameters (rows >= parameters);
* ``observable``: every parameter the model can identify is identified by these postures
  (else the unobservable ones are named);
* ``condition_number``: of the scaled observation matrix, at most ``MAX_CONDITION``;
* ``expected_std``: the stated noise propagated to the parameters stays within the
  solver's ``max_std_mm`` / ``max_std_mrad`` (what calibrating would otherwise prune).

``run(config, trajectory=CSV)`` and the executor's trajectory goals (its
``preflight_identification_config``) do the same for a planned exciting trajectory from
the identification config (``figaroh_ros.identification.identifiability``): the
trajectory sampled at the rate of the recording to come (``preflight.rate_hz``, else the
config's data rate, else the file's), processed as the identification will (filter,
decimation, slow samples), and three checks:

* ``samples``: at least as many equations as base parameters;
* ``observable``: the numerical rank of the structural base regressor on the trajectory
  equals the base size (else the unobservable base parameters are named);
* ``condition_number``: of the noise-weighted base regressor (``preflight.torque_noise``),
  at most ``preflight.max_condition`` (else the poorly identified ones are named).

The expected std of each base parameter (``sigma^2 (W_b^T W_b)^-1``) goes to the summary.
The verdict (``figaroh_ros.tasks.gate.Verdict``) goes to ``result.yaml`` under ``--out``;
a failed pre-flight is a DataError listing the failed checks.
"""
from __future__ import annotations

import numpy as np
from scipy.interpolate import CubicHermiteSpline

from figaroh_ros.calibration.identifiability import Identifiability, posture_identifiability
from figaroh_ros.calibration.procedure import kinematic_model
from figaroh_ros.calibration.solve import is_angle
from figaroh_ros.config.calibration import CalibrationConfig, load_calibration_config
from figaroh_ros.config.identification import load_config
from figaroh_ros.errors import DataError
from figaroh_ros.excitation.planner import structural_base
from figaroh_ros.identification.identifiability import (
    TrajectoryIdentifiability, trajectory_identifiability
)
from figaroh_ros.identification.observation import observe, torque_equations
from figaroh_ros.io.experiment_files import (
    read_postures, read_trajectory, trajectory_velocities
)
from figaroh_ros.io.output_dir import staged_output
from figaroh_ros.io.recording import is_wrench
from figaroh_ros.io.report import write_result
from figaroh_ros.tasks import TaskOutcome
from figaroh_ros.tasks.calibrate import model_arguments
from figaroh_ros.tasks.gate import Check, Verdict
from figaroh_ros.tasks.identify import (
    drive_options, make_setup, processing_options, robot_from_config
)
from figaroh_ros.tasks.robot_model import resolved_robot

MAX_CONDITION = 1e4


def chain_postures(chain: list[str], names: list[str], Q: np.ndarray,
                   what: str = "postures") -> np.ndarray:
    """The columns of ``Q`` (named ``names``) in the order of the calibrated ``chain``."""
    missing = [j for j in chain if j not in names]
    if missing:
        raise DataError(f"the {what} give no column for the joints {missing}")
    return Q[:, [names.index(j) for j in chain]]


def _std_check(ident: Identifiability, max_std_mm: float, max_std_mrad: float) -> Check:
    worst = {"mm": 0.0, "mrad": 0.0}
    for name, s in ident.expected_std.items():
        unit = "mrad" if is_angle(name) else "mm"
        worst[unit] = max(worst[unit], 1e3 * s)
    ok = worst["mm"] <= max_std_mm and worst["mrad"] <= max_std_mrad
    return Check("expected_std", ok, max(worst["mm"] / max_std_mm,
                                         worst["mrad"] / max_std_mrad), 1.0,
                 f"largest expected std {worst['mm']:.3g} mm and {worst['mrad']:.3g} mrad "
                 f"(limits {max_std_mm:g} mm, {max_std_mrad:g} mrad)")


def identifiability_checks(ident: Identifiability, rows: int, max_std: tuple[float, float]
                           ) -> Verdict:
    """The four pre-flight checks of postures giving ``rows`` measured axes."""
    n, deficit, hidden = len(ident.structural), ident.rank_deficit, ident.unobservable
    return Verdict([
        Check("postures", rows >= n, rows, n, f"{rows} measured axes for {n} identifiable "
              "parameters"),
        Check("observable", deficit == 0, deficit, 0,
              "every parameter observable" if deficit == 0 else
              f"{deficit} of {n} parameters unobservable with these postures (among "
              f"{hidden[:8]}{' ...' if len(hidden) > 8 else ''})"),
        Check("condition_number", ident.condition_number <= MAX_CONDITION,
              ident.condition_number, MAX_CONDITION,
              f"condition number {ident.condition_number:.4g} (at most {MAX_CONDITION:g})"),
        _std_check(ident, *max_std)])


def postures_verdict(cfg: CalibrationConfig, names: list[str], Q: np.ndarray
                     ) -> tuple[Verdict, Identifiability]:
    """Pre-flight of the postures ``Q`` (columns ``names``) for the calibration ``cfg``."""
    km, _ = kinematic_model(cfg.robot.urdf, **model_arguments(cfg))
    ident = posture_identifiability(km, chain_postures(km.chain, names, Q))
    rows = len(Q) * int(km.measurement.mask.sum())
    s = cfg.solver
    return identifiability_checks(ident, rows, (s.max_std_mm, s.max_std_mrad)), ident


def sample_rate(cfg) -> float | None:
    """Hz of the recording to come: ``preflight.rate_hz``, else the config's data rate
    (``data.resample_hz``, ``1/data.sample_time``); None: the trajectory file's own."""
    d = cfg.data
    return cfg.preflight.rate_hz or d.resample_hz or \
        (1.0 / d.sample_time if d.sample_time else None)


def resampled(t: np.ndarray, Q: np.ndarray, rate_hz: float | None
              ) -> tuple[np.ndarray, np.ndarray]:
    """The trajectory at ``rate_hz`` along the cubic Hermite spline a
    joint_trajectory_controller follows through its points (as is when None)."""
    if rate_hz is None:
        return t, Q
    ts = np.arange(0.0, t[-1], 1.0 / rate_hz)
    return ts, CubicHermiteSpline(t, Q, trajectory_velocities(t, Q), axis=0)(ts)


def joint_noise(cfg, fitted: list[str]) -> np.ndarray:
    """Torque noise std (N.m) of each fitted joint: ``preflight.torque_noise`` (1)."""
    joints, noise = list(cfg.robot.joints), cfg.preflight.torque_noise or [1.0]
    if len(noise) == 1:
        return np.full(len(fitted), float(noise[0]))
    return np.array([noise[joints.index(j)] for j in fitted], float)


def trajectory_identifiability_of(cfg, names: list[str], t: np.ndarray,
                                  Q: np.ndarray) -> TrajectoryIdentifiability:
    """The identification of ``cfg`` (typed) on the trajectory ``Q`` (columns ``names``, times
    ``t``): its samples processed as the recording will be (``observation.py``), the
    structural base of the model (random rich states, as ``plan-trajectory`` takes it)."""
    if is_wrench(cfg):
        raise DataError("pre-flight of a trajectory: joint torques only, not a force "
                        "plate's wrench (measurements.kind)")
    robot = robot_from_config(cfg)
    setup, p = make_setup(cfg, robot, drive_options(cfg)), processing_options(cfg)
    ts, q = resampled(t, chain_postures(robot.active_joints, names, Q, "trajectory"),
                      sample_rate(cfg))
    W, Y, dq = setup.equations(lambda: torque_equations(
        robot, setup.layout, setup.drive, ts, q, np.zeros_like(q), p))
    base = structural_base(robot, setup.layout, setup.drive, np.random.default_rng(0))
    return trajectory_identifiability(base, observe(base, W, Y, dq, p),
                                      joint_noise(cfg, setup.groups), p.decimation,
                                      cfg.preflight.max_condition)


def _named(names: list[str], limit: int = 8) -> str:
    """The leading standard name of each base parameter, at most ``limit`` of them."""
    heads = [n.split()[0] for n in names]
    return f"{heads[:limit]}{' ...' if len(heads) > limit else ''}"


def trajectory_checks(ident: TrajectoryIdentifiability) -> Verdict:
    """The three pre-flight checks of a trajectory, with their numbers."""
    n, rows, cond = len(ident.structural), ident.rows, ident.condition_number
    deficit, cap = ident.rank_deficit, ident.max_condition
    return Verdict([
        Check("samples", rows >= n, rows, n, f"{rows} equations for {n} base parameters"),
        Check("observable", deficit == 0 and not ident.unobservable, ident.rank, n,
              f"rank {ident.rank} of {n} base parameters" + (
                  "" if not ident.unobservable else ": unobservable on this trajectory "
                  + _named(ident.unobservable))),
        Check("condition_number", cond <= cap, cond, cap,
              f"condition number {cond:.4g} (at most {cap:g})" + (
                  "" if not ident.poorly_identified else ": poorly identified "
                  + _named(ident.poorly_identified)))])


def trajectory_verdict(cfg, names: list[str], t: np.ndarray, Q: np.ndarray
                       ) -> tuple[Verdict, TrajectoryIdentifiability]:
    """Pre-flight of the trajectory ``Q`` (columns ``names``, times ``t``) for the
    identification ``cfg``."""
    ident = trajectory_identifiability_of(cfg, names, t, Q)
    return trajectory_checks(ident), ident


def _postures_summary(config_path: str, postures: str) -> tuple[dict, Verdict]:
    cfg, _ = resolved_robot(load_calibration_config(config_path), config_path)
    names, Q = read_postures(postures, _chain(cfg))
    verdict, ident = postures_verdict(cfg, names, Q)
    return {"config": config_path, "postures": postures, "count": len(Q),
            "preflight": verdict.to_dict(), "expected_std": ident.expected_std}, verdict


def _trajectory_summary(config_path: str, trajectory: str) -> tuple[dict, Verdict]:
    cfg, _ = resolved_robot(load_config(config_path), config_path)
    names, t, Q = read_trajectory(trajectory, list(cfg.robot.joints))
    verdict, ident = trajectory_verdict(cfg, names, t, Q)
    return {"config": config_path, "trajectory": trajectory, "count": len(t),
            "preflight": verdict.to_dict(), "rank": ident.rank,
            "base_parameters": len(ident.structural),
            "condition_number": float(ident.condition_number),
            "unobservable": ident.unobservable, "poorly_identified": ident.poorly_identified,
            "expected_std": ident.expected_std}, verdict


def run(config_path: str, *, postures: str | None = None, trajectory: str | None = None,
        out: str | None = None, progress=None) -> TaskOutcome:
    """Pre-flight of the postures file for the calibration config, or of the trajectory
    file for the identification config; DataError when it fails (the verdict is written
    first when ``out`` is given)."""
    if bool(postures) == bool(trajectory):
        raise DataError("pre-flight: give exactly one of postures and trajectory")
    summary, verdict = (_postures_summary(config_path, postures) if postures else
                        _trajectory_summary(config_path, trajectory))
    paths = {}
    if out is not None:
        with staged_output(out) as st:
            write_result(summary, st.dir)
        paths["result"] = f"{out}/result.yaml"
    if not verdict.passed:
        raise DataError("pre-flight FAILED: " + "; ".join(c.line() for c in verdict.failed()))
    return TaskOutcome(summary, paths)


def _chain(cfg: CalibrationConfig) -> list[str]:
    km, _ = kinematic_model(cfg.robot.urdf, **model_arguments(cfg))
    return list(km.chain)

"""Pre-flight of a calibration experiment: will these postures identify the model, before
anything moves (issue 18 item 4)?

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

The verdict (``figaroh_ros.tasks.gate.Verdict``) goes to ``result.yaml`` under ``--out``;
a failed pre-flight is a DataError listing the failed checks.
"""
from __future__ import annotations

import numpy as np

from figaroh_ros.calibration.identifiability import Identifiability, posture_identifiability
from figaroh_ros.calibration.procedure import kinematic_model
from figaroh_ros.calibration.solve import is_angle
from figaroh_ros.config.calibration import load_calibration_config
from figaroh_ros.errors import DataError
from figaroh_ros.io.experiment_files import read_postures
from figaroh_ros.io.output_dir import staged_output
from figaroh_ros.io.report import write_result
from figaroh_ros.tasks import TaskOutcome
from figaroh_ros.tasks.calibrate import model_arguments
from figaroh_ros.tasks.gate import Check, Verdict
from figaroh_ros.tasks.robot_model import resolve_robot

MAX_CONDITION = 1e4


def chain_postures(chain: list[str], names: list[str], Q: np.ndarray) -> np.ndarray:
    """The columns of ``Q`` (named ``names``) in the order of the calibrated ``chain``."""
    missing = [j for j in chain if j not in names]
    if missing:
        raise DataError(f"the postures give no column for the chain joints {missing}")
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


def postures_verdict(cfg: dict, names: list[str], Q: np.ndarray
                     ) -> tuple[Verdict, Identifiability]:
    """Pre-flight of the postures ``Q`` (columns ``names``) for the calibration ``cfg``."""
    km, _ = kinematic_model(cfg["robot"]["urdf"], **model_arguments(cfg))
    ident = posture_identifiability(km, chain_postures(km.chain, names, Q))
    rows = len(Q) * int(km.measurement.mask.sum())
    s = cfg["solver"]
    return identifiability_checks(ident, rows, (s["max_std_mm"], s["max_std_mrad"])), ident


def run(config_path: str, *, postures: str, out: str | None = None,
        progress=None) -> TaskOutcome:
    """Pre-flight of the postures file for the calibration config; DataError when it fails
    (the verdict is written first when ``out`` is given)."""
    cfg = load_calibration_config(config_path)
    resolve_robot(cfg, config_path)
    names, Q = read_postures(postures, _chain(cfg))
    verdict, ident = postures_verdict(cfg, names, Q)
    summary = {"config": config_path, "postures": postures, "count": len(Q),
               "preflight": verdict.to_dict(),
               "expected_std": ident.expected_std}
    paths = {}
    if out is not None:
        with staged_output(out) as st:
            write_result(summary, st.dir)
        paths["result"] = f"{out}/result.yaml"
    if not verdict.passed:
        raise DataError("pre-flight FAILED: " + "; ".join(c.line() for c in verdict.failed()))
    return TaskOutcome(summary, paths)


def _chain(cfg: dict) -> list[str]:
    km, _ = kinematic_model(cfg["robot"]["urdf"], **model_arguments(cfg))
    return list(km.chain)

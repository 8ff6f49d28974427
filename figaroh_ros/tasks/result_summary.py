"""What the calibration node answers for a Calibrate goal (no rclpy here: ``result`` is
any object with the fields of the Calibrate action's result): the result's fields from the
worker's TaskOutcome (``summary``: the content of result.yaml), the publication gate's
decision and the lines of the result's message."""
from __future__ import annotations

import math

from figaroh_ros.tasks.gate import ACCEPTANCE, Decision, publication_decision


def rms(values) -> float:
    """Root mean square over joints of per-joint RMSEs."""
    values = list(values)
    return math.sqrt(sum(v * v for v in values) / len(values)) if values else math.nan


def fill_parameters(result, parameters: list[dict]) -> None:
    for p in parameters:
        result.parameter_names.append(str(p["name"]))
        result.parameter_values.append(float(p["value"]))
        result.parameter_std.append(float(p["std"]))
        result.parameter_units.append(str(p.get("unit", "")))


def publication_gate(result, summary: dict, override: bool = False) -> Decision:
    """Whether the model may be published (``why`` empty) from the task's publication
    verdict (``publication`` of result.yaml, ``tasks.gate``) and the goal's
    ``accept_failed_acceptance`` (``override``); the result's acceptance fields filled."""
    decision = publication_decision(summary.get("publication"), override)
    result.acceptance, result.acceptance_detail = (decision.acceptance,
                                                   decision.acceptance_detail)
    return decision


def geometric_result(result, summary: dict,
                     override: bool = False) -> tuple[Decision, str]:
    """Parameters, held-out position RMSE (m); the gate's decision and the verdict line."""
    fill_parameters(result, summary["parameters"])
    result.has_validation = "rmse_validation_mm" in summary
    result.position_rmse_m = 1e-3 * float(summary.get("rmse_validation_mm", math.nan))
    result.nominal_position_rmse_m = 1e-3 * float(summary.get("nominal_rmse_validation_mm",
                                                               math.nan))
    line = (f"calibrated {len(result.parameter_names)} parameters; held-out RMSE "
            f"{summary['nominal_rmse_validation_mm']:.3f} -> "
            f"{summary['rmse_validation_mm']:.3f} mm" if result.has_validation
            else f"calibrated {len(result.parameter_names)} parameters")
    verdict = summary.get("publication", {}).get("verdict", "no verdict")
    return publication_gate(result, summary, override), line + f"; gate {verdict}"


def dynamic_result(result, summary: dict, urdf: str,
                   override: bool = False) -> tuple[Decision, str]:
    """Base parameters, held-out torque RMS over joints (N.m); the gate's decision (the
    task's ``publication`` verdict, ``tasks.identification_gate``: residual sanity,
    held-out improvement with its margin and paired test, plausible masses and inertias,
    the URDF round trip) and the verdict line."""
    fill_parameters(result, summary["base_parameters"])
    result.has_validation = "validation_rmse" in summary
    result.torque_rmse_nm = rms(summary.get("validation_rmse", {}).values())
    result.nominal_torque_rmse_nm = rms(summary.get("nominal_validation_rmse", {}).values())
    line = f"identified {len(result.parameter_names)} base parameters"
    if result.has_validation:
        verdict = "better" if summary.get("better_than_nominal") else "NOT better"
        line += (f"; held-out torque RMS {result.torque_rmse_nm:.4g} N.m, {verdict} than "
                 f"the nominal model's {result.nominal_torque_rmse_nm:.4g} N.m")
    verdict = summary.get("publication", {}).get("verdict", "no verdict")
    decision = publication_gate(result, summary, override)
    if not urdf and not decision.why:
        decision.why.append("urdf: no identified URDF was written")
    return decision, line + f"; gate {verdict}"


def publication_line(decision: Decision, publish: bool) -> str:
    """What the result's message adds about acceptance and publication (before the
    publication itself)."""
    line = ""
    if decision.acceptance:
        line += f"; acceptance {decision.acceptance}"
    if decision.why:
        only = all(w.startswith(ACCEPTANCE) for w in decision.why)
        return line + ("; NOT published: " if publish else "; not publishable: ") + \
            "; ".join(decision.why) + (" (only the acceptance thresholds failed: the "
                                       "goal's accept_failed_acceptance publishes it)"
                                       if only else "")
    if decision.overridden and publish:
        line += ("; published despite FAILED acceptance: " + "; ".join(decision.overridden)
                 + " (goal override)")
    return line

"""The publication gate of a geometric calibration (``figaroh_ros.tasks.gate``): its
inputs, its held-out improvement, its parameter changes (Nguyen et al. 2023 Eq. 5-7: the variation
``SE3(exp3(dphi), dp)`` of each joint placement, or the joint offset ``dq``), its URDF and
the user's acceptance threshold, from a :class:`CalibrationResult`."""
from __future__ import annotations

import math

import numpy as np

from figaroh_ros.calibration import CalibrationResult
from figaroh_ros.calibration.kinematic_model import KinematicModel
from figaroh_ros.calibration.solve import PostureSet, posture_errors
from figaroh_ros.config.acceptance import Acceptance
from figaroh_ros.model.robot import angle_limits
from figaroh_ros.tasks.gate import (
    Check, Verdict, bound_check, finite_check, joint_limits_check, refuse_failed,
    residual_check, round_trip_check
)
from figaroh_ros.tasks.improvement import improvement_checks


def input_checks(km: KinematicModel, sets: dict[str, PostureSet], acc: Acceptance
                 ) -> list[Check]:
    """(a) Joint readings finite and inside the limits, measured positions finite and
    inside the sensor range.  Non-finite or out-of-range values raise :class:`DataError`
    before any solving (the solver cannot make sense of them); readings beyond the joint
    limits fail the gate only."""
    Q = np.vstack([s.Q for s in sets.values()])
    ids = [f"{k} {i}" for k, s in sets.items() for i in s.ids]
    pos = np.flatnonzero(km.measurement.is_position)
    labels = km.measurement.labels
    Y = np.vstack([s.Y for s in sets.values()])
    checks = refuse_failed([
        finite_check("joint_readings_finite", Q, ids, km.chain, unit=" rad"),
        finite_check("measurements_in_range", Y[:, :len(labels)][:, pos], ids,
                     [labels[i] for i in pos], acc.sensor_range_m, " m"),
        finite_check("orientations_finite", Y[:, 3:], ids)], "postures")
    lo, hi = angle_limits(km.model, km.chain_ids)     # continuous joints: -pi, pi
    checks.append(joint_limits_check(Q, lo, hi, acc.joint_limit_tolerance_rad, km.chain))
    return checks


def held_out_errors(result: CalibrationResult, nominal: bool) -> np.ndarray:
    """Per held-out posture, the RMS over its points of the position error (m)."""
    if result.validation is None:
        return np.zeros(0)
    x = result.x_nominal if nominal else result.x
    e = posture_errors(result.kinematic_model, result.validation, x)
    return np.sqrt(np.mean(e ** 2, axis=1))


def held_out_components(result: CalibrationResult, nominal: bool) -> np.ndarray:
    """Every measured component of every held-out posture: its absolute error over the
    stated noise of that axis (what the paired test compares)."""
    if result.validation is None:
        return np.zeros(0)
    km = result.kinematic_model
    x = result.x_nominal if nominal else result.x
    F, _ = km.residuals(result.validation.Q, result.validation.Y, x)
    m = km.measurement
    return (np.abs(F) / m.sigma)[:, m.mask].ravel()


def _is_prismatic(km: KinematicModel, joint: str) -> bool:
    kind = km.model.joints[km.model.getJointId(joint)].shortname()
    return kind.startswith("JointModelP")


def plausibility_checks(result: CalibrationResult, acc: Acceptance) -> list[Check]:
    """(c) The largest change of a joint placement (translation, rotation) or offset."""
    km, dx = result.kinematic_model, result.x - result.x_nominal
    if km.level == "offset":
        return _offset_checks(km, dx, acc)
    moves = {j: (np.linalg.norm(dx[km.groups[j]][:3]), np.linalg.norm(dx[km.groups[j]][3:6]))
             for j in km.joints}
    jt = max(moves, key=lambda j: moves[j][0])
    jr = max(moves, key=lambda j: moves[j][1])
    return [bound_check("placement_translation", 1e3 * moves[jt][0], acc.max_placement_mm,
                        f"largest joint placement translation change ({jt})", "mm"),
            bound_check("placement_rotation", math.degrees(moves[jr][1]),
                        acc.max_placement_deg,
                        f"largest joint placement rotation change ({jr})", "deg")]


def _offset_checks(km: KinematicModel, dx: np.ndarray, acc: Acceptance) -> list[Check]:
    rev = {j: abs(float(dx[km.groups[j]][0])) for j in km.joints if not _is_prismatic(km, j)}
    pri = {j: abs(float(dx[km.groups[j]][0])) for j in km.joints if _is_prismatic(km, j)}
    return largest_offset_checks(rev, pri, acc)


def largest_offset_checks(rev: dict, pri: dict, acc: Acceptance) -> list[Check]:
    """The bounds on the largest revolute (rad -> deg) and prismatic (m -> mm) joint
    offsets, ``{joint: |offset|}`` each."""
    out = []
    if rev:
        j = max(rev, key=rev.get)
        out.append(bound_check("joint_offsets", math.degrees(rev[j]), acc.max_offset_deg,
                               f"largest joint offset ({j})", "deg"))
    if pri:
        j = max(pri, key=pri.get)
        out.append(bound_check("prismatic_offsets", 1e3 * pri[j], acc.max_placement_mm,
                               f"largest prismatic joint offset ({j})", "mm"))
    return out


def residual_ratio_check(result: CalibrationResult, acc: Acceptance) -> Check:
    """The whitened residual of the fit: residual RMS over the stated noise."""
    m = result.kinematic_model.measurement
    noise = f"stated noise ({1e3 * m.sigma_position:g} mm" + (
        f", {1e3 * m.sigma_orientation:g} mrad)" if m.kind == "pose" else ")")
    return residual_check(float(result.estimate.sigma), acc.residual_limit, noise)


def acceptance_checks(result: CalibrationResult, acc: Acceptance) -> list[Check]:
    """(e) ``acceptance.position_rmse_mm`` on the held-out RMSE (training when none)."""
    if acc.position_rmse_mm is None:
        return []
    held = result.validation_rmse is not None
    rmse = result.validation_rmse if held else result.rmse
    return [bound_check("acceptance_position_rmse", 1e3 * rmse, acc.position_rmse_mm,
                        ("held-out" if held else "training (no held-out postures)")
                        + " position RMSE", "mm")]


def calibration_verdict(result: CalibrationResult, acc: Acceptance, inputs: list[Check],
                        residual: Check) -> Verdict:
    """Every check of the gate, in the order (a) .. (e), the residual's last."""
    checks = list(inputs)
    checks += improvement_checks(held_out_errors(result, True), held_out_errors(result, False),
                                 p_value=acc.p_value,
                                 improvement_margin=acc.improvement_margin,
                                 paired=(held_out_components(result, True),
                                         held_out_components(result, False)))
    checks += plausibility_checks(result, acc)
    checks.append(round_trip_check(result.urdf_round_trip_gap))
    checks += acceptance_checks(result, acc)
    checks.append(residual)
    return Verdict(checks)

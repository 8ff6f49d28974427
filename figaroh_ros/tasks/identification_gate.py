"""The publication gate and the residual sanity of a dynamic identification
(``figaroh_ros.tasks.gate``): the identified model (the physically consistent standard
parameters written to the URDF, Nguyen et al. 2023 Eq. 2-3) against the URDF's own on the held-out
samples, its masses and inertias, its URDF and the user's acceptance threshold.

Errors are relative per joint (divided by the RMS of the held-out measured torque of that
joint) so that joints of different sizes weigh alike in the per-sample paired test."""
from __future__ import annotations

import numpy as np
import pinocchio as pin

from figaroh_ros.config.acceptance import Acceptance
from figaroh_ros.identification.parameters import PIN_TO_STD, standard_parameters
from figaroh_ros.identification.physical.urdf_inertia import identified_urdf_text
from figaroh_ros.identification.result import IdentificationResult
from figaroh_ros.model.robot import RobotModel, angle_limits
from figaroh_ros.tasks.gate import (
    Check, Verdict, bound_check, finite_check, joint_limits_check, refuse_failed,
    residual_check, round_trip_check, successive_difference_noise
)
from figaroh_ros.tasks.improvement import improvement_checks

CAUSES = ("positions or torques on the motor side (data.motor_side, transmission.gear_ratios)",
          "a sign or gain convention of the torques (drive.effort_gains)",
          "units (degrees for radians, currents for torques)", "joint columns in another "
          "order than robot.joints", "a joint zero convention (data.joint_offsets)")


def identification_inputs(robot: RobotModel, q, tau, acc: Acceptance) -> list[Check]:
    """(a) Joint positions finite and inside the URDF limits (+ tolerance), torques
    finite; DataError (before any fit) on non-finite values."""
    joints = robot.active_joints
    checks = refuse_failed([finite_check("joint_positions_finite", q, columns=joints,
                                         unit=" rad"),
                            finite_check("torques_finite", tau, unit=" N.m")], "recording")
    lo, hi = angle_limits(robot.model, [robot.model.getJointId(j) for j in joints])
    checks.append(joint_limits_check(q, lo, hi, acc.joint_limit_tolerance_rad, joints))
    return checks


def identification_residual(result: IdentificationResult, tau, limit: float) -> Check:
    """Residual RMS of each fitted joint over its torque noise from successive samples of
    the recording (``tau``: N x fitted joints, as measured), the worst joint."""
    noise = successive_difference_noise(tau)
    ratio = np.asarray(result.rmse, float) / np.maximum(noise, 1e-12)
    j = int(np.argmax(ratio))
    return residual_check(float(ratio[j]), limit, f"torque noise of {result.joints[j]} "
                          f"({result.rmse[j]:.4g} over {noise[j]:.4g} from successive "
                          "samples)")


def published_parameters(result: IdentificationResult) -> np.ndarray | None:
    """The standard parameters the URDF would carry (None: no consistent estimate)."""
    return None if result.physical is None else np.asarray(result.physical.phi, float)


def held_out_sample_errors(result: IdentificationResult, phi: np.ndarray) -> np.ndarray:
    """Per held-out sample, the RMS over joints of the relative torque error of the
    standard parameters ``phi``."""
    o = result.held_out
    scale = np.sqrt(np.bincount(o.row_joint, o.Y ** 2) / np.bincount(o.row_joint))
    e = (o.Y - o.Wb @ result.base.from_standard(phi)) / scale[o.row_joint]
    sample = o.row_sample if o.row_sample is not None else np.arange(len(e))
    _, which = np.unique(sample, return_inverse=True)
    return np.sqrt(np.bincount(which, e ** 2) / np.bincount(which))


def mass_check(result: IdentificationResult, phi: np.ndarray, acc: Acceptance) -> Check:
    """(c) The largest relative change of a link mass from the URDF's."""
    nominal = standard_parameters(result.model, result.layout)
    change = {result.model.model.names[jid]: abs(phi[c[0]] / nominal[c[0]] - 1.0)
              for jid, c in result.layout.inertial_cols.items() if nominal[c[0]] > 0}
    worst = max(change, key=change.get)
    return bound_check("masses", change[worst], acc.max_mass_change,
                       f"largest relative mass change (body of {worst})", "")


def consistency_check(result: IdentificationResult) -> Check:
    bad = [c for c in result.physical.checks if not c.ok]
    return Check("inertias_consistent", not bad, float(len(bad)), 0.0,
                 "every link physically consistent" if not bad else
                 f"{len(bad)} links not physically consistent, first {bad[0].name}: "
                 f"{bad[0].why}")


def urdf_gap(result: IdentificationResult, phi: np.ndarray) -> float:
    """Largest difference between the inertial parameters of the written URDF, read back,
    and ``phi`` (relative to each link's mass-scale)."""
    model = pin.buildModelFromXML(identified_urdf_text(result.model, result.layout, phi))
    gap = 0.0
    for jid, cols in result.layout.inertial_cols.items():
        back = model.inertias[model.getJointId(result.model.model.names[jid])]
        d = back.toDynamicParameters()[PIN_TO_STD] - phi[cols]
        gap = max(gap, float(np.abs(d).max() / max(1.0, abs(phi[cols][0]))))
    return gap


def identification_verdict(result: IdentificationResult, acc: Acceptance,
                           inputs: list[Check], residual: Check) -> Verdict:
    """Every check of the gate, (a) .. (e), the residual's last."""
    phi = published_parameters(result)
    checks = list(inputs)
    if phi is None:
        checks.append(Check("physical_model", False, None, None, "no physically consistent "
                            "estimate: base parameters are not a URDF (set physical.method)"))
        return Verdict(checks + [residual])
    nominal = standard_parameters(result.model, result.layout)
    held = result.held_out is not None
    checks += improvement_checks(held_out_sample_errors(result, nominal) if held else [],
                                 held_out_sample_errors(result, phi) if held else [],
                                 p_value=acc.p_value,
                                 improvement_margin=acc.improvement_margin,
                                 unit="(relative)", scale=1.0, what="samples")
    checks += [mass_check(result, phi, acc), consistency_check(result),
               round_trip_check(urdf_gap(result, phi))]
    if acc.torque_relative_error is not None and held:
        checks.append(bound_check("acceptance_torque_relative_error",
                                  float(result.validation_relative_error_stacked),
                                  acc.torque_relative_error,
                                  "held-out torque RMS over the measured torques' RMS", ""))
    return Verdict(checks + [residual])


def identification_publication(cfg, result: IdentificationResult, q, tau) -> dict:
    """The ``publication`` entry of result.yaml (``figaroh-ros identify`` and the
    Calibrate action publish only a PASSED one): every check of the gate on ``result``
    fitted on the recording ``q``, ``tau`` (N x joints, joint side; a wrench recording's
    six components), with the config's ``acceptance`` section.  A residual far above the
    torque noise fails ``residual_vs_noise``: the model is kept for inspection, never
    published."""
    acc = cfg.acceptance
    robot = result.model
    inputs = identification_inputs(robot, q, tau, acc)
    tau = np.asarray(tau, float)
    if set(result.joints) <= set(robot.active_joints) and tau.shape[1] == robot.n_joints:
        tau = tau[:, [robot.active_joints.index(j) for j in result.joints]]
    residual = identification_residual(result, tau, acc.residual_limit)
    return identification_verdict(result, acc, inputs, residual).to_dict()

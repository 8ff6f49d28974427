"""``figaroh-ros identify-backlash CONFIG --bag BAG``: the backlash / encoder discrepancy
model of every joint with a link-side encoder (Nguyen et al. 2024 Eq. 6-7,
``phenomena.identify_backlash``) from a recording with both encoders.

    robot: {name: tiago, urdf: ...}
    backlash:
      joints: [arm_1_joint, ...]
      motor_topic: /joint_states        # motor-side encoders (what the controllers use)
      link_topic: /link_encoders        # link-side encoders
      validation_fraction: 0.3          # last part of the recording: chooses the degrees
      max_degree: 4                     # polynomial degrees tried: 1..max in angle and torque
      cutoff_hz: 10.0                   # zero-phase low-pass of the motor positions
      min_speed_rad_s: 0.05             # samples of a joint slower than this are not used
      min_range_rad: 0.2                # a joint that moved less is skipped

The encoders are resampled onto a uniform grid; the joint torque in the model is the
inverse dynamics of the URDF along the filtered motor trajectory (Nguyen et al. 2024 §III: no
torque sensor), the motor velocity comes from the filtered motor positions by central
differences.  The filter's transients at both ends and the samples drawn across a gap of
the recording (``signals.uniform_grid``) are in neither the fit nor the validation.  For a
static posture the model is evaluated at the approach direction times a speed above
``min_speed_rad_s``.
"""
from __future__ import annotations

import os

import numpy as np
import pinocchio as pin

from figaroh_ros.config.backlash import Backlash, load_backlash_config
from figaroh_ros.errors import DataError
from figaroh_ros.identification import signals
from figaroh_ros.io.bags import read_bag_encoders
from figaroh_ros.io.output_dir import check_output_folder, staged_output
from figaroh_ros.io.report import write_result
from figaroh_ros.model.robot import RobotModel, load_urdf_model
from figaroh_ros.phenomena import BacklashResult, identify_backlash
from figaroh_ros.phenomena.held_out import split_rows
from figaroh_ros.progress import Stage, reporter
from figaroh_ros.tasks import TaskOutcome
from figaroh_ros.tasks.gate import (
    DEFAULT_RESIDUAL_LIMIT, Check, require_sane_fit, residual_check,
    successive_difference_noise
)

FILTER_ORDER = 4
CAUSES = ("the two encoder topics swapped or of different joints (backlash.motor_topic, "
          "link_topic)", "motor-side readings not converted to the joint side (gear ratio)",
          "units or sign conventions differing between the encoders",
          "a joint without play that slips or is not the one named")


def default_out(config_path: str) -> str:
    """``results/<robot>_backlash``."""
    return os.path.join("results", load_backlash_config(config_path).robot.name + "_backlash")


def inverse_dynamics(robot: RobotModel, q, dq, ddq) -> np.ndarray:
    """Joint torques (N x n) of the URDF's model along ``q, dq, ddq`` (RNEA)."""
    data = robot.model.createData()
    Q, V, A = robot.full_configuration(q), robot.full_velocity(dq), robot.full_velocity(ddq)
    return np.array([pin.rnea(robot.model, data, Q[i], V[i], A[i])[robot.idx_v]
                     for i in range(len(Q))])


def _encoders(b: Backlash, bag: str):
    """The bag's encoders on a uniform grid: motor and link angles, filtered motor
    velocity and acceleration, the samples usable for the model, and the filter edge."""
    t, qm, ql = read_bag_encoders([bag], b.joints, b.motor_topic, b.link_topic)
    grid, qm, ql, covered = signals.uniform_grid(t, qm, ql, cutoff_hz=b.cutoff_hz)
    rate = 1.0 / (grid[1] - grid[0])
    qf = signals.lowpass_zero_phase(qm, b.cutoff_hz, rate, FILTER_ORDER)
    dq, ddq = signals.derivatives(qf, 1.0 / rate)
    edge = signals.edge_samples(FILTER_ORDER, b.cutoff_hz, rate)
    usable = covered.copy()
    usable[:edge] = usable[len(usable) - edge:] = False
    return qm, ql, qf, dq, ddq, usable, edge


def residual_sanity(res: BacklashResult, b: Backlash, qm, ql, dq, tau, usable,
                    residual_limit: float = DEFAULT_RESIDUAL_LIMIT) -> Check:
    """Held-out RMS of ``q_link - q_motor`` minus Eq. 6's prediction (moving samples)
    over the discrepancy's noise from successive samples, worst joint, against
    ``residual_limit``."""
    _, valid = split_rows(usable, b.validation_fraction)
    d = ql - qm
    noise = successive_difference_noise(d, np.flatnonzero(usable))
    pred = res.predict(qm, dq, tau)
    ratios = {}
    for j, (name, jb) in enumerate(res.joints.items()):
        rows = valid[np.abs(dq[valid, j]) > b.min_speed_rad_s]
        if jb.model is not None and len(rows):
            rms = float(np.sqrt(np.mean((d[rows, j] - pred[rows, j]) ** 2)))
            ratios[name] = (rms / noise[j], rms, noise[j])
    if not ratios:
        return residual_check(0.0, residual_limit, "no joint identified")
    worst = max(ratios, key=lambda k: ratios[k][0])
    r, rms, sd = ratios[worst]
    return residual_check(r, residual_limit, f"encoder discrepancy noise of {worst} "
                          f"({1e3 * rms:.3g} over {1e3 * sd:.3g} mrad from successive samples)")


def run(config_path: str, *, bag: str, out: str, accept_poor_fit: bool = False,
        progress=None) -> TaskOutcome:
    """Config + bag -> ``identify_backlash`` -> ``<out>/result.yaml``; a model whose
    held-out residual exceeds ``residual_limit`` x the encoders' noise raises DataError
    unless ``accept_poor_fit`` (then the result warns)."""
    say = reporter(progress)
    cfg = load_backlash_config(config_path)
    check_output_folder(out)           # before any work
    b, bag = cfg.backlash, os.path.abspath(bag)
    say(Stage.LOADING_DATA, 0.0, f"reading {bag}")
    robot = load_urdf_model(cfg.robot.urdf, b.joints)
    qm, ql, qf, dq, ddq, usable, edge = _encoders(b, bag)
    tau = inverse_dynamics(robot, qf, dq, ddq)
    try:
        res = identify_backlash(qm, ql, tau, dq=dq, joints=b.joints, usable=usable,
                                max_degree=b.max_degree,
                                validation_fraction=b.validation_fraction,
                                min_speed_rad_s=b.min_speed_rad_s,
                                min_range_rad=b.min_range_rad,
                                progress=progress)
        sane = residual_sanity(res, b, qm, ql, dq, tau, usable)
        warnings = require_sane_fit(sane, accept_poor_fit, "the backlash model", CAUSES)
    except DataError as exc:
        raise DataError(f"bag {bag}: {exc}") from None
    summary = {"robot": cfg.robot.name, "bag": bag, "samples": res.samples,
               "samples_in_gaps": int(len(qm) - 2 * edge - res.samples),
               "joints": res.to_dict()["joints"], "residual_vs_noise": sane.to_dict(),
               **({"warnings": warnings} if warnings else {})}
    with staged_output(out) as st:
        write_result(summary, st.dir)
    path = st.final("result.yaml")
    say(Stage.EXPORTING, 1.0, f"wrote {path}")
    return TaskOutcome(summary, {"result": path})

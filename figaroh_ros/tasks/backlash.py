"""``figaroh-ros identify-backlash CONFIG --bag BAG``: the backlash / encoder discrepancy
model of every joint with a link-side encoder (seed 002 Eq. 6-7,
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
inverse dynamics of the URDF along the filtered motor trajectory (seed 002 §III: no
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

from figaroh_ros.config.backlash import load_backlash_config
from figaroh_ros.errors import DataError
from figaroh_ros.identification import signals
from figaroh_ros.io.bags import read_bag_encoders
from figaroh_ros.io.output_dir import check_output_folder, staged_output
from figaroh_ros.io.report import write_result
from figaroh_ros.model.robot import RobotModel, load_urdf_model
from figaroh_ros.phenomena import identify_backlash
from figaroh_ros.progress import Stage, reporter
from figaroh_ros.tasks import TaskOutcome

FILTER_ORDER = 4


def default_out(config_path: str) -> str:
    """``results/<robot>_backlash``."""
    return os.path.join("results", load_backlash_config(config_path)["robot"]["name"]
                        + "_backlash")


def inverse_dynamics(robot: RobotModel, q, dq, ddq) -> np.ndarray:
    """Joint torques (N x n) of the URDF's model along ``q, dq, ddq`` (RNEA)."""
    data = robot.model.createData()
    Q, V, A = robot.full_configuration(q), robot.full_velocity(dq), robot.full_velocity(ddq)
    return np.array([pin.rnea(robot.model, data, Q[i], V[i], A[i])[robot.idx_v]
                     for i in range(len(Q))])


def _encoders(b: dict, bag: str):
    """The bag's encoders on a uniform grid: motor and link angles, filtered motor
    velocity and acceleration, the samples usable for the model, and the filter edge."""
    t, qm, ql = read_bag_encoders([bag], b["joints"], b["motor_topic"], b["link_topic"])
    grid, qm, ql, covered = signals.uniform_grid(t, qm, ql, cutoff_hz=b["cutoff_hz"])
    rate = 1.0 / (grid[1] - grid[0])
    qf = signals.lowpass_zero_phase(qm, b["cutoff_hz"], rate, FILTER_ORDER)
    dq, ddq = signals.derivatives(qf, 1.0 / rate)
    edge = signals.edge_samples(FILTER_ORDER, b["cutoff_hz"], rate)
    usable = covered.copy()
    usable[:edge] = usable[len(usable) - edge:] = False
    return qm, ql, qf, dq, ddq, usable, edge


def run(config_path: str, *, bag: str, out: str, progress=None) -> TaskOutcome:
    """Config + bag -> ``identify_backlash`` -> ``<out>/result.yaml``."""
    say = reporter(progress)
    cfg = load_backlash_config(config_path)
    check_output_folder(out)           # before any work
    b, bag = cfg["backlash"], os.path.abspath(bag)
    say(Stage.LOADING_DATA, 0.0, f"reading {bag}")
    robot = load_urdf_model(cfg["robot"]["urdf"], b["joints"])
    qm, ql, qf, dq, ddq, usable, edge = _encoders(b, bag)
    tau = inverse_dynamics(robot, qf, dq, ddq)
    try:
        res = identify_backlash(qm, ql, tau, dq=dq, joints=b["joints"], usable=usable,
                                max_degree=b["max_degree"],
                                validation_fraction=b["validation_fraction"],
                                min_speed=b["min_speed_rad_s"], min_range=b["min_range_rad"],
                                progress=progress)
    except DataError as exc:
        raise DataError(f"bag {bag}: {exc}") from None
    summary = {"robot": cfg["robot"]["name"], "bag": bag, "samples": res.samples,
               "samples_in_gaps": int(len(qm) - 2 * edge - res.samples),
               "joints": res.to_dict()["joints"]}
    with staged_output(out) as st:
        write_result(summary, st.dir)
    path = st.final("result.yaml")
    say(Stage.EXPORTING, 1.0, f"wrote {path}")
    return TaskOutcome(summary, {"result": path})

"""``figaroh-ros identify-backlash CONFIG --bag BAG``: the backlash / encoder discrepancy
model of every joint with a link-side encoder (seed 002 Eq. 6-7, ``backlash.py``) from a
recording with both encoders.

    robot: {name: tiago, urdf: ...}
    backlash:
      joints: [arm_1_joint, ...]
      motor_topic: /joint_states        # motor-side encoders (what the controllers use)
      link_topic: /link_encoders        # link-side encoders
      validation_fraction: 0.3          # last part of the recording: chooses the degrees
      max_degree: 4                     # polynomial degrees tried: 1..max in angle and torque
      cutoff_hz: 10.0                   # zero-phase low-pass of the motor positions
      min_speed_rad_s: 0.05             # samples of a joint slower than this are not used

The joint torque in the model is the inverse dynamics of the URDF along the filtered
motor trajectory (seed 002 §III: no torque sensor).  The motor velocity comes from the
filtered motor positions by central differences.  Samples where a joint is (nearly) at
rest are left out of its fit and its validation, as the friction terms of a dynamic
identification leave them out: Eq. 6's sigmoid gives the middle of the play at zero speed,
while the link rests on the side of the last motion.  For a static posture the model is
evaluated at the approach direction times a speed above ``min_speed_rad_s``.
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin

from figaroh_ros.errors import DataError
from figaroh_ros.excitation.fourier import Trajectory, windowed
from figaroh_ros.identification import signals
from figaroh_ros.io.bags import read_bag_encoders
from figaroh_ros.model.robot import load_urdf_model
from figaroh_ros.phenomena.backlash import r_squared, select_degrees


def identify_backlash(cfg: dict, bag: str) -> dict:
    """Per joint: the chosen degrees, rho, train / validation R^2 (a dict for YAML)."""

    b = cfg["backlash"]
    robot = load_urdf_model(cfg["robot"]["urdf"], b["joints"])
    try:
        t, qm, ql = read_bag_encoders([bag], b["joints"], b["motor_topic"], b["link_topic"])
    except DataError as exc:
        raise DataError(str(exc)) from exc
    grid, qm, ql, covered = signals.uniform_grid(t, qm, ql, cutoff_hz=b["cutoff_hz"])
    rate = 1.0 / (grid[1] - grid[0])
    qf = signals.lowpass_zero_phase(qm, b["cutoff_hz"], rate, 4)
    dq, ddq = signals.derivatives(qf, 1.0 / rate)
    data = robot.model.createData()
    Q, V, A = robot.full_configuration(qf), robot.full_velocity(dq), robot.full_velocity(ddq)
    tau = np.array([pin.rnea(robot.model, data, Q[i], V[i], A[i])[robot.idx_v]
                    for i in range(len(grid))])
    edge = signals.edge_samples(4, b["cutoff_hz"], rate)
    # the last part of the recording validates; samples inside gaps are in neither part
    train_rows, valid_rows = signals.held_out_rows(covered, edge, b["validation_fraction"],
                                                   f"bag {bag}")
    used = np.r_[train_rows, valid_rows]
    out = {"robot": cfg["robot"]["name"], "bag": bag, "samples": int(len(used)),
           "samples_in_gaps": int(len(grid) - 2 * edge - len(used)), "joints": {}}
    for j, name in enumerate(b["joints"]):
        th, v, ta, d = (x[:, j] for x in (qm, dq, tau, ql - qm))
        if np.ptp(th[used]) < b["min_range_rad"]:
            out["joints"][name] = {"skipped": f"moved {np.ptp(th[used]):.3f} rad only"}
            continue
        moving = np.abs(v) > b["min_speed_rad_s"]
        rows_t, rows_v = train_rows[moving[train_rows]], valid_rows[moving[valid_rows]]
        if min(len(rows_t), len(rows_v)) < 100:
            out["joints"][name] = {"skipped": f"{len(rows_t)} training and {len(rows_v)} "
                                   f"validation samples faster than {b['min_speed_rad_s']} "
                                   "rad/s: too few"}
            continue
        train = tuple(x[rows_t] for x in (th, v, ta, d))
        valid = tuple(x[rows_v] for x in (th, v, ta, d))
        model, table = select_degrees(train, valid, degrees=range(1, b["max_degree"] + 1))
        out["joints"][name] = {
            "degrees": [int(model.m), int(model.n)], "rho": float(model.rho),
            "samples": [int(len(rows_t)), int(len(rows_v))],
            "train_r2": float(model.info["train_r2"]),
            "validation_r2": float(r_squared(valid[3], model.predict(*valid[:3]))),
            # the play: the median jump between the two direction surfaces on the data
            "gap_rad": float(np.median(np.abs(model.monomials(th[used], ta[used])
                                              @ (model.A - model.B).ravel()))),
            "A": model.A.tolist(), "B": model.B.tolist(),
            "theta_range": list(model.theta_range), "tau_range": list(model.tau_range),
            "degree_table": {f"{m},{n}": float(v) for (m, n), v in table.items()},
        }
    return out


def sweep_trajectory(robot, joints: list[str], duration: float = 40.0,
                     rate_hz: float = 100.0, half_range: float = 0.6,
                     periods=(6.0, 12.0), sharpness: float = 0.98):
    """Seed 002's protocol for the encoder discrepancy: every joint of ``joints`` swept
    back and forth across ``half_range`` (at most 80 % of its half range) around the
    middle of its limits at a near-constant speed, reversing quickly
    (``q = c + h asin(s sin(w t)) / asin(s)``, ``s`` = ``sharpness``; one period per joint,
    spread over ``periods``), faded in and out so that it starts and ends at rest.
    The other active joints of ``robot`` stay at the middle of their range."""
    lo, hi = robot.position_limits()
    lo = np.where(np.isfinite(lo), lo, -np.pi)
    hi = np.where(np.isfinite(hi), hi, np.pi)
    mid, half = (lo + hi) / 2, (hi - lo) / 2
    t = np.arange(0.0, duration, 1.0 / rate_hz)
    q = np.tile(mid, (len(t), 1))
    dq, ddq = np.zeros_like(q), np.zeros_like(q)
    Ts = np.linspace(periods[0], periods[1], max(len(joints), 1))
    k = np.arcsin(sharpness)
    for T, name in zip(Ts, joints):
        j = robot.active_joints.index(name)
        h = min(half_range, 0.8 * half[j])
        w = 2 * np.pi / T
        s = sharpness * np.sin(w * t)
        r = np.sqrt(1 - s * s)
        q[:, j] = mid[j] + h * np.arcsin(s) / k
        dq[:, j] = h / k * sharpness * w * np.cos(w * t) / r
        ddq[:, j] = h / k * sharpness * w * w * np.sin(w * t) * (sharpness ** 2 - 1) / r ** 3
    return windowed(Trajectory(t, q, dq, ddq))

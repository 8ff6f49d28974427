"""``figaroh-ros identify-payload CONFIG [--data CSV | --bag BAG]``: the payload fixed to
the tool from a short exciting motion (``identification.payload.identify_payload``).

    robot: {name: ur10, urdf: ..., joints: [...], dynamics: results/ur10_identified}
    payload:
      tool_frame: tool0
      measurements: torque             # or wrench (wrist force-torque sensor in tool_frame)
      data: payload.csv                # t, q_<joint>..., tau_<joint>... | fx fy fz mx my mz
      cutoff_hz: 10.0                  # zero-phase low-pass before differentiation
      decimation: 1
      torque_noise: [0.3]              # N.m; force_noise (N), moment_noise (N.m)
      com_box: {lo: [-0.2, -0.2, 0.0], hi: [0.2, 0.2, 0.3]}

Writes ``result.yaml`` (mass, centre of mass, inertia, std, residuals),
``ur_payload.yaml`` (ur_robot_driver ``set_payload``) and ``franka_load.yaml``
(libfranka ``setLoad``) into ``--out``; nothing when the recording cannot identify the
payload.

``plan(CONFIG, hold=..., out=...)`` (``figaroh-ros plan-payload``): the short excitation of
the last joints about a held posture (``excitation.payload.plan_payload_excitation``, for
the config's measurements and noise), written as the trajectory file the executor plays.
"""
from __future__ import annotations

import glob
import os

import numpy as np

from figaroh_ros.config.payload import Payload, PayloadRobot, load_payload_config
from figaroh_ros.errors import DataError
from figaroh_ros.excitation.fourier import Trajectory
from figaroh_ros.excitation.payload import (
    check_payload_excitation, joint_indices, plan_payload_excitation
)
from figaroh_ros.identification import signals
from figaroh_ros.identification.monitor import DynamicsModel
from figaroh_ros.identification.payload import identify_payload
from figaroh_ros.identification.payload_regressor import WRENCH_COMPONENTS
from figaroh_ros.io.bags import read_bag_recording
from figaroh_ros.io.csv_table import read_csv_table
from figaroh_ros.io.experiment_files import write_trajectory_csv
from figaroh_ros.io.output_dir import check_output_folder, csv_output, staged_output
from figaroh_ros.io.report import write_result
from figaroh_ros.model import load_model
from figaroh_ros.progress import Stage, reporter
from figaroh_ros.tasks import TaskOutcome
from figaroh_ros.tasks.robot_model import resolved_robot

FILTER_ORDER = 4
# the reach of a payload from its tool frame (m): a centre-of-mass coordinate known to no
# better than this, or an inertia entry to no better than the mass at this distance
# (m REACH^2), is not identified
REACH_M = 0.2
# rad/s (m/s): a joint slower than this is at rest for the identified Coulomb friction;
# five times the speed noise of 1e-5 rad encoders differentiated after the low-pass
REST_SPEED = 1e-3
INERTIA_ENTRIES = (("Ixx", 0, 0), ("Ixy", 0, 1), ("Ixz", 0, 2), ("Iyy", 1, 1), ("Iyz", 1, 2),
                   ("Izz", 2, 2))


def default_out(config_path: str) -> str:
    """``results/<robot>_payload``."""
    return os.path.join("results", load_payload_config(config_path).robot.name + "_payload")


def measurement_columns(p: Payload, joints: list[str]) -> list[str]:
    return ([f"tau_{j}" for j in joints] if p.measurements == "torque"
            else list(WRENCH_COMPONENTS))


def read_table(path: str, p: Payload, joints: list[str]):
    """``(t, q, y)`` of the CSV table ``path``."""
    names, values = read_csv_table(path)
    wanted = ["t"] + [f"q_{j}" for j in joints] + measurement_columns(p, joints)
    missing = [n for n in wanted if n not in names]
    if missing:
        raise DataError(f"data file {path}: missing columns {missing} (has {names})")
    cols = [names.index(n) for n in wanted]
    x = values[:, cols]
    n = len(joints)
    return x[:, 0], x[:, 1:1 + n], x[:, 1 + n:]


def read_recording(p: Payload, joints: list[str], data: str | None, bag: str | None):
    """``(t, q, y)`` from ``--bag``, ``--data`` or ``payload.data``."""
    if bag is not None:
        wrench = p.wrench_topic if p.measurements == "wrench" else None
        return read_bag_recording([os.path.abspath(bag)], joints, p.joint_topic,
                                  p.torque_topic, wrench_topic=wrench)
    path = data or p.data
    if path is None:
        raise DataError("no recording: give payload.data, --data CSV or --bag BAG")
    return read_table(path, p, joints)


def sample_step(t: np.ndarray) -> float:
    """The sampling period of a uniformly sampled recording (a DataError otherwise)."""
    if len(t) < 10 or np.any(np.diff(t) <= 0):
        raise DataError("the recording needs at least 10 samples with increasing t")
    step = float(np.median(np.diff(t)))
    if np.max(np.diff(t)) > 1.5 * step:
        raise DataError(f"the recording is not uniformly sampled (a gap of "
                        f"{np.max(np.diff(t)):.4g} s for a {step:.4g} s step)")
    return step


def motion(t, q, y, p: Payload, own=None):
    """Filtered, differentiated, trimmed and decimated ``(q, dq, ddq, y)``; with ``own``
    (the robot's own torques of ``(q, dq, ddq)``), ``y`` less those torques filtered like
    the measurement: its Coulomb friction switches sharply with the sign of the velocity,
    the recorded torque's switch is smoothed by the low-pass (parallel filtering)."""
    step = sample_step(t)
    fs = 1.0 / step
    if not p.cutoff_hz < fs / 2:
        raise DataError(f"payload.cutoff_hz: {p.cutoff_hz} Hz is not below the Nyquist "
                        f"frequency {fs / 2:.4g} Hz of the recording")
    qf = signals.lowpass_zero_phase(q, p.cutoff_hz, fs, FILTER_ORDER)
    yf = signals.lowpass_zero_phase(y, p.cutoff_hz, fs, FILTER_ORDER)
    dq, ddq = signals.derivatives(qf, step)
    if own is not None:
        yf = yf - signals.lowpass_zero_phase(own(qf, dq, ddq), p.cutoff_hz, fs,
                                             FILTER_ORDER)
    edge = signals.edge_samples(FILTER_ORDER, p.cutoff_hz, fs)
    keep = np.arange(edge, len(t) - edge, p.decimation)
    if len(keep) < 10:
        raise DataError(f"the recording is too short: {len(t)} samples, {2 * edge} lost to "
                        "the filter")
    return qf[keep], dq[keep], ddq[keep], yf[keep]


def robot_model(r: PayloadRobot):
    """``(robot, own)``: the robot without payload and its own joint torques
    (``own(q, dq, ddq)``; None: the robot's URDF inverse dynamics).  ``robot.dynamics``'s
    ``result.yaml`` gives the identified base parameters with the drive terms (friction,
    rotor inertia, torque offset; sign Coulomb model, as the torque monitor, none at rest)
    on ``robot.urdf``; without one, its ``*_identified.urdf`` gives the inertias only."""
    if r.dynamics is None:
        return load_model(r.urdf, r.joints), None
    result = os.path.join(r.dynamics, "result.yaml")
    if os.path.isfile(result):
        dm = DynamicsModel.from_files(result, r.urdf)
        if dm.joints != list(r.joints):
            raise DataError(f"robot.dynamics: {result} identified joints {dm.joints}, "
                            f"robot.joints lists {r.joints}")

        def own(q, dq, ddq):
            # a joint slower than REST_SPEED is at rest: no Coulomb friction (sign() of
            # the differentiated encoder noise would add +-fs at random)
            moving = np.where(np.abs(dq) < REST_SPEED, 0.0, dq)
            return np.array([dm.torque(*x) for x in zip(q, moving, ddq)]) \
                + dm.fv * (dq - moving)
        return dm.robot, own
    found = sorted(glob.glob(os.path.join(r.dynamics, "*_identified.urdf")))
    if not found:
        raise DataError(f"robot.dynamics: no result.yaml nor *_identified.urdf in "
                        f"{r.dynamics}")
    return load_model(found[0], r.joints), None


def per_joint(p: Payload, key: str, n: int) -> np.ndarray:
    """``payload.<key>`` (one value or one per joint) for the ``n`` joints."""
    k = np.asarray(getattr(p, key), float)
    if k.size not in (1, n):
        raise DataError(f"payload.{key}: 1 or {n} values (one per joint), got {k.size}")
    return np.broadcast_to(k, (n,))


def noise_of(p: Payload, n: int):
    if p.measurements == "torque":
        return per_joint(p, "torque_noise", n)
    return p.force_noise, p.moment_noise


def require_determined(res) -> None:
    """A DataError naming the parameters the recording leaves undetermined: a centre of
    mass coordinate whose std exceeds ``REACH_M``, an inertia entry whose std exceeds
    ``m REACH_M^2``.  The condition number alone passes a robot held still: the noise of
    the positions, differentiated, looks like an excitation of the inertia columns, yet
    determines nothing."""
    bound = max(res.mass, 0.0) * REACH_M ** 2
    bad = [(f"com_{a}", res.com_std[k], REACH_M, "m") for k, a in enumerate("xyz")
           if not res.com_std[k] <= REACH_M]
    bad += [(n, res.inertia_std[i, j], bound, "kg.m^2") for n, i, j in INERTIA_ENTRIES
            if not res.inertia_std[i, j] <= bound]
    if bad:
        raise DataError("the recording cannot identify the payload: unobservable "
                        f"parameters: {', '.join(b[0] for b in bad)} (std "
                        + ", ".join(f"{b[1]:.3g} {b[3]} > {b[2]:.3g}" for b in bad)
                        + f" for a {res.mass:.3g} kg payload within {REACH_M} m of the tool "
                        "frame); did the wrist move? play the planned excitation "
                        "(figaroh-ros plan-payload)")


def run(config_path: str, *, data: str | None = None, bag: str | None = None, out: str,
        progress=None) -> TaskOutcome:
    """Config + recording -> ``identify_payload`` -> ``<out>/result.yaml``,
    ``ur_payload.yaml`` and ``franka_load.yaml``."""
    say = reporter(progress)
    cfg = load_payload_config(config_path)
    check_output_folder(out)
    say(Stage.LOADING_DATA, 0.0, "reading the recording")
    cfg, model_source = resolved_robot(cfg, config_path, [bag] if bag else None)
    r, p = cfg.robot, cfg.payload
    robot, own = robot_model(r)
    n = len(r.joints)
    t, q, y = read_recording(p, r.joints, data, bag)
    torque = p.measurements == "torque"
    if torque:
        y = y * per_joint(p, "torque_per_effort", n)
    q, dq, ddq, y = motion(t, q, y, p, own if torque else None)
    # the robot's own torques (identified parameters) were subtracted in motion(): the
    # payload fit is told the robot is known and adds nothing for it
    left = None if own is None else (lambda q, dq, ddq: np.zeros((len(q), n)))
    box = None if p.com_box is None else (p.com_box.lo, p.com_box.hi)
    measured = {"tau": y} if torque else {"wrench": y}
    res = identify_payload(robot, q, dq, ddq, tool_frame=p.tool_frame,
                           noise=noise_of(p, n), com_box=box, robot_parameters=left,
                           max_condition=p.max_condition, wrench_sign=p.wrench_sign,
                           **measured)
    require_determined(res)
    summary = {"robot": r.name, "model": model_source, **res.to_dict()}
    with staged_output(out) as st:
        write_result(summary, st.dir)
        for name, text in (("ur_payload.yaml", res.to_ur_yaml()),
                           ("franka_load.yaml", res.to_franka_yaml())):
            with open(st.path(name), "w") as f:
                f.write(text)
    paths = {k: st.final(f"{k}.yaml") for k in ("result", "ur_payload", "franka_load")}
    say(Stage.EXPORTING, 1.0, f"wrote {paths['result']}")
    return TaskOutcome(summary, paths)


def plan(config_path: str, *, hold, out: str, duration: float = 10.0, joints=None,
         velocity_scale: float = 0.5, acceleration_limit: float = 4.0, seed: int = 0,
         progress=None) -> TaskOutcome:
    """The payload excitation of ``config_path``'s robot about ``hold`` (the last three
    joints, or ``joints``), planned for its ``payload.measurements`` and noise; written as
    the trajectory file the executor plays (``t`` and one column per joint: ``out`` itself
    when it names a CSV file, else ``out``/payload_trajectory.csv) with result.yaml beside
    it; nothing when it cannot identify the payload (a DataError naming the parameters)."""
    say = reporter(progress)
    cfg = load_payload_config(config_path)
    r, p = cfg.robot, cfg.payload
    folder, name = csv_output(out, "payload_trajectory.csv")
    check_output_folder(folder)
    say(Stage.LOADING_DATA, 0.0, "planning the payload excitation")
    robot = load_model(r.urdf, r.joints)
    noise = noise_of(p, len(r.joints))
    traj = Trajectory(*plan_payload_excitation(
        robot, p.tool_frame, hold, duration, joints=joints, kind=p.measurements,
        velocity_scale=velocity_scale, acceleration_limit=acceleration_limit, noise=noise,
        max_condition=p.max_condition, seed=seed))
    cond = check_payload_excitation(robot, p.tool_frame, traj, p.measurements, noise,
                                    p.max_condition)
    moving = joint_indices(robot, joints)
    vmax = robot.velocity_limits()[moving]
    summary = {"robot": r.name, "tool_frame": p.tool_frame,
               "measurements": p.measurements, "hold": [float(v) for v in np.ravel(hold)],
               "moving_joints": [r.joints[k] for k in moving],
               "duration_s": float(traj.t[-1]),
               "rate_hz": float(1.0 / (traj.t[1] - traj.t[0])),
               "condition_number": float(cond),
               "peak_velocity_of_limit": float(np.max(np.abs(traj.dq[:, moving]) / vmax)),
               "peak_acceleration_rad_s2": float(np.abs(traj.ddq).max())}
    with staged_output(folder) as st:
        write_trajectory_csv(st.path(name), r.joints, traj)
        path = st.final(name)
        summary["trajectory"] = os.path.abspath(path)
        write_result(summary, st.dir)
    paths = {"trajectory": path, "result": st.final("result.yaml")}
    say(Stage.EXPORTING, 1.0, f"wrote {path}")
    return TaskOutcome(summary, paths)

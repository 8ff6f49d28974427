"""``identify-gains``: drive gains and torque-sensor gains from an unloaded and a loaded
experiment (Nguyen et al. 2023 Eq. 8-10; ``figaroh_ros.identification.gains``).

The config is an identification config (robot, model, data format and columns,
processing) plus a ``tls`` section naming the two recordings, the measured columns and the
payload:

    tls:
      unloaded: data/unloaded        # folders holding data.table (or bags), one per experiment
      loaded: data/loaded
      current_column: "{joint}_current"   # csv_table: motor currents (null: none)
      sensor_column: "{joint}_sensor"     # csv_table: joint torque sensors (null: none)
      current_topic: /motor_currents      # bag: JointState topics whose effort holds the
      sensor_topic: /joint_torques        # currents / the sensor readings (null: none)
      payload_mass: 4.0                    # kg, weighed
      payload_com: [0.0, 0.0, 0.06]        # optional, in the payload joint's frame
      payload_inertia: [ixx, ixy, ixz, iyy, iyz, izz]   # optional, about the CoM
      payload_joint: wrist_3_joint         # default: the last active joint
      payload_box: {lower: [-0.1, -0.1, 0.0], upper: [0.1, 0.1, 0.2]}   # optional, m
      physical_payload: true               # a payload no object has is made realisable

``result.yaml`` reports the payload as identified and its verdict, and the gains, robot
and payload parameters with a realisable payload (``tasks/gains_payload.py``).
"""
from __future__ import annotations

import numpy as np

from figaroh_ros.config.gains import GainsConfig, load_gains_config
from figaroh_ros.errors import ConfigError, DataError
from figaroh_ros.identification.gains import (
    GainsExperiment, GainsResult, Payload, identify_gains
)
from figaroh_ros.io.output_dir import check_output_folder, staged_output
from figaroh_ros.io.recording import read_recordings
from figaroh_ros.io.report import write_result
from figaroh_ros.model.robot import RobotModel
from figaroh_ros.progress import Stage, reporter
from figaroh_ros.tasks import TaskOutcome
from figaroh_ros.tasks.gains_payload import constrained_result
from figaroh_ros.tasks.gate import (
    DEFAULT_RESIDUAL_LIMIT, Check, require_sane_fit, residual_check,
    successive_difference_noise
)
from figaroh_ros.tasks.identify import drive_options, processing_options, robot_from_config

SOURCES = (("currents", "current"), ("sensor_torques", "sensor"))
CAUSES = ("the unloaded and loaded recordings swapped or the same (tls.unloaded, "
          "tls.loaded)", "a wrong payload mass or joint (tls.payload_mass, payload_joint)",
          "currents or sensor readings of other joints, or with a sign flipped",
          "positions on the motor side (data.motor_side, transmission.gear_ratios)")


def read_experiment(cfg: GainsConfig, robot: RobotModel, folder: str) -> GainsExperiment:
    """The joint positions of one experiment with its currents and/or sensor readings."""
    t = cfg.tls
    c = cfg.model_copy(update={"data": cfg.data.model_copy(update={"path": folder})})
    key = "{}_topic" if cfg.data.format == "bag" else "{}_column"
    sources = {kind: getattr(t, key.format(what)) for kind, what in SOURCES
               if getattr(t, key.format(what)) is not None}      # one bag read for both
    measured, first = {}, None
    for kind, rec in zip(sources, read_recordings(c, robot, list(sources.values()))):
        if first is not None and not (rec.q.shape == first.q.shape
                                      and np.allclose(rec.q, first.q, atol=1e-9)):
            raise DataError(f"bag {folder}: '{t.current_topic}' and '{t.sensor_topic}' "
                            "are not stamped with the same joint states (a message missing "
                            "on one of them): the two measurements need the same samples")
        first = rec if first is None else first
        measured[kind] = rec.tau
    return GainsExperiment(first.t, first.q, **measured)


def payload(cfg: GainsConfig) -> Payload:
    t = cfg.tls
    return Payload(t.payload_mass, t.payload_com, t.payload_inertia, t.payload_joint)


def residual_sanity(g: GainsResult, exps: list[GainsExperiment]) -> Check:
    """The refined fit's residual RMS of each measured signal and experiment over that
    signal's noise from successive samples (RMS over joints), the worst."""
    ratios = {}
    for (kind, which), rms in (g.tls.residual_rms or {}).items():
        y = getattr(exps[("unloaded", "loaded").index(which)], kind)
        noise = float(np.sqrt(np.mean(successive_difference_noise(y) ** 2)))
        ratios[f"{kind} ({which})"] = (rms / max(noise, 1e-300), rms, noise)
    if not ratios:
        return residual_check(0.0, DEFAULT_RESIDUAL_LIMIT, "no residual reported")
    worst = max(ratios, key=lambda k: ratios[k][0])
    r, rms, noise = ratios[worst]
    return residual_check(r, DEFAULT_RESIDUAL_LIMIT, f"noise of the {worst} ({rms:.4g} over "
                          f"{noise:.4g} from successive samples)")


def run(config_path: str, *, out: str, accept_poor_fit: bool = False,
        progress=None) -> TaskOutcome:
    """Identify the gains of the config at ``config_path``; write ``<out>/result.yaml``.
    A fit whose residual exceeds the residual limit times the measured signals' noise
    raises DataError unless ``accept_poor_fit`` (then the result warns)."""
    say = reporter(progress)
    cfg = load_gains_config(config_path)
    check_output_folder(out)           # before any work
    robot = robot_from_config(cfg)
    say(Stage.LOADING_DATA, 0.05, "reading the unloaded and loaded experiments")
    exps = [read_experiment(cfg, robot, getattr(cfg.tls, k)) for k in ("unloaded", "loaded")]
    try:
        g = identify_gains(robot, *exps, payload(cfg), drive=drive_options(cfg),
                           processing=processing_options(cfg), progress=progress)
    except ConfigError as exc:
        raise ConfigError(f"config field 'tls': {exc}") from exc
    sane = residual_sanity(g, exps)
    warnings = require_sane_fit(sane, accept_poor_fit, "the gains identification", CAUSES)
    g, feasibility, more = constrained_result(cfg, robot, g, exps[1])
    warnings += more
    summary = {**g.to_dict(), "payload_feasibility": feasibility,
               "residual_vs_noise": sane.to_dict(),
               **({"warnings": warnings} if warnings else {})}
    with staged_output(out) as st:
        write_result(summary, st.dir)
    path = st.final("result.yaml")
    say(Stage.EXPORTING, 1.0, f"wrote {path}")
    return TaskOutcome(summary, {"result": path})

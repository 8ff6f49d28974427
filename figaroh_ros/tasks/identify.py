"""``identify``: an identification config and its recording in, ``result.yaml`` (plus the
identified URDF with ``covariance.yaml`` when publishable, and torque plots) out.

The config (``figaroh_ros.config.identification``) names the model, the recording and
its processing; the recording is read by ``figaroh_ros.io.recording``; the
identification itself is the array API's code path
(``figaroh_ros.identification.fit.identify_equations``): the whole recording gives the
estimate, and its last ``estimation.validation_fraction`` is held out of a second fit to
check the prediction.
"""
from __future__ import annotations

import os

from figaroh_ros.config.identification import load_config
from figaroh_ros.errors import ConfigError, DataError, ModelError
from figaroh_ros.identification.fit import EstimationOptions, Setup, identify_equations
from figaroh_ros.identification.observation import Processing, held_out_split, torque_equations
from figaroh_ros.identification.parameters import DriveOptions, parameter_layout
from figaroh_ros.identification.physical.fit import PhysicalOptions
from figaroh_ros.identification.result import IdentificationResult
from figaroh_ros.identification.wrench import COMPONENTS, contact_frame, wrench_equations
from figaroh_ros.io.output_dir import Staging, staged_output
from figaroh_ros.io.recording import Recording, is_wrench, read_recording
from figaroh_ros.io.reference import compare, read_reference
from figaroh_ros.io.report import plot_torques, prediction_band, write_covariance, write_result
from figaroh_ros.model.loading import load_model
from figaroh_ros.model.robot import RobotModel
from figaroh_ros.progress import Stage, reporter
from figaroh_ros.tasks import TaskOutcome

WELL_IDENTIFIED = 5.0      # reference parameters with a std below this many percent


def robot_from_config(cfg: dict) -> RobotModel:
    """The model of the config's ``robot`` and ``transmission`` sections."""
    r, tr = cfg["robot"], cfg["transmission"]
    try:
        return load_model(r["urdf"], r["joints"], floating_base=r["floating_base"],
                          gear_ratios=tr["gear_ratios"], coupling=tr["coupling"],
                          gravity=r.get("gravity"))
    except ModelError as exc:
        field = "transmission.coupling" if "coupling" in str(exc) else "robot"
        raise ConfigError(f"config field '{field}': {exc}") from exc


def drive_options(cfg: dict) -> DriveOptions:
    return DriveOptions(**cfg["model"])


def processing_options(cfg: dict) -> Processing:
    p = cfg["processing"]
    return Processing(p["position_cutoff_hz"], p["filter_order"], p["decimation"],
                      p["min_velocity"])


def estimation_options(cfg: dict) -> EstimationOptions:
    e, ph = cfg["estimation"], cfg["physical"]
    physical = None if ph["method"] == "none" else PhysicalOptions(**ph)
    return EstimationOptions(e["method"], e["essential_ratio"], e["cross_validation_folds"],
                             physical)


def _builder(cfg: dict, setup: Setup, rec: Recording, p: Processing):
    """The equations of ``rec`` (torques, or a force plate's wrench)."""
    if is_wrench(cfg):
        frame = contact_frame(setup.model, cfg["measurements"]["contact_frame"])
        return lambda: wrench_equations(setup.model, setup.layout, rec.t, rec.q, rec.tau,
                                        frame, p)
    return lambda: torque_equations(setup.model, setup.layout, setup.drive, rec.t, rec.q,
                                    rec.tau, p)


def identify_config(cfg: dict, progress=None) -> IdentificationResult:
    """The identification a validated config describes (nothing written)."""
    say = reporter(progress)
    robot, drive = robot_from_config(cfg), drive_options(cfg)
    layout = parameter_layout(robot, drive)
    groups = list(COMPONENTS) if is_wrench(cfg) else list(robot.active_joints)
    setup = Setup(cfg["robot"]["name"], robot, layout, drive, groups)
    say(Stage.LOADING_DATA, 0.02, f"model: {robot.n_joints} joints, {layout.size} standard "
        "parameters")
    rec = read_recording(cfg, robot)
    say(Stage.LOADING_DATA, 0.1, f"data: {rec.q.shape[0]} samples over "
        f"{rec.t[-1] - rec.t[0]:.2f} s")
    p, fraction = processing_options(cfg), cfg["estimation"]["validation_fraction"]
    train = test = None
    if fraction > 0:
        k = held_out_split(rec.q.shape[0], fraction)
        train, test = (_builder(cfg, setup, part, p) for part in (rec.rows(0, k), rec.rows(k)))
    return identify_equations(setup, _builder(cfg, setup, rec, p), p, estimation_options(cfg),
                              train=train, test=test, progress=progress)


def reference_check(summary: dict, reference: dict, path: str) -> dict:
    """Per method, how many well-identified reference parameters (std below 5 %) lie
    within 3 of their standard deviations (a :class:`DataError` if the parameters
    differ)."""
    out = {"path": path, "well_identified_std_percent": WELL_IDENTIFIED}
    for m in ("ols", "wls"):
        if m not in summary:
            continue
        try:
            rows = compare(summary[m], reference, m)
        except KeyError as exc:
            raise DataError(f"result and reference {path} differ: {exc}") from exc
        well = [r for r in rows if r.ref_std_percent < WELL_IDENTIFIED]
        out[m] = {"well_identified": len(well),
                  "within_3_std": sum(abs(r.z) <= 3 for r in well),
                  "base_parameters": len(summary[m]), "reference_parameters": len(reference)}
    return out


def _export(result: IdentificationResult, summary: dict, st: Staging, plots: bool,
            say) -> dict:
    """Write the outputs into the staging folder; their final paths."""
    write_result(summary, st.dir)
    paths = {"result": st.final("result.yaml")}
    if "physical" in summary and summary["physical"]["publishable"]:
        name = f"{result.robot}_identified.urdf"
        result.to_urdf(st.path(name))
        write_covariance(result, st.dir)
        paths.update(urdf=st.final(name), covariance=st.final("covariance.yaml"))
        say(Stage.EXPORTING, 0.95, f"{paths['urdf']} and {paths['covariance']} written")
    elif "physical" in summary:
        say(Stage.EXPORTING, 0.95, "identified URDF not written: "
            + summary["physical"]["not_published_because"])
    if plots:
        obs = result.observation
        plot_torques(obs.Y, obs.Wb @ result.estimate.phi, obs.row_joint, result.joints,
                     st.dir, f"{result.robot} ({result.method.upper()})",
                     band=prediction_band(obs.Wb, result.estimate.cov))
        paths["plots"] = st.out
    return paths


def run(config_path: str, *, data: str | None = None, bag: str | None = None,
        urdf: str | None = None, out: str, reference: str | None = None,
        progress=None) -> TaskOutcome:
    """Identify, check against ``reference`` (a published base-parameter CSV) if given,
    then write ``result.yaml`` (and the URDF, covariance, plots) into ``out``."""
    say = reporter(progress)
    cfg = load_config(config_path, data, bag, urdf)
    ref = read_reference(reference) if reference is not None else None
    with staged_output(out) as st:
        result = identify_config(cfg, progress)
        summary = result.to_dict()
        if ref is not None:
            summary["reference"] = reference_check(summary, ref, os.path.abspath(reference))
        say(Stage.EXPORTING, 0.9, f"writing into {out}")
        paths = _export(result, summary, st, cfg["output"]["plots"], say)
    say(Stage.EXPORTING, 1.0, f"wrote {paths['result']}")
    return TaskOutcome(summary, paths)

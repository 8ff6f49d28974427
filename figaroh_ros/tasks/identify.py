"""``identify``: an identification config and its recording in, ``result.yaml`` (plus the
identified URDF with ``covariance.yaml`` when publishable, and torque plots) out.

The config (``figaroh_ros.config.identification``) names the model, the recording and
its processing; the recording is read by ``figaroh_ros.io.recording``; the
identification itself is the array API's code path
(``figaroh_ros.identification.fit.identify_equations``): the whole recording gives the
estimate, and its last ``estimation.validation_fraction`` is held out of a second fit to
check the prediction; or (``validate``) another recording is predicted by the fit on the
whole of this one.  With ``model.friction_models`` each candidate friction model is
identified and the one of lowest stacked held-out relative error is kept.
"""
from __future__ import annotations

import dataclasses
import os
import time

import numpy as np

import figaroh_ros.io   # the bag modules, loaded when the recording is a bag
from figaroh_ros.config.identification import IdentificationConfig, load_identification
from figaroh_ros.errors import ConfigError, DataError, ModelError
from figaroh_ros.identification.fit import (
    EstimationOptions, Setup, identify_equations, search_stribeck
)
from figaroh_ros.identification.friction_choice import (
    choose, cross_validated, superset_drive
)
from figaroh_ros.identification.friction_choice import record as friction_record
from figaroh_ros.identification.observation import Processing, held_out_split, torque_equations
from figaroh_ros.identification.parameters import DriveOptions, parameter_layout
from figaroh_ros.identification.physical.fit import PhysicalOptions
from figaroh_ros.identification.result import IdentificationResult
from figaroh_ros.identification.segments import (
    decimated, decimated_torque_equations, shortest_segment, stacked, undecimated
)
from figaroh_ros.identification.wrench import COMPONENTS, contact_frame, wrench_equations
from figaroh_ros.io.output_dir import Staging, staged_output
from figaroh_ros.io.recording import (
    Recording, is_wrench, read_recording, same_pair_columns, validation_config
)
from figaroh_ros.io.reference import compare
from figaroh_ros.io.result_reference import check_definitions, read_any_reference
from figaroh_ros.io.reference_model import is_parameter_table
from figaroh_ros.io.report import plot_torques, prediction_band, write_covariance, write_result
from figaroh_ros.model.robot import RobotModel
from figaroh_ros.progress import Stage, reporter
from figaroh_ros.tasks import TaskOutcome
from figaroh_ros.tasks.heartbeat import heartbeat
from figaroh_ros.tasks.identification_gate import identification_publication
from figaroh_ros.tasks.reference_model_check import (
    reference_friction_of, score_reference_model
)
from figaroh_ros.tasks.reference_table_check import read_reference_table, score_reference_table
from figaroh_ros.tasks.robot_model import config_model, resolved_robot

FRICTION_FOLDS = 5         # time blocks of the per-joint friction choice
PHYSICAL_CHECK = 0.3       # last part of the training part predicted to choose the estimate
WELL_IDENTIFIED = 5.0      # reference parameters with a std below this many percent
CHUNK_BYTES = 64 * 2**20   # full-rate observation matrix built at once (a long recording)


Config = IdentificationConfig      # the typed config a task runs (``load_identification``)


def robot_from_config(cfg: Config) -> RobotModel:
    """The model of the config's ``robot`` and ``transmission`` sections."""
    try:
        return config_model(cfg)
    except ModelError as exc:
        field = "transmission.coupling" if "coupling" in str(exc) else "robot"
        raise ConfigError(f"config field '{field}': {exc}") from exc


FRICTION_MODELS = {"sign": {"coulomb_model": "sign"},
                   "tanh": {"coulomb_model": "tanh"},
                   "asymmetric": {"coulomb_model": "tanh", "viscous_per_direction": True},
                   "stribeck": {"coulomb_model": "sign"}}


def drive_options(cfg: Config, friction: str | None = None) -> DriveOptions:
    """The drive terms of the config's ``model`` section, or of the named friction model
    (``stribeck``: a placeholder Stribeck velocity, searched later)."""
    if friction is None:
        return DriveOptions.from_config(cfg.model)
    changes = dict(FRICTION_MODELS[friction])
    if friction == "stribeck":
        changes["stribeck_velocity"] = float(np.sqrt(np.prod(cfg.model.stribeck_range)))
    return DriveOptions.from_config(cfg.model, **changes)


def processing_options(cfg: Config) -> Processing:
    return Processing.from_config(cfg.processing)


def fitted_joints(cfg: Config) -> list[str]:
    return list(cfg.data.fitted_joints or cfg.robot.joints)


def estimation_options(cfg: Config) -> EstimationOptions:
    """The ``estimation`` section's options, with the ``physical`` section's, the gain
    masks of ``drive`` (per fitted joint) and ``model.stribeck_range``."""
    dr, ph, fitted = cfg.drive, cfg.physical, fitted_joints(cfg)

    def mask(joints):
        return tuple(j in joints for j in fitted) if joints else None
    return EstimationOptions.from_config(
        cfg.estimation, physical=None if ph.method == "none" else
        PhysicalOptions(**ph.model_dump()), nominal_gains=mask(dr.gains_from_nominal),
        free_gains=mask(dr.identify_gains), stribeck_range=tuple(cfg.model.stribeck_range))


def effort_to_torque(cfg: Config, rec: Recording) -> Recording:
    """``tau_j = K_j effort_j`` with the signed gains of ``drive.effort_gains``, which
    :func:`load_identification` fills from ``drive.gear_ratios x drive.torque_constants``
    (``config/drive.py``) or the driver profile ``robot.driver`` names (a motor current
    times torque constant x gear ratio): the one conversion of recorded efforts."""
    K = cfg.drive.effort_gains
    if K is None or is_wrench(cfg):
        return rec
    return Recording(rec.t, rec.q, rec.tau * np.asarray(K, float), rec.starts)


def read_validation(cfg: Config, robot: RobotModel, path: str) -> Recording:
    """The recording at ``path`` (:func:`validation_config`) read as the config's own, of
    the same joints (a :class:`DataError` naming ``path`` and the columns or joints
    missing otherwise)."""
    other = validation_config(cfg, path)
    path = os.path.abspath(path)
    try:
        rec = read_recording(other, robot, split_gaps=True)
        if other.data.format == "csv_pair":
            same_pair_columns(cfg.data, other.data)
        return effort_to_torque(cfg, rec)
    except DataError as exc:
        raise DataError(f"validation recording {path}: {exc}") from exc


def _builder(cfg: Config, setup: Setup, rec: Recording, p: Processing):
    """The equations of ``rec`` (torques, or a force plate's wrench)."""
    if is_wrench(cfg):
        frame = contact_frame(setup.model, cfg.measurements.contact_frame)
        return lambda: wrench_equations(setup.model, setup.layout, rec.t, rec.q, rec.tau,
                                        frame, p)
    return lambda: torque_equations(setup.model, setup.layout, setup.drive, rec.t, rec.q,
                                    rec.tau, p)


def _rate(rec: Recording) -> float:
    """The grid's rate, Hz (to 9 digits: a grid's steps carry round-off)."""
    return float(f"{1.0 / np.median(np.diff(rec.t)):.9g}")


def _chunk_samples(setup: Setup, rec: Recording) -> int:
    """Samples whose full-rate observation matrix fits in ``CHUNK_BYTES``."""
    return max(1, CHUNK_BYTES // (8 * rec.tau.shape[1] * len(setup.layout.names)))


def by_segments(setup: Setup, rec: Recording | None) -> bool:
    """Whether ``rec`` is built segment by segment and chunk by chunk: it has gaps, or its
    full-rate observation matrix would not fit in one chunk."""
    return rec is not None and (rec.starts is not None
                                or rec.q.shape[0] > _chunk_samples(setup, rec))


def _segment_equations(cfg: Config, setup: Setup, seg: Recording, p: Processing, tick):
    if is_wrench(cfg):
        return decimated(_builder(cfg, setup, seg, p)(), p.decimation)
    return decimated_torque_equations(setup.model, setup.layout, setup.drive, seg.t, seg.q,
                                      seg.tau, p, _chunk_samples(setup, seg), tick)


def _segments_builder(cfg: Config, setup: Setup, rec: Recording, p: Processing, say):
    """The equations of ``rec`` built segment by segment (those too short for the filters
    left out) and decimated: fitted with ``decimation = 1``."""
    def build():
        need = shortest_segment(p, _rate(rec))
        used = [(a, b) for a, b in rec.bounds() if b - a >= need]
        if not used:
            raise DataError(f"no segment of the recording between gaps longer than "
                            f"data.max_gap has the {need} samples the filters need "
                            f"(longest: {max(b - a for a, b in rec.bounds())})")
        done = {"n": 0, "last": -np.inf}       # the first chunk, then every second

        def tick(k, total):
            if time.monotonic() - done["last"] >= 1.0:
                done["last"] = time.monotonic()
                say(Stage.IDENTIFIABILITY, 0.15, f"equations: {done['n'] + k} of "
                    f"{sum(b - a for a, b in used)} samples")
        parts = []
        for a, b in used:
            parts.append(_segment_equations(cfg, setup, rec.rows(a, b), p, tick))
            done["n"] += b - a
        return stacked(parts)
    return build


def segments_report(cfg: Config, rec: Recording, p: Processing) -> dict:
    """The segments of ``rec`` between gaps longer than ``data.max_gap``: their times,
    samples, and whether they were long enough for the filters."""
    rate = _rate(rec)
    need = shortest_segment(p, rate)
    limit = cfg.data.max_gap or 5.0 / rate
    rows = [{"from_s": float(rec.t[a]), "to_s": float(rec.t[b - 1]), "samples": b - a,
             "used": b - a >= need} for a, b in rec.bounds()]
    return {"max_gap_s": float(limit), "count": len(rows),
            "used": sum(r["used"] for r in rows), "min_samples": int(need),
            "dropped_samples": sum(r["samples"] for r in rows if not r["used"]),
            "segments": rows}


def make_setup(cfg: Config, robot: RobotModel, drive: DriveOptions) -> Setup:
    """The model of the equations: layout, row groups, fitted joints."""
    if is_wrench(cfg):
        return Setup(cfg.robot.name, robot, parameter_layout(robot, drive),
                     drive, list(COMPONENTS))
    fitted = fitted_joints(cfg)
    return Setup(cfg.robot.name, robot, parameter_layout(robot, drive), drive, fitted,
                 None if fitted == robot.active_joints else
                 [robot.active_joints.index(j) for j in fitted])


def _parts(cfg: Config, rec: Recording, validation: Recording | None):
    """(data, train, test) recordings: the held-out tail, or another recording."""
    if validation is not None:
        return rec, None, validation
    fraction = cfg.estimation.validation_fraction
    if fraction <= 0:
        return rec, None, None
    k = held_out_split(rec.q.shape[0], fraction)
    return rec, rec.rows(0, k), rec.rows(k)


def _builders(cfg: Config, setup: Setup, parts, say) -> tuple[list, Processing]:
    """The equation builders of ``parts`` for ``setup``, and the processing they leave."""
    p = processing_options(cfg)
    if any(by_segments(setup, r) for r in parts):
        return ([None if r is None else _segments_builder(cfg, setup, r, p, say)
                 for r in parts], undecimated(p))
    return [None if r is None else _builder(cfg, setup, r, p) for r in parts], p


def identify_model(cfg: Config, robot: RobotModel, parts, friction: str | None,
                   progress=None, drive: DriveOptions | None = None,
                   absent: tuple[str, ...] = ()) -> IdentificationResult:
    """One identification of ``parts`` (data, train, test) with one friction model (or
    the given ``drive`` without the standard parameters ``absent``)."""
    setup = make_setup(cfg, robot, drive or drive_options(cfg, friction))
    setup.absent = tuple(absent)
    opts, say = estimation_options(cfg), reporter(progress)
    build, p = _builders(cfg, setup, parts, say)
    if setup.drive.stribeck_velocity is not None and drive is None:
        v = search_stribeck(setup, build[1] or build[0], p, opts)
        setup.drive = dataclasses.replace(setup.drive, stribeck_velocity=v)
    return identify_equations(setup, build[0], p, opts, train=build[1], test=build[2],
                              progress=progress)


def identify_per_joint(cfg: Config, robot: RobotModel, parts, progress=None
                       ) -> IdentificationResult:
    """``model.friction_models: [per_joint]``: the position cut-off, the estimator (OLS or
    WLS) and each joint's friction model chosen by cross-validation inside the training
    part (``identification/friction_choice.py``), then the identification with them."""
    say = reporter(progress)
    train = parts[1] if parts[1] is not None else parts[0]

    known = {}            # the superset's definition: the velocities do not change it

    def build(v_s: float, v_st: float, cutoff: float):
        c = _with_cutoff(cfg, cutoff)
        setup = make_setup(c, robot, superset_drive(drive_options(c), v_s, v_st))
        (equations,), p = _builders(c, setup, [train], say)
        definition = known.setdefault("d", setup.definition(None))
        return cross_validated(lambda: setup.equations(equations), definition, p,
                               FRICTION_FOLDS, setup.n)
    say(Stage.ESTIMATION, 0.3, "friction model per joint: cross-validation on the "
        "training part")
    setup = make_setup(cfg, robot, drive_options(cfg))
    ids = [robot.joint_ids[robot.active_joints.index(j)] for j in setup.groups]
    chosen = choose(build, ids, cfg.processing.position_cutoff_hz)
    c = _with_cutoff(cfg, chosen["position_cutoff_hz"])
    c = c.model_copy(update={"estimation": c.estimation.model_copy(
        update={"method": chosen["method"]})})
    drive = superset_drive(drive_options(c), chosen["coulomb_velocity"],
                           chosen["stribeck_velocity"])
    result = identify_model(c, robot, parts, None, progress, drive, chosen["absent"])
    result.friction_selection = friction_record(chosen, setup.groups)
    if c.physical.method != "none" and result.held_out is not None:
        result.friction_selection["estimate"] = _physical_choice(
            c, robot, train, drive, chosen["absent"], result)
    return result


def _stacked_from_rmse(rmse: np.ndarray, obs) -> float:
    counts = np.bincount(obs.row_joint, minlength=len(rmse))
    return float(np.sqrt(np.sum(counts * np.asarray(rmse) ** 2) / np.sum(obs.Y ** 2)))


def _physical_choice(cfg: Config, robot: RobotModel, train: Recording, drive: DriveOptions,
                     absent: tuple, result: IdentificationResult) -> dict:
    """Least squares or the physically consistent estimate, whichever predicts the last
    :data:`PHYSICAL_CHECK` of the training part better when fitted on the rest (the
    held-out part not used); and the held-out errors of the one chosen."""
    k = held_out_split(train.q.shape[0], PHYSICAL_CHECK)
    check = identify_model(cfg, robot, (train.rows(0, k), None, train.rows(k)), None, None,
                           drive, absent)
    ls = _stacked_from_rmse(check.validation_rmse, check.held_out)
    ph = _stacked_from_rmse(check.physical_validation_rmse, check.held_out)
    chosen = "physical" if ph < ls else "least_squares"
    o = result.held_out
    rmse = result.physical_validation_rmse if chosen == "physical" else result.validation_rmse
    rms = np.sqrt(np.bincount(o.row_joint, o.Y ** 2, len(rmse))
                  / np.bincount(o.row_joint, minlength=len(rmse)))
    return {"chosen": chosen, "chosen_by": f"fitted on the first {1 - PHYSICAL_CHECK:.0%} "
            f"of the training part, the last {PHYSICAL_CHECK:.0%} predicted",
            "check_relative_error_stacked": {"least_squares": ls, "physical": ph},
            "validation_relative_error": {
                **{j: float(v) for j, v in zip(result.joints, np.asarray(rmse) / rms)},
                "stacked": _stacked_from_rmse(rmse, o)}}


def _with_cutoff(cfg: Config, cutoff: float) -> Config:
    return cfg.model_copy(update={"processing": cfg.processing.model_copy(
        update={"position_cutoff_hz": float(cutoff)})})


def _choice(name: str, r: IdentificationResult) -> dict:
    row = {"model": name, "n_base_parameters": int(r.base.size)}
    if r.validation_relative_error is not None:
        row["validation_relative_error"] = {
            **{j: float(v) for j, v in zip(r.joints, r.validation_relative_error)},
            "stacked": float(r.validation_relative_error_stacked)}
    if r.drive.stribeck_velocity is not None:
        row["stribeck_velocity"] = float(r.drive.stribeck_velocity)
    return row


def identify_config(cfg: Config, progress=None, validation: str | None = None,
                    report: dict | None = None) -> IdentificationResult:
    """The identification a validated config describes (nothing written); ``validation``:
    another recording to predict (the held-out tail otherwise); ``report``: a dict that
    receives the recording's segments (``recording``)."""
    say = reporter(progress)
    robot = robot_from_config(cfg)
    say(Stage.LOADING_DATA, 0.02, f"model: {robot.n_joints} joints")
    rec = effort_to_torque(cfg, read_recording(
        cfg, robot, progress=lambda m: say(Stage.LOADING_DATA, 0.05, m), split_gaps=True))
    segments = segments_report(cfg, rec, processing_options(cfg))
    say(Stage.LOADING_DATA, 0.1, f"data: {rec.q.shape[0]} samples over "
        f"{rec.t[-1] - rec.t[0]:.2f} s in {segments['count']} segment(s) between gaps "
        f"longer than {segments['max_gap_s']:.3g} s"
        + (f", {segments['dropped_samples']} samples of {segments['count'] - segments['used']}"
           " too short for the filters left out" if segments["dropped_samples"] else ""))
    if report is not None:
        report["recording"] = segments
    other = None if validation is None else read_validation(cfg, robot, validation)
    result = _identify_parts(cfg, robot, _parts(cfg, rec, other), progress)
    if report is not None:             # the publication gate's verdict (result.yaml)
        report["publication"] = identification_publication(cfg, result, rec.q, rec.tau)
    return result


def _identify_parts(cfg: Config, robot: RobotModel, parts, progress) -> IdentificationResult:
    """The identification of ``parts`` with the config's friction model(s)."""
    models = cfg.model.friction_models or [None]
    if "per_joint" in models:
        if len(models) > 1 or is_wrench(cfg):
            raise ConfigError("model.friction_models: per_joint stands alone, for joint "
                              f"torques (got {models})")
        return identify_per_joint(cfg, robot, parts, progress)
    if len(models) > 1 and parts[2] is None:
        raise ConfigError("model.friction_models: choosing among several friction models "
                          "needs held-out data (estimation.validation_fraction > 0 or "
                          "--validate)")
    results = {m: identify_model(cfg, robot, parts, m, progress) for m in models}
    best = min(results, key=lambda m: results[m].validation_relative_error_stacked
               if results[m].validation_relative_error_stacked is not None else 0.0)
    chosen = results[best]
    if best is not None:
        chosen.friction_selection = {"chosen": best, "candidates":
                                     [_choice(m, r) for m, r in results.items()]}
    return chosen


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
        except DataError as exc:
            raise DataError(f"result and reference {path} differ: {exc}") from None
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
        validate: str | None = None, reference_model: str | None = None,
        reference_friction: str | None = None, progress=None) -> TaskOutcome:
    """Identify, check against ``reference`` (a published base-parameter CSV) if given,
    then write ``result.yaml`` (and the URDF, covariance, plots) into ``out``;
    ``validate``: predict that other recording (folder, CSV table or bag);
    ``reference_model``: a published model scored on the same held-out data, a URDF or a
    standard-parameter table (``.csv``/``.yaml``: ``io.reference_model.read_parameter_table``
    for its forms), with the published friction ``reference_friction`` added to its
    prediction if given (``io/reference_friction.py``).  ``progress``
    hears from the task at least every second or so (``tasks/heartbeat.py``)."""
    with heartbeat(progress) as beating:
        return _run(config_path, data, bag, urdf, out, reference, validate,
                    reference_model, reference_friction, beating)


def _run(config_path, data, bag, urdf, out, reference, validate, reference_model,
         reference_friction, progress) -> TaskOutcome:
    say = reporter(progress)
    loaded = load_identification(config_path, data, bag, urdf)
    ref, ref_sha = read_any_reference(reference) if reference is not None else (None, None)
    table = (read_reference_table(reference_model) if reference_model is not None
             and is_parameter_table(reference_model) else None)
    friction = reference_friction_of(reference_model, reference_friction)
    bags = [loaded.config.data.path] if loaded.config.data.format == "bag" else None
    cfg, provenance = resolved_robot(loaded.config, config_path, bags)
    with staged_output(out) as st:
        report = {}
        result = identify_config(cfg, progress, validate, report)
        summary = result.to_dict()
        summary.update(report)
        summary["nominal_model"] = provenance
        summary["effort"] = loaded.effort
        if bags:
            backends = figaroh_ros.io.bag_backend.bag_backends(bags[0])
            summary["bag"] = dict(path=bags[0], **backends)
        if table is not None:
            summary["reference_model"] = score_reference_table(result, table, reference_model,
                                                             friction)
        elif reference_model is not None:
            summary["reference_model"] = score_reference_model(cfg, result, reference_model,
                                                             friction)
        if ref is not None:
            check_definitions(reference, ref_sha, summary["base_definition"]["sha256"])
            summary["reference"] = reference_check(summary, ref, os.path.abspath(reference))
        say(Stage.EXPORTING, 0.9, f"writing into {out}")
        paths = _export(result, summary, st, cfg.output.plots, say)
    say(Stage.EXPORTING, 1.0, f"wrote {paths['result']}")
    return TaskOutcome(summary, paths)

"""Geometric calibration from a config file: postures (CSV or bags) in, result files out.

Config -> arrays (``figaroh_ros.io``) -> :func:`figaroh_ros.calibration.calibrate` ->
``result.yaml``, the calibrated URDF and the error plots in ``out``.
"""
from __future__ import annotations

import os
from types import SimpleNamespace

import numpy as np
import pinocchio as pin

import figaroh_ros.io   # the bag readers, loaded when the postures come from bags
from figaroh_ros import tasks
from figaroh_ros.calibration import CalibrationResult, calibrate
from figaroh_ros.calibration.kinematic_model import KinematicModel, Measurement
from figaroh_ros.calibration.markers import PostureFit, posture_fit, write_posture_fit
from figaroh_ros.calibration.planes import Plane, initial_planes
from figaroh_ros.calibration.procedure import (
    kinematic_model, nominal_fit, postures, robot_model
)
from figaroh_ros.calibration.solve import PostureSet, identifiable_parameters, initial_frames
from figaroh_ros.config.calibration import CalibrationConfig, load_calibration_config
from figaroh_ros.config.measurement_kind import measures_pixels
from figaroh_ros.errors import DataError, FigarohError
from figaroh_ros.io.calibration_plots import plot_posture_errors
from figaroh_ros.io.degenerate import refuse_degenerate_postures
from figaroh_ros.io.output_dir import Staging, staged_output
from figaroh_ros.io.postures_csv import load_postures
from figaroh_ros.io.report import write_result
from figaroh_ros.model.robot import RobotModel
from figaroh_ros.model.urdf_checks import check_urdf_text
from figaroh_ros.progress import Stage, reporter
from figaroh_ros.tasks import TaskOutcome
from figaroh_ros.tasks.calibration_gate import (
    calibration_verdict, input_checks, residual_ratio_check
)
from figaroh_ros.tasks.gate import require_sane_fit
from figaroh_ros.tasks.robot_model import resolved_robot


def model_arguments(cfg: CalibrationConfig) -> dict:
    """The chain and measurement arguments of ``calibrate`` / ``plan_postures``."""
    c, m = cfg.calibration, cfg.measurement
    guess = c.tool_guess
    points = len(m.points)
    if m.type != "pose" and guess is not None:
        points = np.reshape(guess, (-1, 3))
    return {"tool_frame": c.tool_frame, "level": c.level, "measurement": m.type,
            "points": points, "start_frame": c.start_frame, "joints": c.joints,
            "noise": (m.noise_position_mm * 1e-3, m.noise_orientation_mrad * 1e-3),
            "mask": m.mask, "estimate_base": c.estimate_base, "base_guess": c.base_guess,
            "tool_guess": guess if m.type == "pose" else None,
            "elastic_joints": c.elastic_joints}


def solver_arguments(cfg: CalibrationConfig) -> dict:
    s = cfg.solver
    thr = s.outlier_threshold_mm
    return {"method": s.method, "outlier_threshold": None if thr is None else thr * 1e-3,
            "max_iterations": s.max_iterations,
            "max_std": (s.max_std_mm * 1e-3, s.max_std_mrad * 1e-3),
            "cross_validation": s.cross_validation}


def read_csv_postures(cfg: CalibrationConfig, chain: list[str], path: str,
                      every_plane: bool = True) -> PostureSet:
    """A posture table; with ``measurement.planes`` its ``plane`` column names the plane of
    each posture (``every_plane``: each declared plane touched, as training needs)."""
    m, d = cfg.measurement, cfg.data
    return load_postures(path, chain, m.type, m.points, m.orientation, m.inverse,
                         d.fixed_joints, d.id_column, planes_of(cfg), every_plane)


def planes_of(cfg: CalibrationConfig) -> list[Plane] | None:
    """The config's several planes (``measurement.planes``), or None."""
    planes = cfg.measurement.planes
    return None if planes is None else [Plane(p.name, p.pose) for p in planes]


def bag_postures(cfg: CalibrationConfig, km: KinematicModel):
    """Training and held-out postures from the recorded bags (every ``holdout_every``-th
    posture is held out for the validation that gates publishing), and the postures left
    out for want of measurements (``bag.skip_unmeasured``)."""
    b = cfg.bag
    bp = figaroh_ros.io.bags.read_bag_postures(b.paths, km.chain, b.joint_states,
                                               b.measurement, b.events,
                                               skip_unmeasured=b.skip_unmeasured)
    if km.measurement.kind == "points" and km.measurement.n_points != 1:
        raise DataError("a bag's PoseStamped gives one point: use points: [1]")
    Y = bp.Y if km.measurement.kind == "pose" else bp.Y[:, :3]
    data = PostureSet(bp.Q, Y, [str(i) for i in bp.indices])
    k = b.holdout_every
    if k and len(data) >= 2 * k:
        held = np.arange(len(data)) % k == k - 1
        return data.subset(np.flatnonzero(~held)), data.subset(np.flatnonzero(held)), \
            bp.dropped
    return data, None, bp.dropped


def read_data(cfg: CalibrationConfig, km: KinematicModel):
    """(training, validation or None, postures dropped from a bag) of the config."""
    val, dropped = None, []
    bags, d = cfg.bag.paths, cfg.data
    if bags:
        train, val, dropped = bag_postures(cfg, km)
    elif d.path is None:
        raise DataError("data.path is required to calibrate (or pass --data or --bag)")
    else:
        train = read_csv_postures(cfg, km.chain, d.path)
    if d.validation is not None:
        val = read_csv_postures(cfg, km.chain, d.validation, every_plane=False)
    sources = (", ".join(bags) if bags else d.path, d.validation or "held-out postures")
    for data, source, training in ((train, sources[0], True), (val, sources[1], False)):
        if data is not None:
            refuse_degenerate_postures(data.Q, data.Y, km.chain, source, training)
    return train, val, dropped


def nominal_preview(robot: RobotModel, args: dict, solver: dict, train: PostureSet,
                    val: PostureSet | None, planes: list | None = None) -> PostureFit:
    """The fit's nominal layer before the calibration runs: every posture's measured
    position and the nominal model's prediction (joints nominal, measurement frames fitted:
    the ``x_nominal`` that ``calibrate`` computes first, by the same steps, so the layer
    does not move when the result comes); ``calibrated`` repeats ``nominal``."""
    km, _ = kinematic_model(robot, **args, planes=planes)
    ps = postures(km, train.Q, train.Y, train.ids)
    meas, points = args["measurement"], args["points"]
    tool_points = None if np.ndim(points) < 2 or meas == "pose" else points
    x0 = (initial_planes(km, ps, km.nominal_parameters(tool_points)) if planes else
          initial_frames(km, ps, km.nominal_parameters(tool_points), plane=meas == "plane"))
    bp = identifiable_parameters(km, ps, x0)
    x_nom, _ = nominal_fit(km, ps, x0, bp, solver["method"], solver["max_iterations"])
    validation = None if val is None else postures(km, val.Q, val.Y)   # as calibrate()
    return posture_fit(SimpleNamespace(kinematic_model=km, train=ps, validation=validation,
                                       x_nominal=x_nom, x=x_nom))


def calibrate_config(cfg: CalibrationConfig, progress=None, accept_poor_fit: bool = False,
                     on_nominal=None) -> CalibrationResult:
    """Read the postures of ``cfg``, check them (the gate's inputs) and calibrate (nothing
    written).  A fit whose residual exceeds ``acceptance.residual_limit`` times the stated
    noise raises DataError unless ``accept_poor_fit`` (or ``acceptance.accept_poor_fit``):
    then the result carries the warning.  ``on_nominal``, when given, is called with the
    :func:`nominal_preview` as soon as the postures are read (a preview that fails is
    skipped: the calibration then says why)."""
    say = reporter(progress)
    args = model_arguments(cfg)
    pm, source = robot_model(cfg.robot.urdf)
    robot = RobotModel(pm, [], source)                  # the URDF parsed once, used twice
    km, _ = kinematic_model(robot, **args)
    train, val, dropped = read_data(cfg, km)
    acc = cfg.acceptance
    inputs = input_checks(km, {"training": train, **({"validation": val} if val else {})}, acc)
    say(Stage.LOADING_DATA, 0.1, f"{len(train)} training postures"
        + (f", {len(val)} validation" if val else ""))
    if on_nominal is not None:
        try:
            preview = nominal_preview(robot, args, solver_arguments(cfg), train, val,
                                      planes_of(cfg))
        except FigarohError:
            preview = None
        if preview is not None:
            on_nominal(preview)
    result = calibrate(robot, train.Q, train.Y, **args, **solver_arguments(cfg),
                       validation=None if val is None else (val.Q, val.Y), ids=train.ids,
                       planes=planes_of(cfg), progress=progress)
    result.name, result.input_checks = cfg.robot.name, inputs
    if dropped:
        result.notes["dropped_postures"] = dropped
        result.warnings.append(f"{len(dropped)} posture(s) of the bag left out, too few "
                               "messages in their hold windows: postures "
                               f"{[d['posture'] for d in dropped]}")
    result.warnings += require_sane_fit(residual_ratio_check(result, acc),
                                        accept_poor_fit or acc.accept_poor_fit,
                                        f"the calibration of {result.name}")
    return result


def export(result: CalibrationResult, cfg: CalibrationConfig, st: Staging) -> TaskOutcome:
    """Write the calibrated URDF, result.yaml, the per-posture fit (``postures_fit.csv``,
    for the RViz markers) and the error plots into the staging
    folder; the summary and paths name their final place."""
    name = f"{cfg.robot.name}_calibrated.urdf"
    result.to_urdf(st.path(name))
    result.urdf_path = urdf = os.path.abspath(st.final(name))   # what result.yaml records
    acc = cfg.acceptance
    result.publication = calibration_verdict(result, acc, result.input_checks,
                                             residual_ratio_check(result, acc)).to_dict()
    summary = result.to_dict()
    if getattr(result, "nominal_model", None):         # where the nominal model came from
        summary["nominal_model"] = result.nominal_model
    write_result(summary, st.dir)
    write_posture_fit(posture_fit(result), st.path("postures_fit.csv"))
    paths = {"urdf": urdf, "result": st.final("result.yaml"),
             "postures_fit": st.final("postures_fit.csv")}
    if cfg.output.plots:
        plots = plot_posture_errors(result, st.dir)
        paths["plots"] = [st.final(os.path.relpath(p, st.dir)) for p in plots]
    return TaskOutcome(summary, paths)


def run(config_path: str, *, data: str | None = None, validate: str | None = None,
        bags: list[str] | None = None, urdf: str | None = None, out: str,
        accept_poor_fit: bool = False, progress=None, on_nominal=None) -> TaskOutcome:
    """``figaroh-ros calibrate``: config (+ overrides) in, ``out``/result.yaml (with the
    publication gate's verdict), the calibrated URDF and plots out (a refused model too,
    for inspection).  ``on_nominal(PostureFit)``: the measured positions and the nominal
    model's predictions as soon as the postures are read (:func:`nominal_preview`; the
    calibration node shows them in RViz while the calibration runs)."""
    if measures_pixels(config_path):                       # measurement: {type: camera}
        return tasks.camera_bag.run(config_path, bags=bags, urdf=urdf, out=out,
                                    progress=progress)
    cfg = load_calibration_config(config_path, data, validate, bags, urdf)
    cfg, provenance = resolved_robot(cfg, config_path, cfg.bag.paths)   # robot.source
    with staged_output(out) as st:
        result = calibrate_config(cfg, progress, accept_poor_fit, on_nominal)
        result.nominal_model = provenance
        outcome = export(result, cfg, st)
    reporter(progress)(Stage.EXPORTING, 1.0, f"wrote {outcome.paths['result']} and "
                       f"{outcome.paths['urdf']}")
    return outcome


def model_from_result(urdf_text: str, summary: dict, tool_frame: str,
                      nominal: bool = False) -> tuple[KinematicModel, np.ndarray]:
    """The kinematic model a calibration result describes: the URDF (calibrated or
    nominal) with the estimated measurement frame and tool frame / points of
    ``result.yaml``; returns the model and its parameter vector (joint variations zero,
    they are in the URDF)."""
    frames_ = summary["nominal"] if nominal else summary
    meas = Measurement("pose" if "tool_frame" in frames_ else "points",
                       len(frames_.get("tool_points", [[0, 0, 0]])))
    check_urdf_text(urdf_text, "the calibrated URDF")      # pinocchio crashes on some
    km = KinematicModel(pin.buildModelFromXML(urdf_text), tool_frame, level="full",
                        measurement=meas)
    b = frames_["base_frame"]
    km.base0 = pin.SE3(pin.rpy.rpyToMatrix(*b["rpy"]), np.array(b["xyz"]))
    x = km.nominal_parameters(frames_.get("tool_points"))
    if "tool_frame" in frames_:
        t = frames_["tool_frame"]
        km.tool0 = pin.SE3(pin.rpy.rpyToMatrix(*t["rpy"]), np.array(t["xyz"]))
    return km, x

"""Geometric calibration from a config: load, identify, validate, export.

The nominal model is given the same chance as the calibrated one: its unknown frames
(measurement frame and tool points / tool frame) are fitted by the same solver with every
joint parameter held at zero, so "nominal vs calibrated" measures what the joint
parameters bring, not what registering the frames brings.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from figaroh_ros.calibration.kinematic_model import KinematicModel, Measurement
from figaroh_ros.calibration.solve import (
    Accuracy, CalibrationResult, PostureSet, accuracy, calibrate, fit_parameters,
    identifiable_parameters, initial_frames, leave_one_out, prune_poorly_excited,
    structural_parameters, whitened
)
from figaroh_ros.calibration.urdf_export import write_calibrated_urdf
from figaroh_ros.errors import DataError, ModelError, SolverError
from figaroh_ros.io.bags import read_bag_postures
from figaroh_ros.io.calibration_plots import plot_posture_errors
from figaroh_ros.io.postures_csv import load_postures
from figaroh_ros.io.report import write_result


def build_model(cfg: dict) -> KinematicModel:
    """The kinematic model described by a calibration config."""
    try:
        model = pin.buildModelFromUrdf(cfg["robot"]["urdf"])
    except Exception as exc:
        raise ModelError(f"cannot parse URDF {cfg['robot']['urdf']}: {exc}") from exc
    c, m = cfg["calibration"], cfg["measurement"]
    kind = "pose" if m["type"] == "pose" else "points"
    mask = m["mask"]
    if m["type"] == "plane":
        mask = [False, False, True]
    meas = Measurement(kind, len(m["points"]), None if mask is None else np.array(mask),
                       sigma_position=m["noise_position_mm"] * 1e-3,
                       sigma_orientation=m["noise_orientation_mrad"] * 1e-3)
    km = KinematicModel(model, c["tool_frame"], level=c["level"], joints=c["joints"],
                        start_frame=c["start_frame"], measurement=meas,
                        estimate_base=c["estimate_base"], elastic_joints=c["elastic_joints"])
    if c["base_guess"] is not None:
        g = c["base_guess"]
        km.base0 = pin.SE3(pin.rpy.rpyToMatrix(*g[3:]), np.array(g[:3]))
    if kind == "pose" and c["tool_guess"] is not None:
        g = c["tool_guess"]
        km.tool0 = pin.SE3(pin.rpy.rpyToMatrix(*g[3:]), np.array(g[:3]))
    return km


def read_postures(cfg: dict, km: KinematicModel, path: str) -> PostureSet:
    m, d = cfg["measurement"], cfg["data"]
    return load_postures(path, km.chain, m["type"], m["points"], m["orientation"],
                         m["inverse"], d["fixed_joints"], d["id_column"])


def bag_postures(cfg: dict, km: KinematicModel):
    """Training and held-out postures from the recorded bags (every ``holdout_every``-th
    posture is held out for the validation that gates publishing)."""
    b = cfg["bag"]
    try:
        bp = read_bag_postures(b["paths"], km.chain, b["joint_states"], b["measurement"],
                               b["events"])
    except DataError as exc:
        raise DataError(str(exc)) from exc
    Y = bp.Y if km.measurement.kind == "pose" else bp.Y[:, :3]
    if km.measurement.kind == "points" and km.measurement.n_points != 1:
        raise DataError("a bag's PoseStamped gives one point: use points: [1]")
    data = PostureSet(bp.Q, Y, [str(i) for i in bp.indices])
    k = b["holdout_every"]
    if k and len(data) >= 2 * k:
        held = np.arange(len(data)) % k == k - 1
        return data.subset(np.flatnonzero(~held)), data.subset(np.flatnonzero(held))
    return data, None


def parameter_unit(km: KinematicModel, name: str) -> str:
    if name.startswith("offset_"):
        jid = km.model.getJointId(name[len("offset_"):])
        S = km._motion_subspace(jid)
        return "m" if np.linalg.norm(S[:3]) > 0.5 else "rad"
    return "rad" if "_phi" in name or name.startswith("dphi") else "m"


def inside_ranges(train: PostureSet, other: PostureSet) -> np.ndarray:
    """Postures of ``other`` whose every joint lies within the training range."""
    lo, hi = train.Q.min(0), train.Q.max(0)
    return np.all((other.Q >= lo) & (other.Q <= hi), axis=1)


@dataclass
class CalibrationReport:
    km: KinematicModel
    result: CalibrationResult
    x_nominal: np.ndarray
    train: PostureSet
    validation: PostureSet | None
    summary: dict = field(default_factory=dict)


def _frames_only(km: KinematicModel, bp) -> np.ndarray:
    frame_idx = set(range(*km.groups["tool"].indices(km.n_params)))
    if km.estimate_base:
        frame_idx |= set(range(6))
    return np.array([i for i in bp.base_index if i in frame_idx], dtype=int)


def run_calibration(cfg: dict, progress=lambda msg: None) -> CalibrationReport:
    """Calibrate the model of ``cfg`` on its training postures, score it on the
    validation postures when given."""
    km = build_model(cfg)
    val = None
    if cfg["bag"]["paths"]:
        train, val = bag_postures(cfg, km)
    elif cfg["data"]["path"] is None:
        raise DataError("data.path is required to calibrate (or pass --data or "
                                   "--bag)")
    else:
        train = read_postures(cfg, km, cfg["data"]["path"])
    if cfg["data"]["validation"] is not None:
        val = read_postures(cfg, km, cfg["data"]["validation"])
    progress(f"{len(train)} training postures" + (f", {len(val)} validation" if val else ""))
    x0 = km.nominal_parameters()
    if km.measurement.kind == "points" and cfg["calibration"]["tool_guess"] is not None:
        x0[km.groups["tool"]] = cfg["calibration"]["tool_guess"]
    x0 = initial_frames(km, train, x0, plane=cfg["measurement"]["type"] == "plane")
    bp = identifiable_parameters(km, train, x0)
    progress(f"{bp.size} identifiable parameters of {km.n_params} "
             f"({len(bp.zero_index)} without effect, {len(bp.dependent_index)} grouped)")
    structural = structural_parameters(km, x0)
    unexcited = [e for e, i in zip(structural.names, structural.base_index)
                 if i not in set(bp.base_index)]
    if len(unexcited) and bp.size < structural.size:
        progress(f"these postures excite {bp.size} of the model's {structural.size} "
                 f"identifiable parameters; not excited (kept nominal): "
                 f"{', '.join(e.split(' ')[0] for e in unexcited)}")
    n_values = len(train) * int(km.measurement.mask.sum())
    if n_values < bp.size + 6:
        raise SolverError(
            f"{len(train)} postures give {n_values} measured values for {bp.size} "
            f"identifiable parameters: measure at least "
            f"{int(np.ceil((bp.size + 6) / km.measurement.mask.sum()))} postures "
            "(plan-postures chooses them)")
    s = cfg["solver"]
    frames = _frames_only(km, bp)
    x_nom = fit_parameters(km, train, x0, frames, s["method"] if s["method"] != "ils" else "lm",
                           s["max_iterations"])[0] if len(frames) else x0
    if not res_ok(x_nom):
        raise SolverError("fitting the measurement/tool frames diverged")
    # a first fit of every base parameter gives the actual residual scale; parameters
    # the postures determine worse than the bounds at that scale stay nominal
    x_first = fit_parameters(km, train, x_nom, bp.base_index, "lm", s["max_iterations"])[0]
    f_first = whitened(km, train, x_first, False)[0]
    scale = float(np.sqrt(f_first @ f_first / max(len(f_first) - bp.size, 1)))
    bp, weak = prune_poorly_excited(km, train, x_nom, bp, s["max_std_mm"] * 1e-3,
                                    s["max_std_mrad"] * 1e-3, max(1.0, scale))
    if weak:
        progress(f"{len(weak)} base parameters too weakly excited by these postures, kept "
                 f"nominal: {', '.join(w.split(' ')[0] for w in weak)}")
    thr = None if s["outlier_threshold_mm"] is None else s["outlier_threshold_mm"] * 1e-3
    res = calibrate(km, train, x_nom, method=s["method"], outlier_threshold=thr,
                    max_iterations=s["max_iterations"], bp=bp)
    progress(f"solver {res.method}: {res.iterations} evaluations, whitened residual "
             f"sigma {res.sigma:.3g}")
    if not res.converged:
        raise SolverError(f"the {res.method} solver did not converge in "
                               f"{s['max_iterations']} iterations: the postures excite the "
                               "parameters too weakly (see plan-postures) or the initial "
                               "frames are wrong (calibration.base_guess)")
    rep = CalibrationReport(km, res, x_nom, train, val)
    rep.summary = summarize(rep, cfg)
    rep.summary["poorly_excited"] = weak
    rep.summary["not_excited"] = unexcited if bp.size < structural.size else []
    if s["cross_validation"]:
        progress(f"leave-one-out cross-validation over {len(train)} postures")
        kept = train.subset(res.kept)
        m = "lm" if s["method"] == "ils" else s["method"]
        e_cal = leave_one_out(km, kept, res.x, res.free, m, s["max_iterations"])
        e_nom = leave_one_out(km, kept, x_nom, frames, m, s["max_iterations"])
        rep.summary["leave_one_out"] = {
            "rmse_mm": float(1e3 * np.sqrt(np.mean(e_cal ** 2))),
            "max_mm": float(1e3 * e_cal.max()),
            "nominal_rmse_mm": float(1e3 * np.sqrt(np.mean(e_nom ** 2)))}
    return rep


def res_ok(x: np.ndarray) -> bool:
    return bool(np.all(np.isfinite(x)))


def _pose_dict(T: pin.SE3) -> dict:
    return {"xyz": T.translation.tolist(), "rpy": pin.rpy.matrixToRpy(T.rotation).tolist()}


def frames(km: KinematicModel, x: np.ndarray) -> dict:
    """The estimated measurement frame and tool points / tool frame of ``x``."""
    out = {"base_frame": _pose_dict(km.base_pose(x))}
    if km.measurement.kind == "points":
        out["tool_points"] = km.tool_points(x).tolist()
    else:
        out["tool_frame"] = _pose_dict(km.tool_pose(x))
    return out


def _acc(km, data, x) -> Accuracy:
    return accuracy(km, data, x)


def summarize(rep: CalibrationReport, cfg: dict) -> dict:
    """The content of result.yaml."""
    km, res = rep.km, rep.result
    kept = rep.train.subset(res.kept)
    a_tr, n_tr = _acc(km, kept, res.x), _acc(km, kept, rep.x_nominal)
    params = []
    for i, expr, sd in zip(res.free, res.expressions, res.std):
        params.append({"name": km.names[i], "expression": expr, "value": float(res.x[i]),
                       "std": float(sd), "unit": parameter_unit(km, km.names[i])})
    out = {
        "robot": cfg["robot"]["name"], "level": km.level,
        "measurement": cfg["measurement"]["type"], "points": len(cfg["measurement"]["points"]),
        "method": res.method, "converged": res.converged, "chain": km.chain, "calibrated_joints": km.joints,
        "postures_train": len(rep.train), "rejected_postures": res.rejected,
        "parameters": params,
        "unidentifiable": res.unidentifiable, "grouped": res.grouped,
        "condition_number": res.condition_number, "whitened_sigma": res.sigma,
        "rmse_train_mm": a_tr.to_dict()["rmse_mm"], "max_train_mm": 1e3 * a_tr.max,
        "nominal_rmse_train_mm": 1e3 * n_tr.rmse,
        "train": a_tr.to_dict(),
    }
    out.update(frames(km, res.x))
    out["nominal"] = frames(km, rep.x_nominal)
    if rep.validation is not None:
        v = rep.validation
        a_v, n_v = _acc(km, v, res.x), _acc(km, v, rep.x_nominal)
        out.update({"postures_validation": len(v),
                    "rmse_validation_mm": 1e3 * a_v.rmse, "max_validation_mm": 1e3 * a_v.max,
                    "nominal_rmse_validation_mm": 1e3 * n_v.rmse,
                    "validation": a_v.to_dict(),
                    "better_than_nominal": bool(a_v.rmse < n_v.rmse)})
        if km.measurement.kind == "points" and km.measurement.n_points > 1:
            out["rmse_validation_point1_mm"] = 1e3 * accuracy(km, v, res.x, [0]).rmse
        ins = np.flatnonzero(inside_ranges(rep.train, v))
        if len(ins):
            sub = v.subset(ins)
            out["inside_training_ranges"] = {
                "postures": int(len(ins)),
                "rmse_mm": 1e3 * _acc(km, sub, res.x).rmse,
                "nominal_rmse_mm": 1e3 * _acc(km, sub, rep.x_nominal).rmse}
            if km.measurement.kind == "points" and km.measurement.n_points > 1:
                out["inside_training_ranges"]["rmse_point1_mm"] = \
                    1e3 * accuracy(km, sub, res.x, [0]).rmse
    return out


def export(rep: CalibrationReport, cfg: dict, out_dir: str) -> dict[str, str]:
    """Write result.yaml, the calibrated URDF and the error plots into ``out_dir``."""
    os.makedirs(out_dir, exist_ok=True)
    name = cfg["robot"]["name"]
    urdf_out = os.path.join(out_dir, f"{name}_calibrated.urdf")
    Q_check = rep.train.Q if rep.validation is None else np.vstack([rep.train.Q,
                                                                     rep.validation.Q])
    gap = write_calibrated_urdf(rep.km, rep.result.x, cfg["robot"]["urdf"], urdf_out, Q_check)
    summary = dict(rep.summary, urdf=os.path.abspath(urdf_out), urdf_round_trip_gap=gap)
    paths = {"urdf": urdf_out, "result": write_result(summary, out_dir)}
    if cfg["output"]["plots"]:
        paths["plots"] = plot_posture_errors(rep, out_dir)
    return paths


def model_from_result(urdf_text: str, summary: dict, tool_frame: str,
                      nominal: bool = False) -> tuple[KinematicModel, np.ndarray]:
    """The kinematic model a calibration result describes: the URDF (calibrated or
    nominal) with the estimated measurement frame and tool frame / points of
    ``result.yaml``; returns the model and its parameter vector (joint variations zero,
    they are in the URDF)."""
    frames_ = summary["nominal"] if nominal else summary
    meas = Measurement("pose" if "tool_frame" in frames_ else "points",
                       len(frames_.get("tool_points", [[0, 0, 0]])))
    km = KinematicModel(pin.buildModelFromXML(urdf_text), tool_frame, level="full",
                        measurement=meas)
    b = frames_["base_frame"]
    km.base0 = pin.SE3(pin.rpy.rpyToMatrix(*b["rpy"]), np.array(b["xyz"]))
    x = km.nominal_parameters(frames_.get("tool_points"))
    if "tool_frame" in frames_:
        t = frames_["tool_frame"]
        km.tool0 = pin.SE3(pin.rpy.rpyToMatrix(*t["rpy"]), np.array(t["xyz"]))
    return km, x

"""Dynamic identification pipeline: config + recorded data -> base parameters and statistics.

Steps (seed 000 §II.B-C, seed 003 §II.B.3, Gautier 1997):
1. joint positions and torques from the recording (motor side through the transmission);
2. zero-phase low-pass of the positions, central-difference velocities/accelerations;
3. standard observation matrix W (regressor.py) and its base parameters (base_parameters.py);
4. parallel decimation of W_b and Y, removal of samples where a joint hardly moves;
5. OLS or WLS, relative standard deviations, essential parameters;
6. hold-out check: fit on the first part of the time window, predict the last part.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from figaroh_ros.errors import ConfigError, DataError, ModelError, SolverError
from figaroh_ros.identification import signals
from figaroh_ros.identification.base_parameters import (
    BaseParameters, base_parameters, condition_number
)
from figaroh_ros.identification.estimation import (
    Estimate, essential_parameters, ordinary_least_squares, rmse_per_joint,
    weighted_least_squares
)
from figaroh_ros.identification.parameters import (
    DriveOptions, ParameterLayout, parameter_layout, standard_parameters
)
from figaroh_ros.identification.physical.fit import consistent_parameters, physical_dict
from figaroh_ros.identification.regressor import standard_regressor
from figaroh_ros.identification.wrench import (
    COMPONENTS, base_motion, contact_wrench_regressor, plate_to_world
)
from figaroh_ros.io.bags import read_bag_recording
from figaroh_ros.model.robot import RobotModel, Transmission, load_urdf_model


@dataclass
class Recording:
    t: np.ndarray          # N sample times (s)
    q: np.ndarray          # N x n joint positions (joint side, model convention)
    tau: np.ndarray        # N x n joint torques (joint side)


@dataclass
class Observation:
    """A decimated, filtered identification system ``Y = W_b phi_b``."""

    Wb: np.ndarray
    Y: np.ndarray
    row_joint: np.ndarray  # joint index of every row
    row_sample: np.ndarray | None = None   # (decimated) sample index of every row

    def subset(self, rows: np.ndarray) -> "Observation":
        return Observation(self.Wb[rows], self.Y[rows], self.row_joint[rows],
                           None if self.row_sample is None else self.row_sample[rows])


@dataclass
class IdentificationResult:
    robot: str
    joints: list[str]
    base: BaseParameters
    method: str
    estimate: Estimate
    ols: Estimate
    wls: Estimate | None
    rmse: np.ndarray
    condition_number: float
    essential_index: np.ndarray
    essential: Estimate
    validation_rmse: np.ndarray | None
    observation: Observation
    timings: dict = field(default_factory=dict)
    nominal_validation_rmse: np.ndarray | None = None
    standard_names: list[str] = field(default_factory=list)
    physical: object | None = None          # physical.problem.PhysicalEstimate
    physical_validation_rmse: np.ndarray | None = None
    cross_validation: dict | None = None

    @property
    def physical_publishable(self) -> tuple[bool, str]:
        """Whether the consistent standard parameters may be written to a URDF: every link
        consistent and better than the nominal model on the held-out part."""
        if self.physical is None:
            return False, "no physically consistent estimate (physical.method: none)"
        bad = [c for c in self.physical.checks if not c.ok]
        if bad:
            return False, f"link {bad[0].name} is not physically consistent: {bad[0].why}"
        if self.physical_validation_rmse is None:
            return False, ("no held-out data to compare it with the nominal model: set "
                           "estimation.validation_fraction > 0")
        ours = float(np.sqrt(np.mean(self.physical_validation_rmse ** 2)))
        nom = float(np.sqrt(np.mean(self.nominal_validation_rmse ** 2)))
        if not ours < nom:
            return False, (f"hold-out RMSE {ours:.4g} is not better than the nominal "
                           f"model's {nom:.4g}")
        return True, ""

    def to_dict(self) -> dict:
        """The content of ``result.yaml``."""
        def table(est, idx=None):
            idx = np.arange(len(est.phi)) if idx is None else idx
            return [{"name": self.base.names[i], "value": float(v), "std": float(s),
                     "std_percent": float(p)}
                    for i, v, s, p in zip(idx, est.phi, est.std, est.std_percent)]
        out = {
            "robot": self.robot,
            "method": self.method,
            "joints": list(self.joints),
            "n_base_parameters": int(self.base.size),
            "base_parameters": table(self.estimate),
            "rmse": {j: float(r) for j, r in zip(self.joints, self.rmse)},
            "condition_number": float(self.condition_number),
            "essential_parameters": table(self.essential, self.essential_index),
            "ols": table(self.ols),
        }
        if self.wls is not None:
            out["wls"] = table(self.wls)
            out["wls_joint_sigma"] = {j: float(s) for j, s in
                                      zip(self.joints, self.wls.joint_sigma)}
        if self.validation_rmse is not None:
            out["validation_rmse"] = {j: float(r) for j, r in
                                      zip(self.joints, self.validation_rmse)}
        if self.nominal_validation_rmse is not None:
            out["nominal_validation_rmse"] = {j: float(r) for j, r in
                                              zip(self.joints, self.nominal_validation_rmse)}
            out["better_than_nominal"] = bool(
                np.sqrt(np.mean(self.validation_rmse ** 2))
                < np.sqrt(np.mean(self.nominal_validation_rmse ** 2)))
        if self.cross_validation is not None:
            cv = self.cross_validation
            out["cross_validation"] = {
                "folds": cv["folds"], "method": cv["method"],
                "rmse": [{"fold": r["fold"], **{j: float(v) for j, v in
                                                zip(self.joints, r["rmse"])}}
                         for r in cv["rows"]],
                "nominal_rmse": [{"fold": r["fold"], **{j: float(v) for j, v in
                                                        zip(self.joints, r["nominal_rmse"])}}
                                 for r in cv["rows"] if "nominal_rmse" in r]}
        out["covariance"] = {"names": list(self.base.names),
                             "matrix": np.asarray(self.estimate.cov).tolist()}
        if self.physical is not None:
            ph = physical_dict(self.physical, self.standard_names)
            if self.physical_validation_rmse is not None:
                ph["validation_rmse"] = {j: float(r) for j, r in
                                         zip(self.joints, self.physical_validation_rmse)}
            ok, why = self.physical_publishable
            ph["publishable"] = ok
            if not ok:
                ph["not_published_because"] = why
            out["physical"] = ph
        return out


# ----------------------------------------------------------------------------- loading
def robot_from_config(cfg: dict) -> RobotModel:
    joints = cfg["robot"]["joints"]
    tr_cfg = cfg["transmission"]
    n = len(joints)
    ratios = np.array(tr_cfg["gear_ratios"] if tr_cfg["gear_ratios"] else np.ones(n))
    K = np.eye(n)
    for c in tr_cfg["coupling"]:
        K[joints.index(c["motor"]), joints.index(c["joint"])] = float(c["coefficient"])
    if abs(np.linalg.det(K)) < 1e-9:
        raise ConfigError("config field 'transmission.coupling': the motor-to-joint matrix "
                          "is singular")
    try:
        robot = load_urdf_model(cfg["robot"]["urdf"], joints, cfg["robot"]["floating_base"],
                                Transmission(ratios, K))
    except ModelError as exc:
        raise ConfigError(f"config field 'robot': {exc}") from exc
    if cfg["robot"].get("gravity") is not None:
        robot.model.gravity.linear = np.asarray(cfg["robot"]["gravity"], float)
    return robot


def drive_options(cfg: dict) -> DriveOptions:
    return DriveOptions(**cfg["model"])


def _read_csv(path: str) -> tuple[list[str], np.ndarray]:
    if not os.path.isfile(path):
        raise DataError(f"data file not found: {path}")
    with open(path) as f:
        header = f.readline().strip().split(",")
    try:
        arr = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    except ValueError as exc:
        raise DataError(f"{path}: not a numeric CSV after its header ({exc})") from exc
    if arr.shape[1] != len(header):
        raise DataError(f"{path}: {len(header)} header names but {arr.shape[1]} columns")
    return [h.strip() for h in header], arr


def load_recording(cfg: dict, robot: RobotModel) -> Recording:
    """Read the configured CSV files into joint-side positions and torques."""
    d = cfg["data"]
    n = robot.n_joints
    if d["format"] == "bag":
        try:
            t, P, T = read_bag_recording([d["path"]], robot.active_joints, d["joint_topic"],
                                         d["torque_topic"], d["events_topic"] or None,
                                         d["resample_hz"],
                                         d["wrench_topic"] if _wrench(cfg) else None)
        except DataError as exc:
            raise DataError(str(exc)) from exc
    elif d["format"] == "csv_pair":
        _, P = _read_csv(os.path.join(d["path"], d["positions"]))
        _, T = _read_csv(os.path.join(d["path"], d["torques"]))
        if P.shape[1] != n or T.shape[1] != n:
            raise DataError(f"expected {n} columns (one per joint) in {d['positions']} and "
                            f"{d['torques']}, got {P.shape[1]} and {T.shape[1]}")
        if P.shape[0] != T.shape[0]:
            raise DataError(f"{d['positions']} has {P.shape[0]} rows but {d['torques']} "
                            f"has {T.shape[0]}")
        t = np.arange(P.shape[0]) * d["sample_time"]
    else:
        path = os.path.join(d["path"], d["table"])
        header, arr = _read_csv(path)
        cols = {}
        for h in header:
            cols.setdefault(h.lstrip("- ").strip(), header.index(h))

        def column(template, joint):
            key = template.format(joint=joint)
            if key not in cols:
                raise DataError(f"{path}: no column '{key}' (from data template "
                                f"'{template}'); columns are {header[:6]}...")
            return arr[:, cols[key]]
        P = np.column_stack([column(d["position_column"], j) for j in robot.active_joints])
        if _wrench(cfg):
            names = cfg["measurements"]["wrench_columns"] or list(COMPONENTS)
            T = np.column_stack([column(c, None) for c in names])
        else:
            T = np.column_stack([column(d["torque_column"], j) for j in robot.active_joints])
        if d["time_column"] is not None:
            if d["time_column"] not in cols:
                raise DataError(f"{path}: no time column '{d['time_column']}'")
            t = arr[:, cols[d["time_column"]]]
        else:
            t = np.arange(P.shape[0]) * d["sample_time"]
    if d["rows"] is not None:
        a, b = d["rows"]
        if b > P.shape[0]:
            raise DataError(f"data.rows {d['rows']} beyond the {P.shape[0]} rows recorded")
        P, T, t = P[a:b], T[a:b], t[a:b]
    for name, arr_ in (("positions", P), ("torques", T), ("time", t)):
        if not np.all(np.isfinite(arr_)):
            bad = np.argwhere(~np.isfinite(np.atleast_2d(arr_.T).T))[0]
            raise DataError(f"{name} contain NaN/inf (first at row {bad[0]})")
    if d["motor_side"]:
        P = robot.transmission.joint_positions(P)
        if not _wrench(cfg):
            T = robot.transmission.joint_torques(T)
    if _wrench(cfg):
        m = cfg["measurements"]
        plate = pin.SE3(pin.rpy.rpyToMatrix(*(m["plate_rpy"] or [0.0, 0.0, 0.0])),
                        np.asarray(m["plate_xyz"] or [0.0, 0.0, 0.0], float))
        T = plate_to_world(T, plate)
    if d["joint_offsets"] is not None:
        P = P + np.asarray(d["joint_offsets"])
    return Recording(t, P, T)


# ----------------------------------------------------------------------------- processing
def process(cfg: dict, robot: RobotModel, layout: ParameterLayout, drive: DriveOptions,
            rec: Recording):
    """Filter and differentiate; return (W standard, Y, dq) before decimation."""
    p = cfg["processing"]
    if rec.q.shape[0] < 50:
        raise DataError(f"only {rec.q.shape[0]} samples: too short to identify")
    dt = np.diff(rec.t)
    if np.any(dt <= 0):
        raise DataError("time stamps are not strictly increasing")
    uniform = np.allclose(dt, dt.mean(), rtol=1e-3)
    q = rec.q
    if p["position_cutoff_hz"] is not None:
        if not uniform:
            raise DataError("the Butterworth filter needs a constant sample time; "
                            "the time stamps vary by more than 0.1 %")
        q = signals.lowpass_zero_phase(q, p["position_cutoff_hz"], 1.0 / dt.mean(),
                                       p["filter_order"])
    step = float(dt.mean()) if uniform else rec.t
    dq, ddq = signals.derivatives(q, step)
    # filter transients and one-sided differences spoil both ends: drop them
    edge = signals.edge_samples(p["filter_order"], p["position_cutoff_hz"], 1.0 / dt.mean())
    if q.shape[0] <= 2 * edge + 50:
        raise DataError(f"only {q.shape[0]} samples: too short once {edge} samples are "
                        "dropped at both ends for filter transients")
    keep = slice(edge, q.shape[0] - edge)
    if _wrench(cfg):
        # the base follows from the contact frame fixed in the world; differentiate the
        # whole (filtered) recording, then drop the same edges
        Q, V, A = base_motion(robot, q, _contact_frame(cfg, robot), step)
        V[:, robot.idx_v], A[:, robot.idx_v] = dq, ddq
        Q, V, A, tau = Q[keep], V[keep], A[keep], rec.tau[keep]
        W = contact_wrench_regressor(robot, layout, Q, V, A)
        # every wrench row is kept: its 6 groups are the components, never "not moving"
        return W, tau.T.ravel(), np.full((tau.shape[0], 6), 1e9)
    q, dq, ddq, tau = q[keep], dq[keep], ddq[keep], rec.tau[keep]
    W = standard_regressor(robot, layout, drive, q, dq, ddq)
    return W, tau.T.ravel(), dq


def _wrench(cfg: dict) -> bool:
    return cfg.get("measurements", {}).get("kind") == "wrench"


def _contact_frame(cfg: dict, robot: RobotModel) -> str:
    """The configured contact frame, or the root link (an arm bolted on the plate)."""
    name = cfg["measurements"]["contact_frame"]
    if name is not None:
        return name
    for f in robot.model.frames:
        if f.type == pin.FrameType.BODY and f.parentJoint == 1:
            return f.name
    raise DataError("measurements.contact_frame: the model has no root link")


def observe(cfg: dict, base: BaseParameters | None, W: np.ndarray, Y: np.ndarray,
            dq: np.ndarray) -> Observation:
    """Base columns, parallel decimation and removal of non-moving samples (``base=None``:
    keep the standard columns).  ``dq`` (N x groups) says which rows move: the joint
    velocities for torques; a huge constant for wrench components."""
    p = cfg["processing"]
    n = dq.shape[1]
    Wb = base.base_regressor(W) if base is not None else W
    Wb, Y = signals.parallel_decimation(Wb, Y, n, p["decimation"])
    dqd = signals.decimate(dq, p["decimation"])
    row_joint = np.repeat(np.arange(n), dqd.shape[0])
    row_sample = np.tile(np.arange(dqd.shape[0]), n)
    keep = signals.moving_rows(dqd, p["min_velocity"])
    return Observation(Wb[keep], Y[keep], row_joint[keep], row_sample[keep])


def _split(rec: Recording, fraction: float) -> tuple[Recording, Recording]:
    k = int(round(rec.q.shape[0] * (1 - fraction)))
    return (Recording(rec.t[:k], rec.q[:k], rec.tau[:k]),
            Recording(rec.t[k:], rec.q[k:], rec.tau[k:]))


def _estimate(method: str, obs: Observation, n: int) -> Estimate:
    if method == "wls":
        return weighted_least_squares(obs.Wb, obs.Y, obs.row_joint, n)
    return ordinary_least_squares(obs.Wb, obs.Y)


def identify(cfg: dict, progress=None) -> IdentificationResult:
    """Run the whole identification described by a validated config."""
    say = progress or (lambda msg: None)
    timings = {}
    t0 = time.perf_counter()
    robot = robot_from_config(cfg)
    drive = drive_options(cfg)
    layout = parameter_layout(robot, drive)
    say(f"model: {robot.n_joints} joints, {layout.size} standard parameters")
    rec = load_recording(cfg, robot)
    say(f"data: {rec.q.shape[0]} samples over {rec.t[-1] - rec.t[0]:.2f} s")
    timings["load"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    W, Y, dq = process(cfg, robot, layout, drive, rec)
    timings["regressor"] = time.perf_counter() - t1
    say(f"regressor: {W.shape[0]} x {W.shape[1]}")
    t1 = time.perf_counter()
    base = base_parameters(W, layout.names)
    timings["base_parameters"] = time.perf_counter() - t1
    say(f"base parameters: {base.size}")
    t1 = time.perf_counter()
    obs = observe(cfg, base, W, Y, dq)
    del W
    n = 6 if _wrench(cfg) else robot.n_joints          # row groups: components or joints
    est_cfg = cfg["estimation"]
    ols = ordinary_least_squares(obs.Wb, obs.Y)
    wls = weighted_least_squares(obs.Wb, obs.Y, obs.row_joint, n) \
        if est_cfg["method"] == "wls" else None
    est = wls if wls is not None else ols
    rmse = rmse_per_joint(obs.Y, obs.Wb @ est.phi, obs.row_joint, n)
    ess_idx, ess = essential_parameters(obs.Wb, obs.Y, est_cfg["essential_ratio"],
                                        obs.row_joint, n, weighted=wls is not None)
    timings["estimation"] = time.perf_counter() - t1
    say(f"estimation ({est_cfg['method']}): {len(ess_idx)} essential parameters")
    ph_cfg = cfg["physical"]
    phi_std_nominal = standard_parameters(robot, layout)
    cv = None
    if est_cfg["cross_validation_folds"] >= 2:
        cv = cross_validation(obs, est_cfg["method"], n, est_cfg["cross_validation_folds"],
                              base.from_standard(phi_std_nominal))
    physical = ph_val = None
    if ph_cfg["method"] != "none":
        t1 = time.perf_counter()
        physical = _physical(cfg, robot, layout, drive, phi_std_nominal, rec, est)
        timings["physical"] = time.perf_counter() - t1
        say(f"physically consistent ({ph_cfg['method']}): "
            f"{'every link consistent' if physical.consistent else 'NOT consistent'}, "
            f"{physical.seconds:.2f} s")
    val_rmse = nominal_rmse = None
    if est_cfg["validation_fraction"] > 0:
        t1 = time.perf_counter()
        train, test = _split(rec, est_cfg["validation_fraction"])
        o_tr = observe(cfg, base, *process(cfg, robot, layout, drive, train))
        o_te = observe(cfg, base, *process(cfg, robot, layout, drive, test))
        e_tr = _estimate(est_cfg["method"], o_tr, n)
        val_rmse = rmse_per_joint(o_te.Y, o_te.Wb @ e_tr.phi, o_te.row_joint, n)
        # the nominal model: URDF inertias, no friction, no rotor inertia, no offset
        phi_nominal = base.from_standard(phi_std_nominal)
        nominal_rmse = rmse_per_joint(o_te.Y, o_te.Wb @ phi_nominal, o_te.row_joint, n)
        if physical is not None:
            p_tr = _physical(cfg, robot, layout, drive, phi_std_nominal, train, e_tr)
            ph_val = rmse_per_joint(o_te.Y, o_te.Wb @ base.from_standard(p_tr.phi),
                                    o_te.row_joint, n)
        timings["validation"] = time.perf_counter() - t1
        say("hold-out RMSE: " + ", ".join(f"{v:.3g}" for v in val_rmse))
    timings["total"] = time.perf_counter() - t0
    groups = list(COMPONENTS) if _wrench(cfg) else robot.active_joints
    return IdentificationResult(cfg["robot"]["name"], groups, base,
                                est_cfg["method"], est, ols, wls, rmse,
                                condition_number(obs.Wb), ess_idx, ess, val_rmse, obs,
                                timings, nominal_rmse, list(layout.names), physical, ph_val,
                                cv)


def cross_validation(obs: Observation, method: str, n: int, folds: int,
                     phi_nominal: np.ndarray | None = None) -> dict:
    """K-fold cross-validation over contiguous time blocks: fit on ``folds - 1`` blocks,
    predict the remaining one.  (The rows were filtered over the whole recording, so a
    block's edges share a filter length with their neighbours: negligible at the usual
    cut-offs.)  Returns per fold and joint the hold-out RMSE, and the nominal model's."""
    edges = np.linspace(0, obs.row_sample.max() + 1, folds + 1).astype(int)
    rows = []
    for k in range(folds):
        test = (obs.row_sample >= edges[k]) & (obs.row_sample < edges[k + 1])
        est = _estimate(method, obs.subset(~test), n)
        te = obs.subset(test)
        row = {"fold": k + 1, "rmse": rmse_per_joint(te.Y, te.Wb @ est.phi, te.row_joint, n)}
        if phi_nominal is not None:
            row["nominal_rmse"] = rmse_per_joint(te.Y, te.Wb @ phi_nominal, te.row_joint, n)
        rows.append(row)
    return {"folds": folds, "method": method, "rows": rows}


def _physical(cfg, robot, layout, drive, phi_nominal, rec: Recording, est: Estimate):
    """The consistent standard parameters from ``rec`` (rows whitened by the per-joint
    residual std of the base-parameter estimate ``est``)."""

    W, Y, dq = process(cfg, robot, layout, drive, rec)
    o = observe(cfg, None, W, Y, dq)
    sigma = est.joint_sigma if est.joint_sigma is not None else \
        np.full(6 if _wrench(cfg) else robot.n_joints, est.residual_sigma)
    try:
        return consistent_parameters(cfg["physical"], robot, layout, drive, phi_nominal,
                                     o.Wb, o.Y, sigma[o.row_joint])
    except SolverError as exc:
        raise DataError(f"physical.method {cfg['physical']['method']}: {exc}") from exc

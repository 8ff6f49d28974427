"""Identification recordings: CSV files or a rosbag2 bag into arrays (``Recording``).

The ``data`` section of an identification config says where the samples are and how they
are written: two CSV files (positions, torques; one column per joint), one CSV table with
named columns, or a bag recorded by the executor.  Reading also brings the samples to the
model's convention: motor side to joint side through the transmission (seed 000 Eq. 3),
encoder offsets, a force plate's wrench into the world frame.  Filtering and
differentiation are not done here (``figaroh_ros.identification.observation``).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from figaroh_ros.errors import DataError
from figaroh_ros.identification.wrench import COMPONENTS, plate_to_world
from figaroh_ros.io.bags import read_bag_recording
from figaroh_ros.model.robot import RobotModel


@dataclass
class Recording:
    t: np.ndarray          # N sample times (s)
    q: np.ndarray          # N x n joint positions (joint side, model convention)
    tau: np.ndarray        # N x n joint torques (joint side), or N x 6 world wrench

    def rows(self, a: int, b: int | None = None) -> "Recording":
        """Samples ``a`` to ``b`` (exclusive)."""
        return Recording(self.t[a:b], self.q[a:b], self.tau[a:b])


def read_csv_table(path: str) -> tuple[list[str], np.ndarray]:
    """Header names and numbers of a CSV file with one header line."""
    if not os.path.isfile(path):
        raise DataError(f"data file not found: {path}")
    with open(path) as f:
        header = [h.strip() for h in f.readline().strip().split(",")]
    try:
        arr = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    except ValueError as exc:
        raise DataError(f"{path}: not a numeric CSV after its header ({exc})") from exc
    if arr.shape[1] != len(header):
        raise DataError(f"{path}: {len(header)} header names but {arr.shape[1]} columns")
    return header, arr


def is_wrench(cfg: dict) -> bool:
    """Whether the config's recording measures a contact wrench, not joint torques."""
    return cfg.get("measurements", {}).get("kind") == "wrench"


def _bag(cfg: dict, robot: RobotModel, measured: str | None):
    d = cfg["data"]
    return read_bag_recording([d["path"]], robot.active_joints, d["joint_topic"],
                              measured or d["torque_topic"], d["events_topic"] or None,
                              d["resample_hz"], d["wrench_topic"] if is_wrench(cfg) else None)


def _csv_pair(cfg: dict, robot: RobotModel):
    d = cfg["data"]
    _, P = read_csv_table(os.path.join(d["path"], d["positions"]))
    _, T = read_csv_table(os.path.join(d["path"], d["torques"]))
    n = robot.n_joints
    if P.shape[1] != n or T.shape[1] != n:
        raise DataError(f"expected {n} columns (one per joint) in {d['positions']} and "
                        f"{d['torques']}, got {P.shape[1]} and {T.shape[1]}")
    if P.shape[0] != T.shape[0]:
        raise DataError(f"{d['positions']} has {P.shape[0]} rows but {d['torques']} "
                        f"has {T.shape[0]}")
    return np.arange(P.shape[0]) * d["sample_time"], P, T


def _csv_table(cfg: dict, robot: RobotModel, measured: str | None):
    d = cfg["data"]
    path = os.path.join(d["path"], d["table"])
    header, arr = read_csv_table(path)
    cols = {}
    for i, h in enumerate(header):
        cols.setdefault(h.lstrip("- ").strip(), i)

    def column(template, joint=None):
        key = template.format(joint=joint)
        if key not in cols:
            raise DataError(f"{path}: no column '{key}' (from data template "
                            f"'{template}'); columns are {header[:6]}...")
        return arr[:, cols[key]]
    P = np.column_stack([column(d["position_column"], j) for j in robot.active_joints])
    if is_wrench(cfg):
        T = np.column_stack([column(c) for c in
                             cfg["measurements"]["wrench_columns"] or COMPONENTS])
    else:
        T = np.column_stack([column(measured or d["torque_column"], j)
                             for j in robot.active_joints])
    if d["time_column"] is None:
        return np.arange(P.shape[0]) * d["sample_time"], P, T
    if d["time_column"] not in cols:
        raise DataError(f"{path}: no time column '{d['time_column']}'")
    return arr[:, cols[d["time_column"]]], P, T


def _check_finite(**arrays):
    for name, a in arrays.items():
        if not np.all(np.isfinite(a)):
            bad = np.argwhere(~np.isfinite(np.atleast_2d(a.T).T))[0]
            raise DataError(f"{name} contain NaN/inf (first at row {bad[0]})")


def _model_convention(cfg: dict, robot: RobotModel, P: np.ndarray, T: np.ndarray):
    """Joint-side positions and torques (or the wrench in the world frame)."""
    d = cfg["data"]
    if d["motor_side"]:
        P = robot.transmission.joint_positions(P)
        if not is_wrench(cfg):
            T = robot.transmission.joint_torques(T)
    if is_wrench(cfg):
        m = cfg["measurements"]
        plate = pin.SE3(pin.rpy.rpyToMatrix(*(m["plate_rpy"] or [0.0, 0.0, 0.0])),
                        np.asarray(m["plate_xyz"] or [0.0, 0.0, 0.0], float))
        T = plate_to_world(T, plate)
    if d["joint_offsets"] is not None:
        P = P + np.asarray(d["joint_offsets"])
    return P, T


def read_recording(cfg: dict, robot: RobotModel, measured: str | None = None) -> Recording:
    """The recording the config's ``data`` section describes, in the model's convention.
    ``measured`` replaces the torque column template (CSV table) or topic (bag), e.g. to
    read motor currents and sensor torques of the same experiment."""
    fmt = cfg["data"]["format"]
    if fmt == "bag":
        t, P, T = _bag(cfg, robot, measured)
    elif fmt == "csv_pair":
        t, P, T = _csv_pair(cfg, robot)
    else:
        t, P, T = _csv_table(cfg, robot, measured)
    rows = cfg["data"]["rows"]
    if rows is not None:
        if rows[1] > P.shape[0]:
            raise DataError(f"data.rows {rows} beyond the {P.shape[0]} rows recorded")
        t, P, T = t[rows[0]:rows[1]], P[rows[0]:rows[1]], T[rows[0]:rows[1]]
    _check_finite(positions=P, torques=T, time=t)
    return Recording(t, *_model_convention(cfg, robot, P, T))

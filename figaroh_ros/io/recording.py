"""Identification recordings: CSV files or a rosbag2 bag into arrays (``Recording``).

The ``data`` section of an identification config says where the samples are and how they
are written: two CSV files (positions, torques; one column per joint), one CSV table with
named columns (positions and torques possibly in two tables sharing a time column), or a
bag recorded by the executor.  A table with a time column is resampled onto a uniform grid
exactly like a bag (:func:`resampled`): real drivers' stamps jitter, and filters and
differences need a constant sample time; for identification a gap in the stamps longer
than ``data.max_gap`` splits the recording into segments, each on its own grid
(``Recording.starts``).  Reading also brings the samples to the model's convention: motor
side to joint side through the transmission (Nguyen et al. 2023 Eq. 3), encoder offsets, a force
plate's wrench into the world frame.  Filtering and differentiation are not done here
(``figaroh_ros.identification.observation``).
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

import figaroh_ros.io   # the bag readers, loaded when the recording is a bag
from figaroh_ros.config.recorded import motor_side_efforts, recorded_names
from figaroh_ros.errors import DataError
from figaroh_ros.identification.segments import gap_segments
from figaroh_ros.identification.signals import uniform_grid
from figaroh_ros.identification.wrench import COMPONENTS, plate_to_world
from figaroh_ros.io.degenerate import refuse_still_recording
from figaroh_ros.io.csv_table import check_columns, read_csv_table
from figaroh_ros.io.experiment_files import header
from figaroh_ros.model.robot import RobotModel


# the storage files of a bag (the keys of ``io.bag_index.STORAGES``, which loads rosbags)
STORAGE_SUFFIXES = (".db3", ".mcap")


@dataclass
class Recording:
    t: np.ndarray          # N sample times (s)
    q: np.ndarray          # N x n joint positions (joint side, model convention)
    tau: np.ndarray        # N x n joint torques (joint side), or N x 6 world wrench
    starts: np.ndarray | None = None   # first sample of every segment (None: one segment)

    def rows(self, a: int, b: int | None = None) -> "Recording":
        """Samples ``a`` to ``b`` (exclusive)."""
        b = len(self.t) if b is None else b
        starts = None if self.starts is None else \
            np.r_[0, self.starts[(self.starts > a) & (self.starts < b)] - a].astype(int)
        one = starts is not None and len(starts) == 1        # no gap inside: one segment
        return Recording(self.t[a:b], self.q[a:b], self.tau[a:b], None if one else starts)

    def bounds(self) -> list[tuple[int, int]]:
        """``[start, end)`` samples of every segment (separated by gaps in the stamps)."""
        s = [0] if self.starts is None else [int(k) for k in self.starts]
        return list(zip(s, s[1:] + [len(self.t)]))


def is_wrench(cfg) -> bool:
    """Whether the config's recording measures a contact wrench, not joint torques."""
    return cfg.measurements.kind == "wrench"


def is_bag(path: str) -> bool:
    """Whether ``path`` is a rosbag2 bag as published: a folder with a ``metadata.yaml``
    or with storage files alone, or one storage file (``.db3``, ``.mcap``)."""
    storages = STORAGE_SUFFIXES
    if os.path.isfile(path):
        return path.endswith(storages)
    return os.path.isdir(path) and (os.path.isfile(os.path.join(path, "metadata.yaml"))
                                    or any(f.endswith(storages) for f in os.listdir(path)))


def _wrench_bag(cfg, robot: RobotModel, progress=None):
    """A force-plate bag's joint states and wrench as recorded (not yet on a grid)."""
    d = cfg.data
    return figaroh_ros.io.bags.read_bag_samples(
        [d.path], recorded_names(d, robot.active_joints), d.joint_topic, d.torque_topic,
        d.events_topic or None, d.wrench_topic, progress)


def numeric_header(header: list[str]) -> bool:
    """Whether a first line holds numbers (a file written without a header)."""
    try:
        [float(h) for h in header]
    except ValueError:
        return False
    return True


def _csv_pair(cfg, robot: RobotModel):
    """Positions and torques read by column position: the torques file must name the
    columns of the positions file, in its order (else a file of other joints, or of the
    same in another order, would pass unnoticed); two files without names are not
    compared."""
    d = cfg.data
    ppath, tpath = os.path.join(d.path, d.positions), os.path.join(d.path, d.torques)
    hp, P = read_csv_table(ppath)
    ht, T = read_csv_table(tpath)
    if not (numeric_header(hp) and numeric_header(ht)):
        check_columns(tpath, ht, hp, f"the positions file {ppath}")
    n = robot.n_joints
    if P.shape[1] != n or T.shape[1] != n:
        raise DataError(f"expected {n} columns (one per joint) in {d.positions} and "
                        f"{d.torques}, got {P.shape[1]} and {T.shape[1]}")
    if P.shape[0] != T.shape[0]:
        raise DataError(f"{d.positions} has {P.shape[0]} rows but {d.torques} "
                        f"has {T.shape[0]}")
    return np.arange(P.shape[0]) * d.sample_time, P, T


def _table_columns(path: str):
    """``column(template, joint)`` reading the named columns of the table ``path``."""
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
    return column


def _csv_table(cfg, robot: RobotModel, measured: str | None):
    d = cfg.data
    path = os.path.join(d.path, d.table)
    column = _table_columns(path)
    names = recorded_names(d, robot.active_joints)
    P = np.column_stack([column(d.position_column, j) for j in names])
    tpath = os.path.join(d.path, d.torque_table) if d.torque_table else path
    tcolumn = _table_columns(tpath) if tpath != path else column
    if is_wrench(cfg):
        T = np.column_stack([tcolumn(c) for c in
                             cfg.measurements.wrench_columns or COMPONENTS])
    else:
        T = np.column_stack([tcolumn(measured or d.torque_column, j) for j in names])
    if d.time_column is None:
        return np.arange(P.shape[0]) * d.sample_time, P, T
    t = column(d.time_column)
    if tpath != path:
        _same_stamps(t, tcolumn(d.time_column), path, tpath)
    return t, P, T


def _same_stamps(t: np.ndarray, t2: np.ndarray, path: str, tpath: str) -> None:
    if t.shape != t2.shape or not np.allclose(t, t2, rtol=0, atol=1e-9):
        bad = min(len(t), len(t2)) if t.shape != t2.shape else \
            int(np.flatnonzero(~np.isclose(t, t2, rtol=0, atol=1e-9))[0])
        raise DataError(f"{tpath}: its time column differs from that of {path} (from data "
                        f"row {bad + 1}): positions and torques must share their stamps")


def resampled(t: np.ndarray, P: np.ndarray, T: np.ndarray, rate_hz: float | None,
              max_gap: float | None, what: str):
    """Positions and torques stamped ``t`` on a uniform grid at ``rate_hz`` (default: the
    median rate of the stamps) by linear interpolation, as a bag's messages
    (``io/bags.py``).  A gap between two stamps longer than ``max_gap`` seconds (default:
    5 periods of the grid) is refused with its times (interpolation would draw a straight
    line across it): select the rows on one side with ``data.rows``."""
    dt = _increasing(t, what)
    rate = float(rate_hz or 1.0 / np.median(dt))
    limit = float(max_gap if max_gap is not None else 5.0 / rate)
    gaps = np.flatnonzero(dt > limit)
    if gaps.size:
        i = int(gaps[0])
        raise DataError(f"{what}: {gaps.size} gap(s) between stamps longer than data.max_gap"
                        f" = {limit:.4g} s, the first from t = {t[i]:.6g} to {t[i + 1]:.6g}"
                        f" s (data rows {i + 1}-{i + 2}): choose data.rows on one side")
    grid, P, T, _ = uniform_grid(t, P, T, rate_hz=rate)
    return grid, P, T


def segmented(t: np.ndarray, P: np.ndarray, T: np.ndarray, rate_hz: float | None,
              max_gap: float | None, what: str) -> Recording:
    """As :func:`resampled`, but a gap between two stamps longer than ``max_gap`` seconds
    (default: 5 periods of the grid; a stalled publisher) starts a new segment on its own
    grid at the same rate: no straight line is drawn across it (the equations are built
    segment by segment: ``identification/segments.py``)."""
    rate = float(rate_hz or 1.0 / np.median(_increasing(t, what)))
    limit = float(max_gap if max_gap is not None else 5.0 / rate)
    parts = [uniform_grid(t[a:b], P[a:b], T[a:b], rate_hz=rate)[:3]
             for a, b in gap_segments(t, limit) if b - a >= 2]
    parts = [pt for pt in parts if len(pt[0])]
    if not parts:
        raise DataError(f"{what}: no two stamps closer than data.max_gap = {limit:.4g} s "
                        f"({len(t)} stamps, grid rate {rate:.4g} Hz): raise data.max_gap or "
                        "check data.rows")
    starts = np.cumsum([0] + [len(pt[0]) for pt in parts[:-1]]).astype(int)
    return Recording(*(np.concatenate(x) for x in zip(*parts)),
                     starts if len(parts) > 1 else None)


def _increasing(t: np.ndarray, what: str) -> np.ndarray:
    """The steps between stamps; DataError unless there are two or more, increasing."""
    if len(t) < 2:
        raise DataError(f"{what}: {len(t)} time stamp(s): at least 2 are needed")
    dt = np.diff(t)
    if np.any(dt <= 0):
        i = int(np.flatnonzero(dt <= 0)[0])
        raise DataError(f"{what}: time stamps not strictly increasing at data row {i + 2} "
                        f"(t = {t[i]:.6g} then {t[i + 1]:.6g} s)")
    return dt


def _check_finite(**arrays):
    for name, a in arrays.items():
        if not np.all(np.isfinite(a)):
            bad = np.argwhere(~np.isfinite(np.atleast_2d(a.T).T))[0]
            raise DataError(f"{name} contain NaN/inf (first at row {bad[0]})")


def _model_convention(cfg, robot: RobotModel, P: np.ndarray, T: np.ndarray):
    """Joint-side positions and torques (or the wrench in the world frame)."""
    d = cfg.data
    if d.motor_side:
        P = robot.transmission.joint_positions(P)
    if motor_side_efforts(d) and not is_wrench(cfg):
        T = robot.transmission.joint_torques(T)
    if is_wrench(cfg):
        m = cfg.measurements
        plate = pin.SE3(pin.rpy.rpyToMatrix(*(m.plate_rpy or [0.0, 0.0, 0.0])),
                        np.asarray(m.plate_xyz or [0.0, 0.0, 0.0], float))
        T = plate_to_world(T, plate)
    if d.joint_offsets is not None:
        P = P + np.asarray(d.joint_offsets)
    return P, T


def _one_grid(*args) -> Recording:
    return Recording(*resampled(*args))


def _rows(rec: Recording, rows: list[int] | None) -> Recording:
    """The ``data.rows`` of ``rec``."""
    if rows is None:
        return rec
    if rows[1] > rec.q.shape[0]:
        raise DataError(f"data.rows {rows} beyond the {rec.q.shape[0]} rows recorded")
    return rec.rows(rows[0], rows[1])


def read_recording(cfg, robot: RobotModel, measured: str | None = None,
                   progress=None, split_gaps: bool = False) -> Recording:
    """The recording the (typed) config's ``data`` section describes, in the model's convention
    (a bag's, or a stamped table's, on a uniform grid: with ``split_gaps`` one grid per
    segment between gaps longer than ``data.max_gap``).  ``measured`` replaces the torque
    column template (CSV table) or topic (bag), e.g. to read motor currents and sensor
    torques of the same experiment; ``progress(message)``: lines while a bag is read.
    Without ``split_gaps`` one grid spans the whole recording (a table's gaps refused, a
    bag's interpolated)."""
    return read_recordings(cfg, robot, [measured], progress, split_gaps)[0]


def read_recordings(cfg, robot: RobotModel, measured: list[str | None],
                    progress=None, split_gaps: bool = False) -> list[Recording]:
    """:func:`read_recording` of each of ``measured`` (torque topics or column templates;
    None: the config's): the motor currents and sensor torques of one experiment, a bag
    read once for all of them."""
    d = cfg.data
    if d.format != "bag" or not measured:
        recs = [_table_recording(cfg, robot, m, split_gaps) for m in measured]
        what = os.path.join(d.path, d.table or d.positions or "")
    else:
        if is_wrench(cfg):            # the plate's wrench is what such a bag measures
            samples = [_wrench_bag(cfg, robot, progress)] * len(measured)
        else:
            each = figaroh_ros.io.bags.read_bag_samples_each(
                [d.path], recorded_names(d, robot.active_joints), d.joint_topic,
                [m or d.torque_topic for m in measured], d.events_topic or None,
                progress)
            samples = [each[m or d.torque_topic] for m in measured]
        recs = [_bag_recording(cfg, robot, t, P, T, split_gaps) for t, P, T in samples]
        what = f"bag {d.path}"
    for rec in recs[:1]:          # the topics of one bag share their joint states
        refuse_still_recording(rec.q, robot.active_joints, what)
    return recs


def _bag_recording(cfg, robot: RobotModel, t, P, T, split_gaps: bool) -> Recording:
    """A bag's samples on a uniform grid (one per segment with ``split_gaps``), the
    ``data.rows`` of it, in the model's convention."""
    d = cfg.data
    _check_finite(positions=P, torques=T, time=t)
    rec = _rows(segmented(t, P, T, d.resample_hz, d.max_gap if split_gaps
                          else np.inf, f"bag {d.path}"), d.rows)
    return Recording(rec.t, *_model_convention(cfg, robot, rec.q, rec.tau), rec.starts)


def _table_recording(cfg, robot: RobotModel, measured: str | None,
                     split_gaps: bool) -> Recording:
    """A CSV recording (a stamped table on a uniform grid), in the model's convention."""
    d = cfg.data
    fmt = d.format
    t, P, T = _csv_pair(cfg, robot) if fmt == "csv_pair" else \
        _csv_table(cfg, robot, measured)
    rec = _rows(Recording(t, P, T), d.rows)
    _check_finite(positions=rec.q, torques=rec.tau, time=rec.t)
    if fmt == "csv_table" and d.time_column is not None:
        rec = (segmented if split_gaps else _one_grid)(
            rec.t, rec.q, rec.tau, d.resample_hz, d.max_gap, d.table)
    return Recording(rec.t, *_model_convention(cfg, robot, rec.q, rec.tau), rec.starts)


def validation_config(cfg, path: str):
    """A copy of ``cfg`` reading the recording at ``path`` instead, the whole of it: a
    bag (a folder with or without ``metadata.yaml``, or one ``.db3``/``.mcap`` file), a
    CSV table (a config reading one), or a folder of the config's CSV files."""
    path = os.path.abspath(path)
    if is_bag(path):
        where = {"format": "bag", "path": path}
    elif os.path.isfile(path) and cfg.data.format == "csv_table":
        where = {"path": os.path.dirname(path), "table": os.path.basename(path)}
    else:
        where = {"path": path}
    return cfg.model_copy(update={"data": cfg.data.model_copy(update=dict(where, rows=None))})


def same_pair_columns(ours, other) -> None:
    """The positions and torques files of the ``data`` section ``other`` have the header of
    the config's own (``ours``): a csv_pair is read by column position, so a recording of
    other joints, or of the same in another order, would otherwise pass unnoticed.  (A
    table's columns are found by name, a bag's joints by their names in the messages.)"""
    for key in ("positions", "torques"):
        mine, theirs = (os.path.join(x.path, getattr(x, key)) for x in (ours, other))
        if numeric_header(header(mine)) and numeric_header(header(theirs)):
            continue                 # both written without a header: nothing to compare
        check_columns(theirs, header(theirs), header(mine), f"the config's recording {mine}")

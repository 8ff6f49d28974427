"""Experiment files the executor plays: postures CSV (one column per joint, one row per
posture; other columns ignored) and trajectory CSV (a time column ``t`` too).  ROS-free."""
from __future__ import annotations

import csv
import difflib
import io
import os

import numpy as np

from figaroh_ros.errors import DataError
from figaroh_ros.excitation.fourier import Trajectory
from figaroh_ros.io.csv_table import read_text

MAX_MAGNITUDE = 1e6            # |joint position| (rad, m) or |time| (s)


def read_trajectory(path: str, joints: list[str]):
    """Time column ``t`` and joint columns of a trajectory CSV."""
    names, Q = read_postures(path, joints + ["t"])
    if "t" not in names:
        raise DataError(f"trajectory file {path} has no time column 't'")
    k = names.index("t")
    t = Q[:, k]
    if len(t) < 2 or np.any(np.diff(t) <= 0):
        raise DataError(f"trajectory file {path}: times must increase")
    keep = [i for i in range(len(names)) if i != k]
    return [names[i] for i in keep], t - t[0], Q[:, keep]


def read_postures(path: str, joints: list[str]) -> tuple[list[str], np.ndarray]:
    """Joint columns of a postures CSV (columns that are not robot joints are ignored)."""
    try:
        text = read_text(path, "postures file")
    except OSError as exc:
        raise DataError(f"cannot read postures file {path}: {exc}") from None
    rows = [r for r in csv.reader(io.StringIO(text, newline="")) if r]
    if len(rows) < 2:
        raise DataError(f"postures file {path} has no posture")
    header = [h.strip() for h in rows[0]]
    cols = [i for i, h in enumerate(header) if h in joints]
    if not cols:
        raise DataError(f"postures file {path}: no column names a robot joint "
                              f"(columns {header}, joints {joints})")
    names = [header[i] for i in cols]
    Q = np.empty((len(rows) - 1, len(cols)))
    for r, row in enumerate(rows[1:]):
        if len(row) != len(header):
            raise DataError(f"postures file {path} line {r + 2}: {len(row)} fields, the "
                            f"header has {len(header)}")
        for k, i in enumerate(cols):
            try:
                Q[r, k] = float(row[i])
            except (ValueError, IndexError):
                raise DataError(f"postures file {path} line {r + 2}, column "
                                      f"'{header[i]}': not a number") from None
            if not abs(Q[r, k]) <= MAX_MAGNITUDE:
                raise DataError(f"postures file {path} line {r + 2}, column "
                                f"'{header[i]}': value {row[i]!r} (expected a finite number "
                                f"of magnitude <= {MAX_MAGNITUDE:g})")
    return names, Q


def header(path: str) -> list[str]:
    """The column names of a CSV file's first row."""
    with open(path, newline="", encoding="utf-8-sig") as f:
        return [h.strip() for h in next(csv.reader(f), [])]


def misspelt_columns(columns: list[str], controlled: list[str], is_joint) -> dict[str, str]:
    """Columns that name no joint of the model (``is_joint``) but resemble a controlled
    joint's name (a typo would leave that joint uncommanded): ``{column: joint}``."""
    found = {}
    for h in columns:
        if h in controlled or is_joint(h):
            continue
        near = difflib.get_close_matches(h, controlled, n=1, cutoff=0.8)
        if near:
            found[h] = near[0]
    return found


def check_limits(names: list[str], Q: np.ndarray, positions: dict, V: np.ndarray | None = None,
                 velocities: dict | None = None):
    """Refuse postures or trajectory samples outside the joint position limits (and, for a
    trajectory, its speeds above the velocity limits), naming the first offender."""
    for k, n in enumerate(names):
        lo, hi = positions[n]
        bad = np.flatnonzero((Q[:, k] < lo) | (Q[:, k] > hi))
        if len(bad):
            raise DataError(f"posture {bad[0]}: {n} = {Q[bad[0], k]:.4g} is outside "
                                  f"its limits [{lo:.4g}, {hi:.4g}]")
        if V is not None and velocities is not None:
            bad = np.flatnonzero(np.abs(V[:, k]) > velocities[n])
            if len(bad):
                raise DataError(f"sample {bad[0]}: {n} moves at {V[bad[0], k]:.4g}, "
                                      f"above its velocity limit {velocities[n]:.4g}")


def trajectory_velocities(times: np.ndarray, Q: np.ndarray) -> np.ndarray:
    """Velocities of a trajectory file (finite differences), which must end at rest; the
    last one is set to exactly zero as controllers require."""
    V = np.gradient(Q, times, axis=0)
    vmax = np.abs(V).max()
    if np.abs(V[-1]).max() > 0.05 * max(vmax, 1e-9) + 1e-3:
        raise DataError("the trajectory must end at rest (its last velocity is "
                              f"{np.abs(V[-1]).max():.3g})")
    V[-1] = 0.0
    return V


def write_trajectory_csv(path: str, joints: list[str], traj: Trajectory):
    """``t`` and one column per joint: the trajectory file the executor plays."""
    tmp = path + ".tmp"
    header = ",".join(["t"] + list(joints))
    np.savetxt(tmp, np.column_stack([traj.t, traj.q]), delimiter=",", header=header,
               comments="", fmt="%.9g")
    os.replace(tmp, path)

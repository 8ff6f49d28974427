"""Reading static calibration postures from CSV.

One row per posture: a column per chain joint (named as in the URDF) and the
measurement columns:

* ``points``: ``x<k>, y<k>, z<k>`` for each used point ``k`` (metres);
* ``pose``: ``x1, y1, z1`` and ``phix1, phiy1, phiz1`` (roll-pitch-yaw or rotation vector,
  rad) or ``qx1, qy1, qz1, qw1``; with ``inverse`` the row is the pose of the target seen
  by a camera on the tool and is inverted into the pose of the camera in the target frame;
* ``plane``: no measurement column (every point lies on the plane); with several planes
  (``measurement.planes``) a ``plane`` column names the plane each posture touches.

Values are returned in the :class:`~.solve.PostureSet` convention (orientation as a
rotation vector).  Missing columns and non-finite values are refused with a
:class:`DataError` naming the file, the row and the column.
"""
from __future__ import annotations

import csv
import io
import math

import numpy as np
import pinocchio as pin

from figaroh_ros.calibration.planes import as_planes, check_touched, plane_rows
from figaroh_ros.calibration.solve import PostureSet
from figaroh_ros.errors import DataError
from figaroh_ros.io.csv_table import read_text

MAX_MAGNITUDE = 1e4            # |joint position| (rad, m), |marker coordinate| (m)


def _read_table(path: str) -> tuple[list[str], list[list[str]]]:
    rows = [r for r in csv.reader(io.StringIO(read_text(path, "posture file"), newline=""))
            if r]
    if len(rows) < 2:
        raise DataError(f"{path}: expected a header and at least one posture")
    header = [h.strip() for h in rows[0]]
    for i, r in enumerate(rows[1:], start=2):
        if len(r) != len(header):
            raise DataError(f"{path} line {i}: {len(r)} fields, header has "
                                       f"{len(header)}")
    return header, rows[1:]


def _column(path, header, rows, name) -> np.ndarray:
    if name not in header:
        raise DataError(f"{path}: missing column '{name}' (columns: {header})")
    k = header.index(name)
    out = np.empty(len(rows))
    for i, r in enumerate(rows):
        try:
            out[i] = float(r[k])
        except ValueError:
            raise DataError(f"{path} line {i + 2}, column '{name}': "
                                       f"not a number: {r[k]!r}") from None
        if not abs(out[i]) <= MAX_MAGNITUDE:
            raise DataError(f"{path} line {i + 2}, column '{name}': value {r[k]!r} (expected "
                            f"a finite number of magnitude <= {MAX_MAGNITUDE:g})")
    return out


def _fixed_value(name: str, value) -> float:
    """The position given for a chain joint absent from the data: a finite number."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        v = math.nan
    if not abs(v) <= MAX_MAGNITUDE:
        raise DataError(f"data.fixed_joints.{name}: value {value!r} (expected a finite "
                        f"number of magnitude <= {MAX_MAGNITUDE:g})")
    return v


def measurement_columns(kind: str, points: list[int], orientation: str) -> list[str]:
    if kind == "plane":
        return []
    if kind == "points":
        return [f"{a}{k}" for k in points for a in "xyz"]
    rot = {"rpy": ["phix1", "phiy1", "phiz1"], "rotvec": ["phix1", "phiy1", "phiz1"],
           "quaternion": ["qx1", "qy1", "qz1", "qw1"]}[orientation]
    return ["x1", "y1", "z1"] + rot


def to_rotation(values: np.ndarray, orientation: str) -> np.ndarray:
    if orientation == "rpy":
        return pin.rpy.rpyToMatrix(*values)
    if orientation == "rotvec":
        return pin.exp3(values)
    q = np.asarray(values, float)
    n = np.linalg.norm(q)
    if not 0.9 < n < 1.1:
        raise DataError(f"quaternion (qx, qy, qz, qw) = {q.tolist()} has norm {n:.3g}, "
                        "expected 1")
    return pin.Quaternion(q[3], q[0], q[1], q[2]).normalized().matrix()


def load_postures(path: str, chain: list[str], kind: str, points: list[int],
                  orientation: str = "rpy", inverse: bool = False,
                  fixed_joints: dict | None = None, id_column: str | None = None,
                  planes: list | None = None, every_plane: bool = True) -> PostureSet:
    """Postures of ``path`` for the chain joints ``chain`` (in chain order).  ``planes``
    (the config's ``measurement.planes``): the ``plane`` column names the plane each
    posture touches (``every_plane``: each declared plane touched, enough times if
    unknown)."""
    header, rows = _read_table(path)
    fixed_joints = fixed_joints or {}
    both = sorted(set(fixed_joints) & set(header))
    if both:
        raise DataError(f"{path}: joints {both} have a column and a value in "
                        "data.fixed_joints: give one or the other")
    unknown = sorted(set(fixed_joints) - set(chain))
    if unknown:
        raise DataError(f"data.fixed_joints names joints {unknown} outside the calibrated "
                        f"chain {chain}")
    Q = np.empty((len(rows), len(chain)))
    for j, name in enumerate(chain):
        if name in header:
            Q[:, j] = _column(path, header, rows, name)
        elif name in fixed_joints:
            Q[:, j] = _fixed_value(name, fixed_joints[name])
        else:
            raise DataError(
                f"{path}: no column for chain joint '{name}'; add it to the file or give "
                f"its value in data.fixed_joints")
    cols = measurement_columns(kind, points, orientation)
    M = np.column_stack([_column(path, header, rows, c) for c in cols]) if cols else \
        np.zeros((len(rows), 0))
    if kind == "plane" and planes:
        Y = plane_rows(plane_column(path, header, rows, planes, len(points), every_plane),
                       len(points))
    elif kind == "plane":
        Y = np.zeros((len(rows), 3 * len(points)))
    elif kind == "points":
        Y = M
    else:
        Y = np.empty((len(rows), 6))
        for i in range(len(rows)):
            try:
                T = pin.SE3(to_rotation(M[i, 3:], orientation), M[i, :3])
            except DataError as exc:
                raise DataError(f"{path} line {i + 2}: {exc}") from None
            if inverse:
                T = T.inverse()
            Y[i, :3] = T.translation
            Y[i, 3:] = pin.log3(T.rotation)
    if id_column is not None:
        if id_column not in header:
            raise DataError(f"{path}: missing id column '{id_column}'")
        k = header.index(id_column)
        ids = [r[k] for r in rows]
    else:
        ids = [str(i) for i in range(len(rows))]
    return PostureSet(Q, Y, ids)


def plane_column(path, header, rows, planes, n_points=1, every_plane=True) -> np.ndarray:
    """Index of the declared plane named by each row's ``plane`` column."""
    planes = as_planes(planes)
    names = [p.name for p in planes]
    if "plane" not in header:
        raise DataError(f"{path}: missing column 'plane' (measurement.planes declares "
                        f"{names}: name the plane each posture touches)")
    k = header.index("plane")
    idx = np.empty(len(rows), int)
    for i, r in enumerate(rows):
        v = r[k].strip()
        if v not in names:
            raise DataError(f"{path} line {i + 2}, column 'plane': {v!r} is not a plane of "
                            f"measurement.planes {names}")
        idx[i] = names.index(v)
    if every_plane:
        check_touched(planes, idx, n_points, f"measurement.planes ({path})")
    return idx

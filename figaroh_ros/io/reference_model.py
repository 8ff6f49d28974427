"""Published models scored on our data: reference tables matched by full expression, and a
published standard-parameter model (a URDF) predicting the same torques as ours.

A base parameter is a linear combination ``p . phi`` of the standard parameters.  Two
tables name the same quantity when their expressions are the same combination, whatever
order the terms are printed in, whichever parameter leads the group, and to the rounding
of the published coefficients (``0.0998 m3`` for ``0.099856*m3``).  So a reference row is
read into its vector ``p`` over our standard names and expressed in our base parameters:
``p = M^T c`` (least squares; the row matches when the relative residual is under
``tol``), its value is then ``c . phi_b`` with standard deviation ``sqrt(c^T C c)``.  A
row that no combination of our base parameters reproduces is not identifiable from our
model and data: it is an error, named with its row and expression.  The expressions are
read by ``expressions.py`` (our notation and the ``J``/``c m`` one of Gaz et al. 2019).

A published standard-parameter model is scored either as a URDF
(:func:`reference_standard_parameters`) or as a table (:func:`read_parameter_table`, then
:func:`table_standard_parameters`), see the latter for the accepted forms.
"""
from __future__ import annotations

import csv
import io
import math
import os
import re
from dataclasses import dataclass, field

import numpy as np

from figaroh_ros.config.yaml_file import read_yaml
from figaroh_ros.errors import ConfigError, DataError, ModelError
from figaroh_ros.identification.parameters import INERTIAL, standard_parameters
from figaroh_ros.io.csv_table import read_text
from figaroh_ros.io.expressions import linear_terms
from figaroh_ros.model.robot import RobotModel


def standard_vector(expression: str, names: list[str]) -> np.ndarray:
    """The expression as a vector over the standard parameters ``names``."""
    p = np.zeros(len(names))
    for name, coef in linear_terms(expression).items():
        if name not in names:
            raise DataError(f"expression {expression!r}: no standard parameter {name!r} in "
                            f"this model")
        p[names.index(name)] += coef
    return p


def express_in_base(expressions: list[str], names: list[str], M: np.ndarray,
                    tol: float = 2e-3, where: str = "reference") -> np.ndarray:
    """Coefficients ``C`` (rows x n_base) with ``p_i = M^T C_i`` for every expression, or a
    :class:`DataError` listing the rows that no base combination reproduces (``tol``:
    relative residual, the published coefficients being rounded)."""
    P = np.array([standard_vector(e, names) for e in expressions])
    C = np.linalg.lstsq(M.T, P.T, rcond=None)[0].T
    resid = np.linalg.norm(P - C @ M, axis=1) / np.maximum(np.linalg.norm(P, axis=1), 1e-300)
    bad = np.flatnonzero(resid > tol)
    if bad.size:
        rows = "; ".join(f"row {i + 1} {expressions[i]!r} (residual {resid[i]:.2g})"
                         for i in bad[:10])
        raise DataError(f"{where}: {bad.size} of {len(expressions)} expressions are no "
                        f"combination of our base parameters: {rows}")
    return C


def reference_standard_parameters(robot: RobotModel, reference: RobotModel, layout,
                                  tol: float = 1e-6) -> np.ndarray:
    """The standard parameters of a published model (its URDF inertias; drive terms 0)
    in ``robot``'s layout; a :class:`ModelError` when its joints or their placements are
    not ``robot``'s."""
    ours, theirs = list(robot.model.names), list(reference.model.names)
    if ours != theirs:
        raise ModelError(f"reference model: joints {theirs[1:]} differ from the model's "
                         f"{ours[1:]} (missing {sorted(set(ours) - set(theirs))}, extra "
                         f"{sorted(set(theirs) - set(ours))})")
    for j in range(1, robot.model.njoints):
        a, b = robot.model.jointPlacements[j], reference.model.jointPlacements[j]
        if not np.allclose(a.homogeneous, b.homogeneous, atol=tol):
            raise ModelError(f"reference model: joint {ours[j]!r} is placed differently "
                             "(a standard-parameter model is tied to its kinematics)")
    return standard_parameters(reference, layout)


def relative_errors(tau: np.ndarray, tau_hat: np.ndarray, joints: list[str]) -> dict:
    """Per joint ``RMSE / RMS(tau)`` and the stacked ``||tau - tau_hat|| / ||tau||``."""
    e = np.asarray(tau, float) - np.asarray(tau_hat, float)
    rel = np.sqrt(np.mean(e ** 2, 0) / np.mean(np.asarray(tau) ** 2, 0))
    out = {j: float(r) for j, r in zip(joints, rel)}
    out["stacked"] = float(np.linalg.norm(e) / np.linalg.norm(tau))
    return out


def comparison_table(expressions: list[str], columns: dict[str, np.ndarray],
                     digits: int = 4) -> str:
    """Markdown: one row per expression, one column per named value vector (NaN: -)."""
    head = "| coefficient | " + " | ".join(columns) + " |"
    rule = "|---|" + "---:|" * len(columns)
    lines = [head, rule]
    for i, e in enumerate(expressions):
        cells = ["-" if not np.isfinite(v[i]) else f"{v[i]:.{digits}f}"
                 for v in columns.values()]
        lines.append(f"| {e.replace('|', '/')} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def values_by_expression(reference: list[str], table: list[dict], covariance=None,
                         where: str = "reference") -> list[tuple[float, float]]:
    """Our value and relative std (%) of each reference expression, from ``table``
    (result.yaml's ``[{name: grouped expression, value, std_percent}]``, base order) and
    the base parameters' ``covariance`` (without it the std is known only for rows that
    are one of our base parameters, NaN otherwise)."""
    names = sorted({n for e in list(reference) + [r["name"] for r in table]
                    for n in linear_terms(e)})
    M = np.array([standard_vector(r["name"], names) for r in table])
    C = express_in_base(list(reference), names, M, where=where)
    phi = np.array([r["value"] for r in table], float)
    if covariance is not None:
        var = np.einsum("ij,jk,ik->i", C, np.asarray(covariance, float), C)
    else:
        sd = np.array([abs(r["value"]) * r["std_percent"] / 100.0 for r in table])
        single = (np.abs(C) > 1e-3 * np.abs(C).max(1, keepdims=True)).sum(1) == 1
        var = np.where(single, (np.abs(C) @ sd) ** 2, np.nan)
    values = C @ phi
    return [(float(v), float(100.0 * np.sqrt(s) / abs(v)) if v != 0 else float("inf"))
            for v, s in zip(values, var)]


# per-link / per-joint parameter kinds of a table, in the order of parameters.py
TABLE_KINDS = INERTIAL + ("Ia", "fv", "fs", "off", "fva", "fst", "Iam", "fvm", "fsm")
TABLE_SUFFIXES = (".csv", ".yaml", ".yml")
_NAME = re.compile(r"^(" + "|".join(sorted(TABLE_KINDS, key=len, reverse=True))
                   + r")(\d+)$")


def is_parameter_table(path: str) -> bool:
    """A ``--reference-model`` file read as a table (``.csv``, ``.yaml``, ``.yml``), not
    as a URDF."""
    return path.lower().endswith(TABLE_SUFFIXES)


@dataclass
class ParameterTable:
    """A table read, not yet tied to a model: values by (joint key, kind) for the wide
    form, by full name for the long form; the kinds declared zero per joint key (``*``:
    every kind the row leaves out) and the long form's names declared zero (``Ia*``)."""

    path: str
    wide: dict[tuple[str, str], tuple[float, str]] = field(default_factory=dict)
    long: dict[str, tuple[float, str]] = field(default_factory=dict)
    zero_kinds: dict[str, set[str]] = field(default_factory=dict)
    zero_prefixes: set[str] = field(default_factory=set)


def _number(cell, where: str) -> float:
    try:
        v = float(cell) if not isinstance(cell, bool) else math.nan
    except (TypeError, ValueError):
        raise DataError(f"{where}: expected a number, got {cell!r}") from None
    if not math.isfinite(v):
        raise DataError(f"{where}: {cell!r} is not a finite number")
    return v


def _zero_kinds(cell, where: str) -> set[str]:
    """The kinds a ``zero`` cell names: ``all`` / ``*`` or kinds separated by spaces, commas
    or semicolons."""
    items = cell if isinstance(cell, list) else re.split(r"[\s,;]+", str(cell).strip())
    items = [str(i) for i in items if str(i)]
    if items in (["all"], ["*"]):
        return {"*"}
    unknown = [i for i in items if i not in TABLE_KINDS]
    if unknown:
        raise DataError(f"{where}: unknown parameter kinds {unknown} (known: "
                        f"{list(TABLE_KINDS)}, or 'all')")
    return set(items)


def _standard_name(text: str, where: str) -> str:
    """One standard parameter with coefficient 1, in our notation or the ``--reference``
    matcher's (``Izz1``, ``J1zz``, ``c1x m1``, ``fv,1``, ``fc,1``, ``fo,1``)."""
    try:
        terms = linear_terms(text)
    except DataError as exc:
        raise DataError(f"{where}: {exc}") from None
    if len(terms) != 1 or list(terms.values()) != [1.0]:
        raise DataError(f"{where}: {text!r} is not one standard parameter (a table gives "
                        "standard parameters, not combinations)")
    return next(iter(terms))


def _wide_rows(table: ParameterTable, rows: list[tuple[int, dict]]) -> None:
    for line, row in rows:
        key = str(row.get("joint", "")).strip()
        if not key:
            raise DataError(f"{table.path} row {line}: no joint")
        if any(k == key for k, _ in table.wide) or key in table.zero_kinds:
            raise DataError(f"{table.path} row {line}: joint {key!r} given twice")
        unknown = [c for c in row if c not in TABLE_KINDS + ("joint", "zero")]
        if unknown:
            raise DataError(f"{table.path}: unknown columns {unknown} (known: joint, zero, "
                            f"{', '.join(TABLE_KINDS)})")
        zero = row.get("zero")
        table.zero_kinds[key] = (set() if zero is None or str(zero).strip() == "" else
                                 _zero_kinds(zero, f"{table.path} row {line} (joint "
                                             f"{key}), column 'zero'"))
        for kind in TABLE_KINDS:
            cell = row.get(kind)
            if cell is None or (isinstance(cell, str) and not cell.strip()):
                continue
            where = f"{table.path} row {line} (joint {key}), column {kind!r}"
            table.wide[(key, kind)] = (_number(cell, where), where)


def _long_rows(table: ParameterTable, rows: list[tuple[int, str, object]]) -> None:
    for line, name, cell in rows:
        name = str(name).strip()
        where = f"{table.path} row {line} ({name}), column 'value'"
        value = _number(cell, where)
        if name.endswith("*"):
            if name[:-1] not in TABLE_KINDS + ("",) or value != 0.0:
                raise DataError(f"{table.path} row {line}: a wildcard row is a kind followed "
                                f"by '*' (or '*' alone) with value 0, got {name!r} = {cell!r}")
            table.zero_prefixes.add(name[:-1])
            continue
        std = _standard_name(name, f"{table.path} row {line}, column 'parameter'")
        if std in table.long:
            raise DataError(f"{table.path} row {line}: {std} given twice")
        table.long[std] = (value, where)


def read_parameter_table(path: str) -> ParameterTable:
    """A published standard-parameter model as a table (the text only; the model's names
    are checked by :func:`table_standard_parameters`).  Forms accepted:

    * **CSV, one row per link** (wide): a ``joint`` column (the model's joint name, or its
      pinocchio joint index ``1, 2, ...``) and one column per parameter kind among
      ``m mx my mz Ixx Ixy Ixz Iyy Iyz Izz Ia fv fs off`` (and ``fva fst Iam fvm fsm`` when
      the model has them); an optional ``zero`` column lists the kinds that are 0 for that
      row (space, comma or semicolon separated), or ``all``: every kind the row leaves out
      (no column, or an empty cell) is 0;
    * **CSV, one row per parameter** (long): columns ``parameter, value``, the parameter
      in our names (``Izz2``, ``fv1``, ``Ia3``) or the ``--reference`` notation of one
      standard parameter (``J2zz``, ``c2x m2``, ``fv,1``, ``fc,1``, ``fo,1``); a row
      ``Ia*`` (a kind then ``*``) or ``*`` with value 0 sets every parameter of that
      kind (or every one) the table leaves out to 0;
    * **YAML**: ``joints: {<joint>: {<kind>: value, ..., zero: all | [kinds]}}`` (the wide
      form) and/or ``parameters: {<name>: value}`` (the long form, wildcards included).

    The values are the standard parameters of ``parameters.py``: per link, mass, first
    moments ``m c`` and inertia about the joint frame's origin, in the joint frame (SI
    units); per joint rotor inertia, viscous and Coulomb friction, offset.  A
    :class:`DataError` names the file, row and column of a value that is not a finite
    number, and unknown columns or kinds."""
    table = ParameterTable(os.path.abspath(path))
    if path.lower().endswith((".yaml", ".yml")):
        try:
            raw = read_yaml(path)
        except ConfigError as exc:
            raise DataError(str(exc).replace("config", "reference model", 1)) from None
        if not isinstance(raw, dict) or not raw or set(raw) - {"joints", "parameters"}:
            raise DataError(f"{table.path}: expected a mapping with 'joints' and/or "
                            f"'parameters', got {shown_keys(raw)}")
        joints, params = raw.get("joints") or {}, raw.get("parameters") or {}
        if not isinstance(joints, dict) or not isinstance(params, dict) or not all(
                isinstance(v, dict) for v in joints.values()):
            raise DataError(f"{table.path}: 'joints' maps joint names to {{kind: value}}, "
                            "'parameters' names to values")
        _wide_rows(table, [(f"joints.{k}", dict(v, joint=k)) for k, v in joints.items()])
        _long_rows(table, [(f"parameters.{k}", k, v) for k, v in params.items()])
        return table
    text = read_text(path, "reference model table")
    rows = [r for r in csv.reader(io.StringIO(text))]
    lines = [(i + 1, r) for i, r in enumerate(rows) if any(c.strip() for c in r)]
    if not lines:
        raise DataError(f"{table.path}: empty table")
    header = [c.strip() for c in lines[0][1]]
    if len(set(header)) != len(header):
        raise DataError(f"{table.path}: repeated columns in {header}")
    for line, r in lines[1:]:
        if len(r) != len(header):
            raise DataError(f"{table.path} row {line}: {len(r)} cells for the {len(header)} "
                            f"columns {header}")
    body = [(line, dict(zip(header, r))) for line, r in lines[1:]]
    if "joint" in header:
        _wide_rows(table, body)
    elif header == ["parameter", "value"]:
        _long_rows(table, [(line, r["parameter"], r["value"]) for line, r in body])
    else:
        raise DataError(f"{table.path}: expected a 'joint' column (one row per link) or "
                        f"the columns 'parameter, value' (one row per parameter), got "
                        f"{header}")
    return table


def shown_keys(raw) -> str:
    return repr(sorted(map(str, raw))) if isinstance(raw, dict) else type(raw).__name__


def _joint_id(robot: RobotModel, key: str, path: str) -> int:
    names = list(robot.model.names)
    if key in names[1:]:
        return names.index(key)
    if key.isdigit() and 1 <= int(key) < len(names):
        return int(key)
    raise DataError(f"{path}: joint {key!r} is not a joint of the model (its joints: "
                    f"{names[1:]}, or their indices 1..{len(names) - 1})")


def table_standard_parameters(robot: RobotModel, layout, table: ParameterTable) -> np.ndarray:
    """The standard vector of ``table`` (:func:`read_parameter_table`) in ``robot``'s
    ``layout``.  A :class:`DataError` names the parameters of the layout the table leaves
    out and does not declare zero, the joints that are not the model's, and the parameters
    the table gives (non-zero) that the model does not have (e.g. ``Ia`` of a coupled
    motor, ``fva`` without ``model.viscous_per_direction``)."""
    given: dict[str, tuple[float, str]] = {}
    zero: set[str] = set()
    for (key, kind), vw in table.wide.items():
        jid = _joint_id(robot, key, table.path)
        name = f"{kind}{jid}"
        if name in given or name in table.long:
            raise DataError(f"{vw[1]}: {name} given twice")
        given[name] = vw
    for key, kinds in table.zero_kinds.items():
        jid = _joint_id(robot, key, table.path)
        zero |= {f"{k}{jid}" for k in (TABLE_KINDS if "*" in kinds else kinds)}
    for name, vw in table.long.items():
        m = _NAME.match(name)
        if m is None or int(m.group(2)) < 1 or int(m.group(2)) >= robot.model.njoints:
            raise DataError(f"{vw[1]}: {name!r} is not a standard parameter of the model "
                            f"(kinds {list(TABLE_KINDS)}, joint indices 1.."
                            f"{robot.model.njoints - 1})")
        if name in given:
            raise DataError(f"{vw[1]}: {name} given twice")
        given[name] = vw
    extra = [f"{n} ({w})" for n, (v, w) in given.items() if n not in layout.names and v != 0]
    if extra:
        raise DataError(f"{table.path}: {len(extra)} parameters given that the model does "
                        f"not have (its drive terms come from the config's model section): "
                        + "; ".join(extra[:10]))
    missing = [n for n in layout.names if n not in given and n not in zero
               and not any(_NAME.match(n).group(1) == p or p == "" for p in
                           table.zero_prefixes)]
    if missing:
        raise DataError(f"{table.path}: {len(missing)} parameters of the model missing: "
                        f"{', '.join(missing[:40])}{' ...' if len(missing) > 40 else ''} "
                        "(give them, or say they are 0: a 'zero' column, or rows like "
                        "'Ia*, 0')")
    phi = np.zeros(layout.size)
    for name, (value, _) in given.items():
        if name in layout.names:
            phi[layout.index(name)] = value
    return phi


def write_parameter_table(path: str, robot: RobotModel, layout, phi: np.ndarray) -> None:
    """``phi`` (``layout``) as the wide CSV form, one row per link named by its joint,
    every value to full precision (``repr``), kinds the layout lacks for a row left empty."""
    kinds = [k for k in TABLE_KINDS if any(_NAME.match(n).group(1) == k for n in layout.names)]
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["joint"] + kinds)
        for jid in sorted(layout.inertial_cols):
            w.writerow([robot.model.names[jid]] + [
                repr(float(phi[layout.index(f"{k}{jid}")])) if f"{k}{jid}" in layout.names
                else "" for k in kinds])

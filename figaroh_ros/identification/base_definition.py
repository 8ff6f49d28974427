"""Base parameters defined by the model alone: the same names, coefficients and hash for
every recording of one model, joint set and drive model.

The grouping of the standard parameters into base parameters (``base_parameters.py``) is a
property of the kinematic structure (Gautier 1990; Khalil & Dombre, *Modeling,
Identification and Control of Robots*, 2002, §12.4): which columns of ``W`` are zero, which
are independent, and the coefficients ``beta`` of the dependent ones are the same for any
motion rich enough.  Computed on the recorded motion they move with the data in their last
digits (a decomposition of measured, filtered signals), and a structurally zero coefficient
comes out as rounding noise.  Here they are computed on the model only:

1. the standard regressor of a fixed set of random states (:func:`figaroh_ros.model.robot.
   random_states`, seeded by :data:`SEED`, :data:`SAMPLES` of them; a Stribeck or smooth
   Coulomb term at a fixed scale, which changes its values, not the structure);
2. the column choice of ``base_parameters.grouping`` on it (unit-norm columns, rank at
   ``TOL_RANK``, greedy pivots in the standard order: no data decide);
3. every coefficient made canonical (:func:`canonical_coefficient`): below
   :data:`TOL_ZERO` (at unit-norm columns) exactly absent; the shortest decimal of at
   most :data:`MAX_DIGITS` digits within :data:`TOL_EXACT` (a product of link lengths
   such as ``0.0825**2 = 0.00680625`` is written exactly); otherwise rounded to
   :data:`SIGNIFICANT` significant digits.

``M`` (``phi_b = M phi``) holds the canonical coefficients, so a definition is a pure
function of its names.  Its ``sha256`` is that of the canonical text
(:meth:`BaseDefinition.canonical`): standard names, row groups, base expressions and
absent parameters.  ``result.yaml`` records it; tables that line results up by parameter
refuse results of two different definitions (:func:`check_same_definition`).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass

import numpy as np

from figaroh_ros.errors import DataError
from figaroh_ros.identification.base_parameters import BaseParameters, grouping
from figaroh_ros.identification.parameters import DriveOptions, ParameterLayout
from figaroh_ros.identification.regressor import standard_regressor
from figaroh_ros.model.robot import RobotModel, random_states

SEED = 20190107          # the random states of every definition
SAMPLES = 600            # states (rows per joint) of the definition's regressor
# |beta| below this, columns at unit norm, is structurally zero: a URDF's rpy written
# 1.5708 for pi/2 leaves terms cos(1.5708) = -3.7e-6 that no recording resolves (a
# coefficient of 1e-5 at unit norm changes a predicted torque by 1e-5 of a column's own)
TOL_ZERO = 1e-5
TOL_EXACT = 1e-11         # relative distance at which a short decimal is taken as exact
MAX_DIGITS = 9           # longest decimal recognised as exact (significant digits)
# significant digits of a coefficient not recognised as exact (a sine of an angle written
# to 12 digits in the URDF): 1e-10 relative, far below what a recording resolves, and
# far above the round-off of the definition's own computation (1e-13)
SIGNIFICANT = 10
FIXED_VELOCITY = 0.3     # rad/s scale of the Stribeck / tanh terms in the definition


def canonical_coefficient(x: float) -> float:
    """The shortest decimal of at most :data:`MAX_DIGITS` significant digits within
    :data:`TOL_EXACT` (relative) of ``x``; else ``x`` to :data:`SIGNIFICANT` significant
    digits."""
    x = float(x)
    if x == 0.0 or not np.isfinite(x):
        return 0.0 if x == 0.0 else x
    for digits in range(1, MAX_DIGITS + 1):
        c = float(f"{x:.{digits}g}")
        if abs(c - x) <= TOL_EXACT * abs(x):
            return c
    return float(f"{x:.{SIGNIFICANT}g}")


def coefficient_text(c: float) -> str:
    """A canonical coefficient as printed in an expression (no digit lost)."""
    return f"{abs(c):.{max(MAX_DIGITS, SIGNIFICANT)}g}"


def definition_expressions(names: list[str], base, dep, beta) -> list[str]:
    """``Izz4 + 0.123312*m5 + mz5``: each base column with the dependent ones it carries,
    coefficients canonical (zero ones absent)."""
    out = []
    for i, b in enumerate(base):
        terms = [names[b]]
        for jj, c in enumerate(dep):
            coef = beta[i, jj]
            if coef != 0.0:
                sign = "-" if coef < 0 else "+"
                terms.append(f"{sign} {names[c]}" if abs(coef) == 1.0
                             else f"{sign} {coefficient_text(coef)}*{names[c]}")
        out.append(" ".join(terms))
    return out


@dataclass
class BaseDefinition(BaseParameters):
    """:class:`BaseParameters` computed from the model alone, with its identity."""

    standard_names: list[str] = dataclasses.field(default_factory=list)
    groups: list[str] = dataclasses.field(default_factory=list)
    source: str = "model"          # "model", or "data" (a force plate's wrench rows)

    def canonical(self) -> str:
        """The text the hash is taken of (one line of JSON, keys sorted)."""
        return json.dumps({"standard": list(self.standard_names), "groups": list(self.groups),
                           "base": list(self.names),
                           "absent": [self.standard_names[i] for i in self.zero_index],
                           "source": self.source}, sort_keys=True, separators=(",", ":"))

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.canonical().encode()).hexdigest()

    def record(self) -> dict:
        """What ``result.yaml`` says of the definition."""
        return {"sha256": self.sha256, "source": self.source, "seed": SEED,
                "samples": SAMPLES, "n_base_parameters": self.size,
                "absent": [self.standard_names[i] for i in self.zero_index]}


def definition_drive(drive: DriveOptions) -> DriveOptions:
    """``drive`` with its velocity scales fixed: they change the values of the Stribeck
    and tanh columns, not which columns depend on which."""
    return dataclasses.replace(
        drive, coulomb_velocity=FIXED_VELOCITY,
        stribeck_velocity=None if drive.stribeck_velocity is None else FIXED_VELOCITY)


def definition_regressor(robot: RobotModel, layout: ParameterLayout, drive: DriveOptions,
                         fitted: list[int] | None = None) -> np.ndarray:
    """The standard regressor of the definition's random states, rows of the ``fitted``
    active joints (all if None)."""
    states = random_states(robot, np.random.default_rng(SEED), SAMPLES)
    W = standard_regressor(robot, layout, definition_drive(drive), *states, workers=1)
    if fitted is None:
        return W
    rows = np.concatenate([np.arange(j * SAMPLES, (j + 1) * SAMPLES) for j in fitted])
    return W[rows]


def definition_from_regressor(W: np.ndarray, names: list[str], groups: list[str],
                              source: str) -> BaseDefinition:
    """The canonical definition of the columns of ``W`` (see the module docstring)."""
    if W.shape[1] != len(names):
        raise ValueError(f"regressor has {W.shape[1]} columns but {len(names)} names")
    zero, base, dep, beta = grouping(W, names)
    col = np.linalg.norm(W, axis=0)
    # the coefficient's size at unit-norm columns decides whether it is structural
    unit = beta * col[base][:, None] / np.where(col[dep] > 0, col[dep], 1.0)[None, :]
    beta = np.where(np.abs(unit) < TOL_ZERO, 0.0,
                    np.vectorize(canonical_coefficient, otypes=[float])(beta)
                    if beta.size else beta)
    M = np.zeros((len(base), W.shape[1]))
    M[np.arange(len(base)), base] = 1.0
    M[:, dep] = beta
    return BaseDefinition(definition_expressions(names, base, dep, beta), base, dep, zero,
                          beta, M, list(names), list(groups), source)


def model_definition(robot: RobotModel, layout: ParameterLayout, drive: DriveOptions,
                     groups: list[str], fitted: list[int] | None = None,
                     absent: tuple[str, ...] = ()) -> BaseDefinition:
    """The base-parameter definition of ``robot`` with ``layout``/``drive``, rows of the
    ``fitted`` active joints (named ``groups``): the same for every recording.
    ``absent``: standard parameters left out of the model (a joint's friction terms that
    its chosen friction model does not have, ``friction_choice.py``): zero columns."""
    W = definition_regressor(robot, layout, drive, fitted)
    unknown = [a for a in absent if a not in layout.names]
    if unknown:
        raise ValueError(f"absent parameters {unknown} are not in the layout")
    W[:, [layout.index(a) for a in absent]] = 0.0
    return definition_from_regressor(W, layout.names, groups, "model")


def check_same_definition(hashes: dict[str, str | None], what: str) -> None:
    """A :class:`DataError` naming two results (keys of ``hashes``) whose base-parameter
    definitions differ: their parameters cannot be lined up."""
    known = {k: h for k, h in hashes.items() if h}
    items = list(known.items())
    for k, h in items[1:]:
        if h != items[0][1]:
            raise DataError(
                f"{what}: {items[0][0]} and {k} have different base-parameter definitions "
                f"({items[0][1][:12]} vs {h[:12]}): their parameters do not line up")


def check_excited(definition: BaseParameters, Wb: np.ndarray, what: str = "the recording"
                  ) -> None:
    """A :class:`DataError` naming the base parameters of ``definition`` that the base
    regressor ``Wb`` of a recording does not excite (zero columns, or combinations of
    the others at the rank rule of ``base_parameters.py``): they cannot be estimated."""
    if Wb.shape[0] == 0:
        raise DataError(f"{what}: no equations (no sample in which a joint moves)")
    zero, _, dep, _ = grouping(_sample_rows(Wb), definition.names)
    missing = sorted(set(zero) | set(dep))
    if missing:
        names = ", ".join(definition.names[i] for i in missing[:5])
        more = f" and {len(missing) - 5} more" if len(missing) > 5 else ""
        raise DataError(f"{what} does not excite {len(missing)} of the model's "
                        f"{definition.size} base parameters ({names}{more}): record a "
                        "richer motion of every fitted joint, or fit fewer joints")


def _sample_rows(W: np.ndarray, max_rows: int = 6000) -> np.ndarray:
    if W.shape[0] <= max_rows:
        return W
    return W[np.linspace(0, W.shape[0] - 1, max_rows).astype(int)]

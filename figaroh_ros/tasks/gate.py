"""The publication gate and the residual sanity of a fit, as data.

A model may replace the robot's only when every :class:`Check` passes:

(a) ``inputs``: every sample finite, inside the URDF joint limits (plus a stated
    tolerance) and the sensor's range;
(b) ``improvement``: the held-out error of each posture (sample), nominal vs calibrated,
    falls in a one-sided paired test (Student's t, ``p < p_value``) AND the
    held-out RMSE falls by at least ``improvement_margin`` of the nominal model's
    (``improvement.py``: the statistical tests and scipy.special in their own module);
(c) ``plausible``: the parameter changes stay within bounds (joint placements, offsets,
    masses) and the inertias are physically consistent;
(d) ``urdf_round_trip``: the written URDF reproduces the estimated model;
(e) ``acceptance``: the user's thresholds (``acceptance.position_rmse_mm``, ...), when set;
    a model that failed only these is published when the goal explicitly overrides them
    (:func:`publication_decision`, Calibrate's ``accept_failed_acceptance``).

A fit whose residual is far above the noise the config states (``residual_limit`` times)
does not explain its data: the task refuses it with a :class:`DataError` naming the likely
causes, or with ``accept_poor_fit`` keeps it, warns and never publishes it.  The verdict
goes into ``result.yaml`` as ``publication: {passed, verdict, checks: [...]}``; a refused
model stays on disk for inspection.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from figaroh_ros.errors import DataError

ROUND_TRIP_GAP = 1e-9          # m / rad between the URDF's kinematics and the estimate's
DEFAULT_RESIDUAL_LIMIT = 10.0  # residual RMS over the stated noise (see config.acceptance)

GEOMETRIC_CAUSES = ("units (mm given as m, degrees as radians)", "the orientation "
                    "convention (measurement.orientation: rpy / rotvec / quaternion)",
                    "the frames (measurement.inverse, calibration.start_frame)",
                    "a wrong tool_frame or marker number (measurement.points)",
                    "postures and measurements out of step")


@dataclass
class Check:
    """One condition of the gate: its value against its limit."""

    name: str
    passed: bool
    value: float | None
    limit: float | None
    detail: str

    def to_dict(self) -> dict:
        num = (lambda v: None if v is None else float(v))
        return {"name": self.name, "passed": bool(self.passed), "value": num(self.value),
                "limit": num(self.limit), "detail": self.detail}

    def line(self) -> str:
        """``name: detail`` (what ``not_published_because`` lists, one per failed check)."""
        return f"{self.name}: {self.detail}"


@dataclass
class Verdict:
    checks: list[Check]

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c.passed for c in self.checks)

    def failed(self) -> list[Check]:
        return [c for c in self.checks if not c.passed]

    def to_dict(self) -> dict:
        return {"passed": self.passed, "verdict": "PASSED" if self.passed else "FAILED",
                "checks": [c.to_dict() for c in self.checks]}


def failed_lines(publication: dict | None) -> list[str]:
    """The failed checks of a ``publication`` entry of result.yaml, one line each."""
    if not publication:
        return ["no publication verdict in the result"]
    lines = [f"{c['name']}: {c['detail']}" for c in publication["checks"] if not c["passed"]]
    return lines if lines or publication["passed"] else ["no check was made"]


ACCEPTANCE = "acceptance_"     # prefix of the checks of the user's thresholds, (e)


@dataclass
class Decision:
    """Whether a model may be published, from its ``publication`` verdict and the goal."""

    why: list[str]            # reasons not to publish, one failed check a line (empty: it may)
    acceptance: str           # "PASSED", "FAILED", "" (the config sets no threshold)
    acceptance_detail: str    # each threshold with its measured number, one a line
    overridden: list[str]     # failed thresholds published on the goal's explicit override


def acceptance_of(publication: dict | None) -> tuple[str, str]:
    """The verdict of the user's acceptance thresholds alone (``PASSED`` / ``FAILED``, ""
    when none is set) and each threshold's line with its measured value."""
    checks = [c for c in (publication or {}).get("checks", [])
              if c["name"].startswith(ACCEPTANCE)]
    if not checks:
        return "", ""
    verdict = "PASSED" if all(c["passed"] for c in checks) else "FAILED"
    return verdict, "\n".join(f"{c['name']}: {c['detail']}" for c in checks)


def publication_decision(publication: dict | None,
                         accept_failed_acceptance: bool = False) -> Decision:
    """Publish only a PASSED verdict; ``accept_failed_acceptance`` (the goal's explicit
    override) publishes a model that failed the acceptance thresholds and nothing else -
    never one that failed the inputs, improvement, plausibility, round-trip or residual
    checks."""
    acceptance, detail = acceptance_of(publication)
    if publication and publication["passed"]:
        return Decision([], acceptance, detail, [])
    why = failed_lines(publication)
    failed = [c for c in (publication or {}).get("checks", []) if not c["passed"]]
    if accept_failed_acceptance and failed and \
            all(c["name"].startswith(ACCEPTANCE) for c in failed):
        return Decision([], acceptance, detail, why)
    return Decision(why, acceptance, detail, [])


# ------------------------------------------------------------------ (a) inputs
def finite_check(name: str, values, ids=None, columns=None, bound: float = math.inf,
                 unit: str = "") -> Check:
    """Every entry of ``values`` (rows x columns) finite and ``|v| <= bound``; the detail
    names the first bad row (``ids``) and column."""
    V = np.asarray(values, float).reshape(len(values), -1)
    bad = ~np.isfinite(V) | (np.abs(np.nan_to_num(V, nan=0.0)) > bound)
    worst = float(np.max(np.abs(V), initial=0.0)) if np.all(np.isfinite(V)) else math.inf
    if not bad.any():
        return Check(name, True, worst, bound, f"{V.size} values finite, largest "
                     f"|value| {worst:.6g}{unit} (limit {bound:.6g}{unit})")
    r, c = np.argwhere(bad)[0]
    row = ids[r] if ids is not None else r
    col = columns[c] if columns is not None else c
    return Check(name, False, worst, bound, f"{int(bad.sum())} values non-finite or beyond "
                 f"{bound:.6g}{unit}: first at row {row}, column {col}: {V[r, c]!r}")


def refuse_failed(checks: list[Check], what: str) -> list[Check]:
    """``checks`` when they all passed; else a DataError with the first failure (values
    that no solver can make sense of are refused before any solving)."""
    for c in checks:
        if not c.passed:
            raise DataError(f"{what}: {c.detail}")
    return checks


def joint_limits_check(Q, lower, upper, tolerance: float, joints: list[str]) -> Check:
    """Joint readings (rows x joints) inside ``[lower - tolerance, upper + tolerance]``."""
    Q = np.asarray(Q, float)
    excess = np.maximum(np.asarray(lower) - Q, Q - np.asarray(upper))
    worst = float(excess.max(initial=-math.inf))
    r, j = np.unravel_index(int(np.argmax(excess)), excess.shape)
    ok = worst <= tolerance
    where = f"{joints[j]} = {Q[r, j]:.6g} at posture {r}, limits [{lower[j]:.6g}, {upper[j]:.6g}]"
    detail = (f"every reading inside the joint limits (+{tolerance:g}); closest: {where}"
              if ok else f"{int((excess > tolerance).sum())} readings beyond the joint limits "
              f"by more than {tolerance:g}: worst {worst:.6g} ({where})")
    return Check("joint_limits", ok, worst, tolerance, detail)


def bound_check(name: str, value: float, limit: float, what: str, unit: str) -> Check:
    """``value <= limit`` (a plausibility bound or an acceptance threshold)."""
    ok = bool(np.isfinite(value) and value <= limit)
    u = f" {unit}" if unit else ""
    return Check(name, ok, value, limit, f"{what} {value:.6g}{u} "
                 f"({'within' if ok else 'beyond'} {limit:g}{u})")


def round_trip_check(gap: float | None) -> Check:
    if gap is None:
        return Check("urdf_round_trip", False, None, ROUND_TRIP_GAP, "no URDF written")
    ok = bool(gap <= ROUND_TRIP_GAP)
    return Check("urdf_round_trip", ok, gap, ROUND_TRIP_GAP, f"reloaded URDF reproduces the "
                 f"estimated model to {gap:.3g} (required <= {ROUND_TRIP_GAP:g})")


# ------------------------------------------------------------------ residual sanity
def residual_check(ratio: float, limit: float, noise: str) -> Check:
    """The fit's residual RMS over the noise the config states (or the data show)."""
    ok = bool(np.isfinite(ratio) and ratio <= limit)
    return Check("residual_vs_noise", ok, ratio, limit, f"residual RMS {ratio:.3g} x the "
                 f"{noise} (limit {limit:g} x)")


def require_sane_fit(check: Check, accept_poor_fit: bool, what: str,
                     causes=GEOMETRIC_CAUSES) -> list[str]:
    """DataError when the fit does not explain its data, unless ``accept_poor_fit``: then
    the warning lines for the result."""
    if check.passed:
        return []
    message = (f"{what} does not explain its data: {check.detail}; likely causes: "
               + "; ".join(causes))
    if not accept_poor_fit:
        raise DataError(message + ". Pass --accept-poor-fit (accept_poor_fit: true) to "
                        "keep the result with a warning (it is never published)")
    return ["POOR FIT ACCEPTED: " + message]


def successive_difference_noise(y, rows=None) -> np.ndarray:
    """Noise std per column from successive samples (von Neumann's estimator): for a
    signal sampled much faster than it varies, ``y[k+1] - y[k]`` is the difference of two
    repeated measurements, of variance ``2 sigma^2``.  ``rows``: the samples to use (pairs
    of consecutive usable rows only)."""
    y = np.asarray(y, float).reshape(len(y), -1)
    use = np.ones(len(y), bool) if rows is None else np.zeros(len(y), bool)
    if rows is not None:
        use[rows] = True
    pair = use[1:] & use[:-1]
    d = np.diff(y, axis=0)[pair]
    if len(d) < 10:
        raise DataError(f"only {len(d)} pairs of consecutive samples to estimate the noise")
    return np.sqrt(np.mean(d ** 2, axis=0) / 2.0)

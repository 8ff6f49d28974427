"""A payload an object can have: the TLS gains' payload brought onto the physically
realisable set (Wensing, Kim & Slotine 2017).

A payload of known mass ``m`` with standard parameters ``pi`` (about the joint frame) is
*realisable* when

* its pseudo-inertia is positive semidefinite, ``J(pi) = [[Sigma, h], [h^T, m]] >= 0``,
  ``Sigma = tr(I)/2 1 - I``, ``h = m c`` (Wensing et al. 2017, Thm. 1: some non-negative
  density has these moments);
* given the box ``[c-, c+]`` (joint frame) that holds the object: its centre of mass is in
  it, ``m c- <= h <= m c+``, and its mass lies in the ellipsoid circumscribed about the box
  (semi-axes ``sqrt(3)`` times the half-sizes, centre ``x0``): ``tr(J(pi) Q) >= 0`` with
  ``[x; 1]^T Q [x; 1] = 1 - (x - x0)^T S^-2 (x - x0)`` (Wensing et al. 2017, Eq. 20).
  With ``J >= 0`` this is exactly "a density inside the ellipsoid": ``Q`` has a single
  positive eigenvalue, so a PSD ``J`` with ``tr(J Q) >= 0`` splits into point masses
  ``v v^T`` with ``v^T Q v >= 0`` each (rank-one decomposition, Sturm & Zhang 2003).

The refined TLS solution ``x = (phi_b, phi_up, theta)`` comes with the information ``H =
J_r^T J_r`` of its whitened residuals (``tls.refine``).  A non-realisable payload moves to
the closest realisable one in that metric: ``min (x' - x)^T H (x' - x)`` over the
unknowns ``x'`` whose payload is realisable.  For a payload change ``dp`` the other
unknowns' best answer is ``dx_o = -H_oo^+ H_op dp`` (the linearised output-error model),
which leaves ``dp^T H_p dp`` with ``H_p = H_pp - H_po H_oo^+ H_op`` (the Schur complement:
the payload's information once the robot parameters and gains have adapted).  So one
small semidefinite program in ``dp`` and the payload's ten parameters (cvxpy, Clarabel)
decides the payload, and the robot parameters and gains follow.  The truth is in the
constraint set (a cylinder over a convex set), so the projection never moves the
linearised estimate away from it in the ``H`` norm.  A realisable payload is returned
unchanged; the standard deviations stay the unconstrained ones (an active constraint
only removes uncertainty, so they are conservative).

Payload parameters the loaded experiment does not separate (``tls.payload_structure``:
an identified value is its parameter plus ``sum beta p_d``) are free in the program:
realisability asks for *some* completion.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

import numpy as np

from figaroh_ros.errors import ConfigError, SolverError
from figaroh_ros.identification.parameters import INERTIAL
from figaroh_ros.identification.physical.convex import _cvxpy, _solve
from figaroh_ros.identification.physical.inertia import pseudo_inertia, pseudo_inertia_basis

if TYPE_CHECKING:     # an annotation only: the gains config checks its box without scipy.optimize
    from figaroh_ros.identification.tls import TLSResult

EPSILON = 1e-8     # the program asks J >= EPSILON * m * 1: realisable with a margin
TOLERANCE = 1e-9   # the verdict's: eigenvalue relative to the largest, CoM in m
BOX_FIELD = "tls.payload_box"


@dataclass(frozen=True)
class PayloadBounds:
    """The box (joint frame, m) that holds the object: corners ``lower`` and ``upper``."""

    lower: tuple
    upper: tuple

    def __post_init__(self):
        lo, hi = (_vector3(v, f"{BOX_FIELD}.{k}") for k, v in
                  (("lower", self.lower), ("upper", self.upper)))
        bad = [k for k in range(3) if not hi[k] > lo[k]]
        if bad:
            raise ConfigError(f"{BOX_FIELD}: upper must exceed lower on every axis; axis "
                              f"{'xyz'[bad[0]]}: lower {float(lo[bad[0]])!r}, upper {float(hi[bad[0]])!r}")
        object.__setattr__(self, "lower", tuple(float(x) for x in lo))
        object.__setattr__(self, "upper", tuple(float(x) for x in hi))
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            representable = np.all(np.isfinite(self.ellipsoid_q()))
        if not representable:
            raise ConfigError(f"{BOX_FIELD}: a box this far or this thin cannot be "
                              f"represented (lower {[float(v) for v in lo]}, upper {[float(v) for v in hi]})")

    def ellipsoid_q(self) -> np.ndarray:
        """``Q`` of the circumscribed ellipsoid (module docstring)."""
        lo, hi = np.array(self.lower), np.array(self.upper)
        x0, s = (lo + hi) / 2, np.sqrt(3.0) * (hi - lo) / 2
        with np.errstate(over="ignore"):          # a huge box: S^-2 = 0, no bound
            S2 = np.diag(1.0 / s ** 2)
        Q = np.zeros((4, 4))
        Q[:3, :3], Q[:3, 3], Q[3, :3] = -S2, S2 @ x0, S2 @ x0
        Q[3, 3] = 1.0 - x0 @ S2 @ x0
        return Q

    def to_dict(self) -> dict:
        return {"lower": list(self.lower), "upper": list(self.upper)}


def _vector3(value, name: str) -> np.ndarray:
    try:
        v = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise ConfigError(f"{name}: expected 3 numbers (m), got {value!r}") from None
    if v.shape != (3,) or not np.all(np.isfinite(v)):
        raise ConfigError(f"{name}: expected 3 finite numbers (m), got {value!r}")
    return v


@dataclass
class PayloadVerdict:
    """Whether a payload is realisable: its mass, the smallest eigenvalue of its
    pseudo-inertia (kg.m^2) and, with a box, its centre of mass's largest excursion out of
    it (m, 0 inside) and the ellipsoid margin ``tr(J Q) / m`` (1 minus the mean squared
    normalised distance of the mass from the ellipsoid's centre; >= 0 inside)."""

    mass: float
    pseudo_inertia_min_eigenvalue: float
    pseudo_inertia_max_eigenvalue: float
    com_outside_box: float | None = None
    ellipsoid_margin: float | None = None

    def realisable(self, tol: float = TOLERANCE) -> bool:
        scale = max(abs(self.pseudo_inertia_max_eigenvalue), 1e-300)
        return self.mass > 0 and self.pseudo_inertia_min_eigenvalue >= -tol * scale and \
            (self.com_outside_box is None or self.com_outside_box <= tol) and \
            (self.ellipsoid_margin is None or self.ellipsoid_margin >= -tol)

    def to_dict(self) -> dict:
        return {"realisable": self.realisable(), "mass": self.mass,
                "pseudo_inertia_min_eigenvalue": self.pseudo_inertia_min_eigenvalue,
                "com_outside_box": self.com_outside_box,
                "ellipsoid_margin": self.ellipsoid_margin}


def payload_verdict(pi, bounds: PayloadBounds | None = None) -> PayloadVerdict:
    """The verdict of the standard 10-vector ``pi`` (``[m, mx, my, mz, Ixx, ..., Izz]``,
    joint frame).  A non-finite ``pi`` is refused (SolverError: it comes from a fit)."""
    pi = np.asarray(pi, dtype=float)
    if pi.shape != (10,) or not np.all(np.isfinite(pi)):
        raise SolverError(f"payload verdict: expected the payload's 10 finite standard "
                          f"parameters, got {np.array2string(pi, precision=4)}")
    scale = max(float(np.abs(pi).max()), 1e-300)         # eigenvalues of J / scale: no overflow
    e = np.linalg.eigvalsh(pseudo_inertia(pi / scale)) * scale
    v = PayloadVerdict(float(pi[0]), float(e[0]), float(e[-1]))
    if bounds is not None:
        v.com_outside_box, v.ellipsoid_margin = _box_terms(pi, bounds)
    return v


def _box_terms(pi: np.ndarray, bounds: PayloadBounds) -> tuple[float, float]:
    """(CoM excursion, ellipsoid margin); infinite when the mass is not positive (no CoM)
    or the ratios overflow."""
    if pi[0] <= 0:
        return float("inf"), float("-inf")
    with np.errstate(over="ignore", invalid="ignore"):
        c = pi[1:4] / pi[0]
        out = np.maximum(np.array(bounds.lower) - c, c - np.array(bounds.upper)).max()
        Q = bounds.ellipsoid_q()
        margin = np.trace(pseudo_inertia(pi / pi[0]) @ Q)
    out = float(max(out, 0.0)) if np.isfinite(out) else float("inf")
    return out, float(margin) if np.isfinite(margin) else float("-inf")


@dataclass(frozen=True)
class PayloadStructure:
    """What the fit knows of the payload's standard parameters (indices in ``INERTIAL``
    order): ``known`` values, ``unknown`` identified ones (``TLSResult.payload``, same
    order) and ``deps`` from ``tls.payload_structure`` (empty: each identified value is
    its own parameter)."""

    known: dict
    unknown: list
    deps: dict = field(default_factory=dict)

    def separated(self) -> bool:
        """Every one of the ten parameters known or identified on its own."""
        alone = all(not pairs for pairs in self.deps.values())
        return alone and sorted(set(self.known) | set(self.unknown)) == list(range(10))

    def standard(self, values: np.ndarray) -> np.ndarray:
        pi = np.zeros(10)
        for k, v in self.known.items():
            pi[k] = v
        pi[self.unknown] = values
        return pi


@dataclass
class ConstrainedPayload:
    """The payload as identified (its ten parameters: a completion when some are not
    separated) and its verdict; the result with a realisable payload (``result``, ``res``
    itself when ``active`` is false), that payload and its verdict; ``shift``: how far the
    constraint moved the payload, ``sqrt(dp^T H_p dp)`` (in standard deviations)."""

    identified: np.ndarray
    identified_verdict: PayloadVerdict
    payload: np.ndarray
    verdict: PayloadVerdict
    result: TLSResult
    active: bool
    shift: float = 0.0

    def to_dict(self) -> dict:
        def described(pi, verdict):
            return {"parameters": {n: float(x) for n, x in zip(INERTIAL, pi)},
                    "com": [float(x) for x in pi[1:4] / pi[0]] if pi[0] > 0 else None,
                    "verdict": verdict.to_dict()}
        return {"constraint_active": self.active, "shift_in_std": float(self.shift),
                "identified": described(self.identified, self.identified_verdict),
                "constrained": described(self.payload, self.verdict)}


def constrain_payload(res: TLSResult, structure: PayloadStructure,
                      bounds: PayloadBounds | None = None) -> ConstrainedPayload:
    """``res`` with its payload brought onto the realisable set (module docstring)."""
    identified, verdict = identified_payload(res, structure, bounds)
    if verdict.realisable():
        return ConstrainedPayload(identified, verdict, identified, verdict, res, False)
    if not structure.unknown:
        raise SolverError(f"the known payload is not realisable ({_why(verdict)}): check "
                          f"tls.payload_mass, payload_com, payload_inertia and {BOX_FIELD}")
    if res.information is None:
        raise SolverError("a physically constrained payload needs the refined solution's "
                          "information matrix (tls.refine)")
    p, o = _blocks(res)
    H = res.information
    Hop = H[np.ix_(o, p)]
    Hoo_pinv = np.linalg.pinv(H[np.ix_(o, o)])
    Hp = H[np.ix_(p, p)] - Hop.T @ Hoo_pinv @ Hop
    dp, pi = _projection(res, structure, bounds, (Hp + Hp.T) / 2)
    x = _packed(res)
    x[p] += dp
    x[o] -= Hoo_pinv @ Hop @ dp
    shift = float(np.sqrt(max(dp @ Hp @ dp, 0.0)))
    return ConstrainedPayload(identified, verdict, pi, payload_verdict(pi, bounds),
                              _unpacked(res, x), True, shift)


def _why(v: PayloadVerdict) -> str:
    parts = [f"pseudo-inertia min eigenvalue {v.pseudo_inertia_min_eigenvalue:.3g} kg.m^2"]
    if v.com_outside_box:
        parts.append(f"centre of mass {v.com_outside_box:.3g} m outside the box")
    if v.ellipsoid_margin is not None and v.ellipsoid_margin < 0:
        parts.append(f"mass spread beyond the box's ellipsoid (margin "
                     f"{v.ellipsoid_margin:.3g})")
    return ", ".join(parts)


def _blocks(res: TLSResult) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the payload's unknowns and of the others in the refined ``x``."""
    pb, pu = len(res.phi_b), len(res.payload)
    p = np.arange(pb, pb + pu)
    return p, np.setdiff1d(np.arange(res.information.shape[0]), p)


def identified_payload(res: TLSResult, s: PayloadStructure,
                       bounds: PayloadBounds | None = None) -> tuple[np.ndarray, PayloadVerdict]:
    """The identified payload's ten parameters and their verdict; when some are not
    separated, the completion whose pseudo-inertia's smallest eigenvalue is largest."""
    pi = s.standard(np.asarray(res.payload, float)) if s.separated() else _completion(res, s)
    return pi, payload_verdict(pi, bounds)


def _completion(res: TLSResult, s: PayloadStructure) -> np.ndarray:
    cp = _cvxpy()
    P, t = cp.Variable(10), cp.Variable()
    J = _pseudo(cp, P)
    cons = _data_constraints(P, res.payload, s) + [J - t * np.eye(4) >> 0]
    _solve(cp, cp.Problem(cp.Maximize(t), cons), "payload completion")
    return np.asarray(P.value, float)


def _pseudo(cp, P):
    E = pseudo_inertia_basis()
    return sum(P[k] * E[k] for k in range(10))


def _data_constraints(P, values, s: PayloadStructure) -> list:
    """What the data say of the payload's parameters ``P``: the known ones and the
    identified combinations equal to ``values`` (``cvxpy`` expressions allowed)."""
    cons = [P[k] == v for k, v in s.known.items()]
    combos = {b: P[b] + sum(beta * P[d] for d, beta in pairs) for b, pairs in s.deps.items()}
    for b, combo in combos.items():
        if b in s.known and s.deps[b]:
            cons.append(combo == s.known[b])
    for i, b in enumerate(s.unknown):
        cons.append(combos.get(b, P[b]) == values[i])
    return cons


def _projection(res: TLSResult, s: PayloadStructure, bounds, Hp: np.ndarray):
    """The payload's change ``dp`` and its ten realisable parameters."""
    cp = _cvxpy()
    dp, P = cp.Variable(len(s.unknown)), cp.Variable(10)
    m = s.known[0]
    Jv = cp.Variable((4, 4), symmetric=True)
    cons = _data_constraints(P, res.payload + dp, s)
    cons += [Jv == _pseudo(cp, P), Jv - EPSILON * m * np.eye(4) >> 0]
    if bounds is not None:
        cons += [P[1:4] >= m * np.array(bounds.lower), P[1:4] <= m * np.array(bounds.upper),
                 cp.trace(Jv @ bounds.ellipsoid_q()) >= 0]
    scale = np.sqrt(np.maximum(np.diag(Hp), 1e-300))       # dp in standard deviations
    L = np.linalg.cholesky(Hp / np.outer(scale, scale) + 1e-12 * np.eye(len(Hp)))
    problem = cp.Problem(cp.Minimize(cp.sum_squares(L.T @ cp.multiply(scale, dp))), cons)
    where = "" if bounds is None else f" with its centre of mass in {BOX_FIELD} " \
        f"{bounds.to_dict()}"
    _solve(cp, problem, "physically constrained payload",
           f"no realisable payload of mass {m} kg{where} fits what the data fix: is the "
           f"box right?")
    return np.asarray(dp.value, float), np.asarray(P.value, float)


def _packed(res: TLSResult) -> np.ndarray:
    thetas = [1.0 / g for g in (res.drive_gains, res.sensor_gains) if g is not None]
    return np.concatenate([res.phi_b, res.payload] + thetas)


def _unpacked(res: TLSResult, x: np.ndarray) -> TLSResult:
    pb, pu = len(res.phi_b), len(res.payload)
    out, k = {}, pb + pu
    for kind in ("drive_gains", "sensor_gains"):
        g = getattr(res, kind)
        if g is not None:
            out[kind] = 1.0 / x[k:k + len(g)]
            k += len(g)
    return replace(res, phi_b=x[:pb], payload=x[pb:pb + pu], **out)

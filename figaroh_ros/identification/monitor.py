"""Model-based torque monitoring: the identified dynamics predict the joint torques of the
measured motion, and a residual that leaves its learned band flags a contact.

Prediction (Nguyen et al. 2023 Eq. 2-3, one sample)::

    tau_hat = Y(q, dq, ddq) pi + Ia ddq + fv dq + fs c(dq) + off

with ``Y`` pinocchio's joint torque regressor (inertial parameters ``pi`` of every link)
and the drive-chain terms of :mod:`figaroh_ros.identification.parameters`, split in
three parts that add up to ``tau_hat`` (:class:`TorqueParts`)::

    gravity  = g(q) = Y(q, 0, 0) pi              (RNEA at rest: computeGeneralizedGravity)
    friction = fv dq + fs c(dq) + off            (viscous, Coulomb, offset as identified)
    inertial = (Y(q, dq, ddq) - Y(q, 0, 0)) pi + Ia ddq    (M(q) ddq + C(q, dq) dq, rotors)

The identification estimates base parameters ``phi_b = M phi`` only; the standard
vector used here is the one closest to the URDF's nominal values that reproduces them
exactly, ``phi = phi_0 + M^+ (phi_b - M phi_0)``, so ``tau_hat`` equals ``W_b phi_b`` for
every motion (the same numbers as :meth:`IdentificationResult.predict`).

Online signals: the joint positions and the measured torques pass through the same causal
Butterworth low-pass; velocity and acceleration are central differences of the filtered
positions one sample back, where the filtered torque is compared, so prediction and
measurement carry the same delay.  The residual ``r = tau_f - tau_hat`` is compared per
joint with ``k sigma_j``, ``sigma_j`` learned by running the same pipeline over
contact-free validation data; a contact is flagged after ``persistence`` consecutive
samples outside the band and cleared after as many inside (De Luca's residual-based
collision detection, with the identified model as the nominal).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pinocchio as pin
import yaml
from scipy.signal import butter, lfilter

from figaroh_ros.errors import DataError, ModelError
from figaroh_ros.identification.parameters import (
    PIN_TO_STD, DriveOptions, ParameterLayout, parameter_layout, standard_parameters
)
from figaroh_ros.identification.regressor import coulomb
from figaroh_ros.model.loading import load_model
from figaroh_ros.model.robot import RobotModel

if TYPE_CHECKING:     # an annotation only: the node starts without the fit (cyipopt, filters)
    from figaroh_ros.identification.result import IdentificationResult

WARM_UP_S = 0.25      # the filter's start transient, not judged
_TERM = re.compile(r"^(?:(\d[\d.e+-]*)\*)?([A-Za-z]+\d+)$")


@dataclass
class DynamicsModel:
    """The identified dynamics of the active joints, evaluated one sample at a time."""

    robot: RobotModel
    drive: DriveOptions
    inertial: np.ndarray            # pinocchio order, 10 per link, links 1..njoints-1
    Ia: np.ndarray
    fv: np.ndarray
    fs: np.ndarray
    off: np.ndarray
    fva: np.ndarray | None = None   # per-direction viscous friction (friction_choice.py)
    fst: np.ndarray | None = None   # Stribeck excess, at drive.stribeck_velocity
    _data: pin.Data = field(init=False, repr=False)
    _q: np.ndarray = field(init=False, repr=False)
    _v: np.ndarray = field(init=False, repr=False)
    _a: np.ndarray = field(init=False, repr=False)

    def __post_init__(self):
        self._data = self.robot.model.createData()
        self._q = pin.neutral(self.robot.model)
        self._v, self._a = np.zeros(self.robot.model.nv), np.zeros(self.robot.model.nv)

    @property
    def joints(self) -> list[str]:
        return list(self.robot.active_joints)

    @classmethod
    def from_standard(cls, robot: RobotModel, layout: ParameterLayout, drive: DriveOptions,
                      phi: np.ndarray) -> "DynamicsModel":
        if robot.floating_base or layout.motor_cols:
            raise ModelError("the torque monitor handles fixed-base robots without coupled "
                             "motors")
        links = sorted(layout.inertial_cols)
        inv = np.argsort(PIN_TO_STD)
        inertial = np.concatenate([phi[layout.inertial_cols[j]][inv] for j in links])

        def drive_terms(cols):
            return np.array([phi[c] if c >= 0 else 0.0 for c in cols])
        extra = [None if cols is None else drive_terms(cols)
                 for cols in (layout.fva_col, layout.fst_col)]
        return cls(robot, drive, inertial, drive_terms(layout.ia_col),
                   drive_terms(layout.fv_col), drive_terms(layout.fs_col),
                   drive_terms(layout.off_col), *extra)

    @classmethod
    def from_result(cls, result: IdentificationResult) -> "DynamicsModel":
        """From an :class:`IdentificationResult` of joint torques."""
        if result.model is None or result.joints != result.model.active_joints:
            raise ModelError("the torque monitor needs a joint-torque identification, not a "
                             "contact-wrench one")
        phi = equivalent_standard(result.model, result.layout, result.base.M,
                                  result.estimate.phi)
        return cls.from_standard(result.model, result.layout, result.drive, phi)

    @classmethod
    def from_files(cls, result_yaml: str, urdf: str, coulomb_model: str = "sign",
                   coulomb_velocity: float = 0.01) -> "DynamicsModel":
        """From an identification's ``result.yaml`` and the URDF it was identified on:
        the base parameters' grouped expressions give ``M``."""
        summary = read_identification(result_yaml)
        robot = load_model(urdf, summary["joints"])
        names = [t for row in summary["base_parameters"] for t in _terms(row["name"])[1]]
        drive = DriveOptions(viscous_friction=any(n.startswith("fv") for n in names),
                             coulomb_friction=any(n.startswith("fs") for n in names),
                             coulomb_model=coulomb_model, coulomb_velocity=coulomb_velocity,
                             rotor_inertia=any(n.startswith("Ia") for n in names),
                             torque_offset=any(n.startswith("off") for n in names))
        layout = parameter_layout(robot, drive)
        M, phi_b = base_matrix(summary["base_parameters"], layout, result_yaml)
        return cls.from_standard(robot, layout, drive, equivalent_standard(robot, layout, M,
                                                                           phi_b))

    def torque(self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
        """Predicted joint torques of one sample (active joints, joint side)."""
        return self.parts(q, dq, ddq).total

    def parts(self, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> "TorqueParts":
        """Gravity, friction and inertial parts of the predicted torques (module
        docstring): ``g(q) = Y(q, 0, 0) pi``, the rest of ``Y pi`` plus ``Ia ddq``."""
        rigid = self._rigid(q, dq, ddq)
        gravity = self._rigid(q, 0.0, 0.0)
        friction = self.fv * dq + self.fs * coulomb(dq, self.drive) + self.off
        if self.fva is not None:
            friction = friction + self.fva * np.minimum(dq, 0.0)
        if self.fst is not None and self.drive.stribeck_velocity is not None:
            friction = friction + self.fst * np.sign(dq) * np.exp(
                -(np.asarray(dq) / self.drive.stribeck_velocity) ** 2)
        return TorqueParts(gravity, friction, rigid - gravity + self.Ia * ddq)

    def _rigid(self, q, dq, ddq) -> np.ndarray:
        """``Y(q, dq, ddq) pi``: the rigid bodies' torques (RNEA, linear in ``pi``)."""
        idx_q, idx_v = self.robot.idx_q, self.robot.idx_v
        self._q[idx_q], self._v[idx_v], self._a[idx_v] = q, dq, ddq
        Y = pin.computeJointTorqueRegressor(self.robot.model, self._data, self._q,
                                            self._v, self._a)
        return Y[idx_v] @ self.inertial


@dataclass
class TorqueParts:
    """Predicted joint torques split by cause (module docstring); ``total`` is
    ``tau_hat``."""

    gravity: np.ndarray
    friction: np.ndarray
    inertial: np.ndarray

    @property
    def total(self) -> np.ndarray:
        return self.gravity + self.friction + self.inertial


def equivalent_standard(robot: RobotModel, layout: ParameterLayout, M: np.ndarray,
                        phi_b: np.ndarray) -> np.ndarray:
    """The standard vector nearest the URDF's that reproduces the base parameters."""
    phi0 = standard_parameters(robot, layout)
    return phi0 + np.linalg.pinv(M) @ (np.asarray(phi_b, float) - M @ phi0)


def _terms(expression: str) -> tuple[list[float], list[str]]:
    """``'Izz1 + Ia1 - 0.05*m3'`` -> ``([1, 1, -0.05], ['Izz1', 'Ia1', 'm3'])``."""
    tokens = expression.split()
    signs, coefs, names = [1.0] + [1.0 if s == "+" else -1.0 for s in tokens[1::2]], [], []
    for sign, term in zip(signs, tokens[0::2]):
        match = _TERM.match(term)
        if match is None or (len(tokens) > 1 and any(s not in "+-" for s in tokens[1::2])):
            raise DataError(f"cannot read the base parameter expression {expression!r}")
        coefs.append(sign * float(match.group(1) or 1.0))
        names.append(match.group(2))
    return coefs, names


def base_matrix(rows: list[dict], layout: ParameterLayout, where: str):
    """``M`` (base x standard) and the base values from ``result.yaml`` rows."""
    M = np.zeros((len(rows), layout.size))
    for i, row in enumerate(rows):
        for c, name in zip(*_terms(row["name"])):
            if name not in layout.names:
                raise DataError(f"{where}: base parameter {row['name']!r} names {name!r}, "
                                "which the URDF's model does not have: wrong URDF?")
            M[i, layout.index(name)] = c
    return M, np.array([float(r["value"]) for r in rows])


def read_identification(path: str) -> dict:
    """A dynamic identification's ``result.yaml`` (a :class:`DataError` otherwise)."""
    try:
        with open(path) as f:
            summary = yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as exc:
        raise DataError(f"cannot read identification result {path}: {exc}") from exc
    if not isinstance(summary, dict) or "base_parameters" not in summary:
        raise DataError(f"{path} is not a dynamic identification result (no "
                        "base_parameters)")
    rows, joints = summary["base_parameters"], summary.get("joints")
    if not (isinstance(joints, list) and isinstance(rows, list) and all(
            isinstance(r, dict) and isinstance(r.get("name"), str) and
            isinstance(r.get("value"), (int, float)) for r in rows)):
        raise DataError(f"{path}: joints (a list) and base_parameters ({{name, value}} "
                        "rows) are required")
    return summary


def _step_envelope(b: np.ndarray, a: np.ndarray, tol: float = 1e-4) -> np.ndarray:
    """``e[k] = max over m >= k of |1 - s[m]|``, ``s`` the filter's unit step response:
    the largest part of a step still to come through the filter ``k`` samples on."""
    s = lfilter(b, a, np.ones(2000))
    err = np.abs(1 - s)
    envelope = np.maximum.accumulate(err[::-1])[::-1]
    return envelope[:max(int(np.argmax(envelope < tol)), 1) + 1]


class CausalDerivatives:
    """Causal Butterworth low-pass (order 2, biquad, transposed direct form II) on the
    stacked ``[q, tau]``; central differences one sample back."""

    def __init__(self, n: int, rate_hz: float, cutoff_hz: float):
        if not 0 < cutoff_hz < rate_hz / 2:
            raise ModelError(f"cutoff {cutoff_hz} Hz must be in (0, {rate_hz / 2}) Hz "
                             f"(half the rate {rate_hz} Hz)")
        b, a = butter(2, cutoff_hz, fs=rate_hz)
        self.b, self.a, self.n, self.dt = b, a, n, 1.0 / rate_hz
        self.cutoff_hz = cutoff_hz
        # low-frequency group delay of the filter plus the one-sample-back differences
        self.delay = np.sqrt(2) / (2 * np.pi * cutoff_hz) + self.dt
        self.step_envelope = _step_envelope(b, a)
        self.z1 = self.z2 = None
        self.history: list[np.ndarray] = []

    def _filter(self, x: np.ndarray) -> np.ndarray:
        if self.z1 is None:                  # start at rest on the first sample (y = x)
            self.z1, self.z2 = (1 - self.b[0]) * x, (self.b[2] - self.a[2]) * x
        y = self.b[0] * x + self.z1
        self.z1 = self.b[1] * x - self.a[1] * y + self.z2
        self.z2 = self.b[2] * x - self.a[2] * y
        return y

    def step(self, q: np.ndarray, tau: np.ndarray):
        """Filtered ``(q, dq, ddq, tau)`` one sample back, or None while warming up."""
        y = self._filter(np.concatenate([q, tau]))
        self.history = (self.history + [y])[-3:]
        if len(self.history) < 3:
            return None
        y0, y1, y2 = self.history
        n, dt = self.n, self.dt
        return (y1[:n], (y2[:n] - y0[:n]) / (2 * dt),
                (y2[:n] - 2 * y1[:n] + y0[:n]) / dt ** 2, y1[n:])


@dataclass
class ResidualBand:
    """Per joint ``k sigma_j``: outside for ``persistence`` samples = contact."""

    joints: list[str]
    sigma: np.ndarray
    k: float = 5.0
    persistence: int = 3

    @property
    def threshold(self) -> np.ndarray:
        return self.k * self.sigma

    def to_dict(self) -> dict:
        return {"k": float(self.k), "persistence": int(self.persistence),
                "sigma": {j: float(s) for j, s in zip(self.joints, self.sigma)}}

    def save(self, path: str) -> None:
        with open(path, "w") as f:
            yaml.safe_dump(self.to_dict(), f, sort_keys=False)

    @classmethod
    def load(cls, path: str, joints: list[str]) -> "ResidualBand":
        try:
            with open(path) as f:
                d = yaml.safe_load(f)
            sigma = np.array([float(d["sigma"][j]) for j in joints])
            band = cls(list(joints), sigma, float(d.get("k", 5.0)),
                       int(d.get("persistence", 3)))
        except (OSError, yaml.YAMLError, KeyError, TypeError, ValueError) as exc:
            raise DataError(f"cannot read residual band {path} for joints {joints}: "
                            f"{exc!r}") from exc
        if not (np.all(sigma > 0) and band.k > 0 and band.persistence >= 1):
            raise DataError(f"{path}: sigma must be > 0, k > 0 and persistence >= 1")
        return band


@dataclass
class MonitorSample:
    """One judged sample: ``residual = tau_f - predicted``, ``predicted = parts.total``."""

    parts: TorqueParts
    residual: np.ndarray
    contact: bool

    @property
    def predicted(self) -> np.ndarray:
        return self.parts.total


class TorqueMonitor:
    """Predicted torque, residual and contact flag, one joint-state sample at a time."""

    def __init__(self, model: DynamicsModel, band: ResidualBand | None, rate_hz: float,
                 cutoff_hz: float = 10.0):
        self.model, self.band = model, band
        self.signals = CausalDerivatives(len(model.joints), rate_hz, cutoff_hz)
        self.outside = self.inside = 0
        self.contact = False
        self.warm_up = int(np.ceil(WARM_UP_S * rate_hz))   # samples before judging
        # samples since each joint's Coulomb friction was last ambiguous
        self.since = np.full(len(model.joints), 10 ** 9)

    def reset(self) -> None:
        """Forget the signals (after a gap in the stream): warm up again."""
        self.__init__(self.model, self.band, 1.0 / self.signals.dt, self.signals.cutoff_hz)

    def step(self, q, tau) -> MonitorSample | None:
        """One sample of positions and measured torques (active joint order)."""
        out = self.signals.step(np.asarray(q, float), np.asarray(tau, float))
        if out is None:
            return None
        qf, dq, ddq, tau_f = out
        parts = self.model.parts(qf, dq, ddq)
        residual = tau_f - parts.total
        self.ambiguous = self._friction_ambiguous(dq, ddq)
        self.since = np.where(self.ambiguous, 0, self.since + 1)
        self.in_transition = self.since < len(self.signals.step_envelope) - 1
        self.warm_up -= 1
        if self.band is not None and self.warm_up < 0:
            env = self.signals.step_envelope
            allowance = 2 * np.abs(self.model.fs) * env[np.minimum(self.since, len(env) - 1)]
            self._update(np.any(np.abs(residual) > self.band.threshold + allowance))
        return MonitorSample(parts, residual, self.contact)

    def _friction_ambiguous(self, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
        """Joints whose true velocity may have another sign than the delayed estimate's
        (``|dq| < |ddq| delay``, or at rest): Coulomb friction is anywhere in +-fs there,
        and the band widens by ``2 |fs|``, then by the part of that ``2 fs`` step the
        filter has not passed yet."""
        return np.abs(dq) < np.abs(ddq) * self.signals.delay + self.model.drive.coulomb_velocity

    def _update(self, out: bool) -> None:
        self.outside, self.inside = (self.outside + 1, 0) if out else (0, self.inside + 1)
        if not self.contact and self.outside >= self.band.persistence:
            self.contact = True
        elif self.contact and self.inside >= self.band.persistence:
            self.contact = False

    def run(self, q: np.ndarray, tau: np.ndarray):
        """Residuals (N x n, NaN while warming up; row i is sample i), contact flags (at
        the sample each decision is made) and the joints whose band had a friction
        allowance, of a recording."""
        R, C = np.full(np.shape(q), np.nan), np.zeros(len(q), bool)
        A = np.zeros(np.shape(q), bool)
        for i, (qi, ti) in enumerate(zip(q, tau)):
            s = self.step(qi, ti)
            if s is not None:
                R[i - 1], C[i], A[i - 1] = s.residual, s.contact, self.in_transition
        return R, C, A


def learn_band(model: DynamicsModel, q: np.ndarray, tau: np.ndarray, rate_hz: float,
               cutoff_hz: float = 10.0, k: float = 5.0, persistence: int = 3,
               warm_up_s: float = 2 * WARM_UP_S) -> ResidualBand:
    """The residual band from contact-free validation data (N x n positions and torques
    at ``rate_hz``): ``sigma_j`` = RMS residual of the same online pipeline, outside the
    samples given a friction allowance."""
    q, tau = np.asarray(q, float), np.asarray(tau, float)
    skip = int(warm_up_s * rate_hz)
    if q.shape != tau.shape or q.ndim != 2 or q.shape[1] != len(model.joints):
        raise DataError(f"validation q and tau must both be N x {len(model.joints)}; got "
                        f"{q.shape} and {tau.shape}")
    if len(q) < skip + 10 * rate_hz / cutoff_hz:
        raise DataError(f"{len(q)} validation samples are too few to learn the band")
    R, _, ambiguous = TorqueMonitor(model, None, rate_hz, cutoff_hz).run(q, tau)
    R[ambiguous] = np.nan                 # judged with the friction allowance instead
    sigma = np.sqrt(np.nanmean(R[skip:] ** 2, axis=0))
    return ResidualBand(model.joints, np.maximum(sigma, 1e-9), k, persistence)

"""The backlash of every joint with a link-side encoder, from synchronous arrays (Nguyen et al. 2024
Eq. 6-7, ``backlash.py``): arrays in, a :class:`BacklashResult` out, no files.

Per joint, the model of Eq. 6 is fitted on the first part of the usable samples and its
polynomial degrees are chosen on the last ``validation_fraction`` (``select_degrees``).
Samples where the joint is (nearly) at rest are left out of both parts, as the friction
terms of a dynamic identification leave them out: Eq. 6's sigmoid gives the middle of the
play at zero speed, while the link rests on the side of the last motion.  A joint that
moved less than ``min_range`` or has fewer than ``min_samples`` moving samples in either
part is skipped, with the reason.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from figaroh_ros.errors import ConfigError, DataError
from figaroh_ros.identification.signals import central_difference
from figaroh_ros.phenomena.backlash import BacklashModel, select_degrees
from figaroh_ros.phenomena.held_out import split_rows
from figaroh_ros.progress import Stage, reporter


@dataclass
class JointBacklash:
    """One joint: the chosen model with its scores, or why it was skipped."""

    model: BacklashModel | None = None
    samples: tuple[int, int] = (0, 0)          # training, validation
    gap: float = float("nan")                  # rad, the median jump between directions
    degree_table: dict = field(default_factory=dict)   # (m, n) -> validation R^2
    skipped: str | None = None

    def to_dict(self) -> dict:
        if self.model is None:
            return {"skipped": self.skipped}
        m = self.model
        return {
            "degrees": [int(m.m), int(m.n)], "rho": float(m.rho),
            "samples": [int(k) for k in self.samples],
            "train_r2": float(m.info["train_r2"]),
            "validation_r2": float(m.info["validation_r2"]),
            "gap_rad": float(self.gap), "A": m.A.tolist(), "B": m.B.tolist(),
            "theta_range": list(m.theta_range), "tau_range": list(m.tau_range),
            "degree_table": {f"{a},{b}": float(v) for (a, b), v in self.degree_table.items()},
        }


@dataclass
class BacklashResult:
    joints: dict[str, JointBacklash]           # in the columns' order
    samples: int                               # usable rows (training + validation)

    def predict(self, q_motor, dq, tau) -> np.ndarray:
        """Eq. 6: the predicted ``q_link - q_motor`` (N x n) from the motor angles, the
        motor velocities and the joint torques; NaN in the columns of skipped joints."""
        q_motor, dq, tau = (np.atleast_2d(np.asarray(x, float)) for x in (q_motor, dq, tau))
        out = np.full(q_motor.shape, np.nan)
        for j, jb in enumerate(self.joints.values()):
            if jb.model is not None:
                out[:, j] = jb.model.predict(q_motor[:, j], dq[:, j], tau[:, j])
        return out

    def link_angles(self, q_motor, dq, tau) -> np.ndarray:
        """The link-side angles (what model 3 of Nguyen et al. 2024 uses)."""
        return np.atleast_2d(np.asarray(q_motor, float)) + self.predict(q_motor, dq, tau)

    def to_dict(self) -> dict:
        return {"samples": int(self.samples),
                "joints": {name: jb.to_dict() for name, jb in self.joints.items()}}


def _columns(*arrays) -> list[np.ndarray]:
    out = [np.asarray(a, float).reshape(len(a), -1) for a in arrays]
    if len({a.shape for a in out}) != 1:
        raise DataError("q_motor, q_link, tau (and dq) must have the same shape N x n, got "
                        + ", ".join(str(a.shape) for a in out))
    return out


def _check_options(max_degree: int, validation_fraction: float, min_speed_rad_s: float):
    if not 1 <= max_degree <= 6:
        raise ConfigError(f"max_degree: expected 1 .. 6, got {max_degree}")
    if not 0 < validation_fraction < 1:
        raise ConfigError(f"validation_fraction: expected in (0, 1), got {validation_fraction}")
    if min_speed_rad_s < 0:
        raise ConfigError(f"min_speed_rad_s: expected >= 0, got {min_speed_rad_s}")


def _fit_joint(theta, dtheta, tau, d, train, valid, max_degree, min_speed, min_range,
               min_samples) -> JointBacklash:
    """One joint (1-D arrays over all rows): skip it or fit Eq. 6 with chosen degrees."""
    used = np.r_[train, valid]
    if np.ptp(theta[used]) < min_range:
        return JointBacklash(skipped=f"moved {np.ptp(theta[used]):.3f} rad only")
    moving = np.abs(dtheta) > min_speed
    rows_t, rows_v = train[moving[train]], valid[moving[valid]]
    if min(len(rows_t), len(rows_v)) < min_samples:
        return JointBacklash(skipped=f"{len(rows_t)} training and {len(rows_v)} validation "
                             f"samples faster than {min_speed} rad/s: too few")
    fit_set, check_set = (tuple(x[r] for x in (theta, dtheta, tau, d))
                          for r in (rows_t, rows_v))
    model, table = select_degrees(fit_set, check_set, degrees=range(1, max_degree + 1))
    return JointBacklash(model, (len(rows_t), len(rows_v)), model.gap(theta[used], tau[used]),
                         table)


def identify_backlash(q_motor, q_link, tau, *, dq=None, dt: float | None = None,
                      joints: list[str] | None = None, usable=None, max_degree: int = 4,
                      validation_fraction: float = 0.3, min_speed_rad_s: float = 0.05,
                      min_range_rad: float = 0.2, min_samples: int = 100,
                      progress=None) -> BacklashResult:
    """Nguyen et al. 2024 Eq. 6-7 for every column: ``q_motor``, ``q_link`` (rad) and ``tau`` (the
    joint torques, N.m) are N x n on one time base.  ``dq``: the motor velocities (N x n;
    default: central differences with the sample period ``dt``).  ``usable``: N booleans,
    False on samples to leave out of both parts (filter transients, gaps in a recording).
    ``joints`` names the columns.  Degrees 1..``max_degree`` in angle and in torque are
    tried; ``min_speed_rad_s`` sets what counts as moving; a joint moved less than
    ``min_range_rad`` is skipped (the names of the ``backlash`` config section)."""
    _check_options(max_degree, validation_fraction, min_speed_rad_s)
    if dq is None and dt is None:
        raise DataError("give the motor velocities dq or the sample period dt")
    dq = central_difference(q_motor, dt) if dq is None else dq
    qm, ql, tau, dq = _columns(q_motor, q_link, tau, dq)
    joints = list(joints or [f"joint_{j}" for j in range(qm.shape[1])])
    if len(joints) != qm.shape[1]:
        raise DataError(f"{len(joints)} joint names for {qm.shape[1]} columns")
    usable = np.ones(len(qm), bool) if usable is None else np.asarray(usable, bool)
    if usable.shape != (len(qm),):
        raise DataError(f"usable: expected {len(qm)} booleans, got shape {usable.shape}")
    train, valid = split_rows(usable, validation_fraction)
    say = reporter(progress)
    out = {}
    for j, name in enumerate(joints):
        say(Stage.ESTIMATION, j / len(joints), f"backlash of {name}")
        out[name] = _fit_joint(qm[:, j], dq[:, j], tau[:, j], ql[:, j] - qm[:, j], train,
                               valid, max_degree, min_speed_rad_s, min_range_rad,
                               min_samples)
    say(Stage.VALIDATION, 1.0, f"{sum(jb.model is not None for jb in out.values())} of "
        f"{len(joints)} joints identified")
    return BacklashResult(out, len(train) + len(valid))

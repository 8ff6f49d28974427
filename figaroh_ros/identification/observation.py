"""From sampled joint motion to the identification system ``Y = W_b phi_b``.

Steps (Nguyen et al. 2023 §II.B-C, Tröbinger et al. §II.B.3, Gautier 1997):

1. zero-phase low-pass of the positions, central-difference velocities and accelerations,
   filter transients dropped at both ends (:func:`joint_motion`);
2. the standard observation matrix ``W`` and the measurement vector ``Y`` stacked joint
   by joint (:func:`torque_equations`; ``wrench.py`` for a force plate);
3. parallel decimation of ``W`` (or its base columns) and ``Y``, and removal of the
   samples where a joint hardly moves (:func:`observe`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from figaroh_ros.errors import DataError
from figaroh_ros.identification.base_parameters import BaseParameters
from figaroh_ros.identification.filters import decimate, lowpass_zero_phase, parallel_decimation
from figaroh_ros.identification.parameters import DriveOptions, ParameterLayout
from figaroh_ros.identification.regressor import standard_regressor
from figaroh_ros.identification.signals import derivatives, edge_samples, moving_rows
from figaroh_ros.model.robot import RobotModel

MIN_SAMPLES = 50


@dataclass(frozen=True)
class Processing:
    """How recorded samples become equations: the positions' low-pass cut-off (None: no
    filter), the filter order, the parallel decimation factor and the velocity below which
    a joint's samples are dropped (its Coulomb friction sign is undefined)."""

    position_cutoff_hz: float | None = None
    filter_order: int = 4
    decimation: int = 1
    min_velocity: float = 0.0

    @classmethod
    def from_config(cls, processing, **changes) -> "Processing":
        """The options of an identification config's ``processing`` section (a pydantic
        model), every field under its own name, then ``changes``."""
        return cls(**{**processing.model_dump(), **changes})


@dataclass
class Observation:
    """A decimated, filtered identification system ``Y = W_b phi_b``."""

    Wb: np.ndarray
    Y: np.ndarray
    row_joint: np.ndarray  # joint (or wrench component) index of every row
    row_sample: np.ndarray | None = None   # (decimated) sample index of every row

    def subset(self, rows: np.ndarray) -> "Observation":
        return Observation(self.Wb[rows], self.Y[rows], self.row_joint[rows],
                           None if self.row_sample is None else self.row_sample[rows])


@dataclass
class JointMotion:
    """Filtered positions and their derivatives on the kept samples ``keep``."""

    q: np.ndarray
    dq: np.ndarray
    ddq: np.ndarray
    step: float | np.ndarray        # sample period, or the time stamps if not uniform
    keep: slice                     # samples kept of the recording


def _step(t: np.ndarray) -> tuple[np.ndarray, bool]:
    if t.shape[0] < MIN_SAMPLES:
        raise DataError(f"only {t.shape[0]} samples: too short to identify")
    dt = np.diff(t)
    if np.any(dt <= 0):
        raise DataError("time stamps are not strictly increasing")
    return dt, bool(np.allclose(dt, dt.mean(), rtol=1e-3))


def joint_motion(t: np.ndarray, q: np.ndarray, p: Processing) -> JointMotion:
    """Low-pass ``q`` (N x n, sampled at ``t``), differentiate it twice by central
    differences, and keep the samples clear of the filter's transients."""
    dt, uniform = _step(np.asarray(t, float))
    if p.position_cutoff_hz is not None:
        if not uniform:
            raise DataError("the Butterworth filter needs a constant sample time; "
                            "the time stamps vary by more than 0.1 %")
        q = lowpass_zero_phase(q, p.position_cutoff_hz, 1.0 / dt.mean(), p.filter_order)
    step = float(dt.mean()) if uniform else np.asarray(t, float)
    dq, ddq = derivatives(q, step)
    edge = edge_samples(p.filter_order, p.position_cutoff_hz, 1.0 / dt.mean())
    if q.shape[0] <= 2 * edge + MIN_SAMPLES:
        raise DataError(f"only {q.shape[0]} samples: too short once {edge} samples are "
                        "dropped at both ends for filter transients")
    keep = slice(edge, q.shape[0] - edge)
    return JointMotion(q, dq, ddq, step, keep)


def torque_equations(robot: RobotModel, layout: ParameterLayout, drive: DriveOptions,
                     t: np.ndarray, q: np.ndarray, tau: np.ndarray, p: Processing):
    """``(W, Y, dq)`` of a recording of joint torques, before decimation: the standard
    regressor of the filtered motion, the torques stacked joint by joint, and the
    velocities that say which rows move."""
    m = joint_motion(t, q, p)
    k = m.keep
    W = standard_regressor(robot, layout, drive, m.q[k], m.dq[k], m.ddq[k])
    return W, np.asarray(tau, float)[k].T.ravel(), m.dq[k]


def observe(base: BaseParameters | None, W: np.ndarray, Y: np.ndarray, dq: np.ndarray,
            p: Processing) -> Observation:
    """Base columns (``base=None``: keep the standard ones), parallel decimation and
    removal of non-moving samples.  ``dq`` (N x groups) says which rows move: the joint
    velocities for torques; a huge constant for wrench components."""
    n = dq.shape[1]
    Wb = base.base_regressor(W) if base is not None else W
    Wb, Y = parallel_decimation(Wb, Y, n, p.decimation)
    dqd = decimate(dq, p.decimation)
    row_joint = np.repeat(np.arange(n), dqd.shape[0])
    row_sample = np.tile(np.arange(dqd.shape[0]), n)
    keep = moving_rows(dqd, p.min_velocity)
    return Observation(Wb[keep], Y[keep], row_joint[keep], row_sample[keep])


def held_out_split(n_samples: int, fraction: float) -> int:
    """The first sample of the held-out part: the last ``fraction`` of the recording."""
    return int(round(n_samples * (1 - fraction)))

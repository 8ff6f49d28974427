"""Signed current-to-torque gains of the drives (Nguyen et al. 2023 Eq. 3; Gautier & Briot 2014).

A drive reports an effort ``e_j`` (a current, a controller effort) and not its joint torque:
``tau_j = K_j e_j`` with a gain ``K_j`` of unknown scale and sign per joint (the torque
constant times the gear ratio and the amplifier's scale).  Since ``tau = W phi`` is linear
in ``phi``, the rows of joint ``j`` read ``e_j = W_j phi / K_j``: all the gains together
with ``phi`` are known only up to one common factor, which a reference fixes.  Two
estimates, both on the (decimated) identification system ``Y = W_b phi_b`` whose rows
``Y_j = K_j^0 e_j`` already carry the configured gains ``K^0``:

* from the nominal model (:func:`nominal_gains`): the effort of joint ``j`` regressed on the
  URDF model's torque ``W_j phi_nominal`` plus its own rotor inertia, friction and offset terms
  (which the URDF lacks); the URDF inertias fix the scale;
* from the other joints' model (:func:`separated_gains`, a two-step or instrumental
  estimate): ``phi_b`` by Gautier's WLS on the rows of the other fitted joints alone, then
  ``Y_j`` regressed on the torque that model predicts for joint ``j`` plus the joint's own
  columns (those in no other joint's rows: its friction, offset, rotor inertia).  Fitted
  jointly with the parameters (variable projection, tried on TIAGo), a joint whose effort
  is mostly its own friction (a vertical axis) bends the shared parameters towards its own
  noise and takes a gain near zero; here its rows cannot move the shared parameters.

Both return the factors ``g`` that multiply the rows (``K = g K^0``).
"""
from __future__ import annotations

import numpy as np

from figaroh_ros.errors import DataError, SolverError
from figaroh_ros.identification.estimation import weighted_least_squares
from figaroh_ros.identification.observation import Observation

DRIVE_TERMS = ("Ia", "fv", "fs", "off", "fva", "fst")   # absent from the URDF


def _joint_drive_columns(names: list[str], jid: int) -> list[int]:
    """Base columns led by a drive term (rotor inertia, friction, offset) of the joint
    ``jid`` (a group led by an inertial parameter is the URDF's to explain)."""
    lead = [n.split(" ")[0] for n in names]
    return [i for i, n in enumerate(lead) if n in {f"{t}{jid}" for t in DRIVE_TERMS}]


def nominal_gains(obs: Observation, names: list[str], joint_ids: list[int],
                  phi_nominal_b: np.ndarray, which: np.ndarray) -> np.ndarray:
    """Factors ``g_j`` (1 where not ``which``) such that ``g_j Y_j`` matches the nominal
    model's torque plus the joint's own friction and offset terms, by least squares."""
    g = np.ones(len(which))
    for j in np.flatnonzero(which):
        rows = obs.row_joint == j
        A = np.column_stack([obs.Y[rows]] + [-obs.Wb[rows][:, c] for c in
                                             _joint_drive_columns(names, joint_ids[j])])
        x = np.linalg.lstsq(A, obs.Wb[rows] @ phi_nominal_b, rcond=None)[0]
        if not np.isfinite(x[0]) or abs(x[0]) < 1e-12:
            raise SolverError(f"drive gain of joint {j + 1} from the nominal model: the "
                              "nominal torque does not explain its effort (gain 0)")
        g[j] = x[0]
    return g


def _other_joints_model(obs: Observation, rows: np.ndarray, shared: np.ndarray):
    """Gautier's WLS estimate of the ``shared`` base columns on the rows not ``rows``."""
    other = ~rows
    groups, row_group = np.unique(obs.row_joint[other], return_inverse=True)
    return weighted_least_squares(obs.Wb[other][:, shared], obs.Y[other], row_group,
                                  len(groups)).phi


def separated_gains(obs: Observation, which: np.ndarray, n: int) -> np.ndarray:
    """Factors ``g_j`` (1 where not ``which``): ``1 / c_j`` with ``c_j`` the coefficient of
    the torque predicted by the other joints' model in the least-squares fit of ``Y_j``
    on that torque and the joint's own columns.  One step: the other joints' rows must
    already be in about the right scale (the nominal gains).  With several gains far off
    it is biased (a simulated UR5 with five gains 0.5-2.5x off: joint 6 came out 5.4x off), and
    iterating it to a fixed point, consistent there, diverged on TIAGo's real efforts."""
    g = np.ones(n)
    if not np.all(np.isfinite(obs.Y)):
        raise DataError("free_gains: the measured efforts hold values that are not finite")
    for j in np.flatnonzero(np.asarray(which, bool)):
        rows = obs.row_joint == j
        if not np.any(~rows):
            raise SolverError(f"free_gains of joint {j + 1}: no other fitted joint whose "
                              "model fixes its scale")
        used_elsewhere = np.any(np.abs(obs.Wb[~rows]) > 0, axis=0)
        own = np.any(np.abs(obs.Wb[rows]) > 0, axis=0) & ~used_elsewhere
        phi = _other_joints_model(obs, rows, used_elsewhere)
        A = np.column_stack([obs.Wb[rows][:, used_elsewhere] @ phi, obs.Wb[rows][:, own]])
        c = np.linalg.lstsq(A, obs.Y[rows], rcond=None)[0][0]
        if not np.isfinite(c) or abs(c) < 1e-12:
            raise SolverError(f"drive gain of joint {j + 1} from the other joints' model: "
                              "their torque does not explain its effort (gain infinite)")
        g[j] = 1.0 / c
    return g


def scaled(obs: Observation | None, g: np.ndarray | None) -> Observation | None:
    """The system with the rows of joint ``j`` multiplied by ``g_j``."""
    if obs is None or g is None:
        return obs
    return Observation(obs.Wb, obs.Y * g[obs.row_joint], obs.row_joint, obs.row_sample)

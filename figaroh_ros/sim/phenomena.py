"""The hidden truth of Nguyen et al. 2024's non-geometric phenomena on a simulated robot: the gear
play of a joint (a deadband, not the identified model of ``phenomena.backlash``) and a
randomly drawn suspension (the 48 parameters of ``phenomena.suspension``)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class JointPlay:
    """The hidden truth of one joint's transmission."""

    gap: float
    eccentricity: float
    phase: float
    compliance: float

    def link(self, theta_m, direction, tau):
        """Link angle from the motor angle, the last motion's direction (+1 / -1) and the
        gravity torque the joint holds: the link lags the motor by half the play and sags
        under the load."""
        return (theta_m - direction * self.gap / 2
                + self.eccentricity * np.sin(theta_m + self.phase) - self.compliance * tau)


class PlayTracker:
    """Link-side angles of joints with play, followed in time: the gear play is a
    deadband (the link stays until the motor has crossed the gap), then the eccentric
    encoder and the shaft's sag under its load are added."""

    def __init__(self, plays: list[JointPlay], q_motor: np.ndarray):
        self.plays = plays
        self.gaps = np.array([p.gap for p in plays], float)
        self.compliance = np.array([p.compliance for p in plays], float)
        self.pos = np.asarray(q_motor, float) - self.gaps / 2

    def update(self, q_motor: np.ndarray, tau: np.ndarray) -> np.ndarray:
        q_motor = np.asarray(q_motor, float)
        self.pos = np.clip(self.pos, q_motor - self.gaps / 2, q_motor + self.gaps / 2)
        ecc = np.array([p.eccentricity * np.sin(q + p.phase)
                        for p, q in zip(self.plays, q_motor)])
        return self.pos + ecc - self.compliance * np.asarray(tau, float)


def random_suspension(rng: np.random.Generator, stiffness=(5e3, 5e4),
                      rest_wrench=np.zeros(6)) -> np.ndarray:
    """A hidden suspension (``phenomena.suspension.parameter_names`` order): wheel
    stiffness uniform in ``stiffness`` (N/m, per wheel and axis), damping 1e2-1e4 N.s/m,
    torsion a tenth of the stiffness per radian, torsional damping 1e2-5e3, and the rest
    wrench ``rest_wrench``."""
    P = np.zeros(6 * 6 + 12)
    for i in range(6):
        P[6 * i:6 * i + 3] = rng.uniform(*stiffness, 3)
        P[6 * i + 3:6 * i + 6] = rng.uniform(1e2, 1e4, 3)
    P[36:39] = rng.uniform(*stiffness, 3) / 10
    P[39:42] = rng.uniform(1e2, 5e3, 3)
    P[42:48] = rest_wrench
    return P

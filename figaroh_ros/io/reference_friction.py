"""A published per-joint friction model given as numbers, added to the torques a reference
model predicts (``identify --reference-model MODEL --reference-friction FILE``).

A published dynamic model often carries a friction model our parameter layout cannot
hold: Gaz, Cognetti, Oliva, Robuffo Giordano and De Luca ("Dynamic Identification of the
Franka Emika Panda Robot With Retrieval of Feasible Parameters Using Penalty-Based
Optimization", IEEE RA-L 4(4), 2019, Table I) give each Panda joint the sigmoid

    tau_f(dq) = phi1 / (1 + exp(-phi2 (dq + phi3))) - phi1 / (1 + exp(-phi2 phi3))

zero at rest, tending to ``phi1 (1 - s0)`` forwards and ``-phi1 s0`` backwards
(``s0 = 1 / (1 + exp(-phi2 phi3))``).  Its numbers are read from a small YAML file::

    model: sigmoid
    source: the citation of the numbers (recorded in result.yaml)
    joints:
      panda_joint1: {phi1: 0.54615, phi2: 5.1181, phi3: 0.039533}   # N.m, s/rad, rad/s
      ...

one entry per fitted joint, by the model's joint names (after ``data.joint_map``).
``config/reference/panda_gaz2019_friction.yaml`` ships Table I.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import Field
from scipy.special import expit

from figaroh_ros.config.base import Section, parse_file
from figaroh_ros.errors import ConfigError

MODELS = ("sigmoid",)


def sigmoid_friction(dq, phi1, phi2, phi3) -> np.ndarray:
    """Gaz et al. 2019's friction torque at the velocities ``dq`` (N.m for ``phi1`` in
    N.m, ``phi2`` in s/rad, ``phi3`` in rad/s); the parameters broadcast against ``dq``.
    The logistic function is scipy's ``expit`` (no overflow at large ``|phi2 dq|``)."""
    dq, phi1, phi2, phi3 = (np.asarray(a, float) for a in (dq, phi1, phi2, phi3))
    return phi1 * (expit(phi2 * (dq + phi3)) - expit(phi2 * phi3))


class SigmoidJoint(Section):
    """One joint's sigmoid friction."""

    phi1: float = Field(description="amplitude, N.m (N for a prismatic joint)")
    phi2: float = Field(gt=0, description="slope, s/rad (s/m)")
    phi3: float = Field(description="velocity shift, rad/s (m/s)")


class FrictionFile(Section):
    """A ``--reference-friction`` file."""

    model: Literal["sigmoid"] = Field(description="the friction law (sigmoid: Gaz et al. "
                                      "2019, Table I)")
    source: str = Field("", description="where the numbers come from (recorded in "
                        "result.yaml)")
    joints: dict[str, SigmoidJoint] = Field(min_length=1, description="the parameters "
                                            "of every fitted joint, by model joint name")


@dataclass(frozen=True)
class ReferenceFriction:
    """A friction file read: its absolute ``path``, ``model``, ``source`` and the
    parameters by joint name."""

    path: str
    model: str
    source: str
    joints: dict[str, tuple[float, float, float]]

    def for_joints(self, joints: list[str]) -> np.ndarray:
        """The parameters (rows phi1, phi2, phi3) of ``joints`` in that order; a
        :class:`ConfigError` naming the file and the joints it lacks or has in excess."""
        missing = [j for j in joints if j not in self.joints]
        extra = sorted(set(self.joints) - set(joints))
        if missing or extra:
            raise ConfigError(f"--reference-friction {self.path}: its joints must be the "
                              f"fitted joints {joints}" + (f"; missing {missing}" if missing
                                                           else "")
                              + (f"; not fitted {extra}" if extra else ""))
        return np.array([self.joints[j] for j in joints], float).T

    def torques(self, joints: list[str], row_joint: np.ndarray,
                velocity: np.ndarray) -> np.ndarray:
        """The friction torque of every row: row ``i`` is joint ``joints[row_joint[i]]``
        moving at ``velocity[i]``."""
        phi1, phi2, phi3 = self.for_joints(joints)[:, np.asarray(row_joint, int)]
        return sigmoid_friction(velocity, phi1, phi2, phi3)

    def record(self) -> dict:
        """The ``friction`` entry of result.yaml's ``reference_model`` section."""
        return {"path": self.path, "model": self.model, "source": self.source,
                "joints": {j: dict(zip(("phi1", "phi2", "phi3"), p))
                           for j, p in self.joints.items()}}


def read_reference_friction(path: str) -> ReferenceFriction:
    """The friction file at ``path``; a :class:`ConfigError` naming the file and the
    field refused (unknown keys, a model other than ``sigmoid``, a parameter missing or
    not a finite number, ``phi2 <= 0``)."""
    if not os.path.isfile(path):
        raise ConfigError(f"--reference-friction {path}: no such file")
    try:
        f = parse_file(FrictionFile, path)
    except ConfigError as exc:
        raise ConfigError(f"--reference-friction {exc}".replace(" config ", " ", 1)) \
            from None
    return ReferenceFriction(os.path.abspath(path), f.model, f.source, {
        j: (p.phi1, p.phi2, p.phi3) for j, p in f.joints.items()})

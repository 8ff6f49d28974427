"""What a payload identification gives: mass, centre of mass and inertia about it, with
their standard deviations, and the values the robot drivers take (UR ``set_payload``,
Franka ``setLoad``)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import yaml

from figaroh_ros.identification.physical.inertia import mass_centre_inertia


@dataclass
class PayloadResult:
    """The payload fixed to ``tool_frame``, in that frame (SI units)."""

    tool_frame: str
    kind: str                          # "torque" or "wrench"
    mass: float
    com: np.ndarray                    # centre of mass (m), tool frame
    inertia: np.ndarray                # 3 x 3 inertia about the centre of mass (kg m^2)
    mass_std: float
    com_std: np.ndarray
    inertia_std: np.ndarray            # 3 x 3, std of each entry
    residual_rms: dict                 # per joint (N.m) or wrench component (N, N.m)
    condition_number: float
    pi: np.ndarray                     # the standard 10-vector (about the tool origin)
    pi_unconstrained: np.ndarray
    constrained: bool                  # a physical constraint was active
    offset: np.ndarray | None = None   # wrench kind: the sensor offset (6)
    offset_std: np.ndarray | None = None
    samples: int = 0
    notes: list = field(default_factory=list)

    def __repr__(self) -> str:
        return (f"PayloadResult({self.kind}, mass {self.mass:.4g} +- {self.mass_std:.2g} kg, "
                f"com {np.round(self.com, 4).tolist()} m, cond {self.condition_number:.3g})")

    def to_ur(self) -> dict:
        """Fields of ur_robot_driver's ``set_payload`` service (``ur_msgs/srv/SetPayload``:
        mass in kg, centre of gravity in m in the tool flange frame)."""
        x, y, z = (float(v) for v in self.com)
        return {"mass": float(self.mass), "center_of_gravity": {"x": x, "y": y, "z": z}}

    def to_franka(self) -> dict:
        """Arguments of libfranka's ``Robot::setLoad`` (franka_ros ``SetLoad``): mass (kg),
        ``F_x_Cload`` (centre of mass in the flange frame, m) and ``load_inertia`` (the
        inertia about the centre of mass, 9 values column-major, kg m^2)."""
        return {"mass": float(self.mass), "F_x_Cload": [float(v) for v in self.com],
                "load_inertia": [float(v) for v in self.inertia.flatten(order="F")]}

    def to_ur_yaml(self) -> str:
        return yaml.safe_dump(self.to_ur(), sort_keys=False)

    def to_franka_yaml(self) -> str:
        return yaml.safe_dump(self.to_franka(), sort_keys=False)

    def to_dict(self) -> dict:
        d = {"tool_frame": self.tool_frame, "measurements": self.kind,
             "samples": int(self.samples),
             "mass": float(self.mass), "mass_std": float(self.mass_std),
             "com": self.com.tolist(), "com_std": self.com_std.tolist(),
             "inertia": self.inertia.tolist(), "inertia_std": self.inertia_std.tolist(),
             "residual_rms": {k: float(v) for k, v in self.residual_rms.items()},
             "condition_number": float(self.condition_number),
             "standard_parameters": self.pi.tolist(),
             "physical_constraint_active": bool(self.constrained)}
        if self.offset is not None:
            d.update(sensor_offset=self.offset.tolist(),
                     sensor_offset_std=self.offset_std.tolist())
        if self.notes:
            d["notes"] = list(self.notes)
        return d


def mci_vector(pi: np.ndarray) -> np.ndarray:
    """``[m, c (3), I_C (9, row-major)]`` of a standard vector (``m != 0``)."""
    m, c, I_C = mass_centre_inertia(pi)
    return np.r_[m, c, I_C.ravel()]


def mci_std(pi: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """Standard deviations of :func:`mci_vector` by first-order propagation of the
    covariance ``cov`` (10 x 10) of ``pi`` (central differences)."""
    h = 1e-7 * max(abs(pi[0]), 1e-3)
    D = np.empty((13, 10))
    for k in range(10):
        e = np.eye(10)[k] * h
        D[:, k] = (mci_vector(pi + e) - mci_vector(pi - e)) / (2 * h)
    return np.sqrt(np.maximum(np.einsum("ik,kl,il->i", D, cov, D), 0.0))

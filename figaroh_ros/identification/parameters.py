"""Standard dynamic parameters: names, ordering and values (Nguyen et al. 2023 §II.A).

Per link ``j`` (pinocchio joint index, from 1) the ten segment inertial parameters expressed
in the joint frame, in the order ``[m, mx, my, mz, Ixx, Ixy, Ixz, Iyy, Iyz, Izz]``; then, for
an active joint, its drive-chain parameters ``[Ia, fv, fs, off]`` (rotor inertia, viscous and
Coulomb friction, torque offset), with the optional friction terms ``fva`` (extra viscous
friction when moving backwards) and ``fst`` (Stribeck excess of static over Coulomb
friction); last, for every coupled motor ``k`` of the transmission,
``[Iamk, fvmk, fsmk]``. The names match FIGAROH's published tables (``Izz1``, ``fv1``,
``Iam6`` ...) so that results compare line by line.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from figaroh_ros.model.robot import RobotModel

INERTIAL = ("m", "mx", "my", "mz", "Ixx", "Ixy", "Ixz", "Iyy", "Iyz", "Izz")
# pinocchio's dynamic parameter order is [m, mx, my, mz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz]
PIN_TO_STD = np.array([0, 1, 2, 3, 4, 5, 7, 6, 8, 9])
# fields of a config's ``model`` section that choose among drive models (the candidates and
# the Stribeck velocity's search interval) rather than being drive options themselves
MODEL_CHOICE = ("friction_models", "stribeck_range")


@dataclass(frozen=True)
class DriveOptions:
    """Which drive-chain parameters enter the model (Nguyen et al. 2023 Eq. 3)."""

    viscous_friction: bool = True
    coulomb_friction: bool = True
    coulomb_model: str = "sign"          # "sign" or "tanh" (smooth, Tröbinger et al.)
    coulomb_velocity: float = 0.01       # rad/s scale of the tanh model
    rotor_inertia: bool = True
    torque_offset: bool = True
    # how a coupled motor's inertia and viscous friction are written (see regressor.py):
    # "motor": on the motor coordinate K_k.q, mapped to the joints by K^T (physical);
    # "lumped": the diagonal part is lumped into the joint's own Ia_j / fv_j and only the
    # cross terms stay on Iam_k / fvm_k (Gautier's and FIGAROH's TX40 convention).
    coupled_convention: str = "motor"
    # viscous friction per direction: ``fva`` adds to ``fv`` when the joint moves backwards
    viscous_per_direction: bool = False
    # Stribeck velocity v_st (rad/s) of ``fst sign(v) exp(-(v / v_st)^2)``; None: no term
    stribeck_velocity: float | None = None

    def __post_init__(self):
        if self.coupled_convention not in ("motor", "lumped"):
            raise ValueError("coupled_convention must be 'motor' or 'lumped', got "
                             f"{self.coupled_convention!r}")
        if self.coulomb_model not in ("sign", "tanh"):
            raise ValueError(f"coulomb_model must be 'sign' or 'tanh', got {self.coulomb_model!r}")
        if not self.coulomb_velocity > 0:
            raise ValueError("coulomb_velocity must be > 0")
        if self.stribeck_velocity is not None and not self.stribeck_velocity > 0:
            raise ValueError("stribeck_velocity must be > 0")

    @classmethod
    def from_config(cls, model, **changes) -> "DriveOptions":
        """The options of an identification config's ``model`` section (a pydantic model):
        every field under its own name, except those choosing among models
        (:data:`MODEL_CHOICE`), then ``changes``.  A section field the options lack is a
        TypeError here, never silently dropped."""
        return cls(**{**model.model_dump(exclude=set(MODEL_CHOICE)), **changes})


@dataclass
class ParameterLayout:
    """Column layout of the standard regressor: one name per standard parameter."""

    names: list[str]
    # column index of the 10 inertial parameters of each link (key: joint id)
    inertial_cols: dict[int, np.ndarray]
    # per active joint (index in the active list): column of Ia / fv / fs / off or -1
    ia_col: np.ndarray
    fv_col: np.ndarray
    fs_col: np.ndarray
    off_col: np.ndarray
    # per coupled motor (index in the active list): columns of Iam / fvm / fsm
    motor_cols: dict[int, tuple[int, int, int]]
    # per active joint: column of the backward viscous ``fva`` / Stribeck ``fst`` term or -1
    fva_col: np.ndarray | None = None
    fst_col: np.ndarray | None = None

    @property
    def size(self) -> int:
        return len(self.names)

    def index(self, name: str) -> int:
        return self.names.index(name)


def parameter_layout(robot: RobotModel, drive: DriveOptions) -> ParameterLayout:
    """Names and columns of the standard parameters of ``robot`` with ``drive`` options."""
    names: list[str] = []
    inertial_cols = {}
    n = robot.n_joints
    ia, fv, fs, off, fva, fst = (np.full(n, -1) for _ in range(6))
    coupled = set(robot.transmission.coupled_motors)
    active_of = {jid: k for k, jid in enumerate(robot.joint_ids)}
    for jid in robot.link_joint_ids:
        inertial_cols[jid] = np.arange(len(names), len(names) + 10)
        names += [f"{p}{jid}" for p in INERTIAL]
        k = active_of.get(jid)
        if k is None:
            continue
        if drive.rotor_inertia and k not in coupled:
            ia[k] = len(names); names.append(f"Ia{jid}")
        if drive.viscous_friction:
            fv[k] = len(names); names.append(f"fv{jid}")
        if drive.coulomb_friction:
            fs[k] = len(names); names.append(f"fs{jid}")
        if drive.torque_offset:
            off[k] = len(names); names.append(f"off{jid}")
        if drive.viscous_per_direction:
            fva[k] = len(names); names.append(f"fva{jid}")
        if drive.stribeck_velocity is not None:
            fst[k] = len(names); names.append(f"fst{jid}")
    motor_cols = {}
    for k in sorted(coupled):
        jid = robot.joint_ids[k]
        cols = []
        for prefix, on in (("Iam", drive.rotor_inertia), ("fvm", drive.viscous_friction),
                           ("fsm", drive.coulomb_friction)):
            if on:
                cols.append(len(names)); names.append(f"{prefix}{jid}")
            else:
                cols.append(-1)
        motor_cols[k] = tuple(cols)
    return ParameterLayout(names, inertial_cols, ia, fv, fs, off, motor_cols, fva, fst)


def standard_parameters(robot: RobotModel, layout: ParameterLayout,
                        drive_values: dict[str, float] | None = None) -> np.ndarray:
    """The standard parameter vector of the URDF model (inertial part from pinocchio),
    drive-chain parameters from ``drive_values`` (by name, default 0)."""
    phi = np.zeros(layout.size)
    for jid, cols in layout.inertial_cols.items():
        phi[cols] = robot.model.inertias[jid].toDynamicParameters()[PIN_TO_STD]
    for name, value in (drive_values or {}).items():
        if name not in layout.names:
            raise ValueError(f"unknown parameter '{name}'; known: {layout.names}")
        phi[layout.index(name)] = float(value)
    return phi


def set_inertial_parameters(robot: RobotModel, layout: ParameterLayout, phi: np.ndarray):
    """Write the inertial part of a standard vector into the pinocchio model (in place)."""
    inv = np.argsort(PIN_TO_STD)
    for jid, cols in layout.inertial_cols.items():
        robot.model.inertias[jid] = pin.Inertia.FromDynamicParameters(phi[cols][inv])

"""Simulated identification experiments with hidden true parameters.

Used by the ground-truth tests and the benchmarks: a finite Fourier series excitation
(Tröbinger et al. Eq. 12-13; Swevers 1997) kept inside the joint limits, a "true" robot whose
inertial and drive-chain parameters are perturbed from the URDF, and measured torques
computed by pinocchio's RNEA on that true robot plus white noise.
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin

from figaroh_ros.excitation.fourier import Trajectory
from figaroh_ros.identification.parameters import (
    PIN_TO_STD, DriveOptions, ParameterLayout, standard_parameters
)
from figaroh_ros.identification.regressor import joint_torques_from_parameters
from figaroh_ros.model.robot import RobotModel


def perturbed_parameters(robot: RobotModel, layout: ParameterLayout, seed: int = 1,
                         inertial_scale: float = 0.2, friction: tuple = (0.5, 3.0),
                         rotor: float = 0.3, offset: float = 0.5) -> np.ndarray:
    """A hidden 'true' standard parameter vector: URDF inertias perturbed physically
    (mass and inertia scaled, centre of mass shifted) and random drive-chain values."""
    rng = np.random.default_rng(seed)
    phi = standard_parameters(robot, layout)
    for jid, cols in layout.inertial_cols.items():
        I = robot.model.inertias[jid]
        if I.mass <= 0:
            continue
        m = I.mass * (1 + inertial_scale * rng.uniform(-1, 1))
        c = I.lever + inertial_scale * 0.1 * rng.uniform(-1, 1, 3)
        Ic = I.inertia * (1 + inertial_scale * rng.uniform(-1, 1))
        phi[cols] = pin.Inertia(m, c, Ic).toDynamicParameters()[PIN_TO_STD]
    _drive_values(robot, layout, phi, rng, friction, rotor, offset)
    return phi


def _drive_values(robot, layout, phi, rng, friction, rotor, offset) -> None:
    """Random drive-chain values in ``phi``: friction, rotor inertia and torque offset
    of every joint, then of every coupled motor."""
    for j in range(robot.n_joints):
        for col, lo_hi in ((layout.fv_col[j], friction), (layout.fs_col[j], friction),
                           (layout.ia_col[j], (0.0, rotor)),
                           (layout.off_col[j], (-offset, offset))):
            if col >= 0:
                phi[col] = rng.uniform(*lo_hi)
    for cols in layout.motor_cols.values():
        for col, lo_hi in zip(cols, ((0.0, rotor), friction, friction)):
            if col >= 0:
                phi[col] = rng.uniform(*lo_hi)


def measured_torques(robot: RobotModel, layout: ParameterLayout, drive: DriveOptions,
                     phi_true: np.ndarray, traj: Trajectory, noise_std: np.ndarray | float,
                     seed: int = 2) -> np.ndarray:
    """Torques of the true robot along ``traj`` plus Gaussian noise (per joint std)."""
    tau = joint_torques_from_parameters(robot, layout, drive, phi_true,
                                        traj.q, traj.dq, traj.ddq)
    rng = np.random.default_rng(seed)
    return tau + rng.normal(size=tau.shape) * np.broadcast_to(noise_std, (tau.shape[1],))

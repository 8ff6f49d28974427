"""The true robot's joint torques, its model built once (ROS-free).

``identification.regressor.joint_torques_from_parameters`` copies the model, writes the
inertias of ``phi`` into it and creates its data at every call: right for a batch, about
0.3 ms of a simulator's 250 Hz tick for one sample.  :class:`TrueTorques` keeps that model
and data and adds the drive-chain terms as per-joint gain vectors, in the same order as
that function (the same floating-point operations: the same bits).  The payload's share
(RNEA with it minus RNEA without, on the nominal model) likewise keeps its two models.
"""
from __future__ import annotations

import copy
import threading

import numpy as np
import pinocchio as pin

from figaroh_ros.identification.parameters import (
    DriveOptions, ParameterLayout, set_inertial_parameters
)
from figaroh_ros.identification.regressor import coulomb, coupled_motor_columns
from figaroh_ros.model.robot import RobotModel, is_continuous


class Configurations:
    """Active joint values -> full configurations and velocities of ``robot`` (as
    ``RobotModel.full_configuration`` / ``full_velocity``, without a loop over joints)."""

    def __init__(self, robot: RobotModel):
        m = robot.model
        self.q0, self.nv, self.idx_v = pin.neutral(m), m.nv, np.asarray(robot.idx_v)
        joints = [m.joints[j] for j in robot.joint_ids]
        cont = [is_continuous(j) for j in joints]
        self.lin_k = np.array([k for k, c in enumerate(cont) if not c], int)
        self.lin_q = np.array([j.idx_q for j, c in zip(joints, cont) if not c], int)
        self.cont_k = np.array([k for k, c in enumerate(cont) if c], int)
        self.cont_q = np.array([j.idx_q for j, c in zip(joints, cont) if c], int)

    def positions(self, q: np.ndarray) -> np.ndarray:
        Q = np.tile(self.q0, (q.shape[0], 1))
        Q[:, self.lin_q] = q[:, self.lin_k]
        if len(self.cont_k):
            Q[:, self.cont_q] = np.cos(q[:, self.cont_k])
            Q[:, self.cont_q + 1] = np.sin(q[:, self.cont_k])
        return Q

    def velocities(self, v: np.ndarray) -> np.ndarray:
        V = np.zeros((v.shape[0], self.nv))
        V[:, self.idx_v] = v
        return V


def _gains(phi: np.ndarray, cols) -> np.ndarray | None:
    """``phi`` at each joint's column, 0 where the joint has none (None: no such term)."""
    if cols is None:
        return None
    cols = np.asarray(cols, int)
    return np.where(cols >= 0, phi[np.maximum(cols, 0)], 0.0)


class TrueTorques:
    """``joint_torques_from_parameters(robot, layout, drive, phi, ...)`` with the model
    of ``phi`` built once; callable from several threads (one data, under a lock)."""

    def __init__(self, robot: RobotModel, layout: ParameterLayout, drive: DriveOptions,
                 phi: np.ndarray):
        rm = copy.copy(robot)
        rm.model = robot.model.copy()
        set_inertial_parameters(rm, layout, phi)
        self.robot, self.model, self.data = robot, rm.model, rm.model.createData()
        self.layout, self.drive, self.phi = layout, drive, phi
        self.conf = Configurations(robot)
        self.ia = _gains(phi, layout.ia_col)
        self.friction = (_gains(phi, layout.fv_col), _gains(phi, layout.fs_col),
                         _gains(phi, layout.off_col), _gains(phi, layout.fva_col))
        self.fst = (_gains(phi, layout.fst_col) if drive.stribeck_velocity is not None
                    else None)
        self.lock = threading.Lock()

    def __call__(self, q, dq, ddq) -> np.ndarray:
        q, dq, ddq = (np.atleast_2d(np.asarray(x, float)) for x in (q, dq, ddq))
        Q, V, A = self.conf.positions(q), self.conf.velocities(dq), self.conf.velocities(ddq)
        tau = np.empty_like(q)
        with self.lock:
            for i in range(q.shape[0]):
                tau[i] = pin.rnea(self.model, self.data, Q[i], V[i], A[i])[self.conf.idx_v]
        tau += self.ia * ddq
        return self._drive(tau, dq, ddq)

    def _drive(self, tau: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
        """Friction, offset and coupled motors added to ``tau`` (in place)."""
        fv, fs, off, fva = self.friction
        tau += fv * dq
        tau += fs * coulomb(dq, self.drive)
        tau += off
        if fva is not None:
            tau += fva * np.minimum(dq, 0.0)
        if self.fst is not None:
            tau += self.fst * (np.sign(dq) * np.exp(-(dq / self.drive.stribeck_velocity) ** 2))
        for col, block in coupled_motor_columns(self.robot, self.layout, self.drive, dq, ddq):
            tau += self.phi[col] * block
        return tau


class PayloadTorques:
    """The payload's share of the joint torques on ``robot``'s (nominal) model: RNEA with
    the payload ``inertia`` at ``frame`` minus RNEA without."""

    def __init__(self, robot: RobotModel, frame: str, inertia: pin.Inertia):
        loaded = robot.model.copy()
        f = loaded.frames[loaded.getFrameId(frame)]
        loaded.inertias[f.parentJoint] = loaded.inertias[f.parentJoint] + \
            f.placement.act(inertia)
        self.robot, self.loaded = robot, loaded
        self.d0, self.d1 = robot.model.createData(), loaded.createData()
        self.conf = Configurations(robot)
        self.lock = threading.Lock()

    def __call__(self, Q: np.ndarray, dQ: np.ndarray, ddQ: np.ndarray) -> np.ndarray:
        c, m = self.conf, self.robot.model
        X = zip(c.positions(np.atleast_2d(Q)), c.velocities(np.atleast_2d(dQ)),
                c.velocities(np.atleast_2d(ddQ)))
        with self.lock:
            rows = [pin.rnea(self.loaded, self.d1, *x) - pin.rnea(m, self.d0, *x) for x in X]
        return np.array(rows)[:, c.idx_v]

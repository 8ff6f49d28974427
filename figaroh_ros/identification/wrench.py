"""Floating-base identification from external wrenches (Nguyen et al. 2023 Eq. 2; Table I: an
external wrench identifies the segment inertial parameters, SIP).

The six floating-base rows of the inverse dynamics are the Newton-Euler equations of the
whole robot: the total external wrench equals the rate of change of its momentum minus
gravity, linear in every body's inertial parameters,

    F_ext = X*(oMb) Y_b(q, v, a) phi,                                          (Eq. 2)

with ``Y_b`` the free-flyer rows of pinocchio's joint torque regressor (a spatial force in
the base frame) and ``X*(oMb)`` its transformation to the world frame at the world
origin.  A force plate under the feet gives ``F_ext`` (the ground's reaction on the
robot, at the plate origin in the plate frame, here the world frame).  No joint torque
is needed; the drive chain does not enter.  Rows are stacked component by component
(``fx`` for every sample, then ``fy`` ... ``mz``), as joint by joint for torques.
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin

from figaroh_ros.errors import DataError
from figaroh_ros.identification.observation import Processing, joint_motion
from figaroh_ros.identification.parameters import PIN_TO_STD, ParameterLayout
from figaroh_ros.model.robot import RobotModel

COMPONENTS = ("fx", "fy", "fz", "mx", "my", "mz")


CHUNK = 128     # samples written into the regressor at once


def contact_wrench_regressor(robot: RobotModel, layout: ParameterLayout, Q: np.ndarray,
                             V: np.ndarray, A: np.ndarray) -> np.ndarray:
    """``W`` (6N x P) with ``F_ext = W phi`` for full-model states ``Q, V, A`` (N x nq,
    N x nv, N x nv); columns in ``layout``'s order (inertial columns only; drive columns
    are zero).  Each sample's ``X*(oMb) Y_b`` (Eq. 2) is written into a block of samples,
    the block into ``W`` at once."""
    model = robot.model
    if not robot.floating_base or model.joints[1].nv != 6:
        raise DataError("an external-wrench regressor needs a floating-base model "
                          "(robot.floating_base: true)")
    data = model.createData()
    N = Q.shape[0]
    n_links = model.njoints - 1
    perm = (np.arange(n_links)[:, None] * 10 + PIN_TO_STD[None, :]).ravel()
    inertial = np.concatenate([layout.inertial_cols[j] for j in range(1, model.njoints)])
    cols = inertial[np.argsort(perm)]        # column of W of pinocchio's column k
    W = np.zeros((6, N, layout.size))
    F = np.empty((min(N, CHUNK), 6, 10 * n_links))
    for a in range(0, N, CHUNK):
        b = min(a + CHUNK, N)
        for i in range(a, b):
            Y = pin.computeJointTorqueRegressor(model, data, Q[i], V[i], A[i])
            np.matmul(data.oMi[1].toDualActionMatrix(), Y[:6], out=F[i - a])
        W[:, a:b, cols] = F[:b - a].transpose(1, 0, 2)
    return W.reshape(6 * N, layout.size)


def plate_to_world(wrench: np.ndarray, plate_pose: pin.SE3) -> np.ndarray:
    """Plate readings (N x 6, force then moment, at the plate origin in the plate frame)
    to the world frame at the world origin."""
    X = plate_pose.toDualActionMatrix()
    return np.asarray(wrench, float) @ X.T


def base_motion(robot: RobotModel, q_active: np.ndarray, contact_frame: str,
                step: float | np.ndarray):
    """Full-model states of a floating-base robot whose ``contact_frame`` stays fixed in
    the world (a foot flat on the plate; for an arm bolted on a plate, its root link):
    ``oMb(t) = bMc(q(t))^-1``, the world being the contact frame (z up: gravity along its
    -z, as pinocchio's default; ``robot.gravity`` otherwise); base
    twist and acceleration (local frame, as pinocchio's free-flyer) by central differences
    on SE(3).  Returns (Q, V, A) with the active joints' velocities and accelerations left
    at zero for the caller to fill."""
    model = robot.model
    if not model.existFrame(contact_frame):
        raise DataError(f"measurements.contact_frame: no frame {contact_frame!r} in the "
                          "URDF")
    fid = model.getFrameId(contact_frame)
    data = model.createData()
    Q = robot.full_configuration(q_active)           # the base at the same placement
    N = Q.shape[0]
    pin.forwardKinematics(model, data, Q[0])
    oMb0 = data.oMi[1].copy()
    oMb = []                                          # the world is the contact frame
    for i in range(N):
        pin.forwardKinematics(model, data, Q[i])      # the contact frame's placement only
        bMc = oMb0.actInv(pin.updateFramePlacement(model, data, fid))
        oMb.append(bMc.inverse())                     # cMb
    Q[:, :7] = [pin.SE3ToXYZQUAT(M) for M in oMb]
    t = np.arange(N) * step if np.isscalar(step) else np.asarray(step, float)
    prev, nxt = np.maximum(np.arange(N) - 1, 0), np.minimum(np.arange(N) + 1, N - 1)
    V = np.zeros((N, model.nv))
    V[:, :6] = [pin.log6(oMb[a].actInv(oMb[b])).vector for a, b in zip(prev, nxt)]
    V[:, :6] /= (t[nxt] - t[prev])[:, None]
    A = np.zeros_like(V)
    A[:, :6] = np.gradient(V[:, :6], t, axis=0)
    return Q, V, A


def contact_frame(robot: RobotModel, name: str | None = None) -> str:
    """``name``, or the root link of the model (an arm bolted on the plate)."""
    if name is not None:
        return name
    for f in robot.model.frames:
        if f.type == pin.FrameType.BODY and f.parentJoint == 1:
            return f.name
    raise DataError("measurements.contact_frame: the model has no root link")


def wrench_equations(robot: RobotModel, layout: ParameterLayout, t: np.ndarray,
                     q: np.ndarray, wrench: np.ndarray, frame: str, p: Processing):
    """``(W, Y, moving)`` of a recording of joint positions and the contact wrench (world
    frame), before decimation.  The base follows from the contact ``frame`` fixed in the
    world: the whole filtered recording is differentiated, then the same edges dropped.
    Every wrench row is kept (``moving`` huge): its 6 groups are the components."""
    m = joint_motion(t, q, p)
    Q, V, A = base_motion(robot, m.q, frame, m.step)
    V[:, robot.idx_v], A[:, robot.idx_v] = m.dq, m.ddq
    k = m.keep
    W = contact_wrench_regressor(robot, layout, Q[k], V[k], A[k])
    wrench = np.asarray(wrench, float)[k]
    return W, wrench.T.ravel(), np.full((wrench.shape[0], 6), 1e9)

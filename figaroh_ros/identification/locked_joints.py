"""The model with every non-active joint locked at rest, for the joint torque regressor.

Passive joints stay at ``q_rest`` with zero velocity and acceleration: the torques of the
active joints are those of the model where every other joint is locked at ``q_rest``
(pinocchio's ``buildReducedModel``; fewer joints, a cheaper regressor).  There, the body
of a locked joint is rigidly attached to its nearest non-locked ancestor, its *host* (the
universe possibly).  A body's dynamic parameters ``pi`` (``m, m c, I`` at its joint frame,
pinocchio's ``toDynamicParameters`` order) seen from another frame are linear in ``pi``:
``X(M) pi``, ``M`` the placement of the body's frame in that frame (a rigid change of frame,
parallel-axis theorem).  Since the reduced host body carries ``pi_host + sum X(M_b) pi_b``,
the full model's regressor columns follow from the reduced model's, exactly::

    Y[:, body b] = Y_reduced[:, host] X(M_b),    Y[:, host] = Y_reduced[:, host]

and zero for a body hosted by the universe (no active joint carries it).  ``M_b`` is the
placement at ``q_rest`` of ``b``'s joint frame in its host's.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from figaroh_ros.model.robot import RobotModel

REST_POSITIONS_KEPT = 8     # rest positions whose reduced model is kept, per robot model


@dataclass(frozen=True)
class LockedJoints:
    """The reduced model of a robot and where each of its bodies went."""

    robot: RobotModel                 # the reduced model: its joints are the active ones
    host: dict[int, int]              # full joint id -> reduced joint id of its host (0: none)
    transform: dict[int, np.ndarray]  # locked joint id (hosted) -> its X(M), 10 x 10


# pinocchio model -> {(active joint ids, q_rest bytes): LockedJoints}; a model is not
# changed after loading but for its gravity, copied to the reduced model at every call
_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def moved_parameters(pi: np.ndarray, M: pin.SE3) -> np.ndarray:
    """Dynamic parameters of the body ``pi`` expressed in the frame where ``M`` places the
    body's frame (pinocchio: ``Inertia.se3Action``)."""
    return pin.Inertia.FromDynamicParameters(pi).se3Action(M).toDynamicParameters()


def parameter_transform(M: pin.SE3) -> np.ndarray:
    """The 10 x 10 matrix ``X(M)`` of :func:`moved_parameters` (a linear map).  Read from
    pinocchio on bodies of unit mass (no division by a mass that is not 1): the mass
    column is the image of ``e_0``, column k the difference of the images of
    ``e_0 + e_k`` and ``e_0``."""
    unit = np.eye(10)
    mass = moved_parameters(unit[0], M)
    return np.column_stack([mass] + [moved_parameters(unit[0] + unit[k], M) - mass
                                     for k in range(1, 10)])


def host_joint(model: pin.Model, jid: int, active: set[int]) -> int:
    """The nearest joint among ``jid`` and its ancestors that is active (0: none)."""
    while jid != 0 and jid not in active:
        jid = model.parents[jid]
    return jid


def locked_joints(robot: RobotModel, q_rest: np.ndarray | None = None) -> LockedJoints | None:
    """The :class:`LockedJoints` of ``robot`` with its non-active joints at ``q_rest``
    (neutral by default); ``None`` when every joint is active.  Built once per model,
    active joints and rest position; its gravity is the model's at every call."""
    model = robot.model
    if model.njoints - 1 == len(set(robot.joint_ids)):
        return None
    q_rest = pin.neutral(model) if q_rest is None else np.asarray(q_rest, float)
    known = _CACHE.setdefault(model, {})
    key = (tuple(robot.joint_ids), q_rest.tobytes())
    if key not in known:
        if len(known) >= REST_POSITIONS_KEPT:
            del known[next(iter(known))]
        known[key] = _reduced(robot, q_rest)
    found = known[key]
    found.robot.model.gravity = model.gravity
    return found


def _reduced(robot: RobotModel, q_rest: np.ndarray) -> LockedJoints:
    """Build the :class:`LockedJoints` of ``robot`` at ``q_rest`` (joints matched by name)."""
    model, active = robot.model, set(robot.joint_ids)
    locked = [jid for jid in range(1, model.njoints) if jid not in active]
    reduced = pin.buildReducedModel(model, locked, q_rest)
    data = model.createData()
    pin.forwardKinematics(model, data, q_rest)
    host, transform = {}, {}
    for jid in range(1, model.njoints):
        h = host_joint(model, jid, active)
        host[jid] = reduced.getJointId(model.names[h]) if h else 0
        if h and h != jid:
            transform[jid] = parameter_transform(data.oMi[h].actInv(data.oMi[jid]))
    return LockedJoints(RobotModel(reduced, list(robot.active_joints), robot.urdf_path),
                        host, transform)

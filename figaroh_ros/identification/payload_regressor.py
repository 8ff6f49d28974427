"""A payload's ten inertial parameters in the measurements (Nguyen et al. 2023 Eq. 2-5; Khalil &
Dombre, *Modeling, Identification and Control of Robots*, §14: a load rigidly fixed on
the terminal link adds its standard parameters to that link's).

The payload is a rigid body fixed to ``tool_frame``; its standard vector
``pi = [m, mx, my, mz, Ixx, Ixy, Ixz, Iyy, Iyz, Izz]`` (first moment and inertia about the
tool-frame origin, in tool-frame axes) enters the Newton-Euler wrench it needs linearly:

    F_f = Y(v_f, a_f - g_f) pi                  (the body regressor of the tool frame)

with ``v_f, a_f`` the frame's spatial velocity and acceleration and ``g_f`` gravity, all in
the tool frame.  A wrist force-torque sensor at the tool frame measures ``F_f`` (plus an
unknown constant offset ``F_0``, six more unknowns); the joints carry it through the
frame Jacobian, ``tau_payload = J_f^T F_f``.  Rows are stacked joint by joint (torques) or
component by component (``fx`` of every sample, then ``fy`` ... ``mz``), as in
``regressor.py`` and ``wrench.py``.
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin

from figaroh_ros.errors import DataError, ModelError
from figaroh_ros.identification.parameters import INERTIAL, PIN_TO_STD
from figaroh_ros.model.robot import RobotModel

WRENCH_COMPONENTS = ("fx", "fy", "fz", "mx", "my", "mz")
OFFSET_NAMES = tuple(f"{c}_offset" for c in WRENCH_COMPONENTS)


def tool_frame_id(robot: RobotModel, tool_frame: str) -> int:
    """The pinocchio id of ``tool_frame`` (a :class:`ModelError` naming the frames when the
    model has no such frame)."""
    if not isinstance(tool_frame, str) or not robot.model.existFrame(tool_frame):
        names = [f.name for f in robot.model.frames][-8:]
        raise ModelError(f"tool_frame: no frame {tool_frame!r} in the model (its last "
                         f"frames: {', '.join(names)})")
    return robot.model.getFrameId(tool_frame)


def frame_regressors(robot: RobotModel, tool_frame: str, q, dq, ddq):
    """Per sample: the body regressor ``Y`` (N x 6 x 10, standard order) of the tool frame
    and its local Jacobian ``J`` (N x 6 x n_joints, active joints)."""
    model, fid = robot.model, tool_frame_id(robot, tool_frame)
    data = model.createData()
    Q, V, A = robot.full_configuration(q), robot.full_velocity(dq), robot.full_velocity(ddq)
    N = Q.shape[0]
    Y = np.empty((N, 6, 10))
    J = np.empty((N, 6, robot.n_joints))
    local = pin.ReferenceFrame.LOCAL
    for i in range(N):
        pin.forwardKinematics(model, data, Q[i], V[i], A[i])
        pin.updateFramePlacement(model, data, fid)
        v = pin.getFrameVelocity(model, data, fid, local)
        a = pin.getFrameAcceleration(model, data, fid, local)
        g = data.oMf[fid].rotation.T @ model.gravity.linear
        a_g = pin.Motion(a.linear - g, a.angular)
        Y[i] = pin.bodyRegressor(v, a_g)[:, PIN_TO_STD]
        J[i] = pin.computeFrameJacobian(model, data, Q[i], fid, local)[:, robot.idx_v]
    return Y, J


def torque_regressor(Y: np.ndarray, J: np.ndarray) -> np.ndarray:
    """``W`` (n_joints*N x 10): ``tau_payload = J^T Y pi``, rows joint by joint."""
    W = np.einsum("nkj,nkp->jnp", J, Y)
    return W.reshape(-1, 10)


def wrench_regressor(Y: np.ndarray) -> np.ndarray:
    """``W`` (6N x 16): the sensor wrench ``Y pi + F_0``, rows component by component;
    the last six columns are the offset ``F_0``."""
    N = Y.shape[0]
    W = np.zeros((6, N, 16))
    W[:, :, :10] = Y.transpose(1, 0, 2)
    for k in range(6):
        W[k, :, 10 + k] = 1.0
    return W.reshape(6 * N, 16)


def parameter_names(kind: str) -> tuple[str, ...]:
    """Names of the unknowns of the ``kind`` (``torque`` or ``wrench``) regressor."""
    return INERTIAL + (OFFSET_NAMES if kind == "wrench" else ())


def unobservable(Wn: np.ndarray, names, rtol: float) -> list[str]:
    """Names carried by the right singular vectors of the column-normalised ``Wn`` whose
    singular value is below ``rtol`` times the largest (the directions the data leave
    undetermined), the weakest first."""
    _, s, Vt = np.linalg.svd(Wn, full_matrices=False)
    weak = np.flatnonzero(s < rtol * s[0])[::-1]
    out: list[str] = []
    for k in weak:
        v = np.abs(Vt[k])
        for i in np.flatnonzero(v > 0.3 * v.max()):
            if names[i] not in out:
                out.append(names[i])
    return out


def normalised(W: np.ndarray) -> np.ndarray:
    """``W`` with unit-norm columns (zero columns left at zero): its condition number
    compares directions, not the units of mass, first moment and inertia."""
    n = np.linalg.norm(W, axis=0)
    return W / np.where(n > 0, n, 1.0)


def condition_number(W: np.ndarray) -> float:
    """Condition number of the column-normalised ``W`` (inf when rank deficient)."""
    s = np.linalg.svd(normalised(W), compute_uv=False)
    return float(s[0] / s[-1]) if s[-1] > 0 else float("inf")


def require_observable(W: np.ndarray, kind: str, max_condition: float) -> float:
    """The condition number of ``W``, or a :class:`DataError` naming the parameters the
    motion cannot identify when it exceeds ``max_condition``."""
    cond = condition_number(W)
    if cond <= max_condition:
        return cond
    names = unobservable(normalised(W), parameter_names(kind), 1.0 / max_condition)
    raise DataError(f"the payload motion cannot identify the payload: condition number "
                    f"{cond:.3g} > {max_condition:.3g}; unobservable parameters: "
                    f"{', '.join(names) or 'combinations of all'} (move the wrist joints "
                    "more: rotate the tool about all three axes)")


def check_motion(robot: RobotModel, q, dq, ddq) -> tuple[np.ndarray, ...]:
    """``q, dq, ddq`` as finite float arrays of shape N x n_joints (DataError otherwise)."""
    out = []
    for name, x in (("q", q), ("dq", dq), ("ddq", ddq)):
        x = np.atleast_2d(np.asarray(x, float))
        if x.ndim != 2 or x.shape[1] != robot.n_joints:
            raise DataError(f"{name}: expected N x {robot.n_joints} (joints "
                            f"{', '.join(robot.active_joints)}), got shape {x.shape}")
        bad = np.argwhere(~np.isfinite(x))
        if len(bad):
            raise DataError(f"{name}: non-finite value {x[tuple(bad[0])]} at sample "
                            f"{bad[0][0]}, joint {robot.active_joints[bad[0][1]]}")
        out.append(x)
    if not out[0].shape == out[1].shape == out[2].shape:
        raise DataError(f"q, dq, ddq: different numbers of samples "
                        f"({len(out[0])}, {len(out[1])}, {len(out[2])})")
    return tuple(out)

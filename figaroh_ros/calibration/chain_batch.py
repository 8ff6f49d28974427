"""Rigid transforms of many postures at once: the batched arithmetic of the kinematic model.

A serial chain's pose at P postures is a product of P homogeneous 4 x 4 matrices per
joint; written as stacked numpy products instead of one pinocchio ``SE3`` per posture and
joint, the forward kinematics and the regressor of a whole posture set cost a few array
operations per joint.  Conventions follow pinocchio: ``T = [[R, p], [0, 1]]`` maps frame
coordinates to parent coordinates; twists are ``[linear; angular]``.  A joint moves by
``exp6(S theta)`` for its motion subspace ``S`` (revolute: Rodrigues' formula, Murray, Li
& Sastry 1994 Eq. 2.14; prismatic: a translation).
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin


def skews(r: np.ndarray) -> np.ndarray:
    """Cross-product matrices ``[r]x`` of the rows of ``r`` (... x 3 -> ... x 3 x 3)."""
    r = np.asarray(r, float)
    K = np.zeros(r.shape[:-1] + (3, 3))
    K[..., 0, 1], K[..., 0, 2] = -r[..., 2], r[..., 1]
    K[..., 1, 0], K[..., 1, 2] = r[..., 2], -r[..., 0]
    K[..., 2, 0], K[..., 2, 1] = -r[..., 1], r[..., 0]
    return K


def apply(R: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``R v`` for stacked rotations (... x 3 x 3) and vectors (... x 3, or one 3)."""
    v = np.asarray(v, float)
    if v.ndim == 1:
        return R @ v
    return (R @ v[..., None])[..., 0]


def cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise ``a x b`` (... x 3), written out (``np.cross`` is slow on short rows)."""
    a, b = np.broadcast_arrays(a, b)
    out = np.empty(a.shape)
    out[..., 0] = a[..., 1] * b[..., 2] - a[..., 2] * b[..., 1]
    out[..., 1] = a[..., 2] * b[..., 0] - a[..., 0] * b[..., 2]
    out[..., 2] = a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    return out


def joint_motion(S: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """``exp6(S theta_i)`` of a 1-dof joint for every posture, P x 4 x 4."""
    theta = np.asarray(theta, float)
    v, w = S[:3], S[3:]
    T = np.zeros((len(theta), 4, 4))
    T[:, 3, 3] = 1.0
    if not w.any():                                       # prismatic
        T[:, :3, :3] = np.eye(3)
        T[:, :3, 3] = theta[:, None] * v
    elif not v.any():                                     # revolute through the origin
        a = float(np.linalg.norm(w))
        K = skews(w / a)
        s, c = np.sin(a * theta), np.cos(a * theta)
        T[:, :3, :3] = np.eye(3) + s[:, None, None] * K + (1.0 - c)[:, None, None] * (K @ K)
    else:                                                 # helical: pinocchio's exp6
        T[:] = [pin.exp6(pin.Motion(S * t)).homogeneous for t in theta]
    return T


def _variations(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``exp3(dphi)^T`` and ``Jexp3(dphi)`` of each row ``d = [dp, dphi]`` (one per joint,
    shaped to broadcast over the postures) or of the single ``d``."""
    rows = np.atleast_2d(np.asarray(d, float))
    Et = np.array([pin.exp3(r[3:6]).T for r in rows])
    Jr = np.array([pin.Jexp3(r[3:6]) for r in rows])
    if np.ndim(d) == 2:
        return Et[:, None], Jr[:, None]
    return Et[0], Jr[0]


def placement_columns(R: np.ndarray, p: np.ndarray, d: np.ndarray,
                      target: np.ndarray) -> np.ndarray:
    """Columns (... x P x 6 x 6) of the six variations ``d = [dp, dphi]`` of a placement
    ``M * SE3(exp3(dphi), dp)`` whose world pose is ``(R, p)``: the body twist
    ``[exp3(dphi)^T dp ; Jexp3(dphi) dphi]`` carried to the points ``target`` (P x 3) in
    world axes, ``[R v + (R w) x (target - p) ; R w]``.  ``R, p, d``: one placement
    (3 x 3, 3, 6; or P x 3 x 3, P x 3, 6) or one per joint (J x P x 3 x 3, J x P x 3,
    J x 6)."""
    Et, Jr = _variations(d)
    r = np.asarray(target, float) - p
    RJ = R @ Jr
    out = np.zeros(np.broadcast_shapes(RJ.shape[:-2], r.shape[:-1]) + (6, 6))
    out[..., :3, :3] = R @ Et
    out[..., :3, 3:] = -skews(r) @ RJ
    out[..., 3:, 3:] = RJ
    return out


def joint_columns(R: np.ndarray, p: np.ndarray, S: np.ndarray,
                  target: np.ndarray) -> np.ndarray:
    """Twists (J x P x 6) at ``target`` (P x 3) of joints moving along their motion
    subspaces ``S`` (J x 6), the joint frames at ``(R, p)`` (J x P x 3 x 3, J x P x 3):
    ``[R v + (R w) x (target - p) ; R w]``."""
    w = (R @ S[:, None, 3:, None])[..., 0]
    out = np.empty(w.shape[:-1] + (6,))
    out[..., :3] = (R @ S[:, None, :3, None])[..., 0] + cross(w, target - p)
    out[..., 3:] = w
    return out


def poses(T: np.ndarray) -> list[pin.SE3]:
    """The stacked homogeneous poses as a list of pinocchio ``SE3``."""
    return [pin.SE3(Ti[:3, :3], Ti[:3, 3]) for Ti in T]

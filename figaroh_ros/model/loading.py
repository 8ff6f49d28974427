"""``load_model``: a :class:`RobotModel` from a URDF file, an ``example-robot-data:`` path or
the URDF text itself, with its drive chain (gear ratios, coupling; Nguyen et al. 2023 Eq. 3) and the
gravity of its mounting (Tröbinger et al.)."""
from __future__ import annotations

import numpy as np
import pinocchio as pin

from figaroh_ros.errors import ModelError
from figaroh_ros.model.robot import (
    RobotModel, Transmission, example_robot_urdf, load_urdf_model
)
from figaroh_ros.model.urdf_checks import check_urdf_file, check_urdf_text

EXAMPLE = "example-robot-data:"
SINGULAR_DET = 1e-9        # |det K| below this: a singular coupling matrix


def coupling_matrix(joints: list[str], coupling) -> np.ndarray:
    """The motor-to-joint matrix ``K`` (identity plus the coupling entries).

    ``coupling`` is an n x n matrix, or a list of ``(motor, joint, coefficient)`` triples
    or ``{motor, joint, coefficient}`` mappings naming active joints: motor ``motor`` also
    turns with joint ``joint`` (``theta_m = r (q_motor + coefficient q_joint)``).  A
    :class:`ModelError` (``coupling: ...``) for unknown joints, non-finite entries or a
    singular ``K`` (its determinant and rank named); the identification config refuses
    the same at loading (``check_transmission``)."""
    n = len(joints)
    if coupling is None or len(coupling) == 0:
        return np.eye(n)
    if np.ndim(coupling) == 2 and not isinstance(coupling[0], dict) \
            and np.shape(coupling) == (n, n):
        K = np.asarray(coupling, float)
    else:
        K = np.eye(n)
        for c in coupling:
            motor, joint, coef = ((c["motor"], c["joint"], c["coefficient"])
                                  if isinstance(c, dict) else c)
            if motor not in joints or joint not in joints:
                raise ModelError(f"coupling {motor!r} -> {joint!r}: not active joints {joints}")
            K[joints.index(motor), joints.index(joint)] = float(coef)
    return _invertible(K)


def _invertible(K: np.ndarray) -> np.ndarray:
    """``K`` if finite and not singular (a :class:`ModelError` naming its determinant and
    rank otherwise: the joint positions could not be recovered from the motors')."""
    if not np.all(np.isfinite(K)):
        raise ModelError(f"coupling: non-finite coefficients in {K.tolist()}")
    det = np.linalg.det(K)
    if abs(det) < SINGULAR_DET:
        raise ModelError(f"coupling: the motor-to-joint matrix K is singular (determinant "
                         f"{det:.3g}, rank {np.linalg.matrix_rank(K)} of {len(K)}): the "
                         "joint positions cannot be recovered from the motors'")
    return K


def _parse(urdf_or_path: str, floating_base: bool) -> tuple[pin.Model, str, str | None]:
    """(pinocchio model, path, URDF text if given as text)."""
    root = pin.JointModelFreeFlyer() if floating_base else None
    if urdf_or_path.lstrip().startswith("<"):
        check_urdf_text(urdf_or_path)
        try:
            model = (pin.buildModelFromXML(urdf_or_path, root) if root is not None
                     else pin.buildModelFromXML(urdf_or_path))
        except Exception as exc:  # pinocchio raises RuntimeError / ValueError
            raise ModelError(f"cannot parse the URDF text: {exc}") from exc
        return model, "<URDF text>", urdf_or_path
    path = urdf_or_path
    if path.startswith(EXAMPLE):
        path = example_robot_urdf(path[len(EXAMPLE):])
    check_urdf_file(path)
    return load_urdf_model(path, [], floating_base).model, path, None


def load_model(urdf_or_path: str, joints: list[str] | None = None, *,
               floating_base: bool = False, gear_ratios=None, coupling=None,
               gravity=None) -> RobotModel:
    """The robot model to identify.

    ``urdf_or_path``: a URDF file, ``example-robot-data:<relative path>`` or the URDF XML
    text; ``joints``: the active joints (default: every 1-DoF joint); ``gear_ratios``: one
    per active joint (default 1); ``coupling``: see :func:`coupling_matrix`; ``gravity``:
    the gravitational acceleration in the base frame (default (0, 0, -9.81))."""
    model, path, text = _parse(str(urdf_or_path), floating_base)
    if joints is None:
        joints = [n for i, n in enumerate(model.names)
                  if i > 0 and model.joints[i].nv == 1 and model.joints[i].nq == 1]
    joints = list(joints)
    ratios = np.ones(len(joints)) if gear_ratios is None else np.asarray(gear_ratios, float)
    if ratios.shape != (len(joints),) or not np.all(np.isfinite(ratios)) \
            or np.any(ratios == 0):
        raise ModelError(f"gear_ratios: expected {len(joints)} non-zero values, got {ratios}")
    robot = RobotModel(model, joints, path, floating_base,
                       Transmission(ratios, coupling_matrix(joints, coupling)), text)
    if gravity is not None:
        g = np.asarray(gravity, float)
        if g.shape != (3,) or not np.all(np.isfinite(g)):
            raise ModelError(f"gravity: expected 3 finite numbers (m/s^2), got {gravity}")
        robot.model.gravity.linear = g
    return robot

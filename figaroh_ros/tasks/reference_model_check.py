"""``identify --reference-model URDF``: a published standard-parameter model scored on the
same held-out data as ours.

The reference URDF is read with the config's ``robot`` choices (removed links, locked
joints, gear ratios, coupling), put into our parameter layout
(``io.reference_model.reference_standard_parameters``: same joints and placements, else an
error; its drive terms 0) and made to predict the held-out rows through our regressor, so
that its per-joint RMSE and relative error stand beside ours and the nominal model's.

A published friction model our layout cannot hold (``--reference-friction``,
``io/reference_friction.py``: Gaz et al. 2019's sigmoid) is added to that prediction row by
row, at the velocity of the row's joint that the held-out equations use: the joint's
viscous-friction column of the regressor, which is that velocity itself.
"""
from __future__ import annotations

import numpy as np

from figaroh_ros.errors import ConfigError, ModelError
from figaroh_ros.identification.estimation import rmse_per_joint
from figaroh_ros.identification.result import IdentificationResult
from figaroh_ros.io.reference_friction import ReferenceFriction, read_reference_friction
from figaroh_ros.io.reference_model import reference_standard_parameters
from figaroh_ros.tasks.robot_model import config_model


def reference_robot(cfg, path: str):
    """The reference URDF as a model of the (typed) config's robot choices."""
    return config_model(cfg, path)


def require_held_out(result: IdentificationResult) -> None:
    """A reference model is scored on held-out data only: ConfigError without it."""
    if result.held_out is None:
        raise ConfigError("--reference-model: scoring needs held-out data "
                          "(estimation.validation_fraction > 0 or --validate)")


def reference_friction_of(reference_model: str | None,
                          path: str | None) -> ReferenceFriction | None:
    """The ``--reference-friction`` file read (before anything is identified), or None;
    a :class:`ConfigError` when it is given without ``--reference-model``."""
    if path is None:
        return None
    if reference_model is None:
        raise ConfigError(f"--reference-friction {path}: adds to a reference model's "
                          "prediction: give --reference-model too")
    return read_reference_friction(path)


def held_out_velocities(result: IdentificationResult) -> np.ndarray:
    """The velocity of every held-out row's joint: the row's entry in its joint's viscous
    column (``fv``: the velocity itself, filtered and decimated as every column is).  A
    :class:`ConfigError` when the model has no viscous term for a joint."""
    o, layout, base = result.held_out, result.layout, result.base
    active = list(result.model.active_joints)
    cols = []
    for joint in result.joints:
        k = active.index(joint) if joint in active else -1
        c = int(layout.fv_col[k]) if k >= 0 else -1
        where = np.flatnonzero(np.asarray(base.base_index) == c) if c >= 0 else []
        if len(where) != 1:
            raise ConfigError(f"--reference-friction: the held-out velocity of joint "
                              f"{joint!r} is read from its viscous friction column: set "
                              "model.viscous_friction: true")
        cols.append(int(where[0]))
    return o.Wb[np.arange(len(o.Y)), np.asarray(cols)[o.row_joint]]


def score_standard_parameters(result: IdentificationResult, phi: np.ndarray,
                              path: str, friction: ReferenceFriction | None = None) -> dict:
    """Per-joint held-out RMSE and relative error of the standard vector ``phi`` (the
    result's layout), plus ``friction`` if given, through the result's own held-out
    equations: the ``reference_model`` section of result.yaml."""
    o, n = result.held_out, len(result.joints)
    phi_b = result.base.from_standard(phi)
    predicted = o.Wb @ phi_b
    if friction is not None:
        predicted = predicted + friction.torques(result.joints, o.row_joint,
                                                 held_out_velocities(result))
    rmse = rmse_per_joint(o.Y, predicted, o.row_joint, n)
    res = o.Y - predicted
    rel = [float(np.sqrt(np.mean(res[o.row_joint == j] ** 2)
                         / np.mean(o.Y[o.row_joint == j] ** 2))) for j in range(n)]
    stacked = float(np.sqrt(np.mean(res ** 2) / np.mean(o.Y ** 2)))
    out = {"path": path,
           "validation_rmse": dict(zip(result.joints, np.round(rmse, 9).tolist())),
           "validation_relative_error": dict(zip(result.joints, rel),
                                             stacked=stacked),
           "held_out_rows": int(len(o.Y))}
    if friction is not None:
        out["friction"] = friction.record()
    return out


def score_reference_model(cfg, result: IdentificationResult, path: str,
                          friction: ReferenceFriction | None = None) -> dict:
    """Per-joint held-out RMSE and relative error of the model of ``path`` (and of the
    published ``friction``, if given)."""
    require_held_out(result)
    try:
        phi = reference_standard_parameters(result.model, reference_robot(cfg, path),
                                            result.layout)
    except ModelError as exc:
        raise ConfigError(f"--reference-model {path}: {exc}") from None
    return score_standard_parameters(result, phi, path, friction)

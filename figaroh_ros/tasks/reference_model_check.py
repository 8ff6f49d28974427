"""``identify --reference-model URDF``: a published standard-parameter model scored on the
same held-out data as ours.

The reference URDF is read with the config's ``robot`` choices (removed links, locked
joints, gear ratios, coupling), put into our parameter layout
(``io.reference_model.reference_standard_parameters``: same joints and placements, else an
error; its drive terms 0) and made to predict the held-out rows through our regressor, so
that its per-joint RMSE and relative error stand beside ours and the nominal model's.
"""
from __future__ import annotations

import numpy as np

from figaroh_ros.errors import ConfigError, ModelError
from figaroh_ros.identification.estimation import rmse_per_joint
from figaroh_ros.identification.fit import relative_errors
from figaroh_ros.identification.result import IdentificationResult
from figaroh_ros.io.reference_model import reference_standard_parameters
from figaroh_ros.model.loading import load_model
from figaroh_ros.model.robot import configured_urdf, with_locked_joints


def reference_robot(cfg: dict, path: str):
    """The reference URDF as a model of the config's robot choices."""
    r, tr = cfg["robot"], cfg["transmission"]
    robot = load_model(configured_urdf(path, r.get("remove_links")), r["joints"],
                       floating_base=r["floating_base"], gear_ratios=tr["gear_ratios"],
                       coupling=tr["coupling"], gravity=r.get("gravity"))
    return with_locked_joints(robot, r.get("lock_joints"))


def require_held_out(result: IdentificationResult) -> None:
    """A reference model is scored on held-out data only: ConfigError without it."""
    if result.held_out is None:
        raise ConfigError("--reference-model: scoring needs held-out data "
                          "(estimation.validation_fraction > 0 or --validate)")


def score_standard_parameters(result: IdentificationResult, phi: np.ndarray,
                              path: str) -> dict:
    """Per-joint held-out RMSE and relative error of the standard vector ``phi`` (the
    result's layout) through the result's own held-out equations: the ``reference_model``
    section of result.yaml."""
    o, n = result.held_out, len(result.joints)
    phi_b = result.base.from_standard(phi)
    rmse = rmse_per_joint(o.Y, o.Wb @ phi_b, o.row_joint, n)
    rel, stacked = relative_errors(o, phi_b, n)
    return {"path": path,
            "validation_rmse": dict(zip(result.joints, np.round(rmse, 9).tolist())),
            "validation_relative_error": dict(zip(result.joints, rel.tolist()),
                                              stacked=stacked)}


def score_reference_model(cfg: dict, result: IdentificationResult, path: str) -> dict:
    """Per-joint held-out RMSE and relative error of the model of ``path``."""
    require_held_out(result)
    try:
        phi = reference_standard_parameters(result.model, reference_robot(cfg, path),
                                            result.layout)
    except ModelError as exc:
        raise ConfigError(f"--reference-model {path}: {exc}") from None
    return score_standard_parameters(result, phi, path)

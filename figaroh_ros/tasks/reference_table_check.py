"""``identify --reference-model TABLE.csv|.yaml``: a published standard-parameter table
(inertias, frictions, rotor inertias per link and joint, ``io.reference_model``'s
:func:`~figaroh_ros.io.reference_model.read_parameter_table` for its forms) scored on the
same held-out data as ours, into the same ``reference_model`` section of result.yaml as a
reference URDF (``reference_model_check.py``): per-joint RMSE and relative error.

Unlike a URDF, a table has drive terms: they enter the prediction as given.  The table
is read (its numbers checked) before the identification runs, and tied to the identified
model's layout after it (missing, unknown or extra parameters named).
"""
from __future__ import annotations

import numpy as np

from figaroh_ros.errors import ConfigError, DataError
from figaroh_ros.identification.estimation import rmse_per_joint
from figaroh_ros.identification.fit import relative_errors
from figaroh_ros.identification.result import IdentificationResult
from figaroh_ros.io.reference_model import (
    ParameterTable, read_parameter_table, table_standard_parameters
)


def read_reference_table(path: str) -> ParameterTable:
    """The table at ``path``, or a :class:`ConfigError` naming ``--reference-model``."""
    try:
        return read_parameter_table(path)
    except DataError as exc:
        raise ConfigError(f"--reference-model {path}: {exc}") from None


def score_standard_parameters(result: IdentificationResult, phi: np.ndarray,
                              path: str) -> dict:
    """Per-joint held-out RMSE and relative error of the standard vector ``phi`` (the
    result's layout) through the result's own held-out equations."""
    o, n = result.held_out, len(result.joints)
    phi_b = result.base.from_standard(phi)
    rmse = rmse_per_joint(o.Y, o.Wb @ phi_b, o.row_joint, n)
    rel, stacked = relative_errors(o, phi_b, n)
    return {"path": path,
            "validation_rmse": dict(zip(result.joints, np.round(rmse, 9).tolist())),
            "validation_relative_error": dict(zip(result.joints, rel.tolist()),
                                              stacked=stacked)}


def score_reference_table(result: IdentificationResult, table: ParameterTable,
                          path: str) -> dict:
    """The ``reference_model`` section of result.yaml for a table."""
    if result.held_out is None:
        raise ConfigError("--reference-model: scoring needs held-out data "
                          "(estimation.validation_fraction > 0 or --validate)")
    try:
        phi = table_standard_parameters(result.model, result.layout, table)
    except DataError as exc:
        raise ConfigError(f"--reference-model {path}: {exc}") from None
    return score_standard_parameters(result, phi, path)

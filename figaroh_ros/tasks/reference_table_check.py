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

from figaroh_ros.errors import ConfigError, DataError
from figaroh_ros.identification.result import IdentificationResult
from figaroh_ros.io.reference_friction import ReferenceFriction
from figaroh_ros.io.reference_model import (
    ParameterTable, read_parameter_table, table_standard_parameters
)
from figaroh_ros.tasks.reference_model_check import (
    require_held_out, score_standard_parameters
)


def read_reference_table(path: str) -> ParameterTable:
    """The table at ``path``, or a :class:`ConfigError` naming ``--reference-model``."""
    try:
        return read_parameter_table(path)
    except DataError as exc:
        raise ConfigError(f"--reference-model {path}: {exc}") from None


def score_reference_table(result: IdentificationResult, table: ParameterTable,
                          path: str, friction: ReferenceFriction | None = None) -> dict:
    """The ``reference_model`` section of result.yaml for a table (and the published
    ``friction`` added to its prediction, if given)."""
    require_held_out(result)
    try:
        phi = table_standard_parameters(result.model, result.layout, table)
    except DataError as exc:
        raise ConfigError(f"--reference-model {path}: {exc}") from None
    return score_standard_parameters(result, phi, path, friction)

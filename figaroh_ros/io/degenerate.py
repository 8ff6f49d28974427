"""Recordings that hold nothing to fit, refused by name before any work: an
identification recording in which no joint moves (every position constant, or all zero),
and a posture set whose postures are all the same or whose values are all zero (an
unfilled file).  Such inputs otherwise reach the fit and fail there obscurely, or pass
with a model fitted to nothing.  No rclpy here."""
from __future__ import annotations

import numpy as np

from figaroh_ros.errors import DataError

STILL_RANGE = 1e-6      # rad or m: a joint whose position spans less does not move


def _spans(values: np.ndarray) -> np.ndarray:
    values = np.asarray(values, float)
    return np.ptp(values, axis=0) if values.ndim == 2 and len(values) else np.zeros(0)


def refuse_still_recording(q: np.ndarray, joints: list[str], what: str) -> None:
    """DataError naming ``what`` when no joint of ``joints`` moves in ``q`` (N x n)."""
    spans = _spans(q)
    if (spans > STILL_RANGE).any():
        return
    how = "every position is 0" if not np.any(q) else "every joint keeps one position"
    raise DataError(f"{what}: no joint moves ({how} over its {len(q)} samples of {joints}; "
                    f"spans <= {STILL_RANGE:g}): identification needs a recording in which "
                    "the joints move")


def refuse_degenerate_postures(Q: np.ndarray, Y: np.ndarray, joints: list[str], what: str,
                               training: bool = True) -> None:
    """DataError naming ``what`` for a posture set of only zeros (joints and
    measurements), one whose measurements are all zero, or, for ``training`` with two
    postures or more, one whose postures all have the same joint positions."""
    Q, Y = np.asarray(Q, float), np.asarray(Y, float)
    if len(Q) and not np.any(Q) and not np.any(Y):
        raise DataError(f"{what}: every value is 0 (joints {joints} and measurements, "
                        f"{len(Q)} postures): an unfilled posture file")
    if len(Y) and not np.any(Y):
        raise DataError(f"{what}: every measurement is 0 in its {len(Y)} postures: "
                        "an unfilled measurement column set")
    if training and len(Q) >= 2 and not (_spans(Q) > STILL_RANGE).any():
        raise DataError(f"{what}: all {len(Q)} postures have the same joint positions "
                        f"({joints}): calibration needs postures that differ")

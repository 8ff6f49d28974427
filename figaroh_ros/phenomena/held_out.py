"""The training / validation split of a recording of a phenomenon."""
from __future__ import annotations

import numpy as np

from figaroh_ros.errors import DataError
from figaroh_ros.identification.signals import held_out_rows


def split_rows(usable: np.ndarray, validation_fraction: float):
    """Training and validation rows: over the span of the ``usable`` samples, the last
    ``validation_fraction`` validates; samples not usable (filter transients, gaps in a
    recording) are in neither part.  A span less than half usable is refused."""
    usable = np.asarray(usable, bool)
    idx = np.flatnonzero(usable)
    if len(idx) == 0:
        raise DataError("no usable sample")
    a, b = idx[0], idx[-1] + 1
    try:
        train, valid = held_out_rows(usable[a:b], 0, validation_fraction)
    except ValueError as exc:
        raise DataError(str(exc)) from None
    return a + train, a + valid

"""Signal processing for identification data (FIGAROH's
identification_tools; Tröbinger et al. §II.B.3; Gautier 1997).

* central-difference velocities and accelerations, constant or variable time step;
* removal of samples where a joint hardly moves (its Coulomb friction sign is undefined);
* resampling of stamped recordings onto a uniform grid, with the samples that only the
  interpolation across a gap in the recording produced marked, so that no fit uses them;
* the zero-phase filters (Butterworth low-pass, parallel decimation) are in ``filters.py``
  and reachable here by their names (``signals.lowpass_zero_phase``, ``decimate``,
  ``parallel_decimation``), loaded on first use.

Bad input raises :class:`figaroh_ros.errors.DataError` (a ``ValueError``).
"""
from __future__ import annotations

import numpy as np

from figaroh_ros.errors import DataError
from figaroh_ros.lazy import lazy_names

# the filters need scipy.signal (0.5-1 s of import with scipy.stats): they live in
# ``filters.py``, loaded on first use of one of these names (PEP 562), so that resampling
# and differences (bags, calibration) do not load it
_FILTERS = ("lowpass_zero_phase", "decimate", "parallel_decimation")


def uniform_grid(t: np.ndarray, *series: np.ndarray, rate_hz: float | None = None,
                 cutoff_hz: float | None = None, grid: np.ndarray | None = None):
    """Resample ``series`` (each N x k, sampled at the increasing times ``t``) onto a
    uniform grid at ``rate_hz`` (default: the median rate) from ``t[0]`` to ``t[-1]``, or
    onto the given ``grid``, by linear interpolation, since filters and differences need
    constant sampling and recorded stamps jitter.

    Returns ``(grid, resampled series..., covered)``: ``covered`` is False on the grid
    samples that lie in a gap of the recording longer than a quarter of the filter's time
    scale ``1 / cutoff_hz`` (or 5 sample periods without a filter), and within one such
    time scale either side of it, where the filtered signal and its derivatives still
    carry the straight line drawn across the gap (a stalled publisher, dropped messages)."""
    t = np.asarray(t, float)
    if grid is None:
        rate = float(rate_hz or 1.0 / np.median(np.diff(t)))
        grid = np.arange(t[0], t[-1], 1.0 / rate)
    else:
        rate = 1.0 / float(grid[1] - grid[0])
    out = [np.column_stack([np.interp(grid, t, x[:, k]) for k in range(x.shape[1])])
           for x in (np.asarray(s, float) for s in series)]
    scale = 1.0 / cutoff_hz if cutoff_hz else 5.0 / rate
    covered = np.ones(len(grid), bool)
    dt = np.diff(t)
    for i in np.flatnonzero(dt > max(scale / 4, 2.5 / rate)):
        covered &= ~((grid > t[i] - scale) & (grid < t[i + 1] + scale))
    return (grid, *out, covered)


def held_out_rows(covered: np.ndarray, edge: int, validation_fraction: float,
                  what: str = "the recording") -> tuple[np.ndarray, np.ndarray]:
    """Training and validation rows of a resampled window: ``edge`` samples dropped at
    both ends (filter transients), the last ``validation_fraction`` of the rest held out,
    and the samples not ``covered`` (``uniform_grid``) in neither part.  A window of
    which less than half is covered is refused (DataError naming ``what``)."""
    n = len(covered) - 2 * edge
    keep = np.array(covered, bool)
    keep[:edge] = keep[len(keep) - edge:] = False
    if n <= 0 or keep.sum() < 0.5 * n:
        raise DataError(f"{what}: {n - int(keep.sum())} of {max(n, 0)} samples lie in or "
                         "beside gaps between its messages: record again")
    split = edge + int(n * (1 - validation_fraction))
    return np.flatnonzero(keep[:split]), split + np.flatnonzero(keep[split:])


def edge_samples(order: int, cutoff_hz: float | None, fs_hz: float) -> int:
    """Samples to drop at each end of a filtered, differentiated window: the transient of
    the forward-backward Butterworth filter (about ``5 * order`` samples, or three periods
    of the cut-off frequency if longer) plus the one-sided differences."""
    if cutoff_hz is None:
        return 2
    return int(max(5 * order, np.ceil(3.0 * fs_hz / cutoff_hz))) + 2


def central_difference(x: np.ndarray, t: np.ndarray | float) -> np.ndarray:
    """First derivative along axis 0 by central differences (second order accurate also
    for a variable step; one-sided at both ends). ``t`` is the sample period or the
    vector of sample times."""
    x = np.asarray(x, float)
    if np.isscalar(t):
        return np.gradient(x, float(t), axis=0)
    t = np.asarray(t, float)
    if t.shape[0] != x.shape[0]:
        raise DataError(f"{t.shape[0]} time stamps for {x.shape[0]} samples")
    if np.any(np.diff(t) <= 0):
        raise DataError("time stamps must be strictly increasing")
    return np.gradient(x, t, axis=0)


def derivatives(q: np.ndarray, t: np.ndarray | float) -> tuple[np.ndarray, np.ndarray]:
    """Velocities and accelerations of ``q`` (N x n) by repeated central differences."""
    dq = central_difference(q, t)
    return dq, central_difference(dq, t)


def moving_rows(dq: np.ndarray, threshold: float) -> np.ndarray:
    """Boolean mask over the stacked rows (joint-major) that keeps, for each joint, the
    samples whose velocity magnitude is at least ``threshold``."""
    return (np.abs(np.asarray(dq)) >= threshold).T.ravel()


__getattr__, __dir__ = lazy_names(
    globals(), {name: "figaroh_ros.identification.filters" for name in _FILTERS})

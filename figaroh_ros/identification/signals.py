"""Signal processing for identification data (seed 001; seed 003 §II.B.3; Gautier 1997).

* zero-phase Butterworth low-pass filtering of joint positions before differentiation;
* central-difference velocities and accelerations, constant or variable time step;
* parallel decimation: the *same* low-pass filter and down-sampling applied to every
  column of the observation matrix and to the measurement vector, joint by joint, so that
  the filtered system ``Y_f = W_f phi`` keeps the parameters of ``Y = W phi``;
* removal of samples where a joint hardly moves (its Coulomb friction sign is undefined);
* resampling of stamped recordings onto a uniform grid, with the samples that only the
  interpolation across a gap in the recording produced marked, so that no fit uses them.

Bad input raises :class:`figaroh_ros.errors.DataError` (a ``ValueError``).
"""
from __future__ import annotations

import numpy as np
from scipy import signal

from figaroh_ros.errors import DataError


def lowpass_zero_phase(x: np.ndarray, cutoff_hz: float, fs_hz: float,
                       order: int = 4) -> np.ndarray:
    """Zero-phase Butterworth low-pass (forward-backward ``sosfiltfilt``) along axis 0."""
    if not 0 < cutoff_hz < fs_hz / 2:
        raise DataError(f"cut-off {cutoff_hz} Hz must lie in (0, {fs_hz / 2}) Hz "
                         f"(Nyquist of {fs_hz} Hz sampling)")
    sos = signal.butter(order, cutoff_hz, btype="low", fs=fs_hz, output="sos")
    return signal.sosfiltfilt(sos, np.asarray(x, float), axis=0)


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


def _decimation_stages(factor: int) -> list[int]:
    """Split a decimation factor into stages of at most 10 (scipy's advice for IIR)."""
    stages, f = [], factor
    for p in (10, 9, 8, 7, 6, 5, 4, 3, 2):
        while f % p == 0 and f > 1:
            stages.append(p)
            f //= p
    if f > 1:
        stages.append(f)
    return stages


def decimate(x: np.ndarray, factor: int, axis: int = 0) -> np.ndarray:
    """Low-pass (order-8 Chebyshev, zero phase) and keep one sample in ``factor``,
    along ``axis``, in stages of at most 10."""
    x = np.asarray(x, float)
    if factor <= 1:
        return x
    for s in _decimation_stages(int(factor)):
        if x.shape[axis] <= 27:  # filtfilt pad length of the order-8 filter
            raise DataError(f"too few samples ({x.shape[axis]}) to decimate by {factor}")
        x = signal.decimate(x, s, ftype="iir", axis=axis, zero_phase=True)
    return x


def parallel_decimation(W: np.ndarray, Y: np.ndarray, n_joints: int,
                        factor: int) -> tuple[np.ndarray, np.ndarray]:
    """Decimate observation matrix and measurements joint by joint (rows stacked per joint,
    N rows each) with the same filter: returns ``(W_d, Y_d)`` in the same stacked layout,
    ``W_d`` column-major.

    A column that is zero on a joint's rows (another joint's friction, a link before the
    joint on a serial chain: about half of them) stays zero, the filter being linear: only
    the others are filtered, each a row of a (signal, sample) array, the axis the filter
    runs along."""
    if W.shape[0] != Y.shape[0] or W.shape[0] % n_joints:
        raise DataError("W and Y must have n_joints*N rows")
    N = W.shape[0] // n_joints
    WT, Yd = np.asarray(W, float).T, []
    Wd = None
    for j in range(n_joints):
        rows = slice(j * N, (j + 1) * N)
        live = np.flatnonzero(np.any(WT[:, rows] != 0.0, axis=1))
        d = decimate(np.vstack([WT[live, rows], np.asarray(Y[rows], float)[None]]), factor,
                     axis=-1)
        if Wd is None:
            Wd = np.zeros((W.shape[1], n_joints, d.shape[1]))
        Wd[live, j] = d[:-1]
        Yd.append(d[-1])
    return Wd.reshape(W.shape[1], -1).T, np.concatenate(Yd)


def moving_rows(dq: np.ndarray, threshold: float) -> np.ndarray:
    """Boolean mask over the stacked rows (joint-major) that keeps, for each joint, the
    samples whose velocity magnitude is at least ``threshold``."""
    return (np.abs(np.asarray(dq)) >= threshold).T.ravel()

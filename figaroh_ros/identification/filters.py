"""Zero-phase filters of identification data (FIGAROH's
identification_tools; Tröbinger et al. §II.B.3; Gautier 1997):
Butterworth low-pass of joint positions before differentiation, and parallel decimation -
the *same* low-pass filter and down-sampling applied to every column of the observation
matrix and to the measurement vector, joint by joint, so that the filtered system
``Y_f = W_f phi`` keeps the parameters of ``Y = W phi``.

The module of ``scipy.signal`` (whose import costs 0.5-1 s): ``signals.py`` holds what
needs numpy only.  Bad input raises :class:`figaroh_ros.errors.DataError`.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
from scipy import signal

from figaroh_ros.errors import DataError
from figaroh_ros.threads import stage_threads, usable_cores


def lowpass_zero_phase(x: np.ndarray, cutoff_hz: float, fs_hz: float,
                       order: int = 4) -> np.ndarray:
    """Zero-phase Butterworth low-pass (forward-backward ``sosfiltfilt``) along axis 0."""
    if not 0 < cutoff_hz < fs_hz / 2:
        raise DataError(f"cut-off {cutoff_hz} Hz must lie in (0, {fs_hz / 2}) Hz "
                         f"(Nyquist of {fs_hz} Hz sampling)")
    sos = signal.butter(order, cutoff_hz, btype="low", fs=fs_hz, output="sos")
    return signal.sosfiltfilt(sos, np.asarray(x, float), axis=0)


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


# samples a decimation stage needs: more than filtfilt's pad length of the order-8 filter
MIN_DECIMATE = 28
# values of a (signals, samples) array from which a stage is shared among threads
THREADED_SIZE = 200_000


def _stage(x: np.ndarray, s: int, axis: int) -> np.ndarray:
    """One decimation stage by ``s`` along ``axis``.  A large (signals, samples) array
    filtered along its samples is split by signals among the stage's threads
    (``FIGAROH_THREADS``, 1 by default: the robot's computer is shared, ``threads.py``):
    scipy's IIR filter runs without the GIL, and each signal is filtered on its own, so
    the result is the same."""
    workers = min(stage_threads(), x.shape[0], usable_cores()) \
        if x.ndim == 2 and axis in (1, -1) and x.size >= THREADED_SIZE else 1
    if workers <= 1:
        return signal.decimate(x, s, ftype="iir", axis=axis, zero_phase=True)
    with ThreadPoolExecutor(workers) as pool:
        return np.vstack(list(pool.map(
            lambda b: signal.decimate(b, s, ftype="iir", axis=-1, zero_phase=True),
            np.array_split(x, workers))))


def decimate(x: np.ndarray, factor: int, axis: int = 0) -> np.ndarray:
    """Low-pass (order-8 Chebyshev, zero phase) and keep one sample in ``factor``,
    along ``axis``, in stages of at most 10."""
    x = np.asarray(x, float)
    if factor <= 1:
        return x
    for s in _decimation_stages(int(factor)):
        if x.shape[axis] < MIN_DECIMATE:
            raise DataError(f"too few samples ({x.shape[axis]}) to decimate by {factor}")
        x = _stage(x, s, axis)
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

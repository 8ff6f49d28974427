"""A digital Butterworth low-pass and its step response with numpy alone.

The torque monitor designs its filter when it starts; ``scipy.signal`` costs it 1.2 s of
imports (it pulls in ``scipy.stats``) for two functions.  These are the same computations
as ``scipy.signal.butter(order, cutoff, fs=rate)`` (analog prototype poles, pre-warped
cutoff, bilinear transform, polynomial expansion: the same floating-point operations in
the same order) and ``scipy.signal.lfilter(b, a, x)`` from rest (transposed direct form
II); ``test/test_butterworth.py`` checks them bit for bit against scipy.
"""
from __future__ import annotations

import numpy as np


def _poly(roots: np.ndarray) -> np.ndarray:
    """Coefficients of the monic polynomial with ``roots`` (real when they pair up)."""
    a = np.ones((1,), dtype=roots.dtype)
    one = np.ones_like(roots[0])
    for root in roots:
        a = np.convolve(a, np.stack((one, -root)), mode="full")
    if np.iscomplexobj(a):
        r = np.asarray(roots, dtype=np.complex128)
        if np.all(np.sort(np.imag(r)) == np.sort(np.imag(np.conj(r)))):
            a = np.real(a).copy()
    return a


def butter_lowpass(order: int, cutoff_hz: float, rate_hz: float
                   ) -> tuple[np.ndarray, np.ndarray]:
    """``(b, a)`` of the digital Butterworth low-pass of ``order`` with its -3 dB point at
    ``cutoff_hz`` for samples at ``rate_hz`` (``0 < cutoff_hz < rate_hz / 2``)."""
    wn = np.asarray(cutoff_hz, dtype=np.float64) / (float(rate_hz) / 2)
    if not 0 < wn < 1:
        raise ValueError(f"cutoff {cutoff_hz} Hz must be in (0, {rate_hz / 2}) Hz")
    m = np.arange(-order + 1, order, 2, dtype=np.float64)
    poles = -np.exp(1j * np.pi * m / (2 * order))         # analog prototype, cutoff 1 rad/s
    fs2 = 2.0 * 2.0                                        # bilinear transform at fs = 2
    wo = float(2 * 2.0 * np.tan(np.pi * wn / 2.0))        # pre-warped cutoff
    poles, k = wo * poles, 1.0 * wo ** order
    z_poles = (fs2 + poles) / (fs2 - poles)
    none = np.asarray([], dtype=np.float64)             # the prototype has no finite zero
    zeros = np.concatenate((none, -np.ones(order)))     # all of them go to Nyquist
    k = k * np.real(np.prod(fs2 - none) / np.prod(fs2 - poles))
    b = np.multiply(np.atleast_1d(np.asarray(k, dtype=np.float64)), _poly(zeros))
    return b, np.atleast_1d(_poly(z_poles))


def filtered(b: np.ndarray, a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``x`` through the filter ``(b, a)`` (``a[0] == 1``, as many coefficients in each)
    from rest: transposed direct form II, one sample after the other."""
    b, a = [float(v) for v in b], [float(v) for v in a]
    z = [0.0] * (len(b) - 1)
    y = np.empty(len(x))
    for i, xi in enumerate(np.asarray(x, float).tolist()):
        yi = z[0] + b[0] * xi
        for n in range(len(z) - 1):
            z[n] = z[n + 1] + xi * b[n + 1] - yi * a[n + 1]
        z[-1] = xi * b[-1] - yi * a[-1]
        y[i] = yi
    return y

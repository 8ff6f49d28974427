"""The torque monitor's filter design and step response without scipy.signal
(``identification/butterworth.py``) are scipy's, bit for bit."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.signal import butter, lfilter

from figaroh_ros.identification.butterworth import butter_lowpass, filtered

RATES = [50.0, 100.0, 125.0, 250.0, 333.3, 500.0, 1000.0]


@pytest.mark.parametrize("rate", RATES)
@pytest.mark.parametrize("order", [1, 2, 3, 4])
def test_the_design_is_scipy_butter_bit_for_bit(rate, order):
    for cutoff in [*np.linspace(0.05, 0.49, 23) * rate, 1.0, 5.0, 10.0, 20.0]:
        b, a = butter(order, cutoff, fs=rate)
        b2, a2 = butter_lowpass(order, cutoff, rate)
        assert b2.dtype == b.dtype and a2.dtype == a.dtype
        assert np.array_equal(b2, b) and np.array_equal(a2, a), (order, cutoff)


@pytest.mark.parametrize("order", [1, 2, 3])
def test_the_filter_is_scipy_lfilter_bit_for_bit(order):
    rng = np.random.default_rng(order)
    b, a = butter_lowpass(order, 7.5, 250.0)
    for x in (np.ones(2000), rng.normal(size=500), np.cumsum(rng.normal(size=500))):
        assert np.array_equal(filtered(b, a, x), lfilter(b, a, x))


def test_a_cutoff_at_or_above_nyquist_is_refused():
    with pytest.raises(ValueError, match="cutoff"):
        butter_lowpass(2, 125.0, 250.0)

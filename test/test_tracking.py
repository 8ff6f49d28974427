"""The executor's tracking check (excitation/tracking.py): the commanded trajectory as the cubic
Hermite spline a joint_trajectory_controller follows, and the distance of the measured
positions to it allowing the joint states some delay."""
import numpy as np
from hypothesis import given, settings, strategies as st

from figaroh_ros.excitation.tracking import TRACKING_LAG, reference, tracking_error

Q0 = np.array([0.0, 0.5])
TIMES = np.array([1.0, 2.0])
Q = np.array([[1.0, 0.5], [1.0, -0.5]])
V = np.zeros((2, 2))


def test_reference_passes_through_the_points_at_rest():
    ref = reference(Q0, TIMES, Q, V)
    assert np.allclose(ref(0.0), Q0) and np.allclose(ref(1.0), Q[0])
    assert np.allclose(ref(2.0), Q[1]) and np.allclose(ref(0.0, 1), 0.0)


@settings(max_examples=50, deadline=None)
@given(t=st.floats(0.0, 2.0), delay=st.floats(0.0, TRACKING_LAG))
def test_a_delayed_but_faithful_measurement_is_within_tolerance(t, delay):
    ref = reference(Q0, TIMES, Q, V)
    measured = ref(max(0.0, t - delay))
    # seven lags between 0 and TRACKING_LAG: the nearest is at most 0.025 s away, and the
    # spline moves at most 1.5 rad/s
    assert np.all(tracking_error(ref, t, measured) <= 1.5 * TRACKING_LAG / 12 + 1e-12)


def test_a_stuck_joint_grows_beyond_the_tolerance_within_the_move():
    ref = reference(Q0, TIMES, Q, V)
    stuck = Q0.copy()                                  # joint 0 never leaves 0
    err = [tracking_error(ref, t, stuck)[0] for t in (0.1, 0.5, 0.9)]
    assert err[0] < err[1] < err[2] and err[2] > 0.2
    assert tracking_error(ref, 0.9, np.array([0.0, ref(0.9)[1]]))[1] == 0.0

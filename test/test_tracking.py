"""The executor's tracking check (excitation/tracking.py): the commanded trajectory as the cubic
Hermite spline a joint_trajectory_controller follows, and the distance of the measured
positions to it allowing the joint states some delay."""
import numpy as np
import pytest
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


@settings(max_examples=50, deadline=None)
@given(late=st.floats(0.0, 10.0), s=st.floats(0.0, 2.5))
def test_a_motion_started_late_within_the_lag_is_followed(late, s):
    """A controller that accepted its goal ``late`` s after it was sent starts the motion
    then: the executor allows that much more lag, and a faithful measurement ``s`` s into
    the motion is within one window step of the commanded positions (the spline moves at
    most 1.5 rad/s)."""
    from figaroh_ros.excitation.tracking import WINDOW_STEP
    ref = reference(Q0, TIMES, Q, V)
    err = tracking_error(ref, late + s, ref(min(s, 2.0)), late + TRACKING_LAG)
    assert np.all(err <= 1.5 * WINDOW_STEP / 2 + 1e-12), err


def test_a_stuck_joint_grows_beyond_the_tolerance_within_the_move():
    ref = reference(Q0, TIMES, Q, V)
    stuck = Q0.copy()                                  # joint 0 never leaves 0
    err = [tracking_error(ref, t, stuck)[0] for t in (0.1, 0.5, 0.9)]
    assert err[0] < err[1] < err[2] and err[2] > 0.2
    assert tracking_error(ref, 0.9, np.array([0.0, ref(0.9)[1]]))[1] == 0.0


def test_measurement_times_map_late_states_to_when_they_were_measured():
    """The executor's tracking time (``MeasurementTimes``): stamps on another clock (an
    offset of 1e9 s) and 4 ms of delivery; a burst of 0.5 s of states handed over at once
    (the reader starved) keeps each state's own time, not the burst's arrival."""
    from figaroh_ros.excitation.tracking import STALE_LIMIT, MeasurementTimes
    times, clock = MeasurementTimes(), 1e9
    for k in range(100):                               # 2 s at 50 Hz, delivered in 4-9 ms
        stamp = clock + 0.02 * k
        got = times.measured(stamp, 0.02 * k + 0.004 + 0.005 * (k % 2))
        assert abs(got - (0.02 * k + 0.004)) < 1e-6, (k, got)
    for k in range(100, 125):                          # measured over 0.5 s, taken at 3.0 s
        got = times.measured(clock + 0.02 * k, 3.0)
        assert abs(got - (0.02 * k + 0.004)) < 1e-6 and got <= 3.0
    assert times.measured(clock + 2.48, 3.1) == pytest.approx(2.484)   # the same state again
    assert times.measured(0.0, 3.2) == 3.2                             # no stamp
    assert times.measured(clock + 1.0, 3.3) == 3.3                     # a stamp going back
    # a driver whose stamp never advances: never more than STALE_LIMIT behind the arrival
    assert times.measured(clock + 2.5, 9.0) == 9.0 - STALE_LIMIT


@given(st.lists(st.tuples(st.floats(0.0, 1.0), st.floats(0.0, 5.0)), min_size=1,
                max_size=50))
def test_a_measurement_time_is_never_after_its_arrival(steps):
    """Whatever the stamps' and arrivals' order, the time lies in [arrival - STALE_LIMIT,
    arrival]."""
    from figaroh_ros.excitation.tracking import STALE_LIMIT, MeasurementTimes
    times, stamp, arrival = MeasurementTimes(), 100.0, 0.0
    for d_stamp, d_arrival in steps:
        stamp, arrival = stamp + d_stamp, arrival + d_arrival
        got = times.measured(stamp, arrival)
        assert arrival - STALE_LIMIT - 1e-9 <= got <= arrival


@given(t=st.sampled_from([np.nan, np.inf, -np.inf, 1e300, -1e300, 0.0]),
       lag=st.sampled_from([np.nan, np.inf, 1e300, 0.0, TRACKING_LAG]))
def test_times_not_finite_give_an_error_not_an_exception(t, lag):
    """A measurement time or lag that is not finite (a clock gone wrong) gives per-joint
    errors (NaN where nothing can be said), never an exception in the executor's check."""
    err = tracking_error(reference(Q0, TIMES, Q, V), t, Q0.copy(), lag)
    assert err.shape == (2,)

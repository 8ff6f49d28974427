"""The simulated controllers' motion (sim/motion.py ``Motion``): a sweep of 4000 points
10 ms apart, as the TIAGo phenomena test sends, read at times around its start and end; and
the schedule of the simulator's sensor loops (``next_due``)."""
from __future__ import annotations

import hypothesis.strategies as st
import numpy as np
from hypothesis import given

from figaroh_ros.sim.motion import Motion, next_due


def _sweep():
    t = np.arange(1, 4001) * 0.01
    P = 0.3 * np.sin(3.0 * np.outer(t, np.arange(1, 8) / 7))
    V = 0.9 * np.cos(3.0 * np.outer(t, np.arange(1, 8) / 7)) * np.arange(1, 8) / 7
    V[-1] = 0.0
    return Motion(list(range(7)), np.zeros(7), t, P, V), P


def test_a_tick_read_before_the_motion_began_sees_its_start():
    """A sensor tick reads its clock, then waits for the lock while a goal creates the
    motion: its time is before the start.  The joints are at the start, at rest; the
    spline extrapolated backwards put them 5 rad away at 250 rad/s 50 ms before, and the
    TIAGo sweep's tracking check (or the simulator) failed on a loaded machine.  At rest
    means no acceleration either: with the start's own, the efforts of such a sample held
    M(q) a besides gravity, and the simulated TIAGo's torques at rest (test_tiago_graph)
    missed the noise floor in 3 suite runs of 7."""
    motion, _ = _sweep()
    assert np.abs(motion.spline(0.0, 2)).max() > 0.1        # the motion's own at its start
    for early in (1e-4, 0.01, 0.05, 0.5):
        q, v, a, end = motion.at(motion.start - early)
        assert not end
        assert np.abs(q).max() == 0.0 and np.abs(v).max() == 0.0, (early, q, v)
        assert np.abs(a).max() == 0.0, (early, a)


def test_the_motion_follows_its_points_and_ends_at_the_last():
    motion, P = _sweep()
    q, _, _, end = motion.at(motion.start + 20.0)
    assert np.allclose(q, P[1999]) and not end
    q, v, a, end = motion.at(motion.start + 41.0)
    assert end and np.allclose(q, P[-1]) and np.abs(v).max() < 1e-12


# ------------------------------------------------- the sensor loops' schedule (next_due)
def _loop(dt: float, catch_up: float, extra) -> tuple[list[float], list[float]]:
    """``SimRobot._every`` on a simulated clock: each step takes ``extra[i]`` s (its work
    and any stall of the process during it).  The due times and when each step ran."""
    t = due = 0.0
    dues, ran = [], []
    for e in extra:
        due = next_due(due, t, dt, catch_up)
        t = max(t, due)                 # the wait
        dues.append(due)
        ran.append(t)
        t += e
    return dues, ran


def test_a_stall_shorter_than_the_catch_up_loses_no_sample():
    """The simulated TIAGo's process stalled (a publish holding rclpy's GIL while FastDDS
    waited on a dead reader's port): its 50 Hz joint states fell to 37.6 Hz.  A stall up to
    ``catch_up`` is followed by the missed samples, each at its own time."""
    dt = 0.02
    for stall in (0.021, 0.3, 1.05, 1.99):
        extra = [1e-4] * 10 + [stall] + [1e-4] * 200
        dues, ran = _loop(dt, 2.0, extra)
        assert np.allclose(np.diff(dues), dt, atol=1e-12), stall
        assert all(r >= d for d, r in zip(dues, ran))
    # the mocap loop (catch_up 0) drops what a stall longer than a period missed
    dues, _ = _loop(dt, 0.0, [1e-4] * 10 + [0.3] + [1e-4] * 20)
    assert np.diff(dues).max() > 0.29


@given(st.floats(1e-3, 0.1), st.floats(0.0, 3.0),
       st.lists(st.floats(0.0, 4.0), min_size=1, max_size=60))
def test_the_schedule_keeps_its_grid_or_drops_only_beyond_the_catch_up(dt, catch_up, extra):
    """Every step runs at or after its due time and at most max(catch_up, dt) late; two
    successive due times are one period apart, unless the loop was more than that behind
    (then it restarts from the present)."""
    dues, ran = _loop(dt, catch_up, extra)
    limit = max(catch_up, dt)
    for i, (d, r) in enumerate(zip(dues, ran)):
        assert d <= r <= d + limit + 1e-9
        if i:
            regular = abs(d - dues[i - 1] - dt) <= 1e-9 * max(1.0, d)
            behind = r - (dues[i - 1] + dt)
            assert regular or behind > limit - 1e-9, (i, d, dues[i - 1], r)


def test_a_state_of_the_past_is_not_shown_as_the_present():
    """The mocap loop's rule (``shows_the_present``): the joint-rate state stands for the
    present up to two periods, or 20 ms, after its time; not while the joint-rate loop
    catches up after a stall."""
    from figaroh_ros.sim.motion import shows_the_present
    assert shows_the_present(10.0, 10.0079, 0.004)        # UR10, 250 Hz: two periods
    assert shows_the_present(10.0, 10.019, 0.004)         # or 20 ms
    assert not shows_the_present(10.0, 10.021, 0.004)
    assert not shows_the_present(10.0, 10.8, 0.004)       # 0.8 s behind, catching up
    assert shows_the_present(10.0, 10.039, 0.02)          # TIAGo, 50 Hz
    assert not shows_the_present(10.0, 10.041, 0.02)



@given(st.floats(1e-4, 0.1), st.floats(0.0, 1e4), st.floats(0.0, 1e4))
def test_the_age_rule_is_the_age_alone(dt, sampled_at, age):
    """``shows_the_present`` depends on how old the state is, not when: fresh at age 0,
    and once too old, older stays too old."""
    from figaroh_ros.sim.motion import shows_the_present
    assert shows_the_present(sampled_at, sampled_at, dt)
    if not shows_the_present(0.0, age, dt):
        assert not shows_the_present(0.0, age + dt, dt)
    assert shows_the_present(0.0, age, dt) == (age <= max(2.0 * dt, 0.02))


@given(st.floats(1e-6, 1e3))
def test_before_its_start_a_motion_is_at_rest(early):
    motion, _ = _sweep()
    q, v, a, end = motion.at(motion.start - early)
    assert not end and not v.any() and not a.any()
    assert np.array_equal(q, motion.spline(0.0))


@given(st.lists(st.tuples(st.integers(0, 10**8), st.integers(0, 10**8)), max_size=40),
       st.sampled_from([0.004, 0.008, 0.02]))
def test_mocap_frames_keep_coming_stamped_forward(steps, dt):
    """``frame_time``: a state that shows the present gives a frame stamped when read, a
    late one a frame with the state's own stamp; the stamps published only go forward."""
    from figaroh_ros.sim.motion import frame_time, shows_the_present
    last, sampled, now = 0, 0, 0
    for d_sampled, d_now in steps:
        sampled, now = sampled + d_sampled, max(now + d_now, sampled + d_sampled)
        want = now if shows_the_present(0.0, (now - sampled) * 1e-9, dt) else sampled
        t = frame_time(sampled, now, dt, last)
        if t is not None:
            assert t > last and t == want
            last = t
        else:
            assert want <= last


def test_a_late_state_is_stamped_with_its_own_time():
    from figaroh_ros.sim.motion import frame_time
    ms = 1_000_000
    assert frame_time(100 * ms, 115 * ms, 0.004, 0) == 115 * ms   # 15 ms old: when read
    assert frame_time(100 * ms, 900 * ms, 0.004, 0) == 100 * ms   # catching up: its stamp
    assert frame_time(100 * ms, 900 * ms, 0.004, 100 * ms) is None   # the same state again
    assert frame_time(90 * ms, 900 * ms, 0.004, 250 * ms) is None    # never back in time
    assert frame_time(0, 900 * ms, 0.004, 0) is None                 # no state yet

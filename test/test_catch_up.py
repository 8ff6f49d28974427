"""What a recorder's stop waits for (``ros/catch_up.py``), without a graph: the stamp read
from the serialized header, the streams behind a stop, a driver's clock offset, events and
stopped streams not waited for, the bound."""
import struct
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rclpy.serialization import serialize_message
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from figaroh_ros.ros.catch_up import CatchUp, header_stamp_ns, stamped

S = 10**9


def _js(stamp_ns: int) -> bytes:
    m = JointState(name=["a"], position=[0.0])
    m.header.stamp.sec, m.header.stamp.nanosec = divmod(stamp_ns, S)
    return serialize_message(m)


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(0, S - 1))
def test_the_stamp_is_read_from_the_serialized_header(sec, nsec):
    raw = _js(sec * S + nsec)
    assert header_stamp_ns(raw) == sec * S + nsec
    big = b"\x00\x00\x00\x00" + struct.pack(">iI", sec, nsec)       # CDR big endian
    assert header_stamp_ns(big) == sec * S + nsec
    assert header_stamp_ns(raw[:11]) is None
    assert stamped(JointState) and not stamped(String)


def test_a_topic_is_behind_until_its_measurements_pass_the_stop():
    c, stop = CatchUp(), 1000 * S
    for k in range(10):                          # 10 ms apart, delivered 2 ms after
        c.seen("/js", _js(stop - S + 10**7 * k), stop - S + 10**7 * k + 2 * 10**6)
    assert c.behind(stop) == ["/js"]
    c.seen("/js", _js(stop - 3 * 10**6), stop + 10**8)     # late: measured before the stop
    assert c.behind(stop) == ["/js"]
    c.seen("/js", _js(stop - 10**6), stop + 10**8)         # + the least delay: after it
    assert c.behind(stop) == []


def test_a_clock_off_by_a_constant_and_a_silent_topic_are_not_waited_for():
    c, stop = CatchUp(), 1000 * S
    for k in range(10):                          # the driver's clock 40 s behind ours
        t = stop - S // 2 + 10**7 * k
        c.seen("/offset", _js(t - 40 * S), t + 10**6)
    for k in range(10):                          # a stream silent for 5 s
        c.seen("/quiet", _js(stop - 6 * S + k), stop - 5 * S + k)
    for k in range(4):                           # events: the posture marks, 4 in 0.5 s
        c.seen("/events", _js(stop - S // 2 + k), stop - S // 2 + k + 10**6)
    c.seen("/unstamped", _js(0), stop)
    assert c.behind(stop) == ["/offset"]
    c.seen("/offset", _js(stop - 40 * S), stop + 10**6)
    assert c.behind(stop) == []


@pytest.mark.xdist_group("ros_graph")   # a wall-clock bound: at the suite's priority (conftest)
def test_the_wait_is_bounded_and_names_the_late_topics():
    c, stop = CatchUp(), time.time_ns()
    for k in range(10):
        c.seen("/js", _js(stop - 10**8 - k), stop - 10**8 + 10**6)
    calls = []
    t0 = time.monotonic()
    late = c.wait(lambda: calls.append(1), stop, limit=0.2)
    assert late == ["/js"] and 0.2 <= time.monotonic() - t0 < 1.0 and len(calls) > 5
    fed = iter(np.arange(1, 4))
    late = c.wait(lambda: c.seen("/js", _js(stop + int(next(fed, 3)) * 10**6), stop + 10**7),
                  stop, limit=5.0)
    assert late == []

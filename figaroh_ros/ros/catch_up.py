"""A stop that waits for what was measured before it: the messages stamped before a
recording's stop that the middleware has not delivered yet.

A recorder on a loaded computer receives late: its process preempted, a reliable topic
waiting for a lost sample's repair.  A stop that wrote only what had arrived lost the end
of the recording (a recorder 0.4-1.1 s behind the simulated robot under a test suite's
load left the last hold window of an experiment with no joint state in the bag, though the
executor had heard them).  Each header-stamped topic still streaming at the stop (its last
``STREAM_N`` messages arrived within ``FLOWING_S``) is waited for, at most ``CATCH_UP_S``,
until it has delivered a message stamped at or after the stop less the least delivery
delay seen on that topic in the recording (a driver whose clock is off by a constant
shifts both alike).  A topic of events (the executor's posture marks, a few a second) or
one that stopped (a frozen robot) is not waited for: waiting for the posture marks would
add up to 2 s to every stop.
"""
from __future__ import annotations

import math
import struct
import time
from collections import deque

CATCH_UP_S = 2.0        # at most this long a stop waits
FLOWING_S = 1.0         # a stream: its last STREAM_N messages arrived within FLOWING_S s
STREAM_N = 10


def header_stamp_ns(raw: bytes) -> int | None:
    """The ``header.stamp`` (ns) of a serialized message whose first field is a
    std_msgs/Header (CDR: a 4-byte encapsulation, then ``sec`` int32, ``nanosec`` uint32,
    in the byte order the encapsulation names); None when ``raw`` is too short."""
    if len(raw) < 12:
        return None
    sec, nsec = struct.unpack_from("<iI" if raw[1] & 1 else ">iI", raw, 4)
    return sec * 10**9 + nsec


def stamped(msg_class) -> bool:
    """Whether messages of ``msg_class`` begin with a std_msgs/Header."""
    fields = iter(msg_class.get_fields_and_field_types().items())
    return next(fields, None) == ("header", "std_msgs/Header")


class CatchUp:
    """The newest stamp, the least delivery delay and the last arrivals of each stamped
    topic written into one recording."""

    def __init__(self):
        self.newest: dict[str, int] = {}
        self.delay: dict[str, int] = {}
        self.arrived: dict[str, deque] = {}

    def seen(self, topic: str, raw: bytes, received_ns: int) -> None:
        stamp = header_stamp_ns(raw)
        if not stamp or not received_ns:        # unstamped (0): nothing to wait for
            return
        self.newest[topic] = max(self.newest.get(topic, stamp), stamp)
        self.delay[topic] = min(self.delay.get(topic, math.inf), received_ns - stamp)
        self.arrived.setdefault(topic, deque(maxlen=STREAM_N)).append(received_ns)

    def behind(self, stop_ns: int) -> list[str]:
        """The topics streaming at ``stop_ns`` (system clock) whose newest message was
        measured before it."""
        return sorted(t for t, last in self.arrived.items()
                      if len(last) == STREAM_N and last[0] >= stop_ns - FLOWING_S * 1e9
                      and self.newest[t] + self.delay[t] < stop_ns)

    def wait(self, drain, stop_ns: int, limit: float = CATCH_UP_S) -> list[str]:
        """Call ``drain()`` (it writes what was delivered, through :meth:`seen`) until no
        topic is :meth:`behind` ``stop_ns`` or ``limit`` s have passed; the topics still
        behind then."""
        end = time.monotonic() + limit
        drain()
        while (late := self.behind(stop_ns)) and time.monotonic() < end:
            time.sleep(0.005)
            drain()
        return late

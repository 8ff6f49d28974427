"""The order a recorder writes messages in: each topic's as delivered, the bag's as received.

A bag file is written in time order (an unindexed MCAP file, a crashed recorder's, is read
as it lies), and each message is stamped with the time the middleware received it.
"""
from __future__ import annotations

import bisect


def _received(t: int, now: int) -> int:
    """The middleware's receive time ``t`` (ns, system clock), or ``now`` when it gave none
    (0) or one that cannot be on the same clock (a minute away)."""
    return t if abs(t - now) < 60 * 10**9 else now


def in_delivery_order(taken: list, last: dict) -> list:
    """``taken`` (``(received, topic, raw)``, each topic's in the order the middleware
    delivered them) with each topic's receive times made non-decreasing from ``last``
    (topic -> the latest time given; updated).  A reliable publisher's messages are
    delivered in the order they were published, but over UDP a lost one is received again
    after those that follow it, which wait for it: stamped with their own receive times,
    they were written before it (a burst of 3000 in a test: 140 out of order).  Each is
    stamped when it could be delivered, the latest receive time up to it."""
    out = []
    for received, topic, raw in taken:
        last[topic] = max(received, last.get(topic, received))
        out.append((last[topic], topic, raw))
    return out


def in_receive_order(pending: list, taken: list, cutoff: int | None) -> list:
    """Add ``taken`` (``(received, topic, raw)``) to ``pending`` and remove from it, in
    receive order, what may be written now: what was received up to ``cutoff`` (ns), the
    moment a look at the topics began (a message received later may still wait on a topic
    looked at earlier), or everything when ``cutoff`` is None.  What is returned over
    successive calls is in receive order: a bag file is written in time order."""
    pending += taken
    pending.sort(key=lambda m: m[0])
    k = len(pending) if cutoff is None else \
        bisect.bisect_right(pending, cutoff, key=lambda m: m[0])
    ready = pending[:k]
    del pending[:k]
    return ready

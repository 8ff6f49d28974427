"""Subscriptions that no executor serves: their owner takes what arrived when it looks.

rclpy's executors wake up once per message: on a 250 Hz ``/joint_states``, a
MultiThreadedExecutor spent about 0.4 of a core and a SingleThreadedExecutor 0.1 (7-joint
JointState from another process, this machine), against 0.01 when a thread that polls
anyway (a goal's, every 5 ms) takes the queued messages itself.  The subscriptions live on
a hidden node of the same context that is added to no executor (``_<node>_polled``: a
node's entities are all in its executor's wait set); topic names are resolved by the
owning node, with its remappings and namespace.
"""
from __future__ import annotations

import re
import threading
import time
from collections import deque
from contextlib import contextmanager

import rclpy
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rclpy.serialization import deserialize_message
from rclpy.subscription import Subscription
from sensor_msgs.msg import JointState

from figaroh_ros.ros.sane import Refusals, joint_state_problem, problem

# a subscription callback of two arguments gets the message's info (when the middleware
# received it) from Iron's rclpy on; Humble's has no such callbacks
WITH_INFO = hasattr(Subscription, "CallbackType")
# a goal's listeners: best effort hears reliable and best-effort publishers alike; 200
# messages queued cover a second of the goal's thread busy elsewhere (a recorder call)
HEARD = QoSProfile(depth=200, reliability=ReliabilityPolicy.BEST_EFFORT)


def stamp_ns(header) -> int:
    """A message header's stamp in ns."""
    return header.stamp.sec * 10**9 + header.stamp.nanosec


def unusable(msg, joints: frozenset | None) -> str | None:
    """Why the JointState ``msg`` is of no use to a listener of ``joints`` (None: every
    name): malformed (``ros/sane.py``), or naming none of them; None when it is of use."""
    if why := joint_state_problem(msg):      # NaN, lengths, sizes
        return why
    if joints is not None and joints.isdisjoint(msg.name):
        return f"names none of the joints {sorted(joints)[:3]}..."
    return None


class StampedRate:
    """The stamps (s) of the joint states a pre-flight measures their rate from: each one
    usable (:func:`unusable`) and stamped after the one kept before it (a stamp going back
    or repeated, a publisher jumping back, is no sample: it would fake a rate); the others
    counted by reason, said in one line by :meth:`report`.  A stream that went back is
    measured over the time its messages took to arrive (:meth:`over`): the few stamps it
    kept before its jumps would otherwise make a rate over their own short span."""

    def __init__(self, joints):
        self.joints = frozenset(joints)
        self.stamps: list[float] = []
        self.dropped: dict[str, list] = {}      # kind of reason -> [count, first reason]
        self.went_back = False
        self.received: list[int] = []           # ns: the first and the last reception

    def over(self, window: float) -> float:
        """The least span (s) the rate of the kept stamps is measured over.  Their own
        span (0 here) unless a stamp went back; then the span over which the middleware
        received the messages heard, at most ``window`` (a reader starved on a loaded
        computer hears a shorter stretch of a stream, and no more than that is asked of
        it), or ``window`` when the middleware does not say when (Humble's rclpy)."""
        if not self.went_back:
            return 0.0
        if len(self.received) == 2 and self.received[1] > self.received[0]:
            return min(window, (self.received[1] - self.received[0]) * 1e-9)
        return window

    def heard(self, raw: bytes, received_ns: int = 0) -> float | None:
        """The stamp (s) of the serialized JointState ``raw`` once kept, else None;
        ``received_ns``: when the middleware received it (0: not known)."""
        if received_ns:
            self.received = [self.received[0] if self.received else received_ns,
                             received_ns]
        msg = deserialize_message(raw, JointState)
        why, stamp = unusable(msg, self.joints), stamp_ns(msg.header) * 1e-9
        last = self.stamps[-1] if self.stamps else None
        if why is None and last is not None and (stamp < last or stamp == last != 0.0):
            why = "stamped at or before the one kept before it (going back or repeated)"
            self.went_back = True
        if why is None:
            self.stamps.append(stamp)
            return stamp
        kind = self.dropped.setdefault(re.sub(r"\d+", "#", why.split(" holds ")[0]), [0, why])
        kind[0] += 1
        return None

    def report(self, logger, topic: str) -> None:
        """One warning naming ``topic`` and every kind of message left out, if any."""
        n = sum(c for c, _ in self.dropped.values())
        if n:
            logger.warning(f"{topic}: {n} of {n + len(self.stamps)} messages left out of "
                           "the pre-flight's rate: " + "; ".join(
                               f"{c} {why}" for c, why in self.dropped.values()))


def take_received(sub) -> tuple[object, int] | None:
    """``(message, received)`` of the next message (raw for a raw subscription) the
    middleware delivered on ``sub`` that nobody took, or None; ``received``: when the
    middleware received it (ns, system clock; 0 if it does not say)."""
    with sub.handle:
        taken = sub.handle.take_message(sub.msg_type, sub.raw)
    return None if taken is None else (taken[0], int(taken[1].get("received_timestamp", 0)))


class PolledSubscriptions:
    """A hidden node of ``owner``'s context holding subscriptions drained by
    :meth:`take` (the middleware keeps up to the QoS depth meanwhile)."""

    def __init__(self, owner):
        self.owner = owner
        self.node = rclpy.create_node(
            f"_{owner.get_name()}_polled", namespace=owner.get_namespace(),
            context=owner.context, use_global_arguments=False, enable_rosout=False,
            start_parameter_services=False)
        self.lock = threading.Lock()       # take and destroy from different threads

    def subscribe(self, msg_type, topic: str, qos: QoSProfile, raw: bool = False):
        """A subscription of ``topic`` (as ``owner`` resolves it) that no callback serves
        (``raw``: CDR bytes, not deserialised)."""
        return self.node.create_subscription(msg_type, self.owner.resolve_topic_name(topic),
                                             lambda msg: None, qos, raw=raw)

    def take(self, sub, limit: int = 10_000) -> list[tuple[object, int]]:
        """:func:`take_received` of the messages delivered on ``sub`` and not yet taken,
        oldest first (at most ``limit``)."""
        out = []
        with self.lock:
            while len(out) < limit and (taken := take_received(sub)) is not None:
                out.append(taken)
        return out

    def unsubscribe(self, sub) -> None:
        with self.lock:
            self.node.destroy_subscription(sub)

    def destroy(self) -> None:
        self.node.destroy_node()


class HeardJointStates:
    """The joint states of ``topic`` that a goal's thread follows while :meth:`listening`:
    the latest position of each joint (of ``joints`` when given: other names ignored, a
    message naming none of them dropped; a malformed one dropped, ``ros/sane.py``; each
    drop logged naming the topic, as the owner resolves it), the driver's stamps (``keep``
    last; each instant once: a hold's ``hold_samples`` are distinct measurements), and
    when a state last arrived (``time.monotonic``, as of the last :meth:`hear`)."""

    def __init__(self, owner, topic: str, keep: int, joints=None):
        self.polled, self.topic = PolledSubscriptions(owner), topic
        self.clock = owner.get_clock()
        self.name = owner.resolve_topic_name(topic)      # what a refusal names
        self.joints = None if joints is None else frozenset(joints)   # None: every name
        self.refusals = Refusals(owner.get_logger())     # what was dropped, and why
        self.positions: dict[str, float] = {}
        self.stamps: deque = deque(maxlen=keep)
        self.last_received = time.monotonic()
        self.last_stamp = 0.0             # s, the newest state's stamp (0: none)
        self.heard_any = False
        self.sub = None

    @contextmanager
    def listening(self):
        """Joint states heard while a goal runs only: an idle node costs nothing, a running
        one no wake-up per message of a 500 Hz driver (QoS ``HEARD``)."""
        self.positions.clear()
        self.stamps.clear()
        self.last_received, self.heard_any, self.last_stamp = time.monotonic(), False, 0.0
        self.sub = self.polled.subscribe(JointState, self.topic, HEARD)
        try:
            yield
        finally:
            self.polled.unsubscribe(self.sub)
            self.sub = None

    def hear(self) -> None:
        """Take the joint states that arrived since the last look."""
        if self.sub is None:
            return
        for msg, _ in self.polled.take(self.sub):
            if why := unusable(msg, self.joints):
                self.refusals.refuse(self.name, why)
                continue
            self.positions.update(p for p in zip(msg.name, msg.position)
                                  if self.joints is None or p[0] in self.joints)
            stamp = stamp_ns(msg.header)
            if stamp and self.stamps and stamp < self.stamps[-1]:
                self.refusals.refuse(self.name, f"stamp {stamp} ns before the previous "
                                     f"{self.stamps[-1]} ns", "positions kept, stamp not")
            elif stamp and self.stamps and stamp == self.stamps[-1]:
                pass        # the same instant again (a repeat, another publisher's joints)
            else:
                self.stamps.append(stamp or self.clock.now().nanoseconds)
                self.last_stamp = stamp * 1e-9
            self.last_received, self.heard_any = time.monotonic(), True

    def silence(self) -> float:
        """Seconds since the last joint state; 0 before the first one of this listening
        (the new subscription's discovery can take seconds on a loaded computer: the wait
        for a first state is bounded by whoever needs it, the executor's ``_current``)."""
        return time.monotonic() - self.last_received if self.heard_any else 0.0

    def destroy(self) -> None:
        self.polled.destroy()


class HeardStamps:
    """The header stamps (ns) of a stamped topic (``msg_type``: its class) that a goal's
    thread counts while :meth:`listening`, the ``keep`` last (QoS ``HEARD``), on the hidden
    node of ``polled`` (another listener's: one hidden node per node)."""

    def __init__(self, polled: PolledSubscriptions, topic: str, msg_type, keep: int):
        self.polled, self.topic, self.msg_type = polled, topic, msg_type
        self.name = polled.owner.resolve_topic_name(topic)
        self.refusals = Refusals(polled.owner.get_logger())
        self.stamps: deque = deque(maxlen=keep)
        self.sub = None

    @contextmanager
    def listening(self):
        self.stamps.clear()
        self.sub = self.polled.subscribe(self.msg_type, self.topic, HEARD)
        try:
            yield
        finally:
            self.polled.unsubscribe(self.sub)
            self.sub = None

    def count_from(self, since_ns: int) -> int:
        """How many messages heard so far are stamped at ``since_ns`` or later."""
        if self.sub is not None:
            for msg, _ in self.polled.take(self.sub):
                if why := problem(msg):              # a NaN pose is no sample: ros/sane.py
                    self.refusals.refuse(self.name, why)
                else:
                    self.stamps.append(stamp_ns(msg.header))
        return sum(1 for s in self.stamps if s >= since_ns)

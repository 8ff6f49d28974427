"""The subscription QoS that hears every publisher of a topic, as ``ros2 bag record`` picks it.

A subscription matches a publisher only if it asks no more than the publisher offers
(DDS "requested vs offered"): a RELIABLE subscription never hears a BEST_EFFORT publisher,
and only a TRANSIENT_LOCAL subscription receives the history a latched publisher keeps.
From the profiles the publishers offer (``Node.get_publishers_info_by_topic``):

* any publisher BEST_EFFORT            -> subscribe BEST_EFFORT, VOLATILE;
* every publisher TRANSIENT_LOCAL      -> subscribe RELIABLE, TRANSIENT_LOCAL (latched);
* otherwise (or no publisher yet)      -> subscribe RELIABLE, VOLATILE.

A latched topic with a best-effort publisher gets the first rule: hearing every publisher
comes before receiving the history.  The offered profiles are also what the bag's
``metadata.yaml`` records (``offered_qos_profiles``), for ``ros2 bag play`` to replay them.

The package's services and their clients use :data:`SERVICE_QOS`.
"""
from __future__ import annotations

from rclpy.duration import Duration
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from rosbags.interfaces import (
    Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime
)

# A service's requests (and its answers) share one history of the DDS topic that carries
# them, whatever client sent them: with the default depth of 10, a client flooding the
# service pushes another client's request out before the server takes it, and that client
# waits for an answer that never comes.  1000 requests of ours are a few hundred kB.
SERVICE_QOS = QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=1000,
                         reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.VOLATILE)


def subscription_qos(offered: list[tuple[ReliabilityPolicy, DurabilityPolicy]],
                     depth: int) -> QoSProfile:
    """Subscription profile (KEEP_LAST ``depth``) hearing every offered
    ``(reliability, durability)`` pair; RELIABLE VOLATILE when nothing is offered."""
    reliability, durability = ReliabilityPolicy.RELIABLE, DurabilityPolicy.VOLATILE
    if any(r == ReliabilityPolicy.BEST_EFFORT for r, _ in offered):
        reliability = ReliabilityPolicy.BEST_EFFORT
    elif offered and all(d == DurabilityPolicy.TRANSIENT_LOCAL for _, d in offered):
        durability = DurabilityPolicy.TRANSIENT_LOCAL
    return QoSProfile(depth=depth, history=HistoryPolicy.KEEP_LAST, reliability=reliability,
                      durability=durability)


def offered_pairs(infos) -> list[tuple[ReliabilityPolicy, DurabilityPolicy]]:
    """``(reliability, durability)`` of each ``TopicEndpointInfo`` of the publishers."""
    return [(i.qos_profile.reliability, i.qos_profile.durability) for i in infos]


def _bag_time(d: Duration) -> QosTime:
    sec, nsec = divmod(d.nanoseconds, 1_000_000_000)
    return QosTime(int(sec), int(nsec))


def bag_qos(profile: QoSProfile) -> Qos:
    """An offered rclpy profile as the rosbags ``Qos`` of the bag metadata (the rmw enum
    values are shared by both)."""
    return Qos(history=QosHistory(int(profile.history)), depth=int(profile.depth),
               reliability=QosReliability(int(profile.reliability)),
               durability=QosDurability(int(profile.durability)),
               deadline=_bag_time(profile.deadline), lifespan=_bag_time(profile.lifespan),
               liveliness=QosLiveliness(int(profile.liveliness)),
               liveliness_lease_duration=_bag_time(profile.liveliness_lease_duration),
               avoid_ros_namespace_conventions=bool(profile.avoid_ros_namespace_conventions))

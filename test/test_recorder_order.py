"""The recorder writes what its polled subscriptions delivered in receive order
(``ros/recorder.py``, ``in_receive_order``): a bag file, an unindexed MCAP of a crashed
recorder among them, must be in time order, although each look at the topics takes them one
after another and a message may arrive on a topic already looked at.  Property test: random
arrivals on three topics, random look times; what is written over the looks is in receive
order, every message once, none before the look that saw it.  Each topic's messages are
written in the order the middleware delivered them, although over UDP a reliable topic's
lost message is received again after those that follow it (``in_delivery_order``)."""
import pytest
from hypothesis import given
from hypothesis import strategies as st

pytest.importorskip("rclpy")
from figaroh_ros.ros.recorder import in_delivery_order, in_receive_order  # noqa: E402

TOPICS = ("/joint_states", "/wrench", "/mocap/pose")
STEP = 7          # ns between taking one topic and the next in a look


def _looks(arrivals, look_times):
    """Replay: at each look (cutoff t), topic i is taken at t + i STEP (what it received
    by then); the last look takes everything.  Returns the written (received, topic, raw)."""
    queues = {topic: sorted(t for t, k in arrivals if TOPICS[k] == topic) for topic in TOPICS}
    pending, written = [], []
    for n, t in enumerate(sorted(look_times)):
        taken = []
        for i, topic in enumerate(TOPICS):
            now = t + i * STEP
            taken += [(r, topic, f"{topic}@{r}") for r in queues[topic] if r <= now]
            queues[topic] = [r for r in queues[topic] if r > now]
        last = n == len(look_times) - 1
        ready = in_receive_order(pending, taken, None if last else t)
        assert all(r <= t for r, _, _ in ready) or last
        written += ready
    return written, queues


@given(st.lists(st.tuples(st.integers(0, 200), st.integers(0, 2)), max_size=60),
       st.lists(st.integers(0, 220), min_size=1, max_size=12))
def test_what_is_written_is_in_receive_order_and_whole(arrivals, look_times):
    look_times = sorted(look_times) + [10_000]          # the stop takes everything
    written, left = _looks(arrivals, look_times)
    times = [r for r, _, _ in written]
    assert times == sorted(times)
    assert not any(left.values())
    assert sorted((r, TOPICS.index(topic)) for r, topic, _ in written) == sorted(arrivals)


def test_a_message_received_during_a_look_waits_for_the_next():
    pending = []
    # a look began at 100: /wrench (taken second) already holds one received at 103
    ready = in_receive_order(pending, [(90, "/joint_states", b"a"), (103, "/wrench", b"b")], 100)
    assert [r for r, _, _ in ready] == [90] and [r for r, _, _ in pending] == [103]
    # the next look at 110 finds the joint state received at 101 on the first topic
    ready = in_receive_order(pending, [(101, "/joint_states", b"c")], 110)
    assert [r for r, _, _ in ready] == [101, 103] and pending == []


@given(st.lists(st.tuples(st.integers(0, 200), st.integers(0, 2)), max_size=60),
       st.lists(st.integers(0, 220), min_size=1, max_size=12))
def test_each_topic_is_written_in_delivery_order(arrivals, look_times):
    """Each topic's messages in delivery order with random receive times (a repaired one
    received after those that follow it): the middleware delivers a message once it and
    every one before it were received; looks take what was delivered.  Each topic is
    written in delivery order, stamped when it could be delivered, the bag in time order."""
    streams = {topic: [r for r, k in arrivals if TOPICS[k] == topic] for topic in TOPICS}
    ready_at = {topic: [max(rs[:m + 1]) for m in range(len(rs))]
                for topic, rs in streams.items()}
    taken_up_to, delivered, pending, written = dict.fromkeys(TOPICS, 0), {}, [], []
    looks = sorted(look_times) + [10_000]              # the stop takes everything
    for n, t in enumerate(looks):
        taken = []
        for i, topic in enumerate(TOPICS):
            m = taken_up_to[topic]
            while m < len(streams[topic]) and ready_at[topic][m] <= t + i * STEP:
                taken.append((streams[topic][m], topic, m))
                m += 1
            taken_up_to[topic] = m
        cutoff = None if n == len(looks) - 1 else t
        written += in_receive_order(pending, in_delivery_order(taken, delivered), cutoff)
    assert [r for r, _, _ in written] == sorted(r for r, _, _ in written)
    for topic in TOPICS:
        assert [m for _, tp, m in written if tp == topic] == list(range(len(streams[topic])))
        assert [r for r, tp, _ in written if tp == topic] == ready_at[topic]


def test_a_burst_repaired_after_a_loss_is_written_in_order():
    """Seen over UDP: 742-881 lost and received again after 882-2999 had arrived."""
    received = {k: (5000 + k if 742 <= k <= 881 else k) for k in range(3000)}
    taken = [(received[k], "/mocap/pose", k) for k in range(3000)]
    written = in_receive_order([], in_delivery_order(taken, {}), None)
    assert [k for _, _, k in written] == list(range(3000))

"""Recorder: the configured topics into rosbag2 bags (mcap by default, sqlite3 on request).

Parameters (``ros/parameters.py``, RecorderParameters): ``config`` (a robot YAML: the
topics of its ``driver`` section, ``figaroh_ros.config.driver``, with their QoS overrides and
which are required), else ``topics`` (list of ``"<topic>:<package>/msg/<Type>"``, none
required), ``storage`` (``mcap``|``sqlite3``), ``bag_dir`` (folder of the timestamped bags
started without a path), ``segment_seconds`` (``--max-bag-duration``), ``max_bag_size``
(bytes, ``--max-bag-size``), ``start_timeout``, ``frame_timeout``, ``bag_backend`` (the
robot's ``rosbag2_py`` when importable, else ``rosbags``: ``io/bag_backend.py``).
Service ``/figaroh/recorder/control`` (figaroh_ros/srv/RecorderControl): ``start`` (optional
``bag_path``, inside ``bag_dir`` once resolved, else refused: ``io/confine.py``; ``storage``), ``stop``, ``split`` (close the current storage file and go on in
the next file of the same bag, like ``ros2 bag record``'s split request; the metadata lists
every file with its message count and time range), ``status`` (messages per topic in the
current bag).
An idle recorder receives nothing: it subscribes to the recorded topics when a ``start``
comes (receiving is what costs: rclpy's single-threaded executor spent 20-30 % of a core on
a simulated UR10's topics with no bag open) and destroys the subscriptions once ``stop`` has
drained and closed the bag (a refused start too); only the latched ``robot_description``
(one message) stays subscribed.  Each topic is subscribed with the QoS its publishers offer
(``ros/qos.py``, the rule of ``ros2 bag record``: best effort as soon as one publisher is,
latched when all are), so that a best-effort driver (mocap, sensors) is recorded too (a
driver section may force a topic's reliability or durability); while recording, the
subscriptions follow the publishers as they appear (checked every ``ADAPT_PERIOD`` s).  A
``start`` first waits, ``start_timeout`` s in all, for a publisher on each required topic,
then for one message from each (which also covers the new subscriptions' discovery matching;
a latched topic's message, sent on match, counts; what arrives then is not written, what
arrives after it waits in the middleware's queue and is written once the bag is open), and
fails, naming the topics and writing nothing (no bag folder), if one has no publisher or
stays silent (optional topics: a shorter wait for a publisher, then named in the reply and
still recorded if a publisher appears); each bag's metadata lists the offered profiles
(those of a publisher that appears after the start too, as ``ros2 bag record`` stores the
QoS it discovers: a late best-effort driver replays best effort).  A
start then looks up on TF (``ros/frames.py``; ``/tf`` and ``/tf_static`` listened to from
the start's beginning until the frames are found or for ``frame_timeout`` s at most, then
unsubscribed) each measurement frame the driver section names (``frame`` of the wrench,
pose, extra topics) relative to the model root (robot_description's root link) and writes
``T_root_frame`` into the bag's ``custom_data`` (``figaroh_ros.frames``, read back by
``io.bag_metadata.recorded_frames``; metadata rather than a ``/tf_static`` message, since a
frame such as ``tool0_controller`` moves with the joints: a static transform of it would be
false on playback); a frame TF does not give is named in the start reply and under
``figaroh_ros.frames_unresolved``.  The latched message of a required latched topic opens
every bag (an optional latched topic's is written when it arrives).  The latched
``robot_description`` is always recorded, at the start of every bag, so that a bag is
self-contained.  Storage files are split every ``segment_seconds`` (10 min), at
``max_bag_size`` or on ``split``; the open file and ``metadata.yaml`` are committed every
``COMMIT_PERIOD`` s (``io/segmented_bag.py``), so a recorder that dies leaves a readable
bag missing at most that and two ``DRAIN_PERIOD`` (0.6 s).  Messages are written raw (CDR,
no deserialisation), stamped with the time the middleware received them (each topic's
made non-decreasing in delivery order: ``in_delivery_order``), from one single-threaded
executor, the writer living in that thread.  The recorded topics' subscriptions are served
by no executor (``ros/polled.py``): a timer takes what they delivered every
``DRAIN_PERIOD`` s (rclpy's executor woke once per message: 0.1 core per 250 Hz topic),
and ``stop`` and ``split`` first write every message already delivered (``_drain``), so
the last hold of an experiment is never cut off; the middleware's queue (``SENSOR``)
holds what arrives meanwhile.
"""
from __future__ import annotations

import os
import sys
import time

from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import String

from figaroh_ros.config.driver import Measured
from figaroh_ros.config.robot import load_robot_config
from figaroh_ros.errors import ConfigError, RosError
from figaroh_ros.io.bag_backend import choose_backend, open_bag_writer
from figaroh_ros.io.bag_metadata import frames_custom_data
from figaroh_ros.io.bags import typestore
from figaroh_ros.io.confine import shown, writable
from figaroh_ros.model.transform_tree import pose_xyz_quat
from figaroh_ros.ros.catch_up import CATCH_UP_S, CatchUp, stamped
from figaroh_ros.ros.common import LATCHED, SENSOR, message_class, run_node
from figaroh_ros.ros.frames import PumpedFrameBuffer, take_one
from figaroh_ros.ros.hold_frames import HoldFrames
from figaroh_ros.ros.memory_lock import lock_node_memory
from figaroh_ros.ros.parameters import RecorderParameters, declare
from figaroh_ros.ros.polled import PolledSubscriptions
from figaroh_ros.ros.qos import SERVICE_QOS, bag_qos, offered_pairs, subscription_qos
from figaroh_ros.ros.recorder_order import _received, in_delivery_order, in_receive_order
from figaroh_ros.ros.static_frames import root_link
from figaroh_ros.srv import RecorderControl

ADAPT_PERIOD = 0.5      # s between two looks at the publishers of the recorded topics
OPTIONAL_WAIT = 1.0     # s a start waits for publishers of optional topics
DRAIN_MAX = 100_000     # messages written at most by one stop's drain (a flooding topic)
DRAIN_PERIOD = 0.05     # s between two takes of what the recorded topics delivered
COMMIT_PERIOD = 0.5     # s at most between two commits of the open file (a crash loses less)


def recorded_topics(params: RecorderParameters) -> dict[str, Measured]:
    """The recorded topics: the ``driver`` section of the ``config`` parameter's robot
    YAML, else the ``topics`` parameter (then none is required: a generic recording)."""
    if params.config:
        return {m.topic: m for m in load_robot_config(params.config).driver.recorded()}
    specs = [spec.partition(":") for spec in params.topics]
    return {t: Measured(topic=t, type=type_name, required=False) for t, _, type_name in specs}


def _policies(qos: QoSProfile) -> tuple:
    """What decides whether a subscription matches a publisher here."""
    return qos.reliability, qos.durability


def forced(m: Measured, qos: QoSProfile) -> QoSProfile:
    """``qos`` with the reliability / durability the driver section forces on ``m``."""
    if m.reliability != "auto":
        qos.reliability = ReliabilityPolicy[m.reliability.upper()]
    if m.durability != "auto":
        qos.durability = DurabilityPolicy[m.durability.upper()]
    return qos


class Recorder(Node):
    def __init__(self):
        super().__init__("recorder")
        self.srv_type = RecorderControl
        # destroy_node runs even when the parameters are refused
        self.writer, self.bag_path, self.subs, self.stamped = None, "", {}, set()
        self.catch_up = CatchUp()              # what a stop waits for (catch_up.py)
        self.polled, self.drain_timer, self.pending = PolledSubscriptions(self), None, []
        self.delivered: dict[str, int] = {}    # topic -> latest receive time written
        params = declare(self, RecorderParameters)
        lock_node_memory(self, params.lock_memory)
        self.storage, self.bag_dir = params.storage, params.bag_dir
        self.segment, self.start_timeout = params.segment_seconds, params.start_timeout
        self.max_bag_size, self.frame_timeout = params.max_bag_size, params.frame_timeout
        self.backend = choose_backend(params.bag_backend)
        self.store = typestore()
        self.description, self.frame_data = None, {}
        self.topics, self.classes, self.offered, self.latched = {}, {}, {}, {}
        self.measured = {self.resolve_topic_name(t): m
                         for t, m in recorded_topics(params).items()}
        self.description_topic = self.resolve_topic_name("robot_description")
        for topic, m in self.measured.items():
            self.classes[topic] = message_class(m.type)
            if m.type not in self.store.types:
                raise ConfigError(f"recorded topic {m.topic}: type {m.type!r} unknown to the "
                                  "bag typestore")
            self.topics[topic] = m.type
        self.stamped = {t for t, cls in self.classes.items() if stamped(cls)}
        self.holds = HoldFrames(self.topics)   # camera images: a few frames per hold
        self.frames = sorted({m.frame for m in self.measured.values() if m.frame})
        self.tf, self.tf_since = None, 0.0            # TF listened to by a start only
        self.create_timer(ADAPT_PERIOD, self._follow_publishers)
        self.description_sub = self.create_subscription(
            String, "robot_description", self._description, LATCHED, raw=True)
        self.create_service(RecorderControl, "figaroh/recorder/control", self._control,
                            qos_profile=SERVICE_QOS)
        self.get_logger().info(f"recorder ready: {sorted(self.topics)}")

    # ---------------------------------------------------------------- QoS
    def _subscribe(self, topic: str, qos):
        if topic in self.subs:
            self.polled.unsubscribe(self.subs.pop(topic))
        self.subs[topic] = self.polled.subscribe(self.classes[topic], topic, qos, raw=True)

    def _unsubscribe(self) -> None:
        """Destroy the recorded topics' subscriptions (an idle recorder receives nothing)."""
        for sub in self.subs.values():
            self.polled.unsubscribe(sub)
        self.subs.clear()

    def _adapt(self, topic: str) -> bool:
        """Subscribe ``topic`` (again if its subscription asks another reliability or
        durability) with the QoS its publishers offer; False: no publisher."""
        infos = self.get_publishers_info_by_topic(topic)
        self.offered[topic] = [bag_qos(i.qos_profile) for i in infos]
        if self.writer is not None and self.writer.offer(topic, self.offered[topic]):
            self.get_logger().info(f"{topic}: publishers appeared, their QoS recorded")
        m = self.measured[topic]
        qos = forced(m, subscription_qos(offered_pairs(infos), SENSOR.depth))
        sub = self.subs.get(topic)
        if sub is None or _policies(sub.qos_profile) != _policies(qos):
            if _policies(qos) != _policies(forced(m, subscription_qos([], SENSOR.depth))):
                self.get_logger().info(f"{topic}: subscribing {qos.reliability.name} "
                                       f"{qos.durability.name}, as its publishers offer")
            self._subscribe(topic, qos)
        return bool(infos)

    def _adapt_all(self) -> list[str]:
        return [t for t in self.topics if not self._adapt(t)]

    def _follow_publishers(self) -> None:
        """The ADAPT timer: while recording, the subscriptions follow the publishers (an
        optional topic's publisher that appears is recorded); idle, nothing."""
        if self.writer is not None:
            self._adapt_all()

    def _wait_for_publishers(self, t0: float) -> list[str]:
        """Adapt every subscription, waiting up to ``start_timeout`` s after ``t0`` for the
        topics without a publisher yet (discovery takes a moment); those still without."""
        silent = self._adapt_all()
        while silent and time.monotonic() - t0 < self._patience(silent):
            time.sleep(0.05)
            silent = self._adapt_all()
        return silent

    def _wait_for_messages(self, deadline: float) -> list[str]:
        """Take what the required topics' subscriptions deliver (no bag is open: nothing is
        written, a latched message is kept) until each has given one message, or until
        ``deadline``; the required topics still silent.  A latched topic's kept message
        counts (its publisher sends it once, on match)."""
        silent = [t for t, m in self.measured.items() if m.required]
        while True:
            silent = [t for t in silent if not self._take(t, DRAIN_MAX)
                      and t not in self.latched]
            if not silent or time.monotonic() >= deadline:
                return silent
            time.sleep(0.02)

    def _patience(self, silent: list[str]) -> float:
        """How long a start waits for ``silent``: ``start_timeout`` for a required topic,
        at most ``OPTIONAL_WAIT`` s for optional ones only."""
        if any(self.measured[t].required for t in silent):
            return self.start_timeout
        return min(OPTIONAL_WAIT, self.start_timeout)

    # ---------------------------------------------------------------- writing
    def _receive(self, topic: str, raw: bytes, received: int = 0):
        sub = self.subs.get(topic)
        if sub is None:                   # taken before its subscription was destroyed
            return
        if sub.qos_profile.durability == DurabilityPolicy.TRANSIENT_LOCAL:
            self.latched[topic] = raw
        if self.holds.keeps(topic, raw):
            self._write(topic, raw, received)
        if topic in self.stamped:
            self.catch_up.seen(topic, raw, received)

    def _drain_and_commit(self) -> None:
        """The timer of a recording: what arrived into the bag, committed when due (quiet
        topics reach the disk too)."""
        if self.writer is None:
            return
        self._drain(everything=False)
        self.writer.flush_if_due()

    def _write(self, topic: str, raw: bytes, received: int = 0):
        """Write ``raw`` stamped when the middleware received it (else now)."""
        if self.writer is None:
            return
        self.writer.write(topic, received or self.get_clock().now().nanoseconds, raw)

    def _description(self, raw: bytes):
        self.description = raw
        if self.writer is not None:
            self._write(self.description_topic, raw)

    def _open(self, path: str, storage: str):
        topics = dict(self.topics, **{self.description_topic: "std_msgs/msg/String"})
        self.writer = open_bag_writer(path, topics, self.store, storage, self.segment,
                                      offered=self.offered, backend=self.backend,
                                      max_bag_size=self.max_bag_size,
                                      custom_data=self.frame_data,
                                      flush_seconds=COMMIT_PERIOD)
        self.bag_path, self.delivered, self.catch_up = path, {}, CatchUp()
        self.holds.new_bag()
        self.drain_timer = self.create_timer(DRAIN_PERIOD, self._drain_and_commit)
        if self.description is not None:
            self._write(self.description_topic, self.description)
        for topic, raw in self.latched.items():
            self._write(topic, raw)

    @property
    def count(self) -> int:
        return 0 if self.writer is None else self.writer.count

    def _take(self, topic: str, limit: int) -> int:
        """Receive (``_receive``) up to ``limit`` messages the middleware delivered on
        ``topic`` and not taken yet; how many."""
        taken = self.polled.take(self.subs[topic], limit)
        for raw, received in taken:
            self._receive(topic, raw, received)
        return len(taken)

    def _drain(self, everything: bool = True) -> int:
        """Write the messages the middleware delivered and not taken yet, in the order it
        received them; how many were taken.  Every ``DRAIN_PERIOD`` s while recording
        (``everything`` False) those received after this look began wait for the next
        one (one might still be queued on a topic taken earlier: an unindexed MCAP file,
        a crashed recorder's, must be in time order); all before a stop or a split."""
        for topic in [t for t in self.subs if not self.offered.get(t)]:
            self._adapt(topic)   # a publisher that just appeared: its QoS before its messages
        cutoff, taken = time.time_ns(), []
        for topic in list(self.subs):
            taken += [(_received(t, cutoff), topic, raw) for raw, t in
                      self.polled.take(self.subs[topic], DRAIN_MAX - len(taken))]
        taken = in_delivery_order(taken, self.delivered)
        for received, topic, raw in in_receive_order(self.pending, taken,
                                                     None if everything else cutoff):
            self._receive(topic, raw, received)
        return len(taken)

    def _close(self) -> str:
        """Drain, close the bag, then stop receiving: an idle recorder has no subscription
        on the recorded topics."""
        path = self.bag_path
        if self.writer is not None:        # what was measured before the stop: catch_up.py
            if late := self.catch_up.wait(self._drain, time.time_ns()):
                self.get_logger().warning(f"stop: {late} still behind after {CATCH_UP_S} s")
            self.writer.close()
        self.writer = None
        if self.drain_timer is not None:
            self.destroy_timer(self.drain_timer)
            self.drain_timer = None
        self._unsubscribe()
        return path

    # ---------------------------------------------------------------- service
    def _start(self, bag_path: str, storage: str, res) -> str:
        """Open a bag at ``bag_path`` (default: timestamped in ``bag_dir``) once every
        required topic has a publisher and has delivered a message, within
        ``start_timeout`` s; else RuntimeError naming the topics, nothing written."""
        if self.writer is not None:
            raise RuntimeError(f"already recording into {self.bag_path}")
        if storage not in ("mcap", "sqlite3"):
            raise RuntimeError(f"storage must be mcap or sqlite3, got {shown(storage)}")
        path = writable("bag_path", bag_path or os.path.join(      # io/confine.py: inside
            self.bag_dir, time.strftime("figaroh_%Y%m%d_%H%M%S")), self.bag_dir)  # bag_dir
        t0 = time.monotonic()
        self.latched.clear()             # the new subscriptions' publishers send them again
        self._listen_to_tf()
        try:
            silent = self._wait_for_publishers(t0)       # subscribes every recorded topic
            self._refuse("no publisher on", [t for t in silent if self.measured[t].required])
            self._refuse_other_types()
            self._refuse("no message on", self._wait_for_messages(t0 + self.start_timeout),
                         " (a publisher is there but sent nothing)")
            unresolved = self._look_up_frames()
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            self._open(path, storage)
        except BaseException:
            self._close()                    # a refused start leaves the recorder idle
            raise
        finally:
            self._stop_listening_to_tf()
        res.message = f"recording {len(self.topics)} topics into {path}" + (
            f"; no publisher yet on {', '.join(silent)}" if silent else "") + (
            f"; frames not on TF within {self.frame_timeout} s: {', '.join(unresolved)}"
            if unresolved else "")
        return path

    # ---------------------------------------------------------------- frames
    def _listen_to_tf(self) -> None:
        """Subscribe ``/tf`` and ``/tf_static`` for this start's frame lookup (while it
        waits for the publishers and messages), when the driver section names frames."""
        if self.frames and self.tf is None:
            self.tf, self.tf_since = PumpedFrameBuffer(self), time.monotonic()

    def _stop_listening_to_tf(self) -> None:
        if self.tf is not None:
            for sub in self.tf.subs:
                self.destroy_subscription(sub)
            self.tf = None

    def _model_root(self, deadline: float) -> str | None:
        """robot_description's root link (its latched message taken here: the executor
        is busy with the start), or None when none arrives before ``deadline``."""
        while self.description is None and time.monotonic() < deadline:
            raw = take_one(self.description_sub)
            if raw is None:
                time.sleep(0.02)
            else:
                self._description(raw)
        try:
            return root_link(self.store.deserialize_cdr(bytes(self.description),
                                                        "std_msgs/msg/String").data)
        except (TypeError, SyntaxError, StopIteration):   # none, or not a URDF
            return None

    def _look_up_frames(self) -> list[str]:
        """``T_root_frame`` of each measurement frame into ``frame_data`` (the next bag's
        custom_data); the frames not found.  A start waits for TF until it has listened
        ``frame_timeout`` s (from the start's beginning: the waits for the topics count)."""
        self.frame_data = {}
        if not self.frames:
            return []
        deadline = self.tf_since + self.frame_timeout
        root, found, pending = self._model_root(deadline), {}, list(self.frames)
        while root is not None and pending:
            for frame in list(pending):
                try:
                    found[frame] = pose_xyz_quat(self.tf.lookup(root, frame, 0, 0.0))
                    pending.remove(frame)
                except RosError as exc:
                    why = exc
            if pending and time.monotonic() >= deadline:
                self.get_logger().warning(f"frames {pending} not on TF: {why}")
                break
            time.sleep(0.02 if pending else 0.0)
        self.frame_data = frames_custom_data(root or "", found, pending,
                                             self.get_clock().now().nanoseconds)
        return pending if root else [f"{f} (no robot_description)" for f in pending]

    def _refuse(self, what: str, topics: list[str], why: str = "") -> None:
        """RuntimeError naming the required ``topics`` (none: nothing)."""
        if topics:
            raise RuntimeError(
                f"{what} the required topics {topics} within {self.start_timeout} s{why}: "
                "nothing recorded (is the driver running? mark a topic `required: false` "
                "in the driver section to record without it)")

    def _refuse_other_types(self) -> None:
        """RuntimeError naming each recorded topic a publisher offers with another type
        than the configured one (DDS never matches the two: the topic would stay silent)."""
        wrong = []
        for topic, m in self.measured.items():
            seen = sorted({i.topic_type for i in self.get_publishers_info_by_topic(topic)}
                          - {m.type})
            if seen:
                wrong.append(f"{topic} is recorded as {m.type} but published as "
                             f"{' and '.join(seen)}")
        if wrong:
            raise RuntimeError("; ".join(wrong) + ": nothing recorded (correct the topic's "
                               "type or name in the driver section)")

    def _control(self, req, res):
        cmd = req.command.strip().lower()
        storage = req.storage or self.storage
        try:
            if cmd == "start":
                path = self._start(req.bag_path, storage, res)
            elif cmd == "stop":
                if self.writer is None:
                    raise RuntimeError("not recording")
                writer, path = self.writer, self._close()      # counted once written
                res.message = f"wrote {writer.count} messages into {path}"
            elif cmd == "status":
                path = self.bag_path if self.writer is not None else ""
                if self.writer is not None:
                    res.topics = list(self.writer.counts)
                    res.counts = [int(v) for v in self.writer.counts.values()]
                res.message = (f"recording into {path}: {self.count} messages" if path
                               else "not recording")
            elif cmd == "split":
                path = self._split(res)
            else:
                raise RuntimeError(f"unknown command {shown(req.command)}: start, stop, split or "
                                   "status")
            res.success, res.bag_path = True, path
        except Exception as exc:           # the node keeps running; the caller learns why
            res.success, res.message = False, str(exc)
            self.get_logger().warning(f"recorder {cmd}: {exc}")
        return res

    def _split(self, res) -> str:
        """Close the current storage file (after the messages already delivered) and go
        on in the next file of the same bag."""
        if self.writer is None:
            raise RuntimeError("not recording")
        self._drain()
        self.writer.split()
        files = getattr(self.writer, "files", None)
        res.message = f"recording into {self.bag_path}" + (
            f", storage file {files[-1]['path']}" if files else "")
        return self.bag_path

    def destroy_node(self):
        if hasattr(self, "polled"):
            self._close()
            self.polled.destroy()
        super().destroy_node()


def main(args=None):
    return run_node(Recorder, "recorder", None, args)


if __name__ == "__main__":
    sys.exit(main())

"""One small bag interface, two implementations: the robot's own ``rosbag2_py`` or ``rosbags``.

A ROS install on the robot ships ``rosbag2_py``: the distro's own writer (its metadata
version, storage plugins, compression, splitting) and reader.  These test machines have
no ``rosbag2_py`` (it is on no registry), so the same interface is served by the
``rosbags``-based writer of ``io/segmented_bag.py`` and the ``rosbags`` reader.

``backend``: ``auto`` (``rosbag2_py`` when importable, else ``rosbags``), ``rosbag2_py``
or ``rosbags``.  The writer used is recorded in the bag's ``custom_data`` under
``figaroh_ros.bag_backend`` (where the distro's metadata has ``custom_data``: Iron and
later; our own writer always) and read back by :func:`recorded_backend` for results.

A writer has ``write(topic, t_ns, raw_cdr)``, ``split()``, ``flush_if_due()``,
``offer(topic, profiles)`` (the QoS of a publisher discovered after the bag opened),
``close() -> path``, ``count`` and ``counts`` (topic -> messages).  Kill safety differs:
the ``rosbags`` writer commits every second (a kill loses at most 1 s); ``rosbag2_py``
keeps its storage plugin's cache (a kill loses what the cache held, as ``ros2 bag record``
does, and ``ros2 bag reindex`` repairs the file).
"""
from __future__ import annotations

import heapq
import importlib.util
import os
from pathlib import Path

from rosbags.highlevel import AnyReader

from figaroh_ros.errors import ConfigError, DataError
from figaroh_ros.io.bag_index import STORAGES
from figaroh_ros.io.bag_metadata import custom_data, offered_qos, qos_string
from figaroh_ros.io.segmented_bag import SegmentedBagWriter

BACKENDS = ("auto", "rosbag2_py", "rosbags")
BACKEND_KEY = "figaroh_ros.bag_backend"


def has_rosbag2_py() -> bool:
    return importlib.util.find_spec("rosbag2_py") is not None


def choose_backend(requested: str = "auto") -> str:
    """``rosbag2_py`` or ``rosbags`` for ``requested`` (one of :data:`BACKENDS`)."""
    if requested not in BACKENDS:
        raise ConfigError(f"bag backend must be one of {list(BACKENDS)}, got {requested!r}")
    if requested == "auto":
        return "rosbag2_py" if has_rosbag2_py() else "rosbags"
    if requested == "rosbag2_py" and not has_rosbag2_py():
        raise ConfigError("bag backend 'rosbag2_py' asked for, but rosbag2_py is not "
                          "importable here (source the robot's ROS install, or use 'rosbags')")
    return requested


def open_bag_writer(path: str, topics: dict[str, str], store, storage: str = "mcap",
                    segment_seconds: float = 600.0, offered: dict | None = None,
                    backend: str = "auto", max_bag_size: int = 0,
                    custom_data: dict[str, str] | None = None, flush_seconds: float = 1.0):
    """A new bag at ``path`` recording ``topics`` (topic -> message type); ``offered``:
    topic -> the publishers' QoS profiles (rosbags ``Qos`` objects); ``custom_data``:
    string pairs for the metadata, with the writer's name; ``flush_seconds``: the longest
    time between two commits of ``flush_if_due`` (rosbags; rosbag2 flushes itself)."""
    chosen = choose_backend(backend)
    if chosen == "rosbag2_py":
        return Rosbag2PyWriter(path, topics, store, storage, segment_seconds, offered,
                               max_bag_size, custom_data)
    return SegmentedBagWriter(path, topics, store, storage, segment_seconds,
                              offered_qos=offered, max_bag_size=max_bag_size,
                              flush_seconds=flush_seconds,
                              custom_data=dict(custom_data or {}, **{BACKEND_KEY: "rosbags"}))


def recorded_backend(path: str) -> str:
    """The writer that recorded the bag at ``path`` (``custom_data``), or ``unknown``."""
    return str(custom_data(path).get(BACKEND_KEY, "unknown"))


# ------------------------------------------------------------------ rosbag2_py
def _rosbag2_qos(rosbag2_py, profile: dict):
    """One offered profile (rosbag2's lower-case names, ``offered_qos``) as rosbag2_py's
    ``QoS`` (Jazzy and later)."""
    q = rosbag2_py.QoS(int(profile.get("depth") or 1))
    q = q.best_effort() if profile.get("reliability") == "best_effort" else q.reliable()
    return (q.transient_local() if profile.get("durability") == "transient_local"
            else q.durability_volatile())


def topic_metadata(rosbag2_py, index: int, topic: str, msgtype: str, qos_yaml: str,
                   type_hash: str):
    """rosbag2_py's ``TopicMetadata`` of the running distro: Humble takes the offered
    profiles as the YAML string of metadata version <= 8; Jazzy and later take an ``id``,
    a list of ``QoS`` and the RIHS01 type hash."""
    if not hasattr(rosbag2_py, "QoS"):  # Humble's signature
        return rosbag2_py.TopicMetadata(name=topic, type=msgtype, serialization_format="cdr",
                                        offered_qos_profiles=qos_yaml)
    profiles = [_rosbag2_qos(rosbag2_py, p)
                for p in offered_qos({"offered_qos_profiles": qos_yaml})]
    return rosbag2_py.TopicMetadata(id=index, name=topic, type=msgtype,
                                    serialization_format="cdr", offered_qos_profiles=profiles,
                                    type_description_hash=type_hash)


class Rosbag2PyWriter:
    """The distro's ``rosbag2_py.SequentialWriter`` behind the writer interface."""

    def __init__(self, path: str, topics: dict[str, str], store, storage: str,
                 segment_seconds: float, offered: dict | None, max_bag_size: int = 0,
                 custom_data: dict[str, str] | None = None):
        import rosbag2_py  # the robot's ROS install only (HEAVY_OPTIONAL)
        if os.path.exists(path):
            raise ValueError(f"bag path exists already: {path}")
        self.path, self.topics = os.path.abspath(path), dict(topics)
        self.count, self.counts = 0, {t: 0 for t in self.topics}
        options = dict(uri=self.path, storage_id=storage,
                       max_bagfile_duration=int(segment_seconds),
                       max_bagfile_size=int(max_bag_size))
        try:
            storage_options = rosbag2_py.StorageOptions(
                **options, custom_data=dict(custom_data or {}, **{BACKEND_KEY: "rosbag2_py"}))
        except TypeError:               # Humble: no custom_data
            storage_options = rosbag2_py.StorageOptions(**options)
        self.writer = rosbag2_py.SequentialWriter()
        self.writer.open(storage_options, rosbag2_py.ConverterOptions("cdr", "cdr"))
        self.rosbag2_py, self.store, self.created = rosbag2_py, store, set()
        # a topic without offered profiles yet is created at its first message or when a
        # publisher appears (``offer``), as ``ros2 bag record`` creates the topics it
        # discovers: rosbag2 keeps a topic's first metadata
        for topic, profiles in (offered or {}).items():
            if topic in self.topics and profiles:
                self.offer(topic, profiles)

    def offer(self, topic: str, offered: list) -> bool:
        if topic in self.created or not offered:
            return False
        msgtype = self.topics[topic]
        self.writer.create_topic(topic_metadata(
            self.rosbag2_py, list(self.topics).index(topic), topic, msgtype,
            qos_string(offered), self.store.hash_rihs01(msgtype)))
        self.created.add(topic)
        return True

    def write(self, topic: str, t_ns: int, raw: bytes):
        if topic not in self.created:          # no publisher seen: no offered profile
            self.writer.create_topic(topic_metadata(
                self.rosbag2_py, list(self.topics).index(topic), topic, self.topics[topic],
                "", self.store.hash_rihs01(self.topics[topic])))
            self.created.add(topic)
        self.writer.write(topic, bytes(raw), int(t_ns))
        self.count += 1
        self.counts[topic] += 1

    def split(self):
        """A new storage file (Jazzy and later; Humble's writer cannot split on request)."""
        split = getattr(self.writer, "split_bagfile", None)
        if split is not None:
            split()

    def flush_if_due(self):
        """rosbag2's storage plugin flushes its own cache."""

    def close(self) -> str:
        close = getattr(self.writer, "close", None)   # Humble closes on destruction
        if close is not None:
            close()
        self.writer = None
        return self.path


# ------------------------------------------------------------------ reading
class _Connection:
    def __init__(self, topic: str, msgtype: str):
        self.topic, self.msgtype = topic, msgtype


class Rosbag2PyReader:
    """The distro's ``rosbag2_py.SequentialReader`` over one or more bags, with the subset
    of rosbags' ``AnyReader`` the readers of ``io/bags.py`` use: ``connections``,
    ``messages(connections=...)`` yielding ``(connection, t_ns, raw_cdr)`` in time order
    across the bags, ``deserialize(raw, msgtype)`` (by the rosbags typestore) and
    ``close()``."""

    def __init__(self, paths: list[str], store):
        import rosbag2_py  # the robot's ROS install only (HEAVY_OPTIONAL)
        self._rosbag2_py, self.paths, self.store = rosbag2_py, list(paths), store
        types: dict[str, str] = {}
        for p in self.paths:
            reader = self._open(p)
            types.update({t.name: t.type for t in reader.get_all_topics_and_types()})
        self.connections = [_Connection(t, ty) for t, ty in sorted(types.items())]

    def _open(self, path: str):
        """A reader of one bag folder or one storage file (a bag published without its
        metadata: its plugin named from the extension, which Humble does not infer)."""
        reader = self._rosbag2_py.SequentialReader()
        storage = STORAGES.get(os.path.splitext(path)[1], "") if os.path.isfile(path) else ""
        reader.open(self._rosbag2_py.StorageOptions(uri=os.path.abspath(path),
                                                    storage_id=storage),
                    self._rosbag2_py.ConverterOptions("cdr", "cdr"))
        return reader

    def _one_bag(self, path: str, by_topic: dict):
        reader = self._open(path)
        reader.set_filter(self._rosbag2_py.StorageFilter(topics=sorted(by_topic)))
        while reader.has_next():
            topic, raw, t_ns = reader.read_next()[:3]
            yield int(t_ns), topic, raw

    def messages(self, connections=None):
        by_topic = {c.topic: c for c in (connections or self.connections)}
        for t_ns, topic, raw in heapq.merge(*(self._one_bag(p, by_topic) for p in self.paths),
                                            key=lambda m: m[0]):
            yield by_topic[topic], t_ns, raw

    def deserialize(self, raw, msgtype: str):
        return self.store.deserialize_cdr(bytes(raw), msgtype)

    def close(self):
        """Each bag's reader closes when its messages are exhausted."""


def reading_backend(backend: str | None = None) -> str:
    """The backend that reads bags: ``backend`` or, when None, ``$FIGAROH_BAG_BACKEND``
    (default ``auto``), chosen by :func:`choose_backend` (what results record)."""
    return choose_backend(backend or os.environ.get("FIGAROH_BAG_BACKEND", "auto"))


def bag_backends(path: str) -> dict:
    """For a result: the backend that reads the bag at ``path`` here and the writer that
    recorded it (:func:`recorded_backend`; ``unknown`` for a bag published without its
    ``metadata.yaml``)."""
    indexed = os.path.isfile(os.path.join(path, "metadata.yaml"))
    return {"read_with": reading_backend(),
            "written_by": recorded_backend(path) if indexed else "unknown"}


def open_bag_reader(paths: list[str], store, backend: str | None = None):
    """A reader over ``paths`` (rosbags' ``AnyReader``, or :class:`Rosbag2PyReader`) with the
    backend ``backend`` or, when None, ``$FIGAROH_BAG_BACKEND`` (default ``auto``)."""
    chosen = reading_backend(backend)
    if chosen == "rosbag2_py":
        return Rosbag2PyReader(paths, store)
    reader = AnyReader([Path(os.path.abspath(p)) for p in paths], default_typestore=store)
    reader.open()
    return reader


def every_message(reader, connections, paths):
    """``reader.messages(connections=...)``, a DataError naming the bag when the storage
    fails part way (a file cut short), then a DataError when a connection gave fewer
    messages than the bag's metadata counts.  rosbags matches each storage file's channel
    to a metadata topic by type and offered QoS and silently skips a channel that matches
    none: a bag whose metadata QoS was rewritten after its file was opened (figaroh_ros's
    writer before it fixed the QoS at the start) read back empty."""
    read: dict[int, int] = {}
    messages = iter(reader.messages(connections=connections))
    while True:
        try:
            conn, t, raw = next(messages)
        except StopIteration:
            break
        except Exception as exc:     # a damaged storage file (sqlite's, rosbags' errors)
            raise DataError(f"bag {paths}: its messages cannot be read past the "
                            f"{sum(read.values())} read ({exc})") from None
        read[id(conn)] = read.get(id(conn), 0) + 1
        yield conn, t, raw
    short = [f"'{c.topic}' {read.get(id(c), 0)} of {c.msgcount}" for c in connections
             if read.get(id(c), 0) < getattr(c, "msgcount", 0)]
    if short:
        raise DataError(f"bag {paths}: fewer messages readable than it counts (its "
                        f"metadata.yaml, or its storage's own tables) ({', '.join(short)}): "
                        "the storage file's channels do not match the metadata's topics "
                        "(type or offered QoS)")


"""A rosbag2 bag that every distro opens and that stays readable when the recorder dies.

Layout as ``ros2 bag record`` writes it: a folder with ``metadata.yaml`` (version 8, the
form Humble, Jazzy and Kilted all read: ``io/bag_metadata.py``) and storage files
``<name>_0.mcap``, ``<name>_1.mcap`` ... split like ``--max-bag-duration`` /
``--max-bag-size`` or on request (``split()``; by default one file per 10 minutes).  Each
topic records the QoS profiles its publishers offered and its type hash (RIHS01).

Crash safety: every ``flush_seconds`` (1 s) the open storage file is committed (readable
as it stands, ``io/bag_storage.py``) and ``metadata.yaml`` is rewritten atomically to count
it, so a recorder killed at any moment leaves a complete bag of everything up to the last
commit: at most ``flush_seconds`` of data is lost.  ``flush_if_due()`` lets a caller commit
during quiet periods (the recorder calls it from a timer).  A kill that lands inside the
write of a commit (a page-by-page copy the kernel may cut short) can leave the newest file
without a valid end: :func:`recover_bag` cuts it back to its last whole record, as
``ros2 bag reindex`` would.  No rclpy here.
"""
from __future__ import annotations

import os
import time

from figaroh_ros.io.bag_metadata import (
    bag_metadata, file_entry, qos_string, topic_entry, write_metadata
)
from figaroh_ros.io.bag_storage import STORAGES, recover_mcap, recover_sqlite3


class SegmentedBagWriter:
    """Write raw CDR messages of ``topics`` (topic -> type) into a new bag at ``path``.

    ``segment_seconds``: message time per storage file (0: no split by time);
    ``max_bag_size``: bytes per storage file (0: no split by size); ``offered_qos``: topic
    -> rosbags ``Qos`` list of its publishers; ``custom_data``: string pairs for the
    metadata."""

    def __init__(self, path: str, topics: dict[str, str], store, storage: str = "mcap",
                 segment_seconds: float = 600.0, offered_qos: dict[str, list] | None = None,
                 flush_seconds: float = 1.0, max_bag_size: int = 0,
                 custom_data: dict[str, str] | None = None):
        if storage not in STORAGES:
            raise ValueError(f"storage must be one of {sorted(STORAGES)}, got {storage!r}")
        if os.path.exists(path):
            raise ValueError(f"bag path exists already: {path}")
        self.path = os.path.abspath(path)
        self.name = os.path.basename(self.path.rstrip("/"))
        self.topics, self.store, self.storage = dict(topics), store, storage
        # the profiles offered when the bag opens, fixed once known: every storage file's
        # channel and the metadata must carry the same string (a reader matches them; a
        # publisher discovered later must not change the metadata alone: ``offer``)
        self.qos = {t: qos_string((offered_qos or {}).get(t, ())) for t in self.topics}
        self.custom_data = dict(custom_data or {})
        self.segment_ns = int(segment_seconds * 1e9) if segment_seconds > 0 else None
        self.max_bag_size, self.flush_seconds = max_bag_size, flush_seconds
        self.count, self.counts = 0, {t: 0 for t in self.topics}
        self.files: list[dict] = []
        self.file = None
        os.makedirs(self.path)
        self._open_file()

    # ------------------------------------------------------------- storage files
    def _open_file(self):
        cls, ext = STORAGES[self.storage]
        rel = f"{self.name}_{len(self.files)}{ext}"
        self.file = cls(os.path.join(self.path, rel))
        for topic, msgtype in self.topics.items():
            self.file.add_topic(topic, msgtype, self.store.generate_msgdef(msgtype, ros_version=2)[0],
                                self.qos[topic], self.store.hash_rihs01(msgtype))
        self.files.append(file_entry(rel, 0, 0, 0))
        self.file_start_ns = None
        self._commit()

    def offer(self, topic: str, offered: list) -> bool:
        """The profiles (rosbags ``Qos``) of ``topic``'s publishers discovered after the
        bag opened, as ``ros2 bag record`` stores the QoS it discovers: recorded while the
        bag has none for it and no message of it (the open storage file gets a channel
        with them; the metadata follows at the next commit); True when recorded."""
        if self.qos[topic] or self.counts[topic] or not (qos := qos_string(offered)):
            return False
        self.qos[topic], msgtype = qos, self.topics[topic]
        msgdef = self.store.generate_msgdef(msgtype, ros_version=2)[0]
        self.file.add_topic(topic, msgtype, msgdef, qos, self.store.hash_rihs01(msgtype))
        return True

    def _commit(self):
        self.file.commit()
        self.last_commit = time.monotonic()
        self._write_metadata()

    def _write_metadata(self):
        entries = [topic_entry(t, ty, self.qos[t], self.store.hash_rihs01(ty), self.counts[t])
                   for t, ty in self.topics.items()]
        write_metadata(self.path, bag_metadata(self.storage, self.files, entries,
                                                 self.custom_data))

    def _due_split(self, t_ns: int) -> bool:
        if self.file_start_ns is None:
            return False
        by_time = self.segment_ns is not None and t_ns - self.file_start_ns >= self.segment_ns
        return by_time or 0 < self.max_bag_size <= self.file.size()

    def split(self):
        """Close the current storage file and continue in a new one (``ros2 bag record``'s
        split request); nothing happens while the current file is empty."""
        if self.files[-1]["message_count"] == 0:
            return
        self.file.close()
        self._open_file()

    # ------------------------------------------------------------------ messages
    def write(self, topic: str, t_ns: int, raw: bytes):
        if self._due_split(t_ns):
            self.split()
        self.file.write(topic, t_ns, raw)
        entry = self.files[-1]
        if self.file_start_ns is None:
            self.file_start_ns = t_ns
            entry["starting_time"]["nanoseconds_since_epoch"] = t_ns
        start = entry["starting_time"]["nanoseconds_since_epoch"]
        if t_ns < start:
            entry["starting_time"]["nanoseconds_since_epoch"] = t_ns
            entry["duration"]["nanoseconds"] += start - t_ns
        else:
            entry["duration"]["nanoseconds"] = max(entry["duration"]["nanoseconds"],
                                                   t_ns - start)
        entry["message_count"] += 1
        self.count += 1
        self.counts[topic] += 1
        self.flush_if_due()

    def flush_if_due(self):
        """Commit when ``flush_seconds`` have passed since the last commit."""
        if time.monotonic() - self.last_commit >= self.flush_seconds:
            self._commit()

    def close(self) -> str:
        self._commit()
        self.file.close()
        if len(self.files) > 1 and self.files[-1]["message_count"] == 0:
            os.remove(os.path.join(self.path, self.files.pop()["path"]))
            self._write_metadata()
        return self.path


def recover_bag(path: str) -> list[str]:
    """Make the storage files of a bag whose writer was killed readable again (at most the
    last commit is lost); returns the files repaired."""
    repaired = []
    for name in sorted(os.listdir(path)):
        full = os.path.join(path, name)
        if (name.endswith(".mcap") and recover_mcap(full)) or \
                (name.endswith(".db3") and recover_sqlite3(full)):
            repaired.append(name)
    return repaired

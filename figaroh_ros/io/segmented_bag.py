"""A rosbag2 bag written in segments, readable after a crash.

rosbag2 bags may hold several storage files (``relative_file_paths`` of metadata.yaml, as
``ros2 bag record --max-bag-duration`` writes them).  This writer closes a storage file
every ``segment_seconds`` (by receive time), moves it into the bag folder and rewrites
``metadata.yaml`` atomically to list every closed file.  If the recorder dies, the bag on
disk is a complete, readable bag of everything but the open segment: at most
``segment_seconds`` of data is lost.  Each segment is written by ``rosbags``' Writer in a
hidden sub-folder, so nothing half-written is ever listed.  No rclpy here.
"""
from __future__ import annotations

import os
import shutil

import yaml
from rosbags.rosbag2 import StoragePlugin, Writer

EXTENSIONS = {"mcap": ".mcap", "sqlite3": ".db3"}


class SegmentedBagWriter:
    def __init__(self, path: str, topics: dict[str, str], store, storage: str = "mcap",
                 segment_seconds: float = 1.0, offered_qos: dict[str, list] | None = None):
        if storage not in EXTENSIONS:
            raise ValueError(f"storage must be one of {sorted(EXTENSIONS)}, got {storage!r}")
        if os.path.exists(path):
            raise ValueError(f"bag path exists already: {path}")
        self.path = os.path.abspath(path)
        self.name = os.path.basename(self.path.rstrip("/"))
        self.topics = dict(topics)
        self.offered_qos = offered_qos or {}   # topic -> rosbags Qos of its publishers
        self.store = store
        self.storage = storage
        self.plugin = {"mcap": StoragePlugin.MCAP, "sqlite3": StoragePlugin.SQLITE3}[storage]
        self.segment_ns = int(segment_seconds * 1e9) if segment_seconds > 0 else None
        os.makedirs(self.path)
        self.index = 0
        self.meta: dict | None = None
        self.count = 0
        self.counts = {t: 0 for t in self.topics}
        self._open_segment()

    def _open_segment(self):
        self.tmp = os.path.join(self.path, f".segment_{self.index}")
        self.writer = Writer(self.tmp, version=9, storage_plugin=self.plugin)
        self.writer.open()
        self.conns = {t: self.writer.add_connection(
            t, ty, typestore=self.store, offered_qos_profiles=self.offered_qos.get(t, ()))
            for t, ty in self.topics.items()}
        self.start_ns = None

    def write(self, topic: str, t_ns: int, raw: bytes):
        if self.segment_ns is not None and self.start_ns is not None \
                and t_ns - self.start_ns >= self.segment_ns:
            self._close_segment()
            self.index += 1
            self._open_segment()
        if self.start_ns is None:
            self.start_ns = t_ns
        self.writer.write(self.conns[topic], t_ns, raw)
        self.count += 1
        self.counts[topic] += 1

    def _close_segment(self, final: bool = False):
        self.writer.close()
        with open(os.path.join(self.tmp, "metadata.yaml")) as f:
            seg = yaml.safe_load(f)["rosbag2_bagfile_information"]
        if seg["message_count"] == 0 and not (final and self.meta is None):
            shutil.rmtree(self.tmp)
            return
        src = seg["relative_file_paths"][0]
        dst = f"{self.name}_{self.index}{EXTENSIONS[self.storage]}"
        os.replace(os.path.join(self.tmp, src), os.path.join(self.path, dst))
        shutil.rmtree(self.tmp)
        for f in seg["files"]:
            f["path"] = dst
        self._merge(seg, dst)
        tmp = os.path.join(self.path, "metadata.yaml.tmp")
        with open(tmp, "w") as f:
            yaml.safe_dump({"rosbag2_bagfile_information": self.meta}, f, sort_keys=False)
        os.replace(tmp, os.path.join(self.path, "metadata.yaml"))

    def _merge(self, seg: dict, dst: str):
        if self.meta is None:
            self.meta = dict(seg, relative_file_paths=[dst])
            return
        m = self.meta
        start = min(m["starting_time"]["nanoseconds_since_epoch"],
                    seg["starting_time"]["nanoseconds_since_epoch"])
        end = max(m["starting_time"]["nanoseconds_since_epoch"] + m["duration"]["nanoseconds"],
                  seg["starting_time"]["nanoseconds_since_epoch"]
                  + seg["duration"]["nanoseconds"])
        m["starting_time"]["nanoseconds_since_epoch"] = start
        m["duration"]["nanoseconds"] = end - start
        m["message_count"] += seg["message_count"]
        m["relative_file_paths"].append(dst)
        m["files"] = list(m["files"]) + list(seg["files"])
        counts = {t["topic_metadata"]["name"]: t for t in m["topics_with_message_count"]}
        for t in seg["topics_with_message_count"]:
            name = t["topic_metadata"]["name"]
            if name in counts:
                counts[name]["message_count"] += t["message_count"]
            else:
                m["topics_with_message_count"].append(t)

    def close(self) -> str:
        self._close_segment(final=True)
        return self.path

"""A rosbag2 bag as it is published: a folder or one storage file, ``.db3`` or ``.mcap``,
with or without ``metadata.yaml``.

Many repositories publish a bag as its storage file alone.  ``ros2 bag reindex`` rebuilds
the ``metadata.yaml`` of such a bag from what the storage itself holds: the sqlite3
``topics`` table (name, type, serialization format, offered QoS) and message timestamps,
or the MCAP file's summary (channels and their schemas, statistics; a scan of the records
when the file has no summary).  :func:`index_bag` does the same with the storage readers of
``rosbags``, and :func:`reindex` writes the result in the form every distro opens
(``io/bag_metadata.py``: version 8).  Reading needs no reindex: :func:`locate` gives the
paths rosbags' reader opens (the folder when it holds ``metadata.yaml``, else its storage
files, which rosbags reads alone).  No rclpy here.
"""
from __future__ import annotations

import os
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from mcap.reader import make_reader
from rosbags.rosbag2.storage_mcap import McapReader
from rosbags.rosbag2.storage_sqlite3 import Sqlite3Reader

from figaroh_ros.errors import DataError
from figaroh_ros.io.bag_metadata import (
    bag_information, bag_metadata, file_entry, qos_string, topic_entry, write_metadata
)

STORAGES = {".db3": "sqlite3", ".mcap": "mcap"}
READERS = {"sqlite3": Sqlite3Reader, "mcap": McapReader}
COMPRESSED = (".zstd",)
NO_MESSAGES = 2**63 - 1        # rosbags' start time of a storage without messages


@dataclass(frozen=True)
class BagSource:
    """Where a bag's messages are: ``folder`` (the bag), its storage ``files`` (absolute,
    in recording order) of one ``storage`` (sqlite3 or mcap), and whether ``folder``
    holds a ``metadata.yaml`` that is read (``indexed``)."""

    given: str
    folder: str
    files: tuple[str, ...]
    storage: str
    indexed: bool

    def reader_paths(self) -> list[str]:
        """What rosbags' reader opens: the folder with its metadata, else each file."""
        return [self.folder] if self.indexed else list(self.files)


def _natural(name: str) -> list:
    """Sort key of split files: ``bag_2.db3`` before ``bag_10.db3``."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", name)]


def storage_files(folder: str) -> list[str]:
    """The storage files directly in ``folder`` (one storage; DataError naming the
    folder when there is none, or files of both kinds, or compressed ones)."""
    names = sorted(os.listdir(folder), key=_natural)
    compressed = [n for n in names if n.endswith(COMPRESSED)]
    if compressed:
        raise DataError(f"{folder}: compressed storage files {compressed}: decompress them "
                        "first (zstd -d FILE), then read the bag")
    found = [n for n in names if os.path.splitext(n)[1] in STORAGES
             and os.path.isfile(os.path.join(folder, n))]
    if not found:
        raise DataError(f"{folder}: not a rosbag2 bag: no metadata.yaml and no .db3 or "
                        ".mcap storage file in it")
    kinds = {os.path.splitext(n)[1] for n in found}
    if len(kinds) > 1:
        raise DataError(f"{folder}: storage files of two kinds {found}: one bag is one "
                        "storage (sqlite3 .db3 or mcap .mcap)")
    return [os.path.join(folder, n) for n in found]


def _given(path: str) -> str:
    """``path`` made absolute, a bag's ``metadata.yaml`` standing for its folder;
    DataError when it is neither a file nor a folder."""
    given = os.path.abspath(path)
    if os.path.basename(given) == "metadata.yaml" and os.path.isfile(given):
        given = os.path.dirname(given)
    if not os.path.exists(given):
        raise DataError(f"{given}: no such bag (neither a folder nor a storage file)")
    return given


def _storage_file(given: str) -> str:
    """The storage of the file ``given`` (DataError naming it if it is none)."""
    suffix = os.path.splitext(given)[1]
    if suffix not in STORAGES:
        hint = ": decompress it first (zstd -d FILE)" if given.endswith(COMPRESSED) else ""
        raise DataError(f"{given}: not a rosbag2 storage file (.db3 or .mcap){hint}")
    return STORAGES[suffix]


def locate(path: str) -> BagSource:
    """The bag at ``path``: a bag folder (with or without ``metadata.yaml``), one storage
    file, or the ``metadata.yaml`` of a bag.  DataError naming ``path`` otherwise."""
    given = _given(path)
    if os.path.isfile(given):
        return BagSource(given, os.path.dirname(given), (given,), _storage_file(given),
                         False)
    if not os.path.isdir(given):
        raise DataError(f"{given}: no such bag (neither a folder nor a storage file)")
    if os.path.isfile(os.path.join(given, "metadata.yaml")):
        info = bag_information(given)
        storage = str(info.get("storage_identifier") or "")
        files = info.get("relative_file_paths") or []
        if not isinstance(files, list):
            raise DataError(f"{given}/metadata.yaml: relative_file_paths is not a list")
        return BagSource(given, given, tuple(os.path.join(given, os.path.basename(str(f)))
                                             for f in files), storage, True)
    files = storage_files(given)
    return BagSource(given, given, tuple(files), STORAGES[os.path.splitext(files[0])[1]],
                     False)


def reader_paths(paths: list[str]) -> list[str]:
    """The paths rosbags' ``AnyReader`` opens for the bags ``paths`` (:func:`locate`)."""
    return [p for path in paths for p in locate(path).reader_paths()]


def _open_storage(path: str, storage: str):
    reader = READERS[storage](Path(path))
    try:
        reader.open()
    except Exception as exc:        # rosbags' ReaderError, sqlite's, a cut file's
        raise DataError(f"{path}: not a readable {storage} storage file ({exc})") from None
    return reader


def _read_through(reader, path: str, count: int) -> None:
    """Every message of an open storage read (not deserialised): a file whose tables or
    summary are whole but whose messages are damaged is refused before anything is
    written for it."""
    try:
        read = sum(1 for _ in reader.messages(reader.connections))
    except Exception as exc:        # rosbags' ReaderError, sqlite's, a cut file's
        raise DataError(f"{path}: its messages cannot be read ({exc})") from None
    if read != count:
        raise DataError(f"{path}: {read} messages readable of the {count} it counts")


def _type_hashes(path: str, storage: str) -> dict[str, str]:
    """topic -> the RIHS01 type hash the storage records where rosbags' reader does not
    read it: an MCAP channel's metadata ``topic_type_hash``, a sqlite3 ``topics`` table's
    ``type_description_hash`` column in a schema before 4 ({} where there is none)."""
    if storage == "sqlite3":
        return _sqlite_hashes(path)
    try:
        with open(path, "rb") as f:
            summary = make_reader(f).get_summary()
    except Exception:              # no summary, or one the library cannot parse
        return {}
    return {} if summary is None else {
        c.topic: c.metadata.get("topic_type_hash", "") for c in summary.channels.values()}


def _sqlite_hashes(path: str) -> dict[str, str]:
    try:
        db = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
        try:
            columns = [r[1] for r in db.execute("PRAGMA table_info(topics)")]
            if "type_description_hash" not in columns:
                return {}
            return {str(n): str(h or "") for n, h in db.execute(
                "SELECT name, type_description_hash FROM topics")}
        finally:
            db.close()
    except sqlite3.Error:
        return {}


def _distro(path: str, storage: str) -> str:
    """The ``ros_distro`` a sqlite3 storage's ``schema`` table names ('' if none)."""
    if storage != "sqlite3":
        return ""
    try:
        db = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
        try:
            row = db.execute("SELECT ros_distro FROM schema").fetchone()
        finally:
            db.close()
    except sqlite3.Error:
        return ""
    return str(row[0]) if row and row[0] else ""


def index_bag(path: str) -> dict:
    """The ``rosbag2_bagfile_information`` of the bag at ``path`` rebuilt from its storage
    files alone (what ``ros2 bag reindex`` writes): per file its start, duration and
    message count; per topic its type, serialization format, offered QoS and type hash
    (from the files that have them, a later one replacing an earlier: a split file may
    list a topic without them) and its count over all files.  DataError naming the file that cannot be read or that
    contradicts another."""
    given = _given(path)                 # any metadata.yaml there is not read
    files = (given,) if os.path.isfile(given) else tuple(storage_files(given))
    storage = _storage_file(files[0])
    entries, topics, distro = [], {}, ""
    for f in files:
        reader = _open_storage(f, storage)
        try:
            meta = reader.metadata
            count = int(meta.message_count)
            start = int(meta.start_time) if count and meta.start_time != NO_MESSAGES else 0
            end = int(meta.end_time) - 1 if count else start
            entries.append(file_entry(os.path.basename(f), start, end, count))
            _read_through(reader, f, count)
            hashes = _type_hashes(f, storage)
            for c in reader.connections:
                qos = qos_string(c.ext.offered_qos_profiles)
                key = c.topic
                if key in topics and topics[key]["type"] != c.msgtype:
                    raise DataError(f"{f}: topic '{c.topic}' is {c.msgtype} but "
                                    f"{topics[key]['file']} has it as {topics[key]['type']}")
                t = topics.setdefault(key, {"type": c.msgtype, "qos": "", "count": 0,
                                            "hash": "", "file": f,
                                            "format": c.ext.serialization_format})
                # a split file may list a topic without its QoS or hash: a file that
                # has them gives them, a later one replacing an earlier (as rosbag2's
                # reindexer merges its files' topics)
                t["qos"] = qos or t["qos"]
                t["hash"] = c.digest or hashes.get(c.topic, "") or t["hash"]
                t["count"] += int(c.msgcount)
        finally:
            reader.close()
        distro = distro or _distro(f, storage)
    info = bag_metadata(storage, entries, [
        _topic(name, t) for name, t in topics.items()])
    info["ros_distro"] = distro or info["ros_distro"]
    return info


def _topic(name: str, t: dict) -> dict:
    entry = topic_entry(name, t["type"], t["qos"], t["hash"], t["count"])
    entry["topic_metadata"]["serialization_format"] = t["format"]
    return entry


def read_only(folder: str) -> bool:
    """Whether ``folder`` is not to be written: no write permission bit at all (a
    published data set made read-only, which root could still write), or not writable
    by this process."""
    return not os.stat(folder).st_mode & 0o222 or not os.access(folder, os.W_OK)


def reindex(path: str, force: bool = False) -> str:
    """Write ``metadata.yaml`` beside the storage files of the bag at ``path`` (a file's
    folder is its bag) from :func:`index_bag`; an existing one is replaced only with
    ``force``.  Every file is read before anything is written, and the file is replaced
    atomically: an error leaves the folder as it was.  Returns the path written."""
    given = _given(path)          # an existing metadata.yaml is not read: it may be broken
    folder = os.path.dirname(given) if os.path.isfile(given) else given
    if os.path.isfile(given):
        _storage_file(given)
    target = os.path.join(folder, "metadata.yaml")
    if os.path.exists(target) and not force:
        raise DataError(f"{target} exists already: the bag is indexed (reindex --force "
                        "rebuilds it from the storage files)")
    if read_only(folder):
        raise DataError(f"{folder}: read-only: copy the bag to a folder of yours "
                        "and reindex the copy")
    info = index_bag(folder)
    try:
        write_metadata(folder, info)
    except OSError as exc:
        tmp = os.path.join(folder, ".metadata.yaml.tmp")
        if os.path.exists(tmp):
            os.remove(tmp)
        raise DataError(f"{target}: cannot be written ({exc})") from None
    return target

"""One rosbag2 storage file (mcap or sqlite3) that is readable after every ``commit``.

A recorder killed with SIGKILL never closes its file.  Both storages here keep the file
readable at every commit, so a kill loses only what came after the last commit:

* mcap: the records are built by the ``mcap`` library's writer into memory; a commit closes
  the open chunk and writes the new records followed by a provisional end (DataEnd and a
  Footer without summary, then the magic) in one ``pwrite``; the next commit writes over
  that provisional end.  Readers find no summary and scan the chunks (as the MCAP
  specification allows), and ``close`` writes the real summary and footer.
* sqlite3: rosbag2's tables (schema version 3 as Humble writes, plus the type hash column
  of later versions), one transaction per commit.

No rclpy here.
"""
from __future__ import annotations

import os
import sqlite3

from mcap.data_stream import RecordBuilder
from mcap.records import DataEnd, Footer
from mcap.writer import CompressionType, Writer

MAGIC = b"\x89MCAP0\r\n"
SQLITE_CACHE_KIB = 256 * 1024  # more than one commit (1 s) of any recording
MESSAGE_RECORD = 31 + 16       # bytes of a Message record and its index entry, besides data


class _PendingBytes:
    """A write-only stream for the mcap writer: bytes wait in memory for ``commit``."""

    def __init__(self, fd: int):
        self.fd, self.base, self.buffer = fd, 0, bytearray()

    def write(self, data) -> int:
        self.buffer += data
        return len(data)

    def tell(self) -> int:
        return self.base + len(self.buffer)

    def flush(self):
        pass

    def commit(self, tail: bytes):
        """Write the pending bytes and ``tail`` at the end of the committed data in one
        call; the tail is overwritten by the next commit."""
        os.pwrite(self.fd, bytes(self.buffer) + tail, self.base)
        self.base += len(self.buffer)
        self.buffer.clear()


def _provisional_end() -> bytes:
    b = RecordBuilder()
    DataEnd(0).write(b)
    Footer(summary_start=0, summary_offset_start=0, summary_crc=0).write(b)
    return b.end() + MAGIC


class McapFile:
    def __init__(self, path: str):
        self.path = path
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        self.stream = _PendingBytes(self.fd)
        self.writer = Writer(self.stream, compression=CompressionType.NONE,
                             chunk_size=1 << 30)
        self.writer.start(profile="ros2", library="figaroh_ros")
        self.schemas: dict[str, int] = {}
        self.channels: dict[str, int] = {}
        self.open_chunk = 0            # bytes of the messages not yet in a written chunk

    def add_topic(self, topic: str, msgtype: str, msgdef: str, qos: str, type_hash: str):
        """The channel of ``topic``; added again (before its first message: the offered
        profiles became known), the new channel takes its messages and the first one,
        without messages, is passed over by readers (they match channels by QoS)."""
        if msgtype not in self.schemas:
            self.schemas[msgtype] = self.writer.register_schema(
                name=msgtype, encoding="ros2msg", data=msgdef.encode())
        self.channels[topic] = self.writer.register_channel(
            topic=topic, message_encoding="cdr", schema_id=self.schemas[msgtype],
            metadata={"offered_qos_profiles": qos, "topic_type_hash": type_hash})

    def write(self, topic: str, t_ns: int, raw: bytes):
        self.writer.add_message(self.channels[topic], log_time=t_ns, data=bytes(raw),
                                publish_time=t_ns)
        self.open_chunk += MESSAGE_RECORD + len(raw)

    def size(self) -> int:
        return self.stream.tell() + self.open_chunk

    def commit(self):
        self.writer.flush()
        self.open_chunk = 0
        self.stream.commit(_provisional_end())

    def close(self):
        self.writer.finish()
        self.stream.commit(b"")
        os.ftruncate(self.fd, self.stream.base)
        os.close(self.fd)


_SQLITE_SCHEMA = """
CREATE TABLE schema(schema_version INTEGER PRIMARY KEY, ros_distro TEXT NOT NULL);
CREATE TABLE metadata(id INTEGER PRIMARY KEY, metadata_version INTEGER NOT NULL,
                      metadata TEXT NOT NULL);
CREATE TABLE topics(id INTEGER PRIMARY KEY, name TEXT NOT NULL, type TEXT NOT NULL,
                    serialization_format TEXT NOT NULL, offered_qos_profiles TEXT NOT NULL,
                    type_description_hash TEXT NOT NULL);
CREATE TABLE messages(id INTEGER PRIMARY KEY, topic_id INTEGER NOT NULL,
                      timestamp INTEGER NOT NULL, data BLOB NOT NULL);
CREATE INDEX timestamp_idx ON messages (timestamp ASC);
INSERT INTO schema(schema_version, ros_distro) VALUES (3, 'figaroh_ros');
"""


class Sqlite3File:
    def __init__(self, path: str):
        self.path = path
        self.db = sqlite3.connect(path, isolation_level=None)
        # pages stay in memory until COMMIT (no spill of a half-written transaction into
        # the file, which readers opening it immutable would see after a crash)
        self.db.execute(f"PRAGMA cache_size = -{SQLITE_CACHE_KIB}")
        self.db.executescript(_SQLITE_SCHEMA)
        self.db.execute("BEGIN")
        self.ids: dict[str, int] = {}

    def add_topic(self, topic: str, msgtype: str, msgdef: str, qos: str, type_hash: str):
        """The row of ``topic``; added again (before its first message), its offered
        profiles are replaced."""
        if topic in self.ids:
            self.db.execute("UPDATE topics SET offered_qos_profiles = ? WHERE id = ?",
                            (qos, self.ids[topic]))
            return
        self.ids[topic] = self.db.execute(
            "INSERT INTO topics(name, type, serialization_format, offered_qos_profiles, "
            "type_description_hash) VALUES (?, ?, 'cdr', ?, ?)",
            (topic, msgtype, qos, type_hash)).lastrowid

    def write(self, topic: str, t_ns: int, raw: bytes):
        self.db.execute("INSERT INTO messages(topic_id, timestamp, data) VALUES (?, ?, ?)",
                        (self.ids[topic], t_ns, bytes(raw)))

    def size(self) -> int:
        return os.path.getsize(self.path)

    def commit(self):
        self.db.execute("COMMIT")
        self.db.execute("BEGIN")

    def close(self):
        self.db.execute("COMMIT")
        self.db.close()


STORAGES = {"mcap": (McapFile, ".mcap"), "sqlite3": (Sqlite3File, ".db3")}


def _complete_records_end(data: bytes) -> int:
    """Offset just past the last whole record of an MCAP data section (after the magic and
    Header), stopping at DataEnd/Footer or at a record cut short."""
    pos = len(MAGIC)
    while pos + 9 <= len(data):
        op, length = data[pos], int.from_bytes(data[pos + 1:pos + 9], "little")
        if op in (0x02, 0x0F) or pos + 9 + length > len(data):
            break
        pos += 9 + length
    return pos


def recover_mcap(path: str) -> bool:
    """Give an MCAP file whose writer died inside a commit (a write cut short by SIGKILL
    leaves no valid end) a provisional end after its last whole record; False if the file
    was readable already."""
    with open(path, "rb") as f:
        data = f.read()
    end = _complete_records_end(data)
    closed = data[end:end + 1] == b"\x0f" and data.endswith(MAGIC) \
        and int.from_bytes(data[-37 + 9:-37 + 17], "little") > end
    if data[end:] == _provisional_end() or closed:
        return False
    with open(path, "r+b") as f:
        f.truncate(end)
        f.seek(end)
        f.write(_provisional_end())
    return True


def recover_sqlite3(path: str) -> bool:
    """Roll back the transaction a killed writer left (its hot journal), as any ordinary
    sqlite open does; True if there was one."""
    journal = path + "-journal"
    if not os.path.isfile(journal):
        return False
    sqlite3.connect(path).execute("SELECT count(*) FROM messages").fetchone()
    return True

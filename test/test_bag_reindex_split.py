"""``bag reindex`` of a bag split in files whose topic tables differ: each topic's offered
QoS comes from whichever file has it, its message count and the bag's time range from
all files.  The two files are written here with rosbags' own writer."""
from __future__ import annotations

import pytest
import yaml
from rosbags.highlevel import AnyReader
from rosbags.interfaces import Qos, QosDurability, QosHistory, QosLiveliness, QosReliability
from rosbags.interfaces import QosTime
from rosbags.rosbag2 import StoragePlugin, Writer
from test_bag_as_published import JOINTS, JS, WALL, joint_state, truth

from figaroh_ros.io.bag_index import reindex
from figaroh_ros.io.bags import read_bag_samples, typestore

PLUGINS = {"db3": StoragePlugin.SQLITE3, "mcap": StoragePlugin.MCAP}
STRING = "std_msgs/msg/String"


def qos(depth: int, reliability: QosReliability) -> Qos:
    return Qos(QosHistory.KEEP_LAST, depth, reliability, QosDurability.VOLATILE,
               QosTime(0, 0), QosTime(0, 0), QosLiveliness.AUTOMATIC, QosTime(0, 0), False)


def write_part(folder, kind, stamps, q, tau, joint_qos, late: int | None) -> None:
    """One storage file: joint states at ``stamps`` offered with ``joint_qos`` (none:
    ``()``); with ``late``, a topic ``/late`` (reliable, depth 7) holding ``late``
    strings after them."""
    store = typestore()
    with Writer(folder, version=8, storage_plugin=PLUGINS[kind]) as w:
        conn = w.add_connection("/joint_states", JS, typestore=store,
                                offered_qos_profiles=joint_qos)
        for k, t in stamps:
            w.write(conn, t, joint_state(store, t, JOINTS, q[k], tau[k]))
        if late is not None:
            lc = w.add_connection("/late", STRING, typestore=store,
                                  offered_qos_profiles=[qos(7, QosReliability.RELIABLE)])
            for i in range(late):
                t = stamps[-1][1] + (i + 1) * 10**6
                w.write(lc, t, store.serialize_cdr(store.types[STRING](data=str(i)), STRING))


@pytest.mark.parametrize("kind", ["db3", "mcap"])
def test_reindex_of_a_split_bag_takes_each_topic_from_the_file_that_has_it(tmp_path, kind):
    """File 1 lists /joint_states without QoS (60 messages); file 2 offers it best effort,
    depth 5 (40 messages) and adds /late (3 messages, reliable, depth 7).  The metadata
    says best effort / 5 for /joint_states with 100 messages, reliable / 7 for /late with
    3, and spans the first stamp of file 1 to the last of file 2; rosbags opens it and our
    reader gives every sample once."""
    _, q, tau = truth(100)
    stamps = [(k, WALL + k * 10**7) for k in range(100)]
    bag = tmp_path / "bag"
    bag.mkdir()
    write_part(tmp_path / "p0", kind, stamps[:60], q, tau, (), None)
    write_part(tmp_path / "p1", kind, stamps[60:], q, tau,
               [qos(5, QosReliability.BEST_EFFORT)], 3)
    for part in (0, 1):
        (src,) = (tmp_path / f"p{part}").glob(f"*.{kind}")
        src.rename(bag / f"bag_{part}.{kind}")
    _, Q, T = read_bag_samples([str(bag)], JOINTS, "/joint_states", "/joint_states")
    assert (Q == q).all() and (T == tau).all()
    reindex(str(bag))
    info = yaml.safe_load((bag / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    topics = {t["topic_metadata"]["name"]: t for t in info["topics_with_message_count"]}
    assert {n: t["message_count"] for n, t in topics.items()} == {"/joint_states": 100,
                                                                   "/late": 3}
    offered = {n: yaml.safe_load(t["topic_metadata"]["offered_qos_profiles"])
               for n, t in topics.items()}
    assert [(p["reliability"], p["depth"]) for p in offered["/joint_states"]] == [(2, 5)]
    assert [(p["reliability"], p["depth"]) for p in offered["/late"]] == [(1, 7)]
    assert [f["message_count"] for f in info["files"]] == [60, 43]
    assert info["message_count"] == 103
    assert info["starting_time"]["nanoseconds_since_epoch"] == WALL
    assert info["duration"]["nanoseconds"] == 99 * 10**7 + 3 * 10**6
    with AnyReader([bag], default_typestore=typestore()) as r:
        assert {c.topic: c.msgcount for c in r.connections} == {"/joint_states": 100,
                                                               "/late": 3}
        assert {c.topic: c.ext.offered_qos_profiles[0].depth for c in r.connections} == {
            "/joint_states": 5, "/late": 7}


@pytest.mark.parametrize("kind", ["db3", "mcap"])
def test_reindex_of_a_split_bag_offered_alike_reads_whole(tmp_path, kind):
    """Two files offering /joint_states alike, /late in the second only: the reindexed
    bag reads every message with rosbags and every sample once with our reader."""
    _, q, tau = truth(100)
    stamps = [(k, WALL + k * 10**7) for k in range(100)]
    bag = tmp_path / "bag"
    bag.mkdir()
    write_part(tmp_path / "p0", kind, stamps[:50], q, tau,
               [qos(5, QosReliability.BEST_EFFORT)], None)
    write_part(tmp_path / "p1", kind, stamps[50:], q, tau,
               [qos(5, QosReliability.BEST_EFFORT)], 4)
    for part in (0, 1):
        (src,) = (tmp_path / f"p{part}").glob(f"*.{kind}")
        src.rename(bag / f"bag_{part}.{kind}")
    reindex(str(bag))
    with AnyReader([bag], default_typestore=typestore()) as r:
        read = [c.topic for c, _, _ in r.messages()]
    assert read.count("/joint_states") == 100 and read.count("/late") == 4
    _, Q, T = read_bag_samples([str(bag)], JOINTS, "/joint_states", "/joint_states")
    assert (Q == q).all() and (T == tau).all()

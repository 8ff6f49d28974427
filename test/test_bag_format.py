"""Bags every distro reads: metadata version 8 checked against what rosbag2's metadata
reader of Humble, Jazzy and Kilted decodes, two independent readers (rosbags; mcap +
mcap-ros2-support), the offered QoS recorded, ros2-bag-record-like splitting, and a
writer killed with SIGKILL losing at most one second."""
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from conftest import ROOT
from mcap_ros2.reader import read_ros2_messages
from rosbags.highlevel import AnyReader
from rosbags.interfaces import (
    Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime
)

from figaroh_ros.io.bag_metadata import offered_qos
from figaroh_ros.io.bags import typestore
from figaroh_ros.io.segmented_bag import SegmentedBagWriter, recover_bag

JS = "sensor_msgs/msg/JointState"
TOPICS = {"/joint_states": JS, "/mocap/pose": "geometry_msgs/msg/PoseStamped"}

# What rosbag2's metadata decoder reads, per distro (ros2/rosbag2, branch humble
# d256a5ba rosbag2_storage/src/rosbag2_storage/metadata_io.cpp and rosbag2_transport qos.cpp;
# branches jazzy 64717ee8 and rolling 25304dd3 (Kilted's base)
# rosbag2_storage/include/rosbag2_storage/yaml.hpp and src/rosbag2_storage/qos.cpp):
# key -> required YAML type.  None rejects a newer version; Humble reads the QoS as a string.
BAG_KEYS = {"version": int, "storage_identifier": str, "duration": dict, "starting_time": dict,
            "message_count": int, "topics_with_message_count": list,
            "relative_file_paths": list, "compression_format": str, "compression_mode": str,
            "files": list}
TOPIC_KEYS = {"name": str, "type": str, "serialization_format": str,
              "offered_qos_profiles": str}
SCHEMA = {
    "humble": {"bag": BAG_KEYS, "topic": TOPIC_KEYS},
    "jazzy": {"bag": dict(BAG_KEYS, custom_data=dict, ros_distro=str),
              "topic": dict(TOPIC_KEYS, type_description_hash=str)},
    "kilted": {"bag": dict(BAG_KEYS, custom_data=dict, ros_distro=str),
               "topic": dict(TOPIC_KEYS, type_description_hash=str)},
}
# version <= 8: the QoS string is a YAML list of maps with integer enums (Humble's only form)
QOS_KEYS = {"history": int, "depth": int, "reliability": int, "durability": int,
            "liveliness": int, "avoid_ros_namespace_conventions": bool, "deadline": dict,
            "lifespan": dict, "liveliness_lease_duration": dict}

BEST_EFFORT = Qos(QosHistory.KEEP_LAST, 5, QosReliability.BEST_EFFORT,
                  QosDurability.VOLATILE, QosTime(0, 0), QosTime(0, 0),
                  QosLiveliness.AUTOMATIC, QosTime(0, 0), False)


def _joint_state(store, t_ns, q):
    P = store.types
    msg = P[JS](header=P["std_msgs/msg/Header"](stamp=P["builtin_interfaces/msg/Time"](
        sec=t_ns // 10**9, nanosec=t_ns % 10**9), frame_id=""), name=["a", "b"],
        position=np.array(q, float), velocity=np.zeros(0), effort=np.zeros(0))
    return store.serialize_cdr(msg, JS)


def _check(value, spec, where):
    for key, kind in spec.items():
        assert key in value, f"{where}: {key} missing"
        assert isinstance(value[key], kind), f"{where}: {key}={value[key]!r} is not {kind}"


def _write(path, storage, n=300, **kw):
    store = typestore()
    w = SegmentedBagWriter(str(path), TOPICS, store, storage,
                           offered_qos={"/joint_states": [BEST_EFFORT]}, **kw)
    t0 = 1_700_000_000 * 10**9
    for k in range(n):                                     # 100 Hz
        w.write("/joint_states", t0 + k * 10**7, _joint_state(store, t0 + k * 10**7, [k, -k]))
        if k == 150:
            w.split()                                      # a split request
    w.close()
    return store, t0


@pytest.mark.parametrize("distro", sorted(SCHEMA))
@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_metadata_is_what_each_distro_decodes(tmp_path, distro, storage):
    _write(tmp_path / "bag", storage)
    with open(tmp_path / "bag" / "metadata.yaml") as f:
        meta = yaml.safe_load(f)["rosbag2_bagfile_information"]
    spec = SCHEMA[distro]
    assert meta["version"] == 8
    _check(meta, spec["bag"], distro)
    assert meta["message_count"] == 300 and len(meta["files"]) == 2
    assert [f["message_count"] for f in meta["files"]] == [151, 149]
    assert meta["relative_file_paths"] == [f["path"] for f in meta["files"]]
    assert all((tmp_path / "bag" / p).is_file() for p in meta["relative_file_paths"])
    assert meta["duration"]["nanoseconds"] == 299 * 10**7
    topics = {t["topic_metadata"]["name"]: t for t in meta["topics_with_message_count"]}
    for name, t in topics.items():
        _check(t["topic_metadata"], spec["topic"], f"{distro} {name}")
    qos = yaml.safe_load(topics["/joint_states"]["topic_metadata"]["offered_qos_profiles"])
    assert len(qos) == 1
    _check(qos[0], QOS_KEYS, f"{distro} qos")
    assert qos[0]["reliability"] == 2 and qos[0]["depth"] == 5       # RMW best effort
    assert topics["/mocap/pose"]["topic_metadata"]["offered_qos_profiles"] == ""
    assert topics["/joint_states"]["topic_metadata"]["type_description_hash"] == \
        typestore().hash_rihs01(JS)
    assert offered_qos(topics["/joint_states"]["topic_metadata"])[0]["reliability"] == \
        "best_effort"


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_rosbags_reads_every_message_back(tmp_path, storage):
    store, t0 = _write(tmp_path / "bag", storage)
    with AnyReader([Path(tmp_path / "bag")], default_typestore=store) as r:
        rows = [(t, r.deserialize(raw, c.msgtype).position[0]) for c, t, raw in r.messages()]
        assert r.connections[0].msgcount + r.connections[1].msgcount == 300
    assert [q for _, q in rows] == list(range(300))
    assert [t for t, _ in rows] == [t0 + k * 10**7 for k in range(300)]


@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_a_publisher_discovered_after_the_start_changes_no_recorded_qos(tmp_path, storage):
    """The recorder's offered-QoS table grows when a publisher appears after the bag
    opened (a starved machine: CI's TIAGo bag read back 40 of 14 319 messages, rosbags
    matching each file's channel to the metadata's topic by its QoS string): the
    metadata keeps the profiles the storage file's channels were written with."""
    store, offered = typestore(), {"/mocap/pose": []}       # the recorder's table, shared
    w = SegmentedBagWriter(str(tmp_path / "bag"), TOPICS, store, storage, offered_qos=offered)
    offered["/joint_states"] = [BEST_EFFORT]                 # discovered now
    t0 = 1_700_000_000 * 10**9
    for k in range(200):
        w.write("/joint_states", t0 + k * 10**7, _joint_state(store, t0 + k * 10**7, [k, -k]))
        if k == 100:
            w.split()
    w.close()
    with AnyReader([Path(tmp_path / "bag")], default_typestore=store) as r:
        assert [r.deserialize(raw, c.msgtype).position[0] for c, _, raw in r.messages()] \
            == list(range(200))
    meta = yaml.safe_load((tmp_path / "bag" / "metadata.yaml").read_text())
    topics = {t["topic_metadata"]["name"]: t["topic_metadata"]
              for t in meta["rosbag2_bagfile_information"]["topics_with_message_count"]}
    assert topics["/joint_states"]["offered_qos_profiles"] == ""


def test_a_bag_whose_metadata_disagrees_with_its_file_is_refused_not_read_empty(tmp_path):
    """A bag written before the QoS was fixed at the start: its metadata names a QoS its
    storage file's channel does not carry; rosbags skips the channel's messages.  Reading
    its joint states names the topic and the counts instead of returning nothing."""
    from figaroh_ros.errors import DataError
    from figaroh_ros.io.bags import read_bag_samples
    _write(tmp_path / "bag", "mcap", n=120)
    path = tmp_path / "bag" / "metadata.yaml"
    meta = yaml.safe_load(path.read_text())
    info = meta["rosbag2_bagfile_information"]
    for t in info["topics_with_message_count"]:
        if t["topic_metadata"]["name"] == "/joint_states":
            t["topic_metadata"]["offered_qos_profiles"] = ""       # the file says best effort
    path.write_text(yaml.safe_dump(meta, sort_keys=False))
    with pytest.raises(DataError, match=r"'/joint_states' 0 of 120.*offered QoS"):
        read_bag_samples([str(tmp_path / "bag")], ["a", "b"], "/joint_states", "/joint_states")


def test_mcap_reader_reads_every_message_and_the_qos(tmp_path):
    store, t0 = _write(tmp_path / "bag", "mcap")
    q, qos = [], set()
    for name in sorted(os.listdir(tmp_path / "bag")):
        if name.endswith(".mcap"):
            for m in read_ros2_messages(str(tmp_path / "bag" / name)):
                q.append((m.log_time_ns, m.ros_msg.position[1]))
                qos.add(m.channel.metadata["offered_qos_profiles"])
    assert q == [(t0 + k * 10**7, -k) for k in range(300)]
    assert len(qos) == 1 and yaml.safe_load(qos.pop())[0]["reliability"] == 2


def test_files_split_by_duration_and_not_by_default(tmp_path):
    _write(tmp_path / "one", "mcap", n=3100)                           # 31 s, one request
    assert len(list((tmp_path / "one").glob("*.mcap"))) == 2
    _write(tmp_path / "ten", "mcap", n=3100, segment_seconds=10.0)
    with open(tmp_path / "ten" / "metadata.yaml") as f:
        meta = yaml.safe_load(f)["rosbag2_bagfile_information"]
    assert [f["message_count"] for f in meta["files"]] == [151, 1000, 1000, 949]  # 10 s each
    _write(tmp_path / "size", "mcap", n=3100, max_bag_size=100_000)
    sizes = [os.path.getsize(p) for p in sorted((tmp_path / "size").glob("*.mcap"))]
    assert len(sizes) > 3 and max(sizes) < 100_000 + 5_000, sizes   # + one message, summary


CHILD = """
import sys, time
sys.path.insert(0, {test!r})
from test_bag_format import TOPICS, _joint_state
from figaroh_ros.io.bags import typestore
from figaroh_ros.io.segmented_bag import SegmentedBagWriter, recover_bag
store = typestore()
w = SegmentedBagWriter({bag!r}, TOPICS, store, {storage!r})
for k in range(100000):
    t = time.time_ns()
    w.write("/joint_states", t, _joint_state(store, t, [k, 0]))
    print(k, t, flush=True)
    time.sleep(0.005)
"""


@pytest.mark.xdist_group("ros_graph")   # a wall-clock bound: at the suite's priority (conftest)
@pytest.mark.parametrize("storage", ["mcap", "sqlite3"])
def test_a_killed_writer_loses_at_most_one_second(tmp_path, storage):
    bag = str(tmp_path / "bag")
    code = CHILD.format(test=os.path.join(ROOT, "test"), bag=bag, storage=storage)
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                         cwd=ROOT)
    written = []
    for line in p.stdout:
        written.append(tuple(map(int, line.split())))
        if written[-1][1] - written[0][1] > 2.6e9:
            break
    p.send_signal(signal.SIGKILL)
    written += [tuple(map(int, line.split())) for line in p.stdout]
    p.wait()
    last_k, last_t = written[-1]
    store = typestore()
    with AnyReader([Path(bag)], default_typestore=store) as r:
        rows = [(t, int(r.deserialize(raw, c.msgtype).position[0])) for c, t, raw in
                r.messages()]
    ks = [k for _, k in rows]
    assert ks == list(range(len(ks)))                          # nothing out of order
    assert rows[-1][0] >= last_t - 10**9, (len(ks), last_k)     # <= 1 s lost
    if storage == "mcap":
        (name,) = [n for n in os.listdir(bag) if n.endswith(".mcap")]
        n = sum(1 for _ in read_ros2_messages(os.path.join(bag, name)))
        assert n == len(ks)


@pytest.mark.parametrize("cut", [3, 20, 49, 200, -1])
def test_a_commit_cut_short_is_recovered_to_the_previous_one(tmp_path, cut):
    """SIGKILL may stop the kernel's page-by-page copy of a commit: the file then holds a
    prefix of the new bytes over the previous provisional end."""
    store = typestore()
    w = SegmentedBagWriter(str(tmp_path / "bag"), TOPICS, store, "mcap", flush_seconds=1e9)
    (name,) = [n for n in os.listdir(tmp_path / "bag") if n.endswith(".mcap")]
    path = tmp_path / "bag" / name
    for k in range(100):
        w.write("/joint_states", 10**18 + k * 10**7, _joint_state(store, 10**18, [k, 0]))
    w._commit()
    before = path.read_bytes()
    for k in range(100, 150):
        w.write("/joint_states", 10**18 + k * 10**7, _joint_state(store, 10**18, [k, 0]))
    w._commit()
    after = path.read_bytes()
    start = len(before) - 50                          # where the provisional end was
    n = (len(after) - start) // 2 if cut < 0 else cut
    path.write_bytes(after[:start + n] + before[start + n:])
    with pytest.raises(Exception):
        with AnyReader([Path(tmp_path / "bag")], default_typestore=store) as r:
            list(r.messages())
    assert recover_bag(str(tmp_path / "bag")) == [name]
    assert recover_bag(str(tmp_path / "bag")) == []                 # nothing more to do
    with AnyReader([Path(tmp_path / "bag")], default_typestore=store) as r:
        ks = [int(r.deserialize(raw, c.msgtype).position[0]) for c, _, raw in r.messages()]
    assert ks == list(range(100)) or ks == list(range(150))
    assert sum(1 for _ in read_ros2_messages(str(path))) == len(ks)


def test_the_measurement_frames_go_into_custom_data_next_to_the_backend(tmp_path):
    """The recorder's frames (``frames_custom_data``) and the writer's name share the
    metadata's custom_data; ``recorded_frames`` reads them back ({} for a bag without)."""
    from figaroh_ros.io.bag_backend import open_bag_writer, recorded_backend
    from figaroh_ros.io.bag_metadata import UNRESOLVED_KEY, frames_custom_data, recorded_frames
    data = frames_custom_data("base_link", {"tool0_controller": ([1.0, 0.5, 0.0],
                                                                 [0.0, 0.0, 0.6, 0.8])},
                              ["nowhere"], 42)
    w = open_bag_writer(str(tmp_path / "bag"), TOPICS, typestore(), backend="rosbags",
                        custom_data=data)
    w.close()
    assert recorded_frames(str(tmp_path / "bag")) == {"tool0_controller": {
        "parent": "base_link", "stamp_ns": 42, "xyz": [1.0, 0.5, 0.0],
        "xyzw": [0.0, 0.0, 0.6, 0.8]}}
    assert recorded_backend(str(tmp_path / "bag")) == "rosbags"
    meta = yaml.safe_load((tmp_path / "bag" / "metadata.yaml").read_text())
    assert meta["rosbag2_bagfile_information"]["custom_data"][UNRESOLVED_KEY] == "nowhere"
    _write(tmp_path / "plain", "mcap", n=10)
    assert recorded_frames(str(tmp_path / "plain")) == {}


@pytest.mark.parametrize("text, words", [
    (None, "metadata.yaml: not a rosbag2 metadata file"),
    (b"\xff\xfe not yaml: [", "metadata.yaml: not a rosbag2 metadata file"),
    (b"other: 1\n", "metadata.yaml: not a rosbag2 metadata file"),
    (b"rosbag2_bagfile_information: [1, 2]\n", "is not a mapping"),
    (b"rosbag2_bagfile_information: {custom_data: [1]}\n", "custom_data is not a mapping"),
    (b"rosbag2_bagfile_information: {custom_data: {figaroh_ros.frames: '[a, b'}}\n",
     "figaroh_ros.frames is not YAML"),
    (b"rosbag2_bagfile_information: {custom_data: {figaroh_ros.frames: '[1, 2]'}}\n",
     "figaroh_ros.frames is not a mapping"),
])
def test_unreadable_metadata_is_refused_naming_the_file(tmp_path, text, words):
    """The frames and the writer of a bag read from its metadata: a missing, non-UTF-8,
    foreign or malformed metadata.yaml is a DataError naming the file, never a KeyError."""
    from figaroh_ros.errors import DataError
    from figaroh_ros.io.bag_backend import recorded_backend
    from figaroh_ros.io.bag_metadata import recorded_frames
    if text is not None:
        (tmp_path / "metadata.yaml").write_bytes(text)
    with pytest.raises(DataError, match=words) as refused:
        recorded_frames(str(tmp_path))
    assert str(tmp_path) in str(refused.value)
    if "frames" not in words:
        with pytest.raises(DataError, match=words):
            recorded_backend(str(tmp_path))

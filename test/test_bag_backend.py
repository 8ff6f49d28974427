"""The bag interface's two implementations (io/bag_backend.py).

Here ``rosbag2_py`` is not importable, so ``auto`` must choose ``rosbags`` and a bag it
writes must say so in its ``custom_data``, be read back through the same interface, and keep
the metadata every distro opens.  The ``rosbag2_py`` adapter's per-distro constructor calls
(Humble's TopicMetadata/StorageOptions signatures against Jazzy's and later) are checked
against two small recording stand-ins with exactly those signatures, the only place the
adapter's branching can be exercised without a ROS install; where the real ``rosbag2_py``
imports, the round trip below runs on it as well."""
import importlib.util
import os
import sys
import types

import numpy as np
import pytest
import yaml

from figaroh_ros.errors import ConfigError, DataError
from figaroh_ros.io import bag_backend
from figaroh_ros.io.bag_backend import (
    BACKEND_KEY, choose_backend, open_bag_reader, open_bag_writer, recorded_backend,
    topic_metadata
)
from figaroh_ros.io.bags import typestore

JS = "sensor_msgs/msg/JointState"
REAL_ROSBAG2_PY = importlib.util.find_spec("rosbag2_py") is not None
BACKENDS_HERE = ["rosbags"] + (["rosbag2_py"] if REAL_ROSBAG2_PY else [])


def _joint_state(store, k: int) -> bytes:
    JointState = store.types[JS]
    Header, Time = store.types["std_msgs/msg/Header"], store.types["builtin_interfaces/msg/Time"]
    msg = JointState(header=Header(stamp=Time(sec=k, nanosec=0), frame_id=""),
                     name=["a", "b"], position=np.array([0.1 * k, -0.2 * k]),
                     velocity=np.zeros(2), effort=np.zeros(2))
    return bytes(store.serialize_cdr(msg, JS))


def test_auto_chooses_what_imports():
    assert choose_backend("auto") == ("rosbag2_py" if REAL_ROSBAG2_PY else "rosbags")
    assert choose_backend("rosbags") == "rosbags"


@pytest.mark.parametrize("bad", ["", "rosbag3", "ROSBAGS", "auto "])
def test_unknown_backend_named(bad):
    with pytest.raises(ConfigError, match="bag backend must be one of"):
        choose_backend(bad)


@pytest.mark.skipif(REAL_ROSBAG2_PY, reason="rosbag2_py importable: nothing to refuse")
def test_rosbag2_py_asked_for_without_it():
    with pytest.raises(ConfigError, match="rosbag2_py is not importable"):
        choose_backend("rosbag2_py")


@pytest.mark.parametrize("backend", BACKENDS_HERE)
def test_round_trip_and_backend_recorded(tmp_path, backend):
    store = typestore()
    path = str(tmp_path / "bag")
    w = open_bag_writer(path, {"/joint_states": JS}, store, "mcap", 600.0, backend=backend)
    for k in range(20):
        w.write("/joint_states", 1_000_000_000 + k * 10_000_000, _joint_state(store, k))
    assert w.close() == os.path.abspath(path)
    assert w.count == 20 and w.counts == {"/joint_states": 20}
    assert recorded_backend(path) == backend
    reader = open_bag_reader([path], store, backend)
    conns = [c for c in reader.connections if c.topic == "/joint_states"]
    got = [(t, reader.deserialize(raw, c.msgtype)) for c, t, raw in
           reader.messages(connections=conns)]
    reader.close()
    assert [t for t, _ in got] == [1_000_000_000 + k * 10_000_000 for k in range(20)]
    np.testing.assert_array_equal(got[7][1].position, [0.1 * 7, -0.2 * 7])


def test_rosbags_bag_keeps_version_8_and_string_pairs(tmp_path):
    store = typestore()
    path = str(tmp_path / "bag")
    w = open_bag_writer(path, {"/joint_states": JS}, store, backend="rosbags")
    w.write("/joint_states", 5, _joint_state(store, 1))
    w.close()
    with open(os.path.join(path, "metadata.yaml")) as f:
        info = yaml.safe_load(f)["rosbag2_bagfile_information"]
    assert info["version"] == 8
    assert info["custom_data"] == {BACKEND_KEY: "rosbags"}


def test_recorded_backend_of_a_foreign_bag(tmp_path):
    (tmp_path / "metadata.yaml").write_text(yaml.safe_dump(
        {"rosbag2_bagfile_information": {"version": 5, "custom_data": None}}))
    assert recorded_backend(str(tmp_path)) == "unknown"
    (tmp_path / "metadata.yaml").write_bytes(b"\xff\xfe: [")
    with pytest.raises(DataError, match="metadata.yaml"):
        recorded_backend(str(tmp_path))


# ----------------------------------------------- the adapter's per-distro signatures
class _Humble:
    """rosbag2_py of Humble: TopicMetadata(name, type, serialization_format,
    offered_qos_profiles: str); StorageOptions without custom_data; no writer close()."""

    class TopicMetadata:
        def __init__(self, name, type, serialization_format, offered_qos_profiles=""):
            self.name, self.type = name, type
            self.offered_qos_profiles = offered_qos_profiles



class _Jazzy:
    """rosbag2_py of Jazzy and later: TopicMetadata(id, name, type, serialization_format,
    offered_qos_profiles: list[QoS], type_description_hash)."""

    class TopicMetadata:
        def __init__(self, id, name, type, serialization_format, offered_qos_profiles=(),
                     type_description_hash=""):
            self.id, self.name, self.type = id, name, type
            self.offered_qos_profiles = list(offered_qos_profiles)
            self.type_description_hash = type_description_hash

    class QoS:
        def __init__(self, depth):
            self.depth, self.policies = depth, []

        def _with(self, policy):
            self.policies.append(policy)
            return self

        def reliable(self):
            return self._with("reliable")

        def best_effort(self):
            return self._with("best_effort")

        def transient_local(self):
            return self._with("transient_local")

        def durability_volatile(self):
            return self._with("volatile")


QOS_YAML = yaml.safe_dump([
    {"history": 1, "depth": 7, "reliability": 2, "durability": 2, "liveliness": 1,
     "avoid_ros_namespace_conventions": False},
    {"history": 1, "depth": 1, "reliability": 1, "durability": 1, "liveliness": 1,
     "avoid_ros_namespace_conventions": False}])


def test_topic_metadata_humble_takes_the_yaml_string():
    tm = topic_metadata(_Humble, 3, "/mocap/pose", "geometry_msgs/msg/PoseStamped", QOS_YAML,
                        "RIHS01_00")
    assert tm.name == "/mocap/pose" and tm.offered_qos_profiles == QOS_YAML


def test_topic_metadata_jazzy_takes_qos_objects_and_hash():
    tm = topic_metadata(_Jazzy, 3, "/mocap/pose", "geometry_msgs/msg/PoseStamped", QOS_YAML,
                        "RIHS01_ab")
    assert (tm.id, tm.type_description_hash) == (3, "RIHS01_ab")
    assert [(q.depth, q.policies) for q in tm.offered_qos_profiles] == [
        (7, ["best_effort", "volatile"]), (1, ["reliable", "transient_local"])]


def test_writer_on_humble_signatures(tmp_path, monkeypatch):
    """Humble's StorageOptions refuses custom_data; its writer has no close() and no
    split_bagfile()."""
    calls = []

    class StorageOptions:
        def __init__(self, uri, storage_id="", max_bagfile_duration=0, max_bagfile_size=0):
            calls.append(("storage", uri, storage_id, max_bagfile_duration))

    class SequentialWriter:
        def open(self, storage, converter):
            calls.append(("open",))

        def create_topic(self, tm):
            calls.append(("topic", tm.name, tm.offered_qos_profiles))

        def write(self, topic, data, t):
            calls.append(("write", topic, type(data), t))

    fake = types.SimpleNamespace(StorageOptions=StorageOptions, SequentialWriter=SequentialWriter,
                                 ConverterOptions=lambda a, b: (a, b),
                                 TopicMetadata=_Humble.TopicMetadata)
    monkeypatch.setitem(sys.modules, "rosbag2_py", fake)
    monkeypatch.setattr(bag_backend, "has_rosbag2_py", lambda: True)
    store = typestore()
    w = open_bag_writer(str(tmp_path / "b"), {"/joint_states": JS}, store, "mcap", 60.0,
                        backend="auto")
    w.write("/joint_states", 42, bytearray(b"\x00\x01"))
    w.split()
    assert w.close() == str(tmp_path / "b")
    assert calls[0] == ("storage", str(tmp_path / "b"), "mcap", 60)
    assert calls[2] == ("topic", "/joint_states", "")
    assert calls[3:] == [("write", "/joint_states", bytes, 42)]

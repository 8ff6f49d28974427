"""Bags as other labs publish them: a folder or a single storage file, ``.db3`` or
``.mcap``, without ``metadata.yaml``, stamps from 0 or wall time, joints in any order;
``figaroh-ros bag info`` and ``bag reindex`` on them; the published Panda bag read as it
is.  Small bags are written here with rosbags' own writer, then stripped of their
metadata as a repository would publish them."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from rosbags.highlevel import AnyReader
from rosbags.rosbag2 import StoragePlugin, Writer

from figaroh_ros.errors import DataError
from figaroh_ros.io.bag_index import index_bag, locate, reindex
from figaroh_ros.io.bags import read_bag_samples, typestore

JS = "sensor_msgs/msg/JointState"
JOINTS = ["j1", "j2", "j3"]
PLUGINS = {"db3": StoragePlugin.SQLITE3, "mcap": StoragePlugin.MCAP}
WALL = 1_700_000_000 * 10**9
PANDA = os.path.join(os.environ.get("FIGAROH_DATA", ""), "panda_unisa")


def truth(n: int, rate: float = 100.0):
    """Positions and efforts of three joints at ``n`` samples: known functions of time."""
    t = np.arange(n) / rate
    q = np.column_stack([np.sin(t), 0.5 * np.cos(2 * t), 0.1 * t])
    tau = np.column_stack([3 * np.cos(t), -2 * np.sin(t), 0.5 + 0 * t])
    return t, q, tau


def joint_state(store, t_ns: int, names, q, tau):
    P = store.types
    msg = P[JS](header=P["std_msgs/msg/Header"](stamp=P["builtin_interfaces/msg/Time"](
        sec=t_ns // 10**9, nanosec=t_ns % 10**9), frame_id=""), name=list(names),
        position=np.asarray(q, float), velocity=np.zeros(len(names)),
        effort=np.asarray(tau, float))
    return store.serialize_cdr(msg, JS)


def write_bare_bag(folder: Path, kind: str, n: int = 200, t0: int = 0, order=None,
                   extra: dict | None = None, keep_metadata: bool = False) -> Path:
    """A bag of ``n`` joint states at 100 Hz (:func:`truth`) stamped from ``t0`` ns, the
    joints in the message in ``order`` (a permutation; default as JOINTS), written by
    rosbags, its metadata.yaml deleted; ``extra``: topic -> type of more (empty) topics.
    Returns the storage file."""
    store = typestore()
    order = list(range(len(JOINTS))) if order is None else list(order)
    _, q, tau = truth(n)
    with Writer(folder, version=8, storage_plugin=PLUGINS[kind]) as w:
        conn = w.add_connection("/joint_states", JS, typestore=store)
        for topic, msgtype in (extra or {}).items():
            w.add_connection(topic, msgtype, typestore=store)
        for k in range(n):
            t = t0 + k * 10**7
            w.write(conn, t, joint_state(store, t, [JOINTS[i] for i in order], q[k, order],
                                         tau[k, order]))
    if not keep_metadata:
        os.remove(folder / "metadata.yaml")
    (storage,) = [p for p in folder.iterdir() if p.suffix == f".{kind}"]
    return storage


@pytest.mark.parametrize("kind", ["db3", "mcap"])
@pytest.mark.parametrize("t0", [0, WALL])
def test_a_bare_bag_reads_as_recorded_in_any_joint_order(tmp_path, kind, t0):
    """The folder and the storage file alone give the recorded samples, by joint name,
    whatever order the message lists them in, with stamps from 0 or wall time."""
    storage = write_bare_bag(tmp_path / "bag", kind, t0=t0, order=[2, 0, 1])
    _, q, tau = truth(200)
    for where in (tmp_path / "bag", storage):
        t, Q, T = read_bag_samples([str(where)], JOINTS, "/joint_states", "/joint_states")
        assert np.allclose(t, np.arange(200) * 0.01, rtol=0, atol=1e-9)
        assert np.array_equal(Q, q) and np.array_equal(T, tau)
    assert not (tmp_path / "bag" / "metadata.yaml").exists()   # reading writes nothing


@pytest.mark.parametrize("kind", ["db3", "mcap"])
def test_reindex_writes_the_metadata_rosbags_reads(tmp_path, kind):
    """The metadata rebuilt from the storage alone equals what rosbags' writer wrote (the
    fields a reader uses), and the reindexed bag opens with rosbags and our reader."""
    bag = tmp_path / "bag"
    write_bare_bag(bag, kind, t0=WALL, keep_metadata=True,
                   extra={"/empty": "std_msgs/msg/String"})
    written = AnyReader([bag], default_typestore=typestore())
    with written:
        want = {c.topic: (c.msgtype, c.msgcount) for c in written.connections}
        span = (written.start_time, written.end_time)
    os.remove(bag / "metadata.yaml")
    assert reindex(str(bag)) == str(bag / "metadata.yaml")
    with AnyReader([bag], default_typestore=typestore()) as again:
        assert {c.topic: (c.msgtype, c.msgcount) for c in again.connections} == want
        assert (again.start_time, again.end_time) == span
        assert sum(1 for _ in again.messages()) == 200
    assert locate(str(bag)).indexed
    _, Q, _ = read_bag_samples([str(bag)], JOINTS, "/joint_states", "/joint_states")
    assert np.array_equal(Q, truth(200)[1])
    assert want == {"/joint_states": (JS, 200), "/empty": ("std_msgs/msg/String", 0)}


def test_reindex_refuses_an_indexed_bag_and_a_folder_without_storage(tmp_path):
    bag = tmp_path / "bag"
    write_bare_bag(bag, "db3", keep_metadata=True)
    before = (bag / "metadata.yaml").read_bytes()
    with pytest.raises(DataError, match="exists already"):
        reindex(str(bag))
    assert (bag / "metadata.yaml").read_bytes() == before
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match=r"empty: not a rosbag2 bag"):
        index_bag(str(tmp_path / "empty"))


@pytest.mark.skipif(not os.path.isdir(PANDA), reason="FIGAROH_DATA/panda_unisa absent")
def test_the_published_panda_bag_reads_as_published():
    """The Panda bag (a bare .db3): 727 joint states over 24.2 s, stamps from 0, fer_joint
    names, read without writing anything beside it."""
    joints = [f"fer_joint{i}" for i in range(1, 8)]
    t, Q, T = read_bag_samples([PANDA], joints, "/joint_states", "/joint_states")
    assert Q.shape == T.shape == (727, 7)
    assert t[0] == 0.0 and t[-1] == pytest.approx(24.2, abs=0.01)
    info = index_bag(PANDA)
    assert info["message_count"] == 727 and info["ros_distro"] == "humble"
    assert info["starting_time"]["nanoseconds_since_epoch"] == 0
    assert not os.path.exists(os.path.join(PANDA, "metadata.yaml"))


def test_a_copy_of_the_panda_bag_reindexed_opens_with_rosbags(tmp_path):
    if not os.path.isdir(PANDA):
        pytest.skip("FIGAROH_DATA/panda_unisa absent")
    copy = tmp_path / "panda"
    copy.mkdir()
    shutil.copy(os.path.join(PANDA, "panda_exciting_trajectory.db3"), copy)
    reindex(str(copy))
    with AnyReader([copy], default_typestore=typestore()) as r:
        assert [(c.topic, c.msgcount) for c in r.connections] == [("/joint_states", 727)]

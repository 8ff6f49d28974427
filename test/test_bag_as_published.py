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
import yaml
from conftest import ROOT, cli_in_process
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
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


# ------------------------------------------------------------------ the command line
def bag_cli(*args):
    """``figaroh-ros bag ARGS`` in this process: (exit code, stdout as YAML or text,
    stderr)."""
    proc = cli_in_process("bag", *args)
    out = yaml.safe_load(proc.stdout) if proc.returncode == 0 and args[0] == "info" \
        else proc.stdout
    return proc.returncode, out, proc.stderr


def write_gap_bag(folder: Path, kind: str) -> Path:
    """200 joint states at 100 Hz from wall time with 0.5 s missing after the 100th."""
    store = typestore()
    _, q, tau = truth(200)
    with Writer(folder, version=8, storage_plugin=PLUGINS[kind]) as w:
        conn = w.add_connection("/joint_states", JS, typestore=store)
        for k in range(200):
            t = WALL + k * 10**7 + (500_000_000 if k >= 100 else 0)
            w.write(conn, t, joint_state(store, t, JOINTS, q[k], tau[k]))
    os.remove(folder / "metadata.yaml")
    return folder


@pytest.mark.parametrize("kind", ["db3", "mcap"])
def test_bag_info_on_a_bare_bag(tmp_path, kind):
    """Counts, rate, joint names in the recorded order, stamps from 0, the effort taken
    for torques unchecked, the metadata said absent; a gap found where it was cut."""
    storage = write_bare_bag(tmp_path / "bag", kind, order=[1, 2, 0],
                             extra={"/arm_current": JS})
    for where in (tmp_path / "bag", storage):
        code, info, err = bag_cli("info", where)
        assert code == 0, err
        js = info["topics"]["/joint_states"]
        assert (js["count"], js["rate_hz"], js["gaps"]["count"]) == (200, 100.0, 0)
        assert js["joints"] == ["j2", "j3", "j1"] and js["still_joints"] == []
        assert js["header_stamps"] == "from 0.000000 s (not wall time)"
        assert js["effort"]["looks_like"] == "joint torques (unchecked)"
        assert js["effort"]["peak_abs"]["j3"] == pytest.approx(0.5)
        assert info["topics"]["/arm_current"] == {"type": JS, "count": 0}
        assert info["metadata_yaml"].startswith("absent") and info["messages"] == 200
        assert info["storage"] == {"db3": "sqlite3", "mcap": "mcap"}[kind]
    code, info, _ = bag_cli("info", write_gap_bag(tmp_path / "gap", kind))
    gaps = info["topics"]["/joint_states"]["gaps"]
    assert gaps["count"] == 1 and gaps["longest"] == {"at_s": 0.99, "length_s": 0.51}
    assert info["topics"]["/joint_states"]["header_stamps"].startswith("from 2023-11-14T")
    assert not (tmp_path / "bag" / "metadata.yaml").exists()


@pytest.mark.parametrize("kind", ["db3", "mcap"])
def test_bag_reindex_writes_metadata_every_distro_reads(tmp_path, kind):
    """The written metadata.yaml has every key of the type Humble's, Jazzy's and Kilted's
    rosbag2 decoders read (test_bag_format's table of them); the bag then opens with
    rosbags and with our reader, a second reindex is refused and --force rewrites it
    identically."""
    from test_bag_format import QOS_KEYS, SCHEMA, _check
    bag = tmp_path / "bag"
    write_bare_bag(bag, kind, t0=WALL, extra={"/empty": "std_msgs/msg/String"})
    code, out, err = bag_cli("reindex", bag)
    assert code == 0 and out.strip() == str(bag / "metadata.yaml"), err
    text = (bag / "metadata.yaml").read_text()
    info = yaml.safe_load(text)["rosbag2_bagfile_information"]
    assert info["version"] == 8
    for distro, spec in SCHEMA.items():
        _check(info, spec["bag"], distro)
        for t in info["topics_with_message_count"]:
            _check(t["topic_metadata"], spec["topic"], f"{distro} topic")
            for profile in yaml.safe_load(t["topic_metadata"]["offered_qos_profiles"]) or []:
                _check(profile, QOS_KEYS, f"{distro} QoS")
    assert info["files"][0]["starting_time"]["nanoseconds_since_epoch"] == WALL
    assert info["duration"]["nanoseconds"] == 199 * 10**7
    with AnyReader([bag], default_typestore=typestore()) as r:
        assert {c.topic: c.msgcount for c in r.connections} == {"/joint_states": 200,
                                                               "/empty": 0}
        assert sum(1 for _ in r.messages()) == 200
    _, Q, T = read_bag_samples([str(bag)], JOINTS, "/joint_states", "/joint_states")
    assert np.array_equal(Q, truth(200)[1]) and np.array_equal(T, truth(200)[2])
    code, _, err = bag_cli("reindex", bag)
    assert code == 2 and "exists already" in err and str(bag) in err
    assert bag_cli("reindex", bag, "--force")[0] == 0
    assert (bag / "metadata.yaml").read_text() == text
    assert not [p for p in bag.iterdir() if p.name.startswith(".metadata")]


def test_reindex_of_a_read_only_folder_writes_nothing(tmp_path):
    bag = tmp_path / "bag"
    write_bare_bag(bag, "db3")
    os.chmod(bag, 0o555)
    try:
        code, _, err = bag_cli("reindex", bag)
    finally:
        os.chmod(bag, 0o755)
    assert code == 2 and f"{bag}: read-only" in err
    assert sorted(p.name for p in bag.iterdir()) == ["bag.db3"]


@pytest.mark.skipif(not os.path.isdir(PANDA), reason="FIGAROH_DATA/panda_unisa absent")
def test_the_published_panda_bag_through_the_command_line():
    """bag info on the published folder (read only): 727 messages at 30 Hz, fer_ names,
    stamps from 0; with the shipped config the efforts fit the model's gravity torques
    with gains near 1 (joint torques)."""
    before = sorted(os.listdir(PANDA))
    code, info, err = bag_cli("info", PANDA)
    assert code == 0, err
    js = info["topics"]["/joint_states"]
    assert (info["messages"], js["rate_hz"]) == (727, 30.0)
    assert js["joints"] == [f"fer_joint{i}" for i in range(1, 8)]
    assert js["header_stamps"] == "from 0.000000 s (not wall time)"
    code, info, err = bag_cli("info", PANDA, "--config",
                              os.path.join(ROOT, "config", "panda_unisa.yaml"))
    assert code == 0, err
    effort = info["topics"]["/joint_states"]["effort"]
    assert effort["looks_like"] == "joint torques"
    assert {"panda_joint2", "panda_joint4"} <= set(effort["gravity_fit"])
    assert all(0.9 < g["gain"] < 1.1 and g["correlation"] > 0.95
               for g in effort["gravity_fit"].values())
    assert sorted(os.listdir(PANDA)) == before


def test_a_scaled_effort_does_not_look_like_torques(tmp_path, panda):
    """The gravity check on a simulated Panda whose effort is the gravity torque divided by
    a drive gain of 40 (a current): gains of 1/40 are reported, not torques; the same
    recording in N.m is taken for torques."""
    import pinocchio as pin
    from figaroh_ros.io.bag_info import bag_summary
    store, names = typestore(), list(panda.active_joints)
    rng = np.random.default_rng(7)
    Q = np.column_stack([np.linspace(-1, 1, 120) * s for s in rng.uniform(0.5, 1.2, 7)])
    data = panda.model.createData()
    G = np.array([pin.computeGeneralizedGravity(panda.model, data, q)[panda.idx_v]
                  for q in panda.full_configuration(Q)])
    for scale, looks in ((1.0, "joint torques"), (1 / 40, "motor currents or a scaled "
                                                         "effort")):
        folder = tmp_path / f"s{scale}"
        with Writer(folder, version=8) as w:
            conn = w.add_connection("/joint_states", JS, typestore=store)
            for k, (q, g) in enumerate(zip(Q, G)):
                w.write(conn, k * 10**7, joint_state(store, k * 10**7, names, q, scale * g))
        effort = bag_summary(str(folder), panda)["topics"]["/joint_states"]["effort"]
        assert effort["looks_like"] == looks
        assert all(g["gain"] == pytest.approx(scale, rel=1e-6)
                   for g in effort["gravity_fit"].values())


# ------------------------------------------------------------------ joint names
def test_joint_map_reads_recorded_names_and_refuses_clashes(tmp_path):
    """data.joint_map: a duplicate target, a target outside robot.joints and a model name
    mapped away while also read under its own name are refused naming the entry."""
    from figaroh_ros.config.identification import parse_config
    from figaroh_ros.errors import ConfigError
    base = yaml.safe_load(open(os.path.join(ROOT, "config", "panda_unisa.yaml")))
    for entry, words in (({"fer_joint1": "panda_joint1", "fer_x": "panda_joint1"},
                          "'panda_joint1' is mapped from both 'fer_joint1' and 'fer_x'"),
                         ({"fer_joint1": "panda_finger_joint1"}, "expected one of robot"),
                         ({"panda_joint2": "panda_joint1"}, "also mapped to")):
        cfg = dict(base, data=dict(base["data"], joint_map=entry, path=str(tmp_path)))
        (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
        with pytest.raises(ConfigError, match="data.joint_map") as refused:
            parse_config(str(tmp_path / "c.yaml"))
        assert words in str(refused.value)


def test_a_joint_missing_or_named_twice_is_refused_by_name(tmp_path):
    write_bare_bag(tmp_path / "bag", "db3")
    with pytest.raises(DataError, match=r"joints \['j4'\] missing .* name \['j1', 'j2', "
                                        r"'j3'\]; data.joint_map"):
        read_bag_samples([str(tmp_path / "bag")], ["j1", "j4"], "/joint_states",
                         "/joint_states")
    store = typestore()
    with Writer(tmp_path / "twice", version=8) as w:
        conn = w.add_connection("/joint_states", JS, typestore=store)
        w.write(conn, 0, joint_state(store, 0, ["j1", "j1", "j2"], [0, 1, 2], [0, 0, 0]))
    with pytest.raises(DataError, match=r"joints \['j1'\] named twice"):
        read_bag_samples([str(tmp_path / "twice")], ["j1", "j2"], "/joint_states",
                         "/joint_states")


# ------------------------------------------------------------------ damaged bags
@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(["db3", "mcap"]), cut=st.floats(0.0, 0.98))
def test_a_truncated_storage_file_is_refused_naming_it(tmp_path_factory, kind, cut):
    """A storage file cut short: bag info and reindex either read what is there
    consistently or stop with exit 2 naming the file, and reindex writes nothing then."""
    folder = tmp_path_factory.mktemp("cut")
    storage = write_bare_bag(folder / "bag", kind)
    data = storage.read_bytes()
    storage.write_bytes(data[:int(cut * len(data))])
    code, info, err = bag_cli("info", folder / "bag")
    if code == 0:
        assert info["messages"] <= 200
    else:
        assert code == 2 and str(folder / "bag") in err, err
    indexed, _, err = bag_cli("reindex", folder / "bag")
    if indexed != 0:
        assert indexed == 2 and str(folder / "bag") in err, err
        assert not (folder / "bag" / "metadata.yaml").exists()
    else:                       # indexed: every message was readable, so info read it
        assert code == 0


@settings(max_examples=20, deadline=None)
@given(kind=st.sampled_from(["db3", "mcap"]), where=st.integers(0, 199),
       joint=st.integers(0, 2), value=st.sampled_from([np.nan, np.inf, -1e9]))
def test_a_bad_value_is_refused_naming_the_bag_and_the_time(tmp_path_factory, kind, where,
                                                           joint, value):
    folder = tmp_path_factory.mktemp("nan") / "bag"
    store = typestore()
    _, q, tau = truth(200)
    q[where, joint] = value
    with Writer(folder, version=8, storage_plugin=PLUGINS[kind]) as w:
        conn = w.add_connection("/joint_states", JS, typestore=store)
        for k in range(200):
            w.write(conn, k * 10**7, joint_state(store, k * 10**7, JOINTS, q[k], tau[k]))
    os.remove(folder / "metadata.yaml")
    with pytest.raises(DataError, match=rf"at {where * 0.01:.3f} s in bag .*{folder.name}"):
        read_bag_samples([str(folder)], JOINTS, "/joint_states", "/joint_states")


@pytest.mark.parametrize("kind", ["db3", "mcap"])
def test_wrong_types_and_empty_topics_are_refused_naming_the_bag(tmp_path, kind):
    bag = tmp_path / "bag"
    write_bare_bag(bag, kind, extra={"/wrong": "std_msgs/msg/String",
                                     "/silent": JS})
    with pytest.raises(DataError, match=r"'/wrong' of bag .*bag.* is std_msgs/msg/String, "
                                        "expected sensor_msgs/msg/JointState"):
        read_bag_samples([str(bag)], JOINTS, "/wrong", "/joint_states")
    with pytest.raises(DataError, match=r"bag .*bag.*: only 0 joint states"):
        read_bag_samples([str(bag)], JOINTS, "/joint_states", "/silent")
    with pytest.raises(DataError, match="no topic '/absent'"):
        read_bag_samples([str(bag)], JOINTS, "/absent", "/joint_states")
    (tmp_path / "notes.txt").write_text("x")
    for verb in ("info", "reindex"):
        code, _, err = bag_cli(verb, tmp_path / "notes.txt")
        assert code == 2 and "notes.txt: not a rosbag2 storage file" in err
    assert not (tmp_path / "metadata.yaml").exists()


@pytest.mark.parametrize("kind", ["db3", "mcap"])
def test_messages_not_of_their_declared_type_are_refused_naming_the_bag(tmp_path, kind):
    """A topic declared JointState whose messages are Strings: the readers and bag info
    stop with a DataError naming the topic, the time and the bag (not rosbags' error)."""
    store = typestore()
    text = store.types["std_msgs/msg/String"]
    bag = tmp_path / "bag"
    with Writer(bag, version=8, storage_plugin=PLUGINS[kind]) as w:
        conn = w.add_connection("/joint_states", JS, typestore=store)
        for k in range(3):
            w.write(conn, 10**9 + k, store.serialize_cdr(text(data="x" * k),
                                                         "std_msgs/msg/String"))
    with pytest.raises(DataError, match=r"'/joint_states' message at 1.000 s in bag .*bag.*"
                                        "not a sensor_msgs/msg/JointState"):
        read_bag_samples([str(bag)], JOINTS, "/joint_states", "/joint_states")
    code, _, err = bag_cli("info", bag)
    assert code == 2 and f"{bag}: a '/joint_states' message at 1.000000 s is not a" in err


@pytest.mark.parametrize("kind", ["db3", "mcap"])
def test_a_bare_bag_split_in_files_reads_in_their_numbered_order(tmp_path, kind):
    """Twelve storage files of one bag without metadata (bag_0 .. bag_11: bag_10 sorts
    after bag_9): every sample once, in time order; reindex lists the files in that order
    with their counts, and rosbags reads the reindexed bag whole."""
    store = typestore()
    _, q, tau = truth(240)
    bag = tmp_path / "bag"
    bag.mkdir()
    for part in range(12):
        with Writer(tmp_path / f"p{part}", version=8, storage_plugin=PLUGINS[kind]) as w:
            conn = w.add_connection("/joint_states", JS, typestore=store)
            for k in range(20 * part, 20 * part + 20):
                w.write(conn, WALL + k * 10**7, joint_state(store, WALL + k * 10**7, JOINTS,
                                                            q[k], tau[k]))
        (src,) = (tmp_path / f"p{part}").glob(f"*.{kind}")
        src.rename(bag / f"bag_{part}.{kind}")
    _, Q, T = read_bag_samples([str(bag)], JOINTS, "/joint_states", "/joint_states")
    assert np.array_equal(Q, q) and np.array_equal(T, tau)
    reindex(str(bag))
    info = yaml.safe_load((bag / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    assert info["relative_file_paths"] == [f"bag_{i}.{kind}" for i in range(12)]
    assert [f["message_count"] for f in info["files"]] == [20] * 12
    assert info["files"][11]["starting_time"]["nanoseconds_since_epoch"] == WALL + 220 * 10**7
    with AnyReader([bag], default_typestore=typestore()) as r:
        stamps = [t for _, t, _ in r.messages()]
    assert stamps == [WALL + k * 10**7 for k in range(240)]


def test_the_joint_map_reads_a_table_by_its_recorded_names(tmp_path):
    """data.joint_map applies to a CSV table's {joint} columns too: a table of fer_
    columns, in another order than the model's, read into the model's joint order."""
    from figaroh_ros.config.identification import load_config
    from figaroh_ros.io.recording import read_recording
    from figaroh_ros.tasks.identify import robot_from_config
    rng = np.random.default_rng(3)
    n = 50
    q, tau = rng.uniform(-1, 1, (n, 7)), rng.uniform(-5, 5, (n, 7))
    order = [6, 2, 0, 4, 1, 5, 3]
    header = ["t"] + [f"fer_joint{j + 1}_position" for j in order] \
        + [f"fer_joint{j + 1}_effort" for j in order]
    table = np.column_stack([np.arange(n) * 0.01, q[:, order], tau[:, order]])
    np.savetxt(tmp_path / "t.csv", table, delimiter=",", header=",".join(header),
               comments="")
    cfg = yaml.safe_load(open(os.path.join(ROOT, "config", "panda_unisa.yaml")))
    cfg["data"] = dict(format="csv_table", path=str(tmp_path), table="t.csv",
                       time_column="t", joint_map=cfg["data"]["joint_map"],
                       effort="joint_torque")
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
    loaded = load_config(str(tmp_path / "c.yaml"))
    rec = read_recording(loaded, robot_from_config(loaded))
    m = len(rec.t)                     # the uniform grid on the stamps: every sample but
    assert m >= n - 1                  # the last one the grid's round-off may leave out
    assert np.allclose(rec.t, np.arange(m) * 0.01, rtol=0, atol=1e-9)
    assert np.allclose(rec.q, q[:m], rtol=0, atol=1e-6)
    assert np.allclose(rec.tau, tau[:m], rtol=0, atol=1e-6)


def test_effort_meaning_is_checked_and_a_motor_torque_goes_through_the_transmission(
        tmp_path):
    """data.effort against the drive options: contradictions refused naming the field;
    motor torques become joint torques through the gear ratios (positions untouched)."""
    from figaroh_ros.config.identification import load_config
    from figaroh_ros.errors import ConfigError
    from figaroh_ros.io.recording import read_recording
    from figaroh_ros.tasks.identify import robot_from_config
    n, joints = 40, [f"panda_joint{i}" for i in range(1, 8)]
    rng = np.random.default_rng(5)
    q, tau = rng.uniform(-1, 1, (n, 7)), rng.uniform(-5, 5, (n, 7))
    header = ["t"] + [f"{j}_position" for j in joints] + [f"{j}_effort" for j in joints]
    np.savetxt(tmp_path / "t.csv", np.column_stack([np.arange(n) * 0.01, q, tau]),
               delimiter=",", header=",".join(header), comments="")
    base = yaml.safe_load(open(os.path.join(ROOT, "config", "panda_unisa.yaml")))
    base["data"] = dict(format="csv_table", path=str(tmp_path), table="t.csv",
                        time_column="t")

    def load(effort, **sections):
        cfg = dict(base, data=dict(base["data"], effort=effort), **sections)
        (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
        return load_config(str(tmp_path / "c.yaml"))

    currents = {"gear_ratios": [100.0] * 7, "torque_constants": [0.1] * 7}
    for effort, sections, words in (
            ("joint_torque", {"drive": currents}, "joint torques take no drive.gear_ratios"),
            ("motor_current", {}, "motor currents need their per-joint constants"),
            ("motor_torque", {}, "motor torques need transmission.gear_ratios")):
        with pytest.raises(ConfigError, match="data.effort") as refused:
            load(effort, **sections)
        assert words in str(refused.value)
    cfg = load("motor_torque", transmission={"gear_ratios": [2.0, 3, 4, 5, 6, 7, 8]})
    rec = read_recording(cfg, robot_from_config(cfg))
    m = len(rec.t)
    assert np.allclose(rec.q, q[:m], atol=1e-9)
    assert np.allclose(rec.tau, tau[:m] * [2, 3, 4, 5, 6, 7, 8], atol=1e-9)
    cfg = load("motor_current", drive=currents)
    assert cfg.drive.effort_gains == pytest.approx([10.0] * 7)


@pytest.mark.parametrize("kind", ["sqlite3", "mcap"])
def test_reindex_gives_back_what_our_recorder_wrote(tmp_path, kind):
    """A bag of the project's writer (offered QoS, RIHS01 type hashes, two files) with its
    metadata.yaml deleted: reindex writes the topics, counts, QoS, hashes and files it
    had."""
    from test_bag_format import _write
    bag = tmp_path / "bag"
    _write(bag, kind)
    had = yaml.safe_load((bag / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    os.remove(bag / "metadata.yaml")
    reindex(str(bag))
    got = yaml.safe_load((bag / "metadata.yaml").read_text())["rosbag2_bagfile_information"]
    for key in ("version", "storage_identifier", "message_count", "relative_file_paths",
                "files", "starting_time", "duration"):
        assert got[key] == had[key], key
    assert sorted(got["topics_with_message_count"], key=lambda t: t["topic_metadata"]["name"]) \
        == sorted(had["topics_with_message_count"], key=lambda t: t["topic_metadata"]["name"])


@settings(max_examples=20, deadline=None)
@given(kind=st.sampled_from(["db3", "mcap"]), cut=st.floats(0.0, 0.999))
@example(kind="db3", cut=0.98)          # opens, then fails in the messages
def test_identify_on_a_truncated_bag_is_refused_naming_it(tmp_path_factory, kind, cut):
    """The readers behind identify on a storage file cut anywhere: all the samples, or a
    DataError naming the bag (never the storage library's own error)."""
    folder = tmp_path_factory.mktemp("cutread")
    storage = write_bare_bag(folder / "bag", kind)
    data = storage.read_bytes()
    storage.write_bytes(data[:int(cut * len(data))])
    try:
        _, Q, _ = read_bag_samples([str(folder / "bag")], JOINTS, "/joint_states",
                                   "/joint_states")
    except DataError as exc:
        assert str(folder / "bag") in str(exc)
    else:
        assert np.array_equal(Q, truth(200)[1])


def test_the_robots_reader_is_told_the_storage_of_a_bare_file(tmp_path, monkeypatch):
    """On a robot, rosbag2_py reads a bare storage file; Humble does not infer its plugin
    from the extension, so the adapter names it (mcap, sqlite3), and leaves it to rosbag2
    for a bag folder.  Checked on a stand-in with rosbag2_py's reader signatures."""
    import sys
    import types

    from figaroh_ros.io.bag_backend import Rosbag2PyReader
    opened = []

    class SequentialReader:
        def open(self, storage_options, converter_options):
            opened.append(storage_options)

        def get_all_topics_and_types(self):
            return []

    monkeypatch.setitem(sys.modules, "rosbag2_py", types.SimpleNamespace(
        SequentialReader=SequentialReader, StorageOptions=lambda **kw: kw,
        ConverterOptions=lambda *a: a))
    files = [write_bare_bag(tmp_path / kind, kind) for kind in ("mcap", "db3")]
    Rosbag2PyReader([str(files[0]), str(files[1]), str(tmp_path / "mcap")], typestore())
    assert opened == [{"uri": str(files[0]), "storage_id": "mcap"},
                      {"uri": str(files[1]), "storage_id": "sqlite3"},
                      {"uri": str(tmp_path / "mcap"), "storage_id": ""}]


def test_reindex_force_rebuilds_a_broken_metadata_file(tmp_path):
    """A metadata.yaml that is not rosbag2's (a writer killed while writing it): reading
    the bag names the file; reindex --force rebuilds it from the storage without reading
    it, and the bag reads again."""
    bag = tmp_path / "bag"
    write_bare_bag(bag, "mcap", keep_metadata=True)
    (bag / "metadata.yaml").write_text("rosbag2_bagfile_information: [cut")
    with pytest.raises(DataError, match=r"metadata.yaml: not a rosbag2 metadata file"):
        read_bag_samples([str(bag)], JOINTS, "/joint_states", "/joint_states")
    code, _, err = bag_cli("reindex", bag)
    assert code == 2 and "exists already" in err
    code, _, err = bag_cli("reindex", bag, "--force")
    assert code == 0, err
    _, Q, _ = read_bag_samples([str(bag)], JOINTS, "/joint_states", "/joint_states")
    assert np.array_equal(Q, truth(200)[1])

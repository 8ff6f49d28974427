"""Fuzz suite, library side: every reader at the boundary either
returns finite numbers equal to what was written, or refuses with a FigarohError naming
the file and the line / column / element and the value.  Never another exception, never
garbage passed on.

Property-based (hypothesis, bounded examples) over URDF texts, CSV tables, posture files,
experiment files, reference tables and bag messages, plus a corpus of the measured crash
classes.
"""
import dataclasses
import math
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from test_bags import TOPICS, _joint_state

from figaroh_ros.errors import DataError, ModelError
from figaroh_ros.io.bags import read_bag_postures, read_bag_wrench_and_pose, typestore
from figaroh_ros.io.csv_table import MAX_MAGNITUDE, read_csv_table
from figaroh_ros.io.experiment_files import read_postures
from figaroh_ros.io.postures_csv import load_postures
from figaroh_ros.io.reference import read_reference
from figaroh_ros.io.segmented_bag import SegmentedBagWriter
from figaroh_ros.model.loading import load_model
from figaroh_ros.model.urdf_checks import check_urdf_text

FUZZ = settings(max_examples=40, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])

# -- URDF -------------------------------------------------------------------------------

LINK = ('<link name="{name}"><inertial><origin xyz="0 0 0.1"/><mass value="{mass}"/>'
        '<inertia ixx="{ixx}" ixy="0" ixz="0" iyy="0.01" iyz="0" izz="0.01"/></inertial>'
        '</link>')
JOINT = ('<joint name="j{k}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
         '<origin xyz="{xyz}" rpy="0 0 0"/><axis xyz="{axis}"/>'
         '<limit lower="{lower}" upper="{upper}" effort="10" velocity="2"/></joint>')
GOOD = {"mass": "1.0", "ixx": "0.01", "xyz": "0 0 0.2", "axis": "0 0 1", "lower": "-1",
        "upper": "1", "kind": "revolute"}
BAD = {"mass": ["-1", "heavy", "nan", "inf", "", "1 2"], "ixx": ["-0.5", "nan", "x"],
       "xyz": ["0 0", "nan 0 0", "1e400 0 0", "a b c"], "axis": ["0 0 0", "0 0 2", "nan 0 1",
                                                               "1 1"],
       "lower": ["2", "nan", "low"], "upper": ["-2", "inf", ""],
       "kind": ["hinge", "fixed", "continuous", "prismatic", "floating"]}


def chain_urdf(n: int, faults: dict, parents: list[int] | None = None) -> str:
    """A chain base -> l1 -> ... -> ln; ``faults`` maps (joint number, key) to a value
    replacing the good one; ``parents[k]`` the parent link number of joint k+1."""
    links = ["<link name=\"l0\"/>"] + [
        LINK.format(name=f"l{k}", **{key: faults.get((k, key), GOOD[key])
                                     for key in ("mass", "ixx")}) for k in range(1, n + 1)]
    joints = [JOINT.format(k=k, parent=f"l{parents[k - 1] if parents else k - 1}",
                           child=f"l{k}", **{key: faults.get((k, key), GOOD[key])
                                             for key in ("xyz", "axis", "lower", "upper",
                                                         "kind")})
              for k in range(1, n + 1)]
    return f'<?xml version="1.0"?><robot name="r">{"".join(links + joints)}</robot>'


MOVING = ("revolute", "continuous", "prismatic")


def relevant(key: str, kind: str) -> bool:
    """Whether ``key`` matters for a joint of type ``kind`` (the URDF ignores the axis of
    a fixed joint; a limit element is parsed whatever the type)."""
    return key != "axis" or kind in MOVING


def good_fault(key: str, value: str) -> bool:
    """Whether a replaced value is still a valid URDF value (the property's oracle)."""
    if key == "kind":
        return value in ("fixed", "continuous", "prismatic", "floating")
    if key == "upper":
        return False
    try:
        numbers = [float(v) for v in value.split()]
    except ValueError:
        return False
    size = 3 if key in ("xyz", "axis") else 1
    if len(numbers) != size or not all(map(math.isfinite, numbers)):
        return False
    if key == "axis":
        return abs(np.linalg.norm(numbers) - 1) < 1e-3
    if key == "lower":
        return numbers[0] <= 1.0
    return numbers[0] >= 0


faults = st.dictionaries(st.tuples(st.integers(1, 3), st.sampled_from(sorted(BAD))),
                         st.just(None), max_size=2)


@FUZZ
@given(n=st.integers(1, 3), where=faults, data=st.data())
def test_a_urdf_is_loaded_with_valid_numbers_or_refused_naming_the_element(n, where, data):
    chosen = {(k, key): data.draw(st.sampled_from(BAD[key]), label=f"j{k}.{key}")
              for (k, key) in where if k <= n}
    text = chain_urdf(n, chosen)
    bad = [(k, key) for (k, key), v in chosen.items() if not good_fault(key, v)
           and relevant(key, chosen.get((k, "kind"), "revolute"))]
    try:
        robot = load_model(text)
    except ModelError as exc:
        assert bad, f"refused a valid URDF: {exc}"
        named = [f"'l{k}'" if key in ("mass", "ixx") else f"'j{k}'" for k, key in bad]
        assert any(nm in str(exc) for nm in named) and "URDF" in str(exc), str(exc)
        return
    expected_ok = not bad
    assert expected_ok, f"accepted {chosen}"
    model = robot.model
    assert all(np.isfinite(i.mass) and i.mass >= 0 for i in model.inertias)
    lo, hi = robot.position_limits()
    assert np.all(lo <= hi)


@pytest.mark.parametrize("parents, message", [
    ([2, 1, 2], "loop"),                 # l1 <- l2 <- l1: a cycle, l0 alone
    ([0, 1, 1], "child of two joints"),  # joint 3 gives l3 a parent: fine; see below
])
def test_joints_forming_a_loop_never_reach_pinocchio(parents, message):
    # pinocchio itself segfaults on a loop: the check must come first (a segfault here
    # would stop the test run, not just fail)
    text = chain_urdf(3, {}, parents)
    if parents == [0, 1, 1]:
        text = text.replace('<child link="l3"/>', '<child link="l2"/>')
    with pytest.raises(ModelError, match=message):
        load_model(text)


@pytest.mark.parametrize("text, fragment", [
    ("<robot name='r'><link name='a'/><link name='a'/></robot>", "repeated: ['a']"),
    ("<robot name='r'><link name='a'/><link name='b'/></robot>", "one root link, found 2"),
    ("<robot name='r'></robot>", "no <link>"),
    ("<robot name='r'><link name='a'>", "not well-formed"),
    ("<!DOCTYPE r [<!ENTITY a 'aaaa'>]><robot name='r'>&a;</robot>", "ENTITY"),
    ("<model/>", "expected <robot>"),
    (chain_urdf(1, {}).replace('<limit lower="-1" upper="1" effort="10" velocity="2"/>',
                               ""), "no <limit>"),
    (chain_urdf(1, {}).replace('effort="10"', 'effort="-3"'), "effort=-3.0"),
    (chain_urdf(1, {}).replace('<parent link="l0"/>', '<parent link="nowhere"/>'),
     "'nowhere'"),
])
def test_urdf_corpus(text, fragment):
    with pytest.raises(ModelError, match=re.escape(fragment)):
        check_urdf_text(text)


def test_a_urdf_file_that_is_not_utf8_is_refused(tmp_path):
    path = tmp_path / "r.urdf"
    path.write_bytes(chain_urdf(1, {}).encode().replace(b'name="r"', b'name="\xff\xfe"'))
    with pytest.raises(ModelError, match=r"not UTF-8 .*byte \d+"):
        load_model(str(path))


# -- CSV tables -------------------------------------------------------------------------

CELLS = st.one_of(
    st.floats(-1e6, 1e6, allow_nan=False).map(repr),
    st.sampled_from(["nan", "inf", "-inf", "1e300", "-1e200", "", "x", "1,5", "0x10",
                     "1e16", "  2.5 ", "—"]),
)


@FUZZ
@given(rows=st.lists(st.lists(CELLS, min_size=3, max_size=3), min_size=1, max_size=6),
       extra=st.sampled_from(["", "\n", "\n\n", "\n1,2\n", "\n1,2,3,4\n"]))
def test_a_csv_table_is_read_exactly_or_refused_naming_line_and_column(tmp_path, rows,
                                                                      extra):
    path = tmp_path / "t.csv"
    path.write_text("a,b,c\n" + "\n".join(",".join(r) for r in rows) + extra)
    try:
        header, arr = read_csv_table(str(path))
    except DataError as exc:
        message = str(exc)
        assert str(path) in message and re.search(r"line \d+|no row|header names", message)
        return
    assert header == ["a", "b", "c"]
    assert np.all(np.isfinite(arr)) and np.abs(arr).max() <= MAX_MAGNITUDE
    expected = [[float(c) for c in r] for r in rows]
    assert arr[:len(rows)].tolist() == expected


@pytest.mark.parametrize("body, fragment", [
    ("a,b\n1,2\n3,1e300\n", "line 3 (data row 1, from 0), column 'b': value 1e+300"),
    ("a,b\n1,nan\n", "line 2 (data row 0, from 0), column 'b': value nan"),
    ("a,b\n1,2\n3\n", "line 3: 1 fields"),
    ("a,b\n1,2\n3,four\n", "line 3, column 'b': not a number: 'four'"),
    ("a,b\n", "no row of numbers"),
])
def test_csv_table_corpus(tmp_path, body, fragment):
    path = tmp_path / "t.csv"
    path.write_text(body)
    with pytest.raises(DataError, match=re.escape(fragment)):
        read_csv_table(str(path))


def test_a_csv_table_that_is_not_utf8_names_its_line(tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes(b"a,b\n1,2\n3,\xe9\n")
    with pytest.raises(DataError, match=r"line 3: not UTF-8"):
        read_csv_table(str(path))


# -- calibration posture files ------------------------------------------------------------

@FUZZ
@given(cells=st.lists(CELLS, min_size=8, max_size=8),
       orientation=st.sampled_from(["rpy", "quaternion"]),
       fixed=st.sampled_from([None, 0.3, float("nan"), "x", 1e300]))
def test_a_posture_file_gives_finite_postures_or_names_line_and_column(tmp_path, cells,
                                                                       orientation, fixed):
    rot = ["phix1", "phiy1", "phiz1"] if orientation == "rpy" else ["qx1", "qy1", "qz1",
                                                                     "qw1"]
    cols = ["j1", "x1", "y1", "z1"] + rot
    path = tmp_path / "p.csv"
    good = "0.1,0.5,0.2,0.3," + ("0,0,0" if orientation == "rpy" else "0,0,0,1")
    path.write_text(",".join(cols) + "\n" + good + "\n" + ",".join(cells[:len(cols)]) + "\n")
    chain = ["j1"] if fixed is None else ["j1", "j2"]
    try:
        ps = load_postures(str(path), chain, "pose", [1], orientation,
                           fixed_joints=None if fixed is None else {"j2": fixed})
    except DataError as exc:
        message = str(exc)
        assert (str(path) in message and "line 3" in message) or "fixed_joints" in message, \
            message
        return
    assert np.all(np.isfinite(ps.Q)) and np.all(np.isfinite(ps.Y))
    assert ps.Q.shape == (2, len(chain)) and ps.Q[1, 0] == float(cells[0])


@pytest.mark.parametrize("row, fragment", [
    ("0.1,0.5,0.2,0.3,0,0,0,0", "line 2: quaternion"),
    ("0.1,1e300,0.2,0.3,0,0,0,1", "line 2, column 'x1': value '1e300'"),
])
def test_posture_file_corpus(tmp_path, row, fragment):
    path = tmp_path / "p.csv"
    path.write_text("j1,x1,y1,z1,qx1,qy1,qz1,qw1\n" + row + "\n")
    with pytest.raises(DataError, match=re.escape(fragment)):
        load_postures(str(path), ["j1"], "pose", [1], "quaternion")


def test_a_fixed_joint_with_a_data_column_is_refused(tmp_path):
    path = tmp_path / "p.csv"
    path.write_text("j1,j2,x1,y1,z1\n0.1,0.2,1,2,3\n")
    with pytest.raises(DataError, match=r"joints \['j2'\] have a column and a value"):
        load_postures(str(path), ["j1", "j2"], "points", [1], fixed_joints={"j2": 0.0})


# -- experiment files and reference tables ------------------------------------------------

@FUZZ
@given(cells=st.lists(CELLS, min_size=4, max_size=4))
def test_an_experiment_postures_file_is_read_exactly_or_refused(tmp_path, cells):
    path = tmp_path / "e.csv"
    path.write_text("j1,j2,label\n" + ",".join(cells[:2]) + ",a\n" + ",".join(cells[2:])
                    + ",b\n")
    try:
        names, Q = read_postures(str(path), ["j1", "j2"])
    except DataError as exc:
        assert str(path) in str(exc) and re.search(r"line [23](, column 'j[12]'|: \d+ fields)",
                                                  str(exc))
        return
    assert names == ["j1", "j2"] and Q.tolist() == [[float(c) for c in cells[:2]],
                                                    [float(c) for c in cells[2:]]]


@pytest.mark.parametrize("body, fragment", [
    ("Izz1,1.0,2.0,1.0,nan\n", "row 1"),
    ("Izz1,1.0,2.0\n", "row 1"),
    ("Izz1,1.0,2.0,1.0,3.0\nfx1,1,-2,1,1\n", "row 2"),
    ("", "holds no parameter"),
])
def test_reference_corpus(tmp_path, body, fragment):
    path = tmp_path / "ref.csv"
    path.write_text(body)
    with pytest.raises(DataError, match=re.escape(fragment)):
        read_reference(str(path))
    path.write_bytes(b"Izz1,1.0,2.0,1.0,\xff\n")
    with pytest.raises(DataError, match="not UTF-8"):
        read_reference(str(path))


# -- bag messages ---------------------------------------------------------------------------

def _event(store, t_ns, index, event):
    """A PostureEvent; fields this test does not set (e.g. a note) left empty."""
    P = store.types
    cls = P["figaroh_ros/msg/PostureEvent"]
    given = dict(header=P["std_msgs/msg/Header"](stamp=P["builtin_interfaces/msg/Time"](
        sec=t_ns // 10**9, nanosec=t_ns % 10**9), frame_id=""), index=index, event=event,
        joint_names=["a", "b"], positions=np.zeros(2))
    empty = {f.name: "" for f in dataclasses.fields(cls) if f.name not in given}
    return store.serialize_cdr(cls(**given, **empty), "figaroh_ros/msg/PostureEvent")


def _pose_msg(store, t_ns, xyz, quat):
    P = store.types
    msg = P["geometry_msgs/msg/PoseStamped"](
        header=P["std_msgs/msg/Header"](stamp=P["builtin_interfaces/msg/Time"](
            sec=t_ns // 10**9, nanosec=t_ns % 10**9), frame_id="mocap"),
        pose=P["geometry_msgs/msg/Pose"](
            position=P["geometry_msgs/msg/Point"](x=xyz[0], y=xyz[1], z=xyz[2]),
            orientation=P["geometry_msgs/msg/Quaternion"](x=quat[0], y=quat[1], z=quat[2],
                                                          w=quat[3])))
    return store.serialize_cdr(msg, "geometry_msgs/msg/PoseStamped")


def _short_joint_state(store, t_ns, q):
    """A JointState naming two joints but carrying ``len(q)`` positions."""
    raw = _joint_state(store, t_ns, [0.0, 0.0])
    msg = store.deserialize_cdr(raw, "sensor_msgs/msg/JointState")
    msg.position = np.asarray(q, float)
    return store.serialize_cdr(msg, "sensor_msgs/msg/JointState")


FAULTS = ["none", "short", "nan_q", "huge_q", "nan_p", "zero_quat", "huge_p", "inf_quat"]


def _write_bag(folder, fault: str, truth):
    store = typestore()
    w = SegmentedBagWriter(str(folder), TOPICS, store, "mcap", 10.0)
    t = 10**18
    for i, (q, p) in enumerate(truth):
        t += 10**7
        w.write("/figaroh/posture_events", t, _event(store, t, i, 1))
        for k in range(5):
            t += 10**7
            bad = i == len(truth) - 1 and k == 2
            qk, pk, quat = list(q), list(p), [0.0, 0.0, 0.0, 1.0]
            if bad and fault in ("nan_q", "huge_q"):
                qk[1] = math.nan if fault == "nan_q" else 1e200
            if bad and fault in ("nan_p", "huge_p"):
                pk[0] = math.nan if fault == "nan_p" else 1e200
            if bad and fault in ("zero_quat", "inf_quat"):
                quat = [0.0, 0.0, 0.0, 0.0 if fault == "zero_quat" else math.inf]
            js = _short_joint_state(store, t, qk[:1]) if bad and fault == "short" else \
                _joint_state(store, t, qk)
            w.write("/joint_states", t, js)
            w.write("/mocap/pose", t, _pose_msg(store, t, pk, quat))
        t += 10**7
        w.write("/figaroh/posture_events", t, _event(store, t, i, 2))
    w.close()


@settings(max_examples=16, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fault=st.sampled_from(FAULTS), n=st.integers(1, 3), skip=st.booleans())
def test_bag_messages_give_the_recorded_postures_or_name_the_topic(tmp_path_factory, fault,
                                                                   n, skip):
    """A bad value is named whether or not postures without measurements may be left
    out (``skip_unmeasured``: it drops a posture for its count of messages, never for a
    bad one)."""
    folder = tmp_path_factory.mktemp("bag") / "bag"
    rng = np.random.default_rng(n)
    truth = [(rng.uniform(-1, 1, 2), rng.uniform(-1, 1, 3)) for _ in range(n)]
    _write_bag(folder, fault, truth)
    try:
        bp = read_bag_postures([str(folder)], ["a", "b"], "/joint_states", "/mocap/pose",
                               "/figaroh/posture_events", skip_unmeasured=skip)
    except DataError as exc:
        assert fault != "none", str(exc)
        topic = "/joint_states" if fault in ("short", "nan_q", "huge_q") else "/mocap/pose"
        assert f"'{topic}'" in str(exc) and str(folder) in str(exc), str(exc)
        return
    assert fault == "none", f"{fault} accepted"
    assert bp.indices == list(range(n)) and not bp.dropped
    for (q, p), qb, yb in zip(truth, bp.Q, bp.Y):
        assert np.abs(qb - q).max() < 1e-12 and np.abs(yb[:3] - p).max() < 1e-12


def _wrench_msg(store, t_ns, w):
    P = store.types
    V = P["geometry_msgs/msg/Vector3"]
    msg = P["geometry_msgs/msg/WrenchStamped"](
        header=P["std_msgs/msg/Header"](stamp=P["builtin_interfaces/msg/Time"](
            sec=t_ns // 10**9, nanosec=t_ns % 10**9), frame_id="plate"),
        wrench=P["geometry_msgs/msg/Wrench"](force=V(x=w[0], y=w[1], z=w[2]),
                                             torque=V(x=w[3], y=w[4], z=w[5])))
    return store.serialize_cdr(msg, "geometry_msgs/msg/WrenchStamped")


@pytest.mark.parametrize("fault, topic", [
    ("none", None), ("nan_wrench", "/plate"), ("huge_wrench", "/plate"),
    ("zero_quat", "/base"), ("nan_pose", "/base")])
def test_wrench_and_base_pose_messages_are_read_exactly_or_refused(tmp_path, fault, topic):
    store = typestore()
    topics = {"/plate": "geometry_msgs/msg/WrenchStamped",
              "/base": "geometry_msgs/msg/PoseStamped"}
    w = SegmentedBagWriter(str(tmp_path / "bag"), topics, store, "mcap", 10.0)
    rng = np.random.default_rng(1)
    W, P = rng.normal(0, 50, (120, 6)), rng.normal(0, 0.1, (120, 3))
    t0 = 10**18
    for k in range(120):
        t = t0 + k * 10**7
        wk, pk, quat = W[k].copy(), P[k].copy(), [0.0, 0.0, 0.0, 1.0]
        if k == 60:
            wk[2] = {"nan_wrench": math.nan, "huge_wrench": 1e200}.get(fault, wk[2])
            pk[1] = math.nan if fault == "nan_pose" else pk[1]
            quat = [0.0] * 4 if fault == "zero_quat" else quat
        w.write("/plate", t, _wrench_msg(store, t, wk))
        w.write("/base", t, _pose_msg(store, t, pk, quat))
    w.close()
    if topic is not None:
        with pytest.raises(DataError, match=f"'{topic}' message at 1000000000.600 s"):
            read_bag_wrench_and_pose([str(tmp_path / "bag")], "/plate", "/base")
        return
    tw, Wr, tp, Pr = read_bag_wrench_and_pose([str(tmp_path / "bag")], "/plate", "/base")
    assert np.array_equal(Wr, W) and np.array_equal(Pr[:, :3], P)


def _efforts_msg(store, t_ns, names, position, effort):
    P = store.types
    msg = P["sensor_msgs/msg/JointState"](
        header=P["std_msgs/msg/Header"](stamp=P["builtin_interfaces/msg/Time"](
            sec=t_ns // 10**9, nanosec=t_ns % 10**9), frame_id=""),
        name=names, position=np.asarray(position, float), velocity=np.zeros(0),
        effort=np.asarray(effort, float))
    return store.serialize_cdr(msg, "sensor_msgs/msg/JointState")


@pytest.mark.parametrize("fault", ["none", "nan", "huge", "short", "other_joint"])
@pytest.mark.parametrize("topic", ["/currents", "/sensors"])
def test_one_pass_over_two_torque_topics_reads_exactly_or_names_the_topic(tmp_path, fault,
                                                                         topic):
    """The gains' reader (``read_bag_samples_each``): every sample as written, or a
    DataError naming the faulty message's topic and the bag (NaN, 1e200, fewer efforts than
    names, a joint missing); nothing returned for the other topic either."""
    from figaroh_ros.io.bags import read_bag_samples_each
    store, names = typestore(), ["a", "b"]
    JS = "sensor_msgs/msg/JointState"
    w = SegmentedBagWriter(str(tmp_path / "bag"), {"/joint_states": JS, "/currents": JS,
                                                   "/sensors": JS}, store, "mcap", 10.0)
    rng = np.random.default_rng(3)
    Q, C, S = (rng.normal(0, 1, (120, 2)) for _ in range(3))
    for k in range(120):
        t = 10**18 + k * 10**7
        w.write("/joint_states", t, _efforts_msg(store, t, names, Q[k], []))
        for name, E in (("/currents", C), ("/sensors", S)):
            e, n = list(E[k]), names
            if name == topic and k == 60:
                e = {"nan": [math.nan, e[1]], "huge": [e[0], 1e200], "short": e[:1]}.get(
                    fault, e)
                n = ["a", "c"] if fault == "other_joint" else n
            w.write(name, t, _efforts_msg(store, t, n, [], e))
    w.close()
    bag = [str(tmp_path / "bag")]
    try:
        each = read_bag_samples_each(bag, names, "/joint_states", ["/currents", "/sensors"])
    except DataError as exc:
        assert fault != "none", str(exc)
        assert f"'{topic}'" in str(exc) and bag[0] in str(exc), str(exc)
        return
    assert fault == "none", f"{fault} accepted"
    for name, E in (("/currents", C), ("/sensors", S)):
        t, q, tau = each[name]
        assert np.allclose(t, np.arange(120) * 0.01, atol=1e-9)
        assert np.array_equal(q, Q) and np.array_equal(tau, E)

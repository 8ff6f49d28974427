"""Malformed messages on the topics the nodes subscribe to, over DDS, to running nodes.

One graph: the ``dynamics_monitor`` (joint states, always subscribed) and the recorder
(joint states, a wrench, a mocap pose and robot_description, recording) in their own
processes, and in this process the executor's goal listeners (``ros/polled.py``: the joint
states a goal follows, the stamps of the pre-flight's pose topic) on a node of their own.
Hypothesis draws what a driver with a bug or a hostile publisher sends: joint states with
NaN / inf / 1e300, arrays whose lengths do not match the names, names that match no joint,
a name repeated, 2000 joints, stamps going back; wrenches with NaN or 1e300; poses with a
NaN, zero or unnormalised quaternion; ``/clock`` jumping back and forth; garbage on
``robot_description`` (to the recorder and to the calibration node: text that is not
XML, control characters, a megabyte string, a URDF with a NaN mass, a loop or a missing
link, the URDF of another robot); TF edges with NaN, 1e300 or a quaternion off norm 1 to
the package's own TF listener (``ros/frames.py``).  Then: no node died, no non-finite
number was published or kept, each drop was logged naming its topic, nothing went out on
``/tf_static`` or to robot_state_publisher (a stand-in node in this process), and
well-formed messages sent afterwards are used: a dynamic identification through the
calibration node afterwards publishes its model, with the goal's URDF (not a model from the
topic) kept as the nominal one.
"""
import hashlib
import math
import os
import subprocess
import sys
import time

import numpy as np
import pytest
import rclpy
import yaml
from builtin_interfaces.msg import Time
from conftest import ROOT, ros_graph_environment, stop_processes
from geometry_msgs.msg import PoseStamped, TransformStamped, WrenchStamped
from hypothesis import HealthCheck, given, settings, strategies as st
from rclpy.executors import SingleThreadedExecutor
from rclpy.qos import DurabilityPolicy, QoSProfile
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Header, String
from tf2_msgs.msg import TFMessage
from test_batch import DRIVE, JOINTS as TWO_DOF_JOINTS, NOISE, URDF as TWO_DOF, _write_bag
from test_monitor import ARM, PANDA, TAU_NOISE, Sim

from figaroh_ros import identify
from figaroh_ros.io.bags import open_bag
from figaroh_ros.errors import RosError
from figaroh_ros.ros.frames import FrameBuffer
from figaroh_ros.ros.polled import HeardJointStates, HeardStamps
from figaroh_ros.ros.sane import joint_state_problem, pose_problem, wrench_problem
from figaroh_ros.srv import RecorderControl, RestoreDescription

pytestmark = pytest.mark.xdist_group("ros_graph")

JS, POSE, WRENCH = "/joint_states", "/mocap/pose", "/ft/wrench"
BAD = [math.nan, math.inf, -math.inf, 1e300, -1e300]
with open(TWO_DOF) as _f:
    TWO_DOF_TEXT = _f.read()
with open(os.path.join(ROOT, "test", "data", "iiwa14.urdf")) as _f:
    OTHER_ROBOT = _f.read()                       # valid, but none of the goal's joints
DESCRIPTIONS = [
    "", "<robot", "not xml at all", "<robot name='x'><link/>", "\ufffd" * 1000,
    "<robot>" * 10_000, "<robot name='x'>\x01\x02</robot>", "x" * 1_000_000,
    TWO_DOF_TEXT.replace('<mass value="1"/>', '<mass value="nan"/>', 1),
    TWO_DOF_TEXT.replace('ixx="0.1"', 'ixx="inf"', 1),
    TWO_DOF_TEXT.replace('<parent link="base"/>', '<parent link="link2"/>', 1),   # a loop
    TWO_DOF_TEXT.replace('<child link="link2"/>', '<child link="nowhere"/>', 1),
    "<!DOCTYPE r [<!ENTITY a 'aaaa'>]><robot name='r'><link name='&a;'/></robot>",
    OTHER_ROBOT]


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    """The monitor and the recorder (recording), this process's node with the executor's
    listeners listening, publishers of every hostile topic; the node logs' files."""
    work = tmp_path_factory.mktemp("hostile")
    sim = Sim()

    def experiment(seed):
        traj = sim.motion(seed, 20.0, 100.0)
        tau = sim.torques(traj) + np.random.default_rng(seed).normal(0, TAU_NOISE,
                                                                      traj.q.shape)
        return traj.q, traj.dq, traj.ddq, tau
    res = identify(sim.arm, *experiment(1), validation=experiment(2))
    (work / "result.yaml").write_text(yaml.safe_dump(res.to_dict()))
    _two_dof_recording(work)
    before = dict(os.environ)
    ros_graph_environment()
    logs = {name: open(work / f"{name}.log", "w+")
            for name in ("monitor", "recorder", "calibration")}
    topics = [f"{JS}:sensor_msgs/msg/JointState", f"{POSE}:geometry_msgs/msg/PoseStamped",
              f"{WRENCH}:geometry_msgs/msg/WrenchStamped"]
    procs = [subprocess.Popen(
        [sys.executable, "-m", "figaroh_ros.ros.dynamics_monitor", "--ros-args",
         "-p", f"result:={work / 'result.yaml'}", "-p", f"urdf:={PANDA}"],
        stdout=logs["monitor"], stderr=subprocess.STDOUT, cwd=work),
        subprocess.Popen(
        [sys.executable, "-m", "figaroh_ros.ros.recorder", "--ros-args",
         "-p", f"bag_dir:={work}", "-p", f"topics:={topics!r}", "-p", "start_timeout:=10.0"],
        stdout=logs["recorder"], stderr=subprocess.STDOUT, cwd=work),
        subprocess.Popen(               # its models go to the stand-in robot_state_publisher
        [sys.executable, "-m", "figaroh_ros.ros.calibration_node", "--ros-args",
         "-p", f"output_dir:={work / 'cal'}", "-p", f"bag_dir:={work}",
         "-p", f"data_roots:={work}", "-p", "robot_state_publisher:=hostile_rsp"],
        stdout=logs["calibration"], stderr=subprocess.STDOUT, cwd=work)]
    context = rclpy.Context()
    rclpy.init(context=context)
    g = None
    try:                   # the nodes stopped however the setup ends (none left running)
        node = rclpy.create_node("hostile_topics", context=context)
        # robot_state_publisher's role
        rsp = rclpy.create_node("hostile_rsp", context=context)
        rsp.declare_parameter("robot_description", "")
        ex = SingleThreadedExecutor(context=context)
        ex.add_node(node)
        ex.add_node(rsp)
        g = type("Graph", (), {})()
        g.node, g.ex, g.procs, g.logs, g.work, g.rsp = node, ex, procs, logs, work, rsp
        g.rsp_sets = []

        def _set(params):
            from rcl_interfaces.msg import SetParametersResult
            g.rsp_sets += [p.name for p in params]
            return SetParametersResult(successful=True)
        rsp.add_on_set_parameters_callback(_set)
        g.tf_static = []
        from figaroh_ros.ros.static_frames import TF_STATIC
        node.create_subscription(TFMessage, "/tf_static", g.tf_static.append, TF_STATIC)
        g.pubs = {JS: node.create_publisher(JointState, JS, 100),
                  POSE: node.create_publisher(PoseStamped, POSE, 100),
                  WRENCH: node.create_publisher(WrenchStamped, WRENCH, 100),
                  "/clock": node.create_publisher(Clock, "/clock", 10),
                  "/tf": node.create_publisher(TFMessage, "/tf", 100),
                  "/robot_description": node.create_publisher(
                      String, "/robot_description",
                      QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL))}
        g.torques = []
        node.create_subscription(JointState, "/dynamics_monitor/predicted",
                                 lambda m: g.torques.append(list(m.effort)), 500)
        g.heard = HeardJointStates(node, JS, 256, joints=ARM)
        g.tf = FrameBuffer(node, prefer_tf2=False)           # the package's own TF listener
        g.poses = HeardStamps(g.heard.polled, POSE, PoseStamped, 256)
        g.stamp = 1_000_000
        g.client = node.create_client(RecorderControl, "/figaroh/recorder/control")
        assert g.client.wait_for_service(timeout_sec=30.0), "no recorder"
        g.bag = str(work / "bag")
        with g.heard.listening(), g.poses.listening():
            _send_good(g, 3)                       # the recorder's required topics speak
            future = g.client.call_async(RecorderControl.Request(command="start",
                                                                 bag_path=g.bag))
            end = time.monotonic() + 30.0
            while not future.done() and time.monotonic() < end:
                _send_good(g, 1)
                ex.spin_once(timeout_sec=0.02)
            assert future.done() and future.result().success, future.result()
            yield g
    finally:
        stop_processes(procs)
        for name in ("heard", "rsp", "node"):         # what the setup made, in this order
            made = getattr(g, name, None)
            if made is not None:
                made.destroy() if name == "heard" else made.destroy_node()
        rclpy.shutdown(context=context)
        os.environ.clear()
        os.environ.update(before)


def _header(g, back: bool = False) -> Header:
    g.stamp += -400_000_000 if back else 4_000_000            # 250 Hz, or 0.4 s back
    return Header(stamp=Time(sec=1_700_000_000 + g.stamp // 10**9,
                             nanosec=g.stamp % 10**9), frame_id="hostile")


def _send_good(g, n: int) -> None:
    for k in range(n):
        q = [0.1 * math.sin(0.01 * (g.stamp // 4_000_000) + j) for j in range(len(ARM))]
        g.pubs[JS].publish(JointState(header=_header(g), name=ARM, position=q,
                                      velocity=[0.0] * len(ARM), effort=[0.0] * len(ARM)))
        g.pubs[POSE].publish(PoseStamped(header=_header(g)))
        w = WrenchStamped(header=_header(g))
        g.pubs[WRENCH].publish(w)
        g.ex.spin_once(timeout_sec=0.004)


def _edge(g, values) -> TransformStamped:
    tr = TransformStamped(header=_header(g), child_frame_id="tool")
    tr.header.frame_id = "world"
    t, r = tr.transform.translation, tr.transform.rotation
    t.x, t.y, t.z, r.x, r.y, r.z, r.w = values
    return tr


def _tool_translation(g):
    """world -> tool translation the package's TF listener gives now (None: none)."""
    try:
        return g.tf.lookup("world", "tool", 0, timeout=0.0).translation
    except RosError:
        return None


def _pose(values) -> PoseStamped:
    msg = PoseStamped()
    p, q = msg.pose.position, msg.pose.orientation
    p.x, p.y, p.z, q.x, q.y, q.z, q.w = values
    return msg


numbers = st.sampled_from(BAD) | st.floats(-1.0, 1.0)
joint_state = st.one_of(
    st.builds(lambda bad, k: ("nan", ARM, [0.0] * k + [bad] + [0.0] * (6 - k)),
              st.sampled_from(BAD), st.integers(0, 6)),
    st.builds(lambda n: ("length", ARM, [0.0] * n),
              st.integers(0, 20).filter(lambda n: n not in (0, 7))),
    st.builds(lambda names: ("names", names, [0.0] * len(names)),
              st.lists(st.sampled_from(["elbow", "", "panda_finger_joint1", "joint 8",
                                        "panda_joint1"]), min_size=1, max_size=8,
                       unique=True).filter(lambda n: set(n) - set(ARM))),
    st.just(("repeated", ARM + ARM[:1], [0.0] * 8)),
    st.just(("huge", [f"j{k}" for k in range(2000)], [0.0] * 2000)),
    st.just(("back", ARM, [0.0] * 7)),
    st.just(("same", ARM, [0.0] * 7)))
hostile = st.one_of(
    st.tuples(st.just(JS), joint_state),
    st.tuples(st.just(WRENCH), st.lists(numbers, min_size=6, max_size=6).filter(
        lambda v: any(x in BAD or x != x for x in v))),
    st.tuples(st.just(POSE), st.one_of(
        st.lists(numbers, min_size=7, max_size=7).filter(
            lambda v: any(not math.isfinite(x) for x in v)),
        st.just([0.0] * 7), st.just([0.0, 0.0, 0.0, 0.5, 0.0, 0.0, 0.5]))),
    st.tuples(st.just("/clock"), st.integers(-2**31, 2**31 - 1)),
    st.tuples(st.just("/tf"), st.one_of(
        st.lists(numbers, min_size=7, max_size=7).filter(
            lambda v: any(not math.isfinite(x) or abs(x) > 1e9 for x in v)),
        st.just([0.0] * 7), st.just([1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 2.0]))),
    st.tuples(st.just("/robot_description"), st.sampled_from(DESCRIPTIONS)))


def _two_dof_recording(work) -> None:
    """``work/two_dof_bag``: 20 s of the two-joint arm (test/data/two_dof.urdf) with
    hidden inertias and friction, joint states and torques; ``work/two_dof.yaml``: its
    identification config (consistent inertias, a quarter held out)."""
    from figaroh_ros.excitation.fourier import fourier_trajectory
    from figaroh_ros.identification.parameters import parameter_layout
    from figaroh_ros.model.robot import load_urdf_model
    from figaroh_ros.sim.dynamics import measured_torques, perturbed_parameters
    robot = load_urdf_model(TWO_DOF, TWO_DOF_JOINTS)
    layout = parameter_layout(robot, DRIVE)
    phi = perturbed_parameters(robot, layout, seed=10)
    traj = fourier_trajectory(robot, 20.0, 100.0, harmonics=4, base_freq_hz=0.1,
                              amplitude=0.8, seed=3)
    _write_bag(work / "two_dof_bag", 1.7e9, traj,
               measured_torques(robot, layout, DRIVE, phi, traj, NOISE, seed=7))
    (work / "two_dof.yaml").write_text(yaml.safe_dump({
        "robot": {"name": "two_dof", "urdf": TWO_DOF, "joints": TWO_DOF_JOINTS},
        "model": {"viscous_friction": True, "coulomb_friction": True,
                  "rotor_inertia": False, "torque_offset": False},
        "data": {"format": "bag", "path": ".", "joint_topic": "/joint_states",
                 "torque_topic": "/joint_torques", "events_topic": ""},
        "estimation": {"method": "wls", "validation_fraction": 0.25},
        "physical": {"method": "lmi"}}))


def _send(g, topic, what) -> None:
    if topic == JS:
        kind, names, q = what
        msg = JointState(header=_header(g, back=kind == "back"), name=names, position=q,
                         effort=[0.0] * len(names), velocity=[])
        if kind == "length":
            msg.name, msg.effort = ARM, [0.0] * 7
        if kind in ("nan", "names", "repeated", "huge", "length"):
            assert kind == "names" and set(names) - set(ARM) or \
                joint_state_problem(msg) is not None, (kind, msg)
        if kind == "same":                  # sent twice: the same instant again
            g.pubs[topic].publish(msg)
    elif topic == WRENCH:
        msg = WrenchStamped(header=_header(g))
        (msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z, msg.wrench.torque.x,
         msg.wrench.torque.y, msg.wrench.torque.z) = what
        assert wrench_problem(msg) is not None
    elif topic == POSE:
        msg = _pose(what)
        msg.header = _header(g)
        assert pose_problem(msg) is not None
    elif topic == "/tf":
        msg = TFMessage(transforms=[_edge(g, what)])
    elif topic == "/clock":
        msg = Clock(clock=Time(sec=what, nanosec=0))
    else:
        msg = String(data=what)
    g.pubs[topic].publish(msg)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(sent=st.lists(hostile, min_size=1, max_size=6))
def test_hostile_messages_are_dropped_with_the_topic_named(graph, sent):
    g = graph
    for topic, what in sent:
        _send(g, topic, what)
    _send_good(g, 10)          # a NaN let into the monitor's filter would show on these
    t0 = time.monotonic()
    while time.monotonic() - t0 < 0.1:
        g.ex.spin_once(timeout_sec=0.01)
    g.heard.hear()
    g.poses.count_from(0)
    assert all(p.poll() is None for p in g.procs), [p.poll() for p in g.procs]
    assert all(math.isfinite(v) for row in g.torques for v in row), "the monitor published " \
        "a non-finite torque"
    assert set(g.heard.positions) <= set(ARM), sorted(g.heard.positions)[:5]
    assert all(math.isfinite(v) for v in g.heard.positions.values()), g.heard.positions
    stamps = list(g.heard.stamps)            # each instant once: a repeat is no sample
    assert all(a < b for a, b in zip(stamps, stamps[1:])), stamps
    t = _tool_translation(g)
    assert t is None or np.isfinite(t).all(), t


def test_after_the_hostile_messages_every_node_runs_and_said_why(graph):
    """Runs after the property test (file order): every node alive; good messages are
    used again; the monitor published only finite torques and logged the joint-state
    drops naming the topic; the listeners counted each drop under its topic."""
    g = graph
    g.stamp += 100 * 10**9                      # after every stamp sent so far
    since = 1_700_000_000 * 10**9 + g.stamp
    assert g.poses.count_from(since) == 0
    g.torques.clear()
    end = time.monotonic() + 20.0
    while len(g.torques) < 20 and time.monotonic() < end:
        _send_good(g, 5)
    assert len(g.torques) >= 20, "the monitor publishes nothing for good joint states"
    assert all(math.isfinite(v) for row in g.torques for v in row)
    g.heard.hear()
    assert set(g.heard.positions) == set(ARM)
    assert g.poses.count_from(since) >= 20                # good poses still count
    assert g.heard.refusals.count.get(JS, 0) > 0, g.heard.refusals.count
    assert g.poses.refusals.count.get(POSE, 0) > 0, g.poses.refusals.count
    assert all(p.poll() is None for p in g.procs), [p.poll() for p in g.procs]
    good = _edge(g, [0.5, 0.0, 0.25, 0.0, 0.0, 0.0, 1.0])      # floats: an int reads as 0
    g.pubs["/tf"].publish(TFMessage(transforms=[good]))
    end = time.monotonic() + 10.0
    while (t := _tool_translation(g)) is None and time.monotonic() < end:
        g.ex.spin_once(timeout_sec=0.01)
    assert t is not None and np.allclose(t, [0.5, 0.0, 0.25]), t
    assert g.tf.refusals.count.get("/tf", 0) > 0, g.tf.refusals.count
    stop = g.client.call_async(RecorderControl.Request(command="stop"))
    g.ex.spin_until_future_complete(stop, timeout_sec=30.0)
    assert stop.done() and stop.result().success, stop.result()
    reader = open_bag([g.bag], {JS: "sensor_msgs/msg/JointState"})
    try:                    # the recorder writes what was published, malformed or not
        assert sum(1 for c, _, _ in reader.messages() if c.topic == JS) > 100
    finally:
        reader.close()
    g.logs["monitor"].flush()
    said = (g.work / "monitor.log").read_text()
    assert f"{JS}: " in said and ": dropped" in said, said[-2000:]
    assert "Traceback" not in said, said[-3000:]


def _spin_until(g, future, timeout: float):
    end = time.monotonic() + timeout
    while not future.done() and time.monotonic() < end:
        g.ex.spin_once(timeout_sec=0.05)
    assert future.done(), f"no answer within {timeout:g} s"
    return future.result()


def test_the_calibration_node_took_nothing_from_robot_description(graph):
    """Runs after the property test: the calibration node alive, each kind of bad
    robot_description dropped with the topic named in its log, nothing sent on /tf_static
    or to robot_state_publisher; then the URDF of another robot on the topic, and a
    dynamic identification of the two-joint arm: published to robot_state_publisher, the
    goal's URDF kept as the nominal model (the other robot's is not), the log says why."""
    from rclpy.action import ActionClient

    from figaroh_ros.action import Calibrate
    from figaroh_ros.errors import SUCCESSFUL
    g = graph
    ac = ActionClient(g.node, Calibrate, "/figaroh/calibrate")
    assert ac.wait_for_server(timeout_sec=60.0), "no calibration node"
    for bad in [None] + DESCRIPTIONS:     # every kind once more, the other robot's last
        if bad is not None:
            g.pubs["/robot_description"].publish(String(data=bad))
        t0 = time.monotonic()
        while time.monotonic() - t0 < 0.2:
            g.ex.spin_once(timeout_sec=0.02)
    assert all(p.poll() is None for p in g.procs), [p.poll() for p in g.procs]
    g.logs["calibration"].flush()
    said = (g.work / "calibration.log").read_text()
    assert "/robot_description: URDF /robot_description" in said and ": dropped" in said, \
        said[-3000:]
    for why in ("is not well-formed XML", "<mass> value='nan'", "entity declarations",
                "their joints form a loop", "no such link", "ixx='inf'"):
        assert why in said, (why, said[-3000:])
    assert "Traceback" not in said, said[-3000:]
    assert g.node.count_publishers("/robot_description") == 1         # ours alone
    assert g.tf_static == [] and g.rsp_sets == [], (g.tf_static, g.rsp_sets)

    handle = _spin_until(g, ac.send_goal_async(Calibrate.Goal(
        bags=[str(g.work / "two_dof_bag")], config=str(g.work / "two_dof.yaml"),
        kind=Calibrate.Goal.DYNAMIC, publish=True)), 30.0)
    assert handle.accepted
    res = _spin_until(g, handle.get_result_async(), 300.0).result
    assert res.error_code == SUCCESSFUL and res.published, res.message
    with open(res.urdf_path) as f:
        assert g.rsp.get_parameter("robot_description").value == f.read()
    cli = g.node.create_client(RestoreDescription, "/figaroh/restore_description")
    assert cli.wait_for_service(timeout_sec=30.0)
    kept = _spin_until(g, cli.call_async(RestoreDescription.Request(which="history")), 30.0)
    assert kept.history_hashes[0] == hashlib.sha256(TWO_DOF_TEXT.encode()).hexdigest()
    g.logs["calibration"].flush()
    said = (g.work / "calibration.log").read_text()
    assert "/robot_description: the model seen at start lacks the joints ['joint1', " \
        "'joint2'] of two_dof.urdf" in said, said[-3000:]
    assert all(p.poll() is None for p in g.procs), [p.poll() for p in g.procs]

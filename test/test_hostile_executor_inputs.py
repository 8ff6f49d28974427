"""Malformed inputs to the running executor and simulated robot, over DDS.

One graph: the simulated UR10 (100 Hz joint states) and its executor in ``/hx``, a second
executor in ``/hxr`` whose only driver topic, ``/hxr/joint_states``, this process publishes
(its Preflight goals measure what is sent here, nothing else).

- the pre-flight's topic-rate check reads the joint states' stamps: a stream whose stamps
  go back measures no more than its stamps going forward, and one line of the executor's
  log names the topic and counts the drops; the same stream stamped honestly measures its
  rate;
- joint states with NaN, inf or 1e300, arrays whose lengths are not the names', only
  joints the executor does not drive, 2000 names, stamps going back, published on the
  robot's topic while an experiment runs its pre-flight, moves and holds: the experiment
  ends as if they were not there, and the executor's log names the topic and why for each
  kind;
- FollowJointTrajectory goals to the simulator drawn by hypothesis (values not finite,
  lengths, names, time lines, final velocities, limits) and parameters of the wrong type or
  range: each refused with a warning naming the controller or parameter, the simulator
  serving on; a good goal is then followed.

And, without a graph, the ends of a goal through the goal lifecycle the executor's actions
share with the calibration node's (``ros/goal_runner.py``): each error code and status.
"""
import math
import os
import re
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
import yaml
from conftest import ROOT, ros_graph_environment, stop_processes
from hypothesis import HealthCheck, given, settings, strategies as st

pytest.importorskip("rclpy")
pytestmark = pytest.mark.xdist_group("ros_graph_2")   # the second worker's graphs

JOINTS = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint",
          "wrist_2_joint", "wrist_3_joint"]
HZ = 100.0                    # the joint states' rate (simulator and driver sections)
WINDOW = 1.0                  # s: the rate executor's Preflight goals' topic_window
BAD = [math.nan, math.inf, -math.inf, 1e300]
LEFT_OUT = "left out of the pre-flight's rate: "


def _node(work, ns: str, module: str, name: str, *args: str) -> subprocess.Popen:
    with open(work / f"{name}.log", "wb") as log:
        return subprocess.Popen([sys.executable, "-m", f"figaroh_ros.ros.{module}",
                                 "--ros-args", "-r", f"__ns:=/{ns}", *args],
                                stdout=log, stderr=log)


def _params(*params: str) -> list[str]:
    return sum((["-p", p] for p in params), [])


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    from figaroh_ros.ros.commander import Commander
    work = tmp_path_factory.mktemp("hostile_executor")
    with open(os.path.join(ROOT, "config", "sim_ur10.yaml")) as f:
        cfg = yaml.safe_load(f)
    cfg["rates"] = {"joint_states_hz": HZ, "mocap_hz": 50}
    cfg["driver"]["joint_states"]["rate_hz"] = HZ
    sim = work / "sim.yaml"
    sim.write_text(yaml.safe_dump(cfg))
    # the rate executor's robot: the joint states alone, at HZ
    cfg["driver"] = {"profile": cfg["driver"]["profile"],
                     "joint_states": cfg["driver"]["joint_states"]}
    lone = work / "lone.yaml"
    lone.write_text(yaml.safe_dump(cfg))
    before = dict(os.environ)
    ros_graph_environment()
    procs = {"sim": _node(work, "hx", "sim_robot", "sim", *_params(f"config:={sim}")),
             "executor": _node(work, "hx", "executor", "executor", *_params(
                 f"config:={sim}", f"bag_dir:={work}", "preflight_topic_window:=1.0")),
             "rate": _node(work, "hxr", "executor", "rate", *_params(
                 f"config:={lone}", f"bag_dir:={work}"))}
    g = type("Graph", (), {})()
    g.work, g.procs, g.commanders = work, procs, []
    try:
        g.main = Commander("hx", node_name="hostile_main")
        g.commanders.append(g.main)
        g.rate = Commander("hxr", node_name="hostile_rate")
        g.commanders.append(g.rate)
        g.main.wait_until_ready(90.0, actions=["run_experiment", "preflight"])
        g.rate.wait_until_ready(90.0, actions=["preflight"])
        yield g
    finally:
        for c in g.commanders:
            c.destroy()
        stop_processes(list(procs.values()))
        os.environ.clear()
        os.environ.update(before)


def _log(g, name: str) -> str:
    return (g.work / f"{name}.log").read_text(errors="replace")


def _alive(g) -> None:
    assert all(p.poll() is None for p in g.procs.values()), \
        {n: p.poll() for n, p in g.procs.items()}


# ------------------------------------------------------------------ the goal lifecycle
class _Handle:
    """The end of a goal as GoalLifecycle drives it: which of succeed, abort, canceled."""

    def __init__(self, cancel: bool = False):
        self.request, self.is_cancel_requested, self.status = None, cancel, None

    def succeed(self):
        self.status = "succeeded"

    def abort(self):
        self.status = "aborted"

    def canceled(self):
        assert self.is_cancel_requested, "canceled() without a cancel request"
        self.status = "canceled"


def _lifecycle():
    import logging
    from types import SimpleNamespace
    from figaroh_ros.ros.goal_runner import GoalLifecycle
    node = SimpleNamespace(get_logger=lambda: logging.getLogger("goals"),
                           paths=SimpleNamespace(answer=lambda text, request: text))
    goals = GoalLifecycle(node, ("calibrate",))
    goals.add("experiment", "an experiment", after_bug="experiment stopped")
    return goals


@pytest.mark.parametrize("raised, cancel, code, status, stopped", [
    (None, False, 0, "succeeded", False),
    ("refused", False, 1, "aborted", False),
    ("refused", True, 1, "aborted", False),
    ("canceled before", True, 7, "canceled", False),
    ("ros error", False, 6, "aborted", True),
    ("ros error", True, 7, "canceled", True),
    ("bug", False, 6, "aborted", True),
    ("bug", True, 6, "aborted", True)])
def test_the_goal_lifecycle_ends_each_way_with_its_code(raised, cancel, code, status,
                                                        stopped):
    """Error codes (figaroh_ros.errors) and statuses of an experiment's ends: a failure
    once started stops it, and ends CANCELED when its cancel was asked."""
    from figaroh_ros.action import RunExperiment
    from figaroh_ros.errors import INVALID_GOAL, RosError
    from figaroh_ros.ros.common import CanceledBeforeStart, GoalRefused
    goals, handle, why = _lifecycle(), _Handle(cancel), []
    exc = {"refused": GoalRefused("no"), "canceled before": CanceledBeforeStart("no"),
           "ros error": RosError("controller gone"), "bug": KeyError("x")}.get(raised)

    def body():
        if exc is not None:
            raise exc
        return goals.end(handle, RunExperiment.Result(), 0, "2 postures played")
    result = goals.exclusive("experiment", handle, RunExperiment.Result(), body,
                             stop=why.append)
    assert (result.error_code, handle.status, bool(why)) == (code, status, stopped)
    if raised == "bug":
        assert result.message == "internal error, experiment stopped: KeyError: 'x'"
    busy = _Handle()
    with goals.busy["experiment"]:
        refused = goals.exclusive("experiment", busy, RunExperiment.Result(), body)
    assert refused.error_code == INVALID_GOAL and busy.status == "aborted"
    assert refused.message == "an experiment is running already; retry when it ends"
    goals.busy["identify_payload"] = goals.busy.pop("calibrate")    # added by hand
    with goals.busy["identify_payload"]:
        other = goals.exclusive("identify_payload", _Handle(), RunExperiment.Result(), body)
    assert other.message.endswith("identify_payload goal is running already; retry when "
                                  "it ends"), other.message


# ------------------------------------------------------------------ the rate from stamps
def test_a_burst_of_stamps_is_no_rate_over_a_window():
    """The rate over the whole window when the stamps span less of it."""
    from figaroh_ros.tasks.preflight_checks import measured_rate, rate_check
    burst = [0.0, 0.005, 0.010, 0.015, 0.020, 0.025]
    assert measured_rate(burst) == pytest.approx(200.0)
    assert measured_rate(burst, over=1.0) == pytest.approx(5.0)
    honest = list(np.arange(101) / 100.0)                  # 100 Hz over 1 s
    assert measured_rate(honest, over=1.0) == pytest.approx(100.0)
    c = rate_check("/j", burst, 1.0, 100.0, over=1.0)
    assert not c.passed and c.value == pytest.approx(5.0), c


def _fed(stream, processed: int, with_reception: bool = True):
    """A StampedRate fed the first ``processed`` of ``stream``'s (stamp s, received s)
    joint states, serialized as the middleware delivers them."""
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import JointState
    from figaroh_ros.ros.polled import StampedRate
    rate = StampedRate(JOINTS)
    for stamp, received in stream[:processed]:
        msg = JointState(name=JOINTS, position=[0.0] * 6)
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(round(stamp * 1e9), 10**9)
        rate.heard(serialize_message(msg), round(received * 1e9) if with_reception else 0)
    return rate


def test_a_stream_that_went_back_is_measured_over_the_time_it_took_to_arrive():
    """The rate of the kept stamps over their span, or once a stamp went back over the
    span of the receptions heard: a faker stays at the rate of its forward stamps; a
    100 Hz driver with a state stamped 0.5 s back every 50 ms keeps its 100 Hz when a
    starved reader heard only the first 0.45 s of it (over the whole window: 45 Hz)."""
    from figaroh_ros.tasks.preflight_checks import measured_rate
    t0 = 1_700_000_000.0
    faker = [(t0 + (k % 6) / HZ, t0 + k / HZ) for k in range(130)]
    rate = _fed(faker, 130)
    assert len(rate.stamps) == 6 and rate.over(WINDOW) == WINDOW
    assert measured_rate(rate.stamps, rate.over(WINDOW)) == pytest.approx(5.0)
    driver = []
    for k in range(130):
        driver.append((t0 + k / HZ, t0 + k / HZ + 0.001))
        if k % 5 == 4:
            driver.append((t0 + k / HZ - 0.5, t0 + k / HZ + 0.002))
    rate = _fed(driver, 54)                           # 45 states and 9 stamped back
    assert len(rate.stamps) == 45 and rate.went_back
    assert rate.over(WINDOW) == pytest.approx(0.441, abs=1e-6)
    assert measured_rate(rate.stamps, rate.over(WINDOW)) == pytest.approx(HZ, rel=0.01)
    humble = _fed(driver, 54, with_reception=False)  # no reception times: the window
    assert measured_rate(humble.stamps, humble.over(WINDOW)) == pytest.approx(44.0)
    honest = _fed(driver[:4], 4)                      # nothing went back: its own span
    assert humble.over(0.0) == 0.0 and honest.over(WINDOW) == 0.0


class Publishing:
    """A publisher fed from a thread of its own while in a ``with`` block (``_run`` until
    ``stop``); the publisher and any subscription destroyed at the block's end."""

    sub = None

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()
        self.node.destroy_publisher(self.pub)
        if self.sub is not None:
            self.node.destroy_subscription(self.sub)


class Stream(Publishing):
    """``/hxr/joint_states`` published from a thread at ``HZ`` (the messages due by the
    clock sent at once, as a driver catching up), stamped on a ``1 / HZ`` grid from now,
    or (``cycle``) with stamps going back ``cycle`` periods every ``cycle`` messages."""

    def __init__(self, node, cycle: int = 0):
        from sensor_msgs.msg import JointState
        self.pub = node.create_publisher(JointState, "/hxr/joint_states", 100)
        self.msg, self.cycle, self.clock = JointState(name=JOINTS), cycle, node.get_clock()
        self.msg.position = [0.0] * len(JOINTS)
        self.stop, self.sent = threading.Event(), 0
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.node = node

    def _run(self):
        t0, ns0 = time.monotonic(), self.clock.now().nanoseconds
        while not self.stop.is_set():
            while self.sent <= (time.monotonic() - t0) * HZ:
                k = self.sent % self.cycle if self.cycle else self.sent
                ns = ns0 + round(k * 1e9 / HZ)
                self.msg.header.stamp.sec, self.msg.header.stamp.nanosec = divmod(ns, 10**9)
                self.pub.publish(self.msg)
                self.sent += 1
            time.sleep(0.002)


def _topic_check(g, cycle: int):
    with Stream(g.rate.node, cycle):
        result = g.rate.preflight(topic_window=WINDOW).result(120.0)
    checks = dict(zip(result.check_names, zip(result.check_passed, result.check_details)))
    return checks["topic:/hxr/joint_states"]


def _rate(detail: str) -> float:
    return float(re.search(r": ([0-9.]+) Hz", detail).group(1))


def test_stamps_going_back_fake_no_rate(graph):
    g = graph
    passed, detail = _topic_check(g, 0)
    assert passed and abs(_rate(detail) - HZ) <= 0.05 * HZ, detail
    said = _log(g, "rate").count(LEFT_OUT)
    assert said == 0, _log(g, "rate")[-2000:]
    # the same messages at the same pace, their stamps 6 periods back every 6 messages:
    # sorted, they made a rate of hundreds of Hz; going forward, about 6 stamps in the
    # window, over the time the reader heard (a starved reader hears less of the window:
    # 3 stamps over 0.56 s, 5.4 Hz, under the suite's load)
    passed, detail = _topic_check(g, 6)
    assert not passed and _rate(detail) <= 0.1 * HZ, detail
    lines = [ln for ln in _log(g, "rate").splitlines() if LEFT_OUT in ln]
    assert len(lines) == 1 and "/hxr/joint_states: " in lines[0], lines
    n, total, back = map(int, re.search(r": (\d+) of (\d+) messages [^:]*: (\d+) stamped "
                                        r"at or before", lines[0]).groups())
    # a quarter of the window's messages at least: the suite's load has left the reader
    # with 45 of a 100 Hz stream's 100
    assert n == back >= 0.25 * WINDOW * HZ and total - n <= 6, lines[0]
    _alive(g)


# ------------------------------------------------------------------ during an experiment
class Hostile(Publishing):
    """Malformed joint states on the robot's topic from a thread, kinds in turn, until
    stopped; the stamps going back carry the robot's latest positions."""

    KINDS = ("nan", "length", "foreign", "huge", "back")

    def __init__(self, node):
        from sensor_msgs.msg import JointState
        self.JointState = JointState
        self.node, self.latest = node, None
        self.sub = node.create_subscription(JointState, "/hx/joint_states", self._heard, 100)
        self.pub = node.create_publisher(JointState, "/hx/joint_states", 100)
        self.stop, self.sent = threading.Event(), {k: 0 for k in self.KINDS}
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _heard(self, msg):
        if msg.header.frame_id != "hostile" and list(msg.name) == JOINTS:
            self.latest = msg

    def _message(self, kind: str):
        now = self.node.get_clock().now().nanoseconds
        msg = self.JointState(name=JOINTS, position=[0.0] * 6)
        msg.header.frame_id = "hostile"
        if kind == "nan":
            msg.position = [0.0, BAD[self.sent[kind] % len(BAD)], 0.0, 0.0, 0.0, 0.0]
        elif kind == "length":
            msg.position, msg.velocity = [0.0] * 3, [0.0] * 9
        elif kind == "foreign":
            msg.name, msg.position = ["gripper_joint", "finger_joint"], [0.01, 0.01]
        elif kind == "huge":
            msg.name = [f"j{k}" for k in range(2000)]
            msg.position = [0.0] * 2000
        else:                       # the robot's state, stamped 0.5 s back
            if self.latest is None:
                return None
            msg.position, now = list(self.latest.position), now - 500_000_000
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(now, 10**9)
        return msg

    def _run(self):
        k = 0
        while not self.stop.is_set():
            kind = self.KINDS[k % len(self.KINDS)]
            msg = self._message(kind)
            if msg is not None:
                self.pub.publish(msg)
                self.sent[kind] += 1
            k += 1
            time.sleep(0.01)


def test_malformed_joint_states_while_an_experiment_runs(graph):
    from figaroh_ros.errors import SUCCESSFUL
    g = graph
    rows = [",".join(JOINTS)] + [",".join(f"{v:.3f}" for v in (p, -1.2, 1.0, 0.0, 0.0, 0.0))
                                 for p in (0.2, 0.5)]
    postures = g.work / "postures.csv"
    postures.write_text("\n".join(rows) + "\n")
    with Hostile(g.main.node) as hostile:
        result = g.main.run_experiment(postures_file=str(postures), max_velocity=1.0,
                                       settle_time=0.1, dwell_time=0.5).result(180.0)
    assert result.error_code == SUCCESSFUL and result.postures_done == 2, result.message
    assert min(hostile.sent.values()) >= 10, hostile.sent
    _alive(g)
    said = _log(g, "executor")
    assert "pre-flight passed" in said and "Traceback" not in said, said[-3000:]
    reasons = {"nan": "position holds ", "length": "3 position values for 6 joint names",
               "foreign": "names none of the joints", "huge": "2000 joint names",
               "back": "before the previous"}
    for kind, why in reasons.items():
        assert any("/hx/joint_states: " in ln and why in ln for ln in said.splitlines()), \
            (kind, said[-3000:])
    # the pre-flight's rate: the robot's states alone, each kind left out said in one line
    lines = [ln for ln in said.splitlines() if LEFT_OUT in ln]
    assert len(lines) == 1 and "/hx/joint_states: " in lines[0], lines
    assert "stamped at or before" in lines[0] and "names none of the joints" in lines[0] \
        and "2000 joint names" in lines[0] and " holds " in lines[0], lines[0]
    hz = float(re.search(r"pre-flight topic:/hx/joint_states: \d+ messages in [0-9.]+ s: "
                         r"([0-9.]+) Hz", said).group(1))
    assert 0.8 * HZ <= hz <= 1.05 * HZ, hz


# ------------------------------------------------------------------ the simulator's inputs
def _limits():
    import pinocchio as pin
    from figaroh_ros.model.robot import resolve_urdf
    model = pin.buildModelFromUrdf(resolve_urdf(
        "example-robot-data:ur_description/urdf/ur10_joint_limited_robot.urdf"))
    idx = [model.joints[model.getJointId(j)].idx_q for j in JOINTS]
    return model.lowerPositionLimit[idx], model.upperPositionLimit[idx]


def _goal(points):
    """A FollowJointTrajectory goal of ``points``: (t, positions, velocities,
    accelerations)."""
    from control_msgs.action import FollowJointTrajectory
    from trajectory_msgs.msg import JointTrajectoryPoint
    goal = FollowJointTrajectory.Goal()
    goal.trajectory.joint_names = list(JOINTS)
    for t, q, v, a in points:
        p = JointTrajectoryPoint(positions=q, velocities=v, accelerations=a)
        p.time_from_start.sec, p.time_from_start.nanosec = int(t // 1), \
            int(round((t % 1) * 1e9)) % 10**9
        goal.trajectory.points.append(p)
    return goal


GOOD = [(0.5, [0.1, -1.0, 0.8, 0.0, 0.0, 0.0], [0.0] * 6, []),
        (1.0, [0.2, -1.0, 0.8, 0.0, 0.0, 0.0], [0.0] * 6, [])]


def _malformed(kind, k, j, bad, n):
    """A goal ``GOOD`` made wrong in one way, and what the refusal says."""
    pts = [(t, list(q), list(v), list(a)) for t, q, v, a in GOOD]
    names = None
    if kind == "position":
        pts[k][1][j] = bad
        why = "outside its limits"
    elif kind == "velocity":
        pts[k][2][j] = bad
        why = "velocities not finite"
    elif kind == "acceleration":
        pts[k] = pts[k][:3] + ([0.0] * 6,)
        pts[k][3][j] = bad
        why = "accelerations not finite"
    elif kind == "lengths":
        field = 1 + j % 3
        n = 7 if n == 0 and field > 1 else n          # no velocities: allowed
        pts[k] = tuple([0.0] * n if i == field else x for i, x in enumerate(pts[k]))
        why = f"{n} {('positions', 'velocities', 'accelerations')[field - 1]}"
    elif kind == "time":
        pts[k] = (-1.0 if j % 2 else 0.0,) + pts[k][1:] if k == 0 else \
            (pts[0][0],) + pts[k][1:]
        why = "time_from_start"
    elif kind == "final velocity":
        pts[-1][2][j] = 0.5
        why = "zero velocity"
    elif kind == "no point":
        pts = []
        why = "no point"
    elif kind == "limits":
        lower, upper = _limits()
        pts[k][1][j] = float(upper[j] + 0.1 if bad > 0 else lower[j] - 0.1)
        why = "outside its limits"
    else:                       # names
        names = [[], JOINTS[:1] * 6, JOINTS[:5] + ["elbow"],
                 [f"j{i}" for i in range(2000)]][j % 4]
        why = "joint_names empty or repeated" if j % 4 < 2 else "are not controlled"
    goal = _goal(pts)
    if names is not None:
        goal.trajectory.joint_names = names
    return goal, why


KINDS = ["position", "velocity", "acceleration", "lengths", "time", "final velocity",
         "no point", "limits", "names"]
malformed = st.builds(_malformed, st.sampled_from(KINDS), st.integers(0, 1),
                      st.integers(0, 5), st.sampled_from(BAD + [-1e300]),
                      st.sampled_from([0, 1, 5, 7, 2000]))
parameters = st.sampled_from([
    ("accept_delay", "slow"), ("accept_delay", 1e9), ("accept_delay", -1.0),
    ("clock_offset", math.nan), ("clock_offset", 1e6), ("stuck_joint", "elbow"),
    ("withhold_results", "yes"), ("occlude_mocap", 3), ("robot_description", "<robot"),
    ("robot_description", "<link/>"), ("robot_description", 7)])


class Controller:
    """The simulator's arm controller as a client of this process sees it."""

    def __init__(self, node):
        from control_msgs.action import FollowJointTrajectory
        from rcl_interfaces.srv import SetParameters
        from figaroh_ros.ros.action_client import ActionClient
        self.node = node
        self.client = ActionClient(node, FollowJointTrajectory,
                                   "/hx/arm_controller/follow_joint_trajectory")
        self.params = node.create_client(SetParameters, "/hx/sim_robot/set_parameters")
        assert self.client.wait_for_server(timeout_sec=60.0)
        assert self.params.wait_for_service(timeout_sec=60.0)

    @staticmethod
    def _wait(future, timeout: float = 30.0):
        end = time.monotonic() + timeout
        while not future.done() and time.monotonic() < end:
            time.sleep(0.01)
        assert future.done(), "no answer"
        return future.result()

    def send(self, goal):
        return self._wait(self.client.send_goal_async(goal))

    def set(self, name, value):
        from rcl_interfaces.srv import SetParameters
        from rclpy.parameter import Parameter
        return self._wait(self.params.call_async(SetParameters.Request(
            parameters=[Parameter(name, value=value).to_parameter_msg()]))).results[0]


@pytest.fixture(scope="module")
def controller(graph):
    c = Controller(graph.main.node)
    yield c
    c.node.destroy_client(c.params)
    c.client.destroy()


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(goal=malformed, parameter=parameters)
def test_the_simulator_refuses_malformed_goals_and_parameters(graph, controller, goal,
                                                              parameter):
    g = graph
    goal, why = goal
    handle = controller.send(goal)
    assert not handle.accepted, why
    name, value = parameter
    done = controller.set(name, value)
    assert not done.successful and done.reason, (name, value)
    _alive(g)
    said = _log(g, "sim")
    assert any("arm_controller/follow_joint_trajectory: goal rejected: " in ln and why in ln
               for ln in said.splitlines()), (why, said[-2000:])


def test_after_malformed_goals_a_good_one_is_followed(graph, controller):
    """Runs after the property test (file order): the simulator alive, a good goal
    accepted and played to its end, its joint states finite and at the goal."""
    g = graph
    handle = controller.send(_goal(GOOD))
    assert handle.accepted
    result = controller._wait(handle.get_result_async(), 30.0)
    assert result.result.error_code == 0, result.result.error_string
    hostile = Hostile(g.main.node)          # its subscription only: the robot's state
    try:
        end = time.monotonic() + 10.0
        while hostile.latest is None and time.monotonic() < end:
            time.sleep(0.02)
        q = np.array(hostile.latest.position)
    finally:
        g.main.node.destroy_publisher(hostile.pub)
        g.main.node.destroy_subscription(hostile.sub)
    assert np.all(np.isfinite(q)) and np.allclose(q, GOOD[-1][1], atol=1e-3), q
    said = _log(g, "sim")
    assert "parameter " in said and " refused: " in said, said[-2000:]
    assert "Traceback" not in said, said[-3000:]
    _alive(g)


def test_a_first_point_at_zero_where_the_joints_are_is_the_start(graph, controller):
    """As a joint_trajectory_controller takes it: a first point at 0 s at the joints'
    positions is where the motion starts (accepted, followed to the last point); the
    same point elsewhere would be a jump of the reference (refused above)."""
    g = graph
    hostile = Hostile(g.main.node)
    try:
        end = time.monotonic() + 10.0
        while hostile.latest is None and time.monotonic() < end:
            time.sleep(0.02)
        now = [float(x) for x in hostile.latest.position]
    finally:
        g.main.node.destroy_publisher(hostile.pub)
        g.main.node.destroy_subscription(hostile.sub)
    target = [x + 0.05 for x in now[:2]] + now[2:]
    handle = controller.send(_goal([(0.0, now, [0.0] * 6, []),
                                    (0.6, target, [0.0] * 6, [])]))
    assert handle.accepted
    result = controller._wait(handle.get_result_async(), 30.0)
    assert result.result.error_code == 0, result.result.error_string
    _alive(g)

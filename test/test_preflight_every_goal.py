"""Every RunExperiment goal runs the whole pre-flight before anything moves
(ros/goal_checks.py) with the Preflight action's own check functions; the TF check by
FrameBuffer lookups (ros/frames.py) between each sensor frame and the model's links.  Unit
level: a FrameBuffer of our own backend fed by hand, the goal's pre-flight on fake stages.
(Over DDS: test_ros_graph.py, test_preflight_of_every_goal_refuses_a_silent_driver_topic.)"""
import inspect
import logging
import threading
import time
from types import SimpleNamespace

import pinocchio as pin
import pytest
from geometry_msgs.msg import TransformStamped
from tf2_msgs.msg import TFMessage

from figaroh_ros.action import RunExperiment
from figaroh_ros.ros import goal_checks
from figaroh_ros.ros.common import CanceledBeforeStart, GoalRefused
from figaroh_ros.ros.frames import FrameBuffer, to_msg
from figaroh_ros.ros.parameters import ExecutorParameters
from figaroh_ros.ros.preflight_action import FRAME_TIMEOUT, frame_checks
from figaroh_ros.tasks.gate import Check

# wall-clock bounds (a lookup found before its deadline, a window that waits its time): at
# the suite's priority, with the graph tests (conftest)
pytestmark = pytest.mark.xdist_group("ros_graph")

LINKS = ["universe", "world", "base_link", "shoulder_link", "wrist_3_link", "tool0"]


class FakeNode:
    """What FrameBuffer asks of a node: subscriptions (never delivered: fed by hand)."""

    def __init__(self):
        self.subscriptions, self.destroyed = [], []

    def create_subscription(self, *args, **kwargs):
        self.subscriptions.append(args[1])
        return args[1]

    def destroy_subscription(self, sub):
        self.destroyed.append(sub)

    def get_logger(self):
        """Where FrameBuffer reports the edges it drops."""
        return logging.getLogger("fake_node")


def _tf(parent, child, sec=1) -> TransformStamped:
    return to_msg(parent, child, pin.SE3.Identity(), SimpleNamespace(sec=sec, nanosec=0))


def _buffer(*static, dynamic=()) -> tuple[FrameBuffer, FakeNode]:
    node = FakeNode()
    tf = FrameBuffer(node, prefer_tf2=False)
    tf._fed(TFMessage(transforms=[_tf(p, c) for p, c in static]), True)
    tf._fed(TFMessage(transforms=[_tf(p, c) for p, c in dynamic]), False)
    return tf, node


def test_a_sensor_frame_reached_by_a_lookup_passes_with_its_path():
    tf, node = _buffer(("tool0", "tool0_controller"), ("world", "mocap"),
                       ("world", "base_link"), dynamic=[("base_link", "tool0")])
    assert tf.reaches("tool0_controller", LINKS, 0.0) == ["tool0_controller", "tool0"]
    # a link off the frame's own chain of parents: reached, named directly
    assert tf.reaches("mocap", ["tool0"], 0.0) == ["mocap", "tool0"]
    checks = frame_checks(tf, LINKS, [("/w", "tool0_controller", True),
                                      ("/j", "/tool0", True),
                                      ("/m", "mocap", False)], time.monotonic())
    assert [c.passed for c in checks] == [True, True, True]
    assert checks[0].detail == "/w: TF tool0_controller -> tool0" and checks[0].value == 1.0
    assert checks[1].detail == "/j: a link of the model"
    assert checks[2].detail == "/m: TF mocap -> world"
    tf.close()
    assert node.destroyed == node.subscriptions and len(node.subscriptions) == 2


def test_a_frame_tf_cannot_connect_fails_naming_it_after_the_timeout():
    """ft_sensor is heard (its own tree, no link in it): the lookups fail, the required
    check fails naming the frame, the backend and what TF holds; it waits for transforms
    up to the deadline only (an optional frame not at all)."""
    tf, _ = _buffer(("ft_base", "ft_sensor"), ("tool0", "tool0_controller"))
    t0 = time.monotonic()
    bad, = frame_checks(tf, LINKS, [("/w", "ft_sensor", True)], t0 + 0.3)
    waited = time.monotonic() - t0
    assert not bad.passed and bad.name == "tf:ft_sensor"
    assert "frame 'ft_sensor' is no link of the model" in bad.detail, bad.detail
    assert "figaroh_ros lookups against 6 links" in bad.detail and "ft_base" in bad.detail
    assert "waited 0.3 s" in bad.detail, bad.detail              # the wait it had
    assert 0.3 <= waited < 0.3 + 2.0, waited             # up to the deadline, not beyond
    t0 = time.monotonic()
    mocap, = frame_checks(tf, LINKS, [("/m", "mocap", False)], t0 + 5.0)
    assert mocap.passed and "estimated by the calibration" in mocap.detail
    assert time.monotonic() - t0 < 2.0                  # not the 5 s deadline: no wait
    # a transform arriving while the lookup waits is found
    late, _ = _buffer()
    t0 = time.monotonic()

    def feed():
        time.sleep(0.1)
        late._fed(TFMessage(transforms=[_tf("tool0", "tool0_controller")]), True)
    threading.Thread(target=feed).start()
    ok, = frame_checks(late, LINKS, [("/w", "tool0_controller", True)], t0 + 2.0)
    assert ok.passed and time.monotonic() - t0 < 2.0   # found before the deadline


def test_a_dynamic_edge_connects_and_an_unknown_frame_does_not():
    tf, _ = _buffer(dynamic=[("base_link", "cam")])
    assert tf.reaches("cam", LINKS, 0.0) == ["cam", "base_link"]
    assert tf.reaches("nowhere", LINKS, 0.0) is None


class FakeHandle:
    def __init__(self, **request):
        self.request = SimpleNamespace(**{"postures_file": "", "trajectory_file": "", **request})
        self.feedback = []
        self.is_cancel_requested = False

    def publish_feedback(self, fb):
        self.feedback.append(fb)


def _executor(window=0.5):
    logged = []
    return SimpleNamespace(params=SimpleNamespace(preflight_topic_window=window),
                           get_logger=lambda: SimpleNamespace(info=logged.append),
                           logged=logged)


def test_every_goal_runs_the_live_stages_and_a_failure_refuses_it(monkeypatch):
    seen = {}

    def stages(ex, g, window, controller_timeout):
        seen.update(window=window, postures=g.postures, trajectory=g.trajectory,
                    controllers=controller_timeout)
        return (lambda: [Check("controller:arm", True, None, None, "answers")],
                lambda: [Check("topic:/joint_states", False, 0.0, 250.0,
                               "0 messages in 0.5 s: 0.0 Hz (driver: 250 Hz, at least 200.0)"),
                         Check("qos:/joint_states", True, 1.0, None, "1 publishers")],
                lambda: [Check("model", True, None, None, "live")])
    monkeypatch.setattr(goal_checks, "live_stages", stages)
    ex, handle = _executor(0.5), FakeHandle(postures_file="p.csv")
    with pytest.raises(GoalRefused) as exc:
        goal_checks.preflight_goal(ex, handle, 12)
    msg = str(exc.value)
    assert msg.startswith("pre-flight FAILED, nothing moved: topic:/joint_states: 0 messages")
    assert "at least 200.0" in msg and "model" not in msg
    assert seen == {"window": 0.5, "postures": "p.csv", "trajectory": "",
                    "controllers": goal_checks.CONTROLLER_WAIT}
    # feedback for each check passed (3 of 4), before the refusal
    assert len(handle.feedback) == 3 and len(ex.logged) == 3
    assert all(f.stage == RunExperiment.Feedback.PREFLIGHT and f.postures_total == 12
               and f.fraction == 0.0 for f in handle.feedback)
    assert [f"pre-flight {f.check}" for f in handle.feedback] == ex.logged   # each named
    assert ex.logged[0] == "pre-flight controller:arm: answers"


def test_a_cancel_during_the_preflight_ends_it_after_the_check_under_way(monkeypatch):
    """The goal's cancel is heard after the check under way: the later stages (here a
    topic check that would take its whole window) never run, nothing moved."""
    handle, ran = FakeHandle(postures_file="p.csv"), []

    def controllers():
        ran.append("controllers")
        handle.is_cancel_requested = True        # the cancel arrives during this stage
        return [Check("controller:arm", True, None, None, "answers")]

    def topics():
        ran.append("topics")
        return [Check("topic:/joint_states", True, 250.0, 250.0, "250 Hz")]
    monkeypatch.setattr(goal_checks, "live_stages", lambda ex, g, w, c: (controllers, topics))
    with pytest.raises(CanceledBeforeStart, match=r"canceled during the pre-flight \(after "
                                                  r"controller:arm\), nothing moved"):
        goal_checks.preflight_goal(_executor(), handle, 3)
    assert ran == ["controllers"] and handle.feedback == []


def test_a_passing_preflight_returns_its_duration(monkeypatch):
    monkeypatch.setattr(goal_checks, "live_stages", lambda ex, g, w, c: (
        lambda: [Check("model", True, None, None, "live")],))
    took = goal_checks.preflight_goal(_executor(), FakeHandle(trajectory_file="t.csv"), 1)
    assert 0.0 <= took < 1.0


def test_the_window_parameter():
    field = ExecutorParameters.model_fields["preflight_topic_window"]
    assert field.default == 0.0 and "0 = no rate checks" in field.description
    assert ExecutorParameters(preflight_topic_window=0.0).preflight_topic_window == 0.0
    with pytest.raises(ValueError):
        ExecutorParameters(preflight_topic_window=-1.0)


class _Subscription:
    """A subscription as ``_discovered`` asks it: the publishers it has matched."""

    def __init__(self, count):
        self.get_publisher_count = count


class FakeGraph:
    """An executor's node as ``_topics`` uses it: each driver topic delivered (serialised)
    at ``hz`` by a thread while subscribed, the joint states of the robot's joints stamped; /tf_static latched
    with tool0 -> tool0_controller; ``silent`` topics advertised but never delivered;
    every publisher discovered (in the graph, matched, delivering) ``late`` s after the
    graph is made; the robot's clock, which stamps the messages, ``offset`` s ahead of ours
    (the executor's ``clock_tolerance``: 2 s)."""

    def __init__(self, cfg, hz: dict, silent=(), late: float = 0.0, offset: float = 0.0):
        self.cfg, self.hz, self.silent, self.offset = cfg, hz, set(silent), offset
        self.params = SimpleNamespace(clock_tolerance=2.0)
        self.model = SimpleNamespace(frames=[SimpleNamespace(name=n) for n in LINKS])
        self.group, self.live = None, set()
        self.found = time.monotonic() + late


    def get_logger(self):
        """Where FrameBuffer reports the edges it drops."""
        return logging.getLogger("fake_graph")
    def count_publishers(self, topic):
        name = topic.lstrip("/")
        return int((name in self.hz or name in self.silent) and time.monotonic() >= self.found)

    def create_subscription(self, msg_type, topic, callback, qos, raw=False,
                            callback_group=None):
        from rclpy.serialization import serialize_message      # test helper only
        key = _Subscription(lambda: self.count_publishers(topic))
        self.live.add(key)
        if topic == "/tf_static":
            callback(TFMessage(transforms=[_tf("tool0", "tool0_controller")]))
        if topic in self.silent or topic not in self.hz:
            return key

        try:                            # as rclpy: the message's info if the callback asks
            inspect.signature(callback).bind(None)
            with_info = False
        except TypeError:
            with_info = True

        def run():                      # stamped on its own schedule, late ones caught up
            time.sleep(max(0.0, self.found - time.monotonic()))
            t = time.time()
            while key in self.live:
                msg, stamp = msg_type(), t + self.offset
                if hasattr(msg, "position"):        # a JointState: the robot's joints
                    msg.name, msg.position = list(self.cfg.joints), [0.0] * len(
                        self.cfg.joints)
                if hasattr(msg, "header"):
                    msg.header.stamp.sec, msg.header.stamp.nanosec = int(stamp), int(
                        (stamp % 1) * 1e9)
                if with_info:
                    callback(serialize_message(msg), {"received_timestamp": time.time_ns()})
                else:
                    callback(serialize_message(msg))
                t += 1.0 / self.hz[topic]
                time.sleep(max(0.0, t - time.time()))
        threading.Thread(target=run, daemon=True).start()
        return key

    def destroy_subscription(self, key):
        self.live.discard(key)

    @staticmethod
    def get_clock():
        return SimpleNamespace(now=lambda: SimpleNamespace(nanoseconds=time.time_ns()))

    def resolve_topic_name(self, topic):
        return topic if topic.startswith("/") else "/" + topic

    def get_publishers_info_by_topic(self, topic):
        return []


@pytest.fixture(scope="module")
def ur10():
    import os

    from figaroh_ros.config.robot import load_robot_config
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return load_robot_config(os.path.join(root, "config", "sim_ur10.yaml"))


RATES = {"joint_states": 250.0, "force_torque_sensor_broadcaster/wrench": 100.0,
         "mocap/pose": 50.0, "motor_currents": 100.0}


@pytest.mark.parametrize("window", [0.5, 0.0])
def test_the_goal_topics_stage_with_and_without_a_window(ur10, window):
    """With a window: rates (the joint states' from their stamps against the driver's
    250 Hz); with 0: each required topic alive, no rate, as soon as all have spoken; a
    silent required topic fails either way, named with its numbers; the subscriptions
    (topics and TF) all gone after."""
    from figaroh_ros.ros.preflight_action import ALIVE_TIMEOUT, _topics
    ex = FakeGraph(ur10, RATES)
    t0 = time.monotonic()
    checks = {c.name: c for c in _topics(ex, window)}
    took = time.monotonic() - t0
    assert all(c.passed for c in checks.values()), [c.line() for c in checks.values()]
    assert checks["tf:tool0_controller"].detail.endswith("TF tool0_controller -> tool0")
    js = checks["topic:/joint_states"].detail
    if window:
        assert "(driver: 250 Hz, at least 200.0)" in js and 0.8 <= took < 0.8 + 3.0, (js, took)
    else:
        assert "driver" not in js and took < ALIVE_TIMEOUT, (js, took)   # none waited out
    assert not ex.live
    ex = FakeGraph(ur10, RATES, silent={"motor_currents"})
    t0 = time.monotonic()
    failed = [c for c in _topics(ex, window) if not c.passed]
    assert [c.name for c in failed] == ["topic:/motor_currents"]
    assert failed[0].detail.startswith("0 messages in")
    if not window:
        assert ALIVE_TIMEOUT <= time.monotonic() - t0 < ALIVE_TIMEOUT + FRAME_TIMEOUT + 2.0


@pytest.mark.parametrize("offset", [-5.0, 5.0])
def test_the_topics_stage_refuses_a_robot_clock_off_ours(ur10, offset):
    """The robot stamps its messages 5 s behind (or ahead of) our clock: only the clock
    checks fail, one per stamped topic (TF's messages have no header), naming the offset;
    the rates, the joint states' read from the robot's own stamps, pass."""
    from figaroh_ros.ros.preflight_action import _topics
    checks = _topics(FakeGraph(ur10, RATES, offset=offset), 0.5)
    failed = [c for c in checks if not c.passed]
    assert sorted(c.name for c in failed) == [f"clock:/{t}" for t in sorted(RATES)], \
        [c.line() for c in checks]
    side = "behind" if offset < 0 else "ahead of"
    for c in failed:
        assert f"s {side} this computer's clock" in c.detail
        assert abs(abs(c.value) - 5.0) < 0.5, c.value


@pytest.mark.parametrize("window", [0.5, 0.0])
def test_the_topics_window_opens_once_the_publishers_are_discovered(ur10, window):
    """A graph launched a moment ago: the driver's publishers discovered 1.5 s after the
    goal (under the test suite's load the executor knew none of the simulated TIAGo's publishers
    2.8 s after its start and refused the demo, "0 messages in 1.0 s").  The window opens
    once they are (at most DISCOVERY_TIMEOUT s): every check passes, the rates measured
    whole."""
    from figaroh_ros.ros.preflight_action import DISCOVERY_TIMEOUT, _topics
    ex = FakeGraph(ur10, RATES, late=1.5)
    t0 = time.monotonic()
    checks = {c.name: c for c in _topics(ex, window)}
    took = time.monotonic() - t0
    assert all(c.passed for c in checks.values()), [c.line() for c in checks.values()]
    assert 1.5 <= took < DISCOVERY_TIMEOUT + 3.0, took
    if window:
        assert "(driver: 250 Hz, at least 200.0)" in checks["topic:/joint_states"].detail

"""The StartCalibration service of the calibration node, called through rclpy over DDS on
a simulated UR10 after a recorded experiment (12 planned postures):

* a request naming the bag and the shipped config starts a geometric calibration and is
  answered at once (long before the calibration ends) with ``accepted`` and the goal's id;
* a second request while it runs is refused with the reason, no goal id;
* the goal is followed on the Calibrate action by that id: its feedback on
  ``figaroh/calibrate/_action/feedback``, its result from ``_action/get_result``
  (SUCCESSFUL, published, the model on robot_description);
* requests with a config outside the node's read roots, an unknown kind or no bag are
  refused with a reason naming the field, and start nothing;
* two ``figaroh-ros call start-calibration`` processes started together while the node's
  worker forkserver is stopped (SIGSTOP: the goal that gets to run cannot end): exactly one
  is accepted, the other exits 2 with "running already"; once the forkserver goes on, the
  accepted goal ends SUCCESSFUL and a new request is accepted.
"""
import os
import re
import signal
import subprocess
import sys
import time
import uuid

import pytest
from conftest import ROOT, action_result, planned_experiment, ur10_test_graph

from figaroh_ros.errors import SUCCESSFUL

rclpy = pytest.importorskip("rclpy")
pytestmark = pytest.mark.xdist_group("ros_graph_2")

CONFIG = os.path.join(ROOT, "config", "ur10_sim_calibration.yaml")


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    with ur10_test_graph(tmp_path_factory.mktemp("service"), "figaroh_service_test") as g:
        yield g


@pytest.fixture(scope="module")
def bag(graph):
    return planned_experiment(graph, CONFIG)


def _call(graph, **fields):
    """The service's answer to a request of ``fields`` and how long it took (s)."""
    from figaroh_ros.srv import StartCalibration
    node = graph["node"]
    cli = node.create_client(StartCalibration, "/figaroh/start_calibration")
    assert cli.wait_for_service(timeout_sec=60.0), graph["graph"].tails()
    t0 = time.monotonic()
    fut = cli.call_async(StartCalibration.Request(**fields))
    rclpy.spin_until_future_complete(node, fut, timeout_sec=60.0)
    took = time.monotonic() - t0
    node.destroy_client(cli)
    assert fut.done(), "no answer within 60 s"
    return fut.result(), took


def test_a_service_call_starts_a_calibration_followed_on_the_action(graph, bag):
    from figaroh_ros.action import Calibrate
    from figaroh_ros.progress import Stage
    from figaroh_ros.srv import StartCalibration
    node = graph["node"]
    feedback = []
    sub = node.create_subscription(Calibrate.Impl.FeedbackMessage,
                                   "/figaroh/calibrate/_action/feedback",
                                   feedback.append, 100)
    getter = node.create_client(Calibrate.Impl.GetResultService,
                                "/figaroh/calibrate/_action/get_result")
    assert getter.wait_for_service(timeout_sec=30.0)
    t0 = time.monotonic()
    first, took = _call(graph, bags=[bag], config=CONFIG,
                        kind=StartCalibration.Request.GEOMETRIC, publish=True)
    assert first.accepted and first.reason == "", first.reason
    gid = uuid.UUID(first.goal_id)
    assert str(gid) == first.goal_id and took < 10.0, took

    second, _ = _call(graph, bags=[bag], config=CONFIG, kind="geometric", publish=False)
    assert not second.accepted and second.goal_id == ""
    assert "running already" in second.reason, second.reason

    from unique_identifier_msgs.msg import UUID
    fut = getter.call_async(Calibrate.Impl.GetResultService.Request(
        goal_id=UUID(uuid=list(gid.bytes))))
    while not fut.done() and time.monotonic() - t0 < 300.0:
        rclpy.spin_once(node, timeout_sec=0.1)
    assert fut.done(), "no result within 300 s"
    res = fut.result().result
    ended = time.monotonic() - t0
    assert res.error_code == SUCCESSFUL and res.published, res.message
    assert ended > took                       # answered before the calibration ended
    print(f"start_calibration answered in {took:.3f} s; its goal ended {ended:.1f} s "
          "after the call")
    ours = [m.feedback for m in feedback if bytes(m.goal_id.uuid) == gid.bytes]
    assert ours and ours[0].stage == Stage.STARTING
    assert Stage.PUBLISHING in [f.stage for f in ours]
    node.destroy_subscription(sub)
    node.destroy_client(getter)

    after, _ = _call(graph, bags=[bag], config=CONFIG, kind="geometric", publish=False)
    assert after.accepted, after.reason                   # the first one has ended


@pytest.mark.parametrize("fields, words", [
    ({"config": "/etc/passwd", "kind": "geometric"}, "config"),
    ({"kind": "kinematic"}, "kind must be geometric or dynamic"),
    ({"kind": "geometric", "bags": []}, "no bag given"),
    ({"kind": "dynamic", "bags": ["a", "b"]}, "one bag"),
])
def test_bad_requests_are_refused_with_the_field(graph, bag, fields, words):
    request = dict(bags=[bag], config=CONFIG, publish=True)
    request.update(fields)
    answer, took = _call(graph, **request)
    assert not answer.accepted and answer.goal_id == "" and words in answer.reason, \
        answer.reason
    assert took < 10.0


CLI = os.path.join(os.path.dirname(sys.executable), "figaroh-ros")


def _result(graph, goal_id: str, timeout: float = 300.0):
    """The Calibrate result of the goal ``goal_id``, asked on ``_action/get_result``."""
    from unique_identifier_msgs.msg import UUID

    from figaroh_ros.action import Calibrate
    node = graph["node"]
    getter = node.create_client(Calibrate.Impl.GetResultService,
                                "/figaroh/calibrate/_action/get_result")
    assert getter.wait_for_service(timeout_sec=30.0)
    fut = getter.call_async(Calibrate.Impl.GetResultService.Request(
        goal_id=UUID(uuid=list(uuid.UUID(goal_id).bytes))))
    t0 = time.monotonic()
    while not fut.done() and time.monotonic() - t0 < timeout:
        rclpy.spin_once(node, timeout_sec=0.1)
    node.destroy_client(getter)
    assert fut.done(), f"no result within {timeout:g} s"
    return fut.result().result


def _descendants(pid: int) -> list[int]:
    """The processes below ``pid`` (Linux /proc)."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    parents[int(entry)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        kids = [c for c, p in parents.items() if p == parent]
        found += kids
        todo += kids
    return found


def _forkserver(graph) -> int | None:
    """The pid of the calibration node's worker forkserver (started by its first goal)."""
    node = next(p.pid for label, p in graph["graph"].procs if label == "calibration")
    for pid in _descendants(node):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"forkserver" in f.read():
                    return pid
        except OSError:
            pass
    return None


def _start_in_process(graph, bag) -> subprocess.Popen:
    return subprocess.Popen([CLI, "call", "start-calibration", "--bags", bag, "--config",
                             CONFIG, "--kind", "geometric", "--no-publish", "--timeout", "60"],
                            cwd=str(graph["work"]), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=dict(os.environ))


def test_two_processes_one_calibration(graph, bag):
    from figaroh_ros.action import Calibrate
    from figaroh_ros.errors import INVALID_GOAL
    first = None                # a goal ended: the node idle, its forkserver started
    for _ in range(30):
        first, _ = _call(graph, bags=[bag], config=CONFIG, kind="geometric", publish=False)
        if first.accepted:
            break
        time.sleep(1.0)                             # an earlier test's goal still runs
    assert first.accepted, first.reason
    assert _result(graph, first.goal_id).error_code == SUCCESSFUL
    server = _forkserver(graph)
    assert server is not None
    log = graph["work"] / "launch_logs" / "calibration.log"
    seen = len(log.read_text())
    os.kill(server, signal.SIGSTOP)                 # a goal that starts cannot end
    try:
        procs = [_start_in_process(graph, bag) for _ in range(2)]
        said = [p.communicate(timeout=120) + (p.returncode,) for p in procs]
        accepted = [s for s in said if s[2] == 0]
        refused = [s for s in said if s[2] != 0]
        assert len(accepted) == 1 and len(refused) == 1, said
        assert "accepted: true" in accepted[0][0], said
        goal_id = accepted[0][0].split("goal_id: ")[1].split()[0]
        assert str(uuid.UUID(goal_id)) == goal_id
        out, err, code = refused[0]
        assert code == 2 and "accepted: false" in out, said
        assert err.startswith("error: a calibrate goal is running already"), err
        still, _ = _call(graph, bags=[bag], config=CONFIG, kind="geometric", publish=False)
        assert not still.accepted and "running already" in still.reason, still.reason
        straight = action_result(graph, Calibrate, "/figaroh/calibrate", Calibrate.Goal(
            bags=[bag], config=CONFIG, kind="geometric", publish=False), 60.0)  # the action
        assert straight.error_code == INVALID_GOAL, straight.message
        assert "running already" in straight.message, straight.message
    finally:
        os.kill(server, signal.SIGCONT)
    res = _result(graph, goal_id)
    assert res.error_code == SUCCESSFUL and not res.published, res.message
    stamps = [float(m) for m in re.findall(r"\[(\d+\.\d+)\] \[calibration\]: "
                                           r"start_calibration", log.read_text()[seen:])]
    print(f"two processes: the node answered them {stamps[1] - stamps[0]:.3f} s apart, "
          "one accepted, one refused")
    again = _start_in_process(graph, bag)
    out, err = again.communicate(timeout=120)
    assert again.returncode == 0 and "accepted: true" in out, (out, err)
    after = out.split("goal_id: ")[1].split()[0]
    assert _result(graph, after).error_code == SUCCESSFUL

"""The StartCalibration service of the calibration node, called through rclpy over DDS on
a simulated UR10 after a recorded experiment (12 planned postures):

* a request naming the bag and the shipped config starts a geometric calibration and is
  answered at once (long before the calibration ends) with ``accepted`` and the goal's id;
* a second request while it runs is refused with the reason, no goal id;
* the goal is followed on the Calibrate action by that id: its feedback on
  ``figaroh/calibrate/_action/feedback``, its result from ``_action/get_result``
  (SUCCESSFUL, published, the model on robot_description);
* requests with a config outside the node's read roots, an unknown kind or no bag are
  refused with a reason naming the field, and start nothing.
"""
import os
import time
import uuid

import pytest
from conftest import ROOT, accepted_goal, goal_result, sim_ur10_graph

from figaroh_ros.errors import SUCCESSFUL

rclpy = pytest.importorskip("rclpy")
pytestmark = pytest.mark.xdist_group("ros_graph_2")

CONFIG = os.path.join(ROOT, "config", "ur10_sim_calibration.yaml")


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    work = tmp_path_factory.mktemp("service")
    with sim_ur10_graph(work, "figaroh_service_test", joint_states_hz=125,
                        preflight_config="") as (g, node):
        yield {"graph": g, "node": node, "work": work}


@pytest.fixture(scope="module")
def bag(graph):
    from rclpy.action import ActionClient

    from figaroh_ros.action import RunExperiment
    from figaroh_ros.config.calibration import load_calibration_config
    from figaroh_ros.tasks.plan_postures import plan_from_config
    cfg = load_calibration_config(CONFIG)
    cfg = cfg.with_postures(max_postures=12, plateau=1e-6, candidates=400)
    postures = str(graph["work"] / "postures.csv")
    plan_from_config(cfg, postures)
    path = str(graph["work"] / "bags" / "exp")
    ac = ActionClient(graph["node"], RunExperiment, "/figaroh/run_experiment")
    assert ac.wait_for_server(timeout_sec=60.0), graph["graph"].tails()
    handle = accepted_goal(graph["node"], ac, RunExperiment.Goal(postures_file=postures,
                                                                 bag_path=path))
    assert goal_result(graph["node"], handle).error_code == SUCCESSFUL
    return path


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

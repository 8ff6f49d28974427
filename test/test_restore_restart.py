"""Restore and restart of the calibration node on a simulated UR10 over DDS.

After a published geometric calibration B (built on the nominal model A):

* restoring ``nominal`` republishes A, leaves no estimated frame on ``/tf_static``, and the
  next Calibrate goal starts from its config's URDF (not from B);
* restoring B by its hash republishes B and B's estimated frames, and the next goal
  starts from B ("started from the published <hash>.urdf");
* ``previous`` from B gives A, then nothing ("no previous model"), never back to B;
* a calibration node killed (SIGTERM, then SIGKILL) while a goal runs, restarted after the
  simulator (robot_state_publisher's role) was given the nominal model back, announces
  the last published model again (the simulator's robot_description is B's text again)
  and B's frames on ``/tf_static``.
"""
import hashlib
import os
import signal
import time

import numpy as np
import pytest
import yaml
from conftest import (
    ROOT, accepted_goal, action_result, planned_experiment, service_answer, sim_description,
    ur10_test_graph
)

from figaroh_ros.errors import SUCCESSFUL

rclpy = pytest.importorskip("rclpy")
pytestmark = pytest.mark.xdist_group("ros_graph_2")

CONFIG = os.path.join(ROOT, "config", "ur10_sim_calibration.yaml")


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    with ur10_test_graph(tmp_path_factory.mktemp("restore"), "figaroh_restore_test") as g:
        yield g


def _calibrate(g, bag):
    from figaroh_ros.action import Calibrate
    return action_result(g, Calibrate, "/figaroh/calibrate", Calibrate.Goal(
        bags=[bag], config=CONFIG, kind=Calibrate.Goal.GEOMETRIC, publish=True))


def _restore(g, which: str):
    from figaroh_ros.srv import RestoreDescription
    return service_answer(g, RestoreDescription, "/figaroh/restore_description",
                          RestoreDescription.Request(which=which))


_description = sim_description


def _set_description(g, text: str) -> None:
    from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
    from rcl_interfaces.srv import SetParameters
    p = Parameter(name="robot_description", value=ParameterValue(
        type=ParameterType.PARAMETER_STRING, string_value=text))
    answer = service_answer(g, SetParameters, "/sim_robot/set_parameters",
                            SetParameters.Request(parameters=[p]))
    assert answer.results[0].successful


def _static_frames(g, wait_for: str | None = None, seconds: float = 3.0) -> dict:
    """child frame -> (parent, xyz, stamp) of every transform on /tf_static now (a new
    subscription: the latched messages of every publisher); waits up to 30 s for
    ``wait_for`` when given."""
    from tf2_msgs.msg import TFMessage

    from figaroh_ros.ros.static_frames import TF_STATIC
    node, got = g["node"], []
    sub = node.create_subscription(TFMessage, "/tf_static", got.append, TF_STATIC)
    t0 = time.monotonic()
    limit = 30.0 if wait_for else seconds
    frames: dict = {}
    while time.monotonic() - t0 < limit:
        rclpy.spin_once(node, timeout_sec=0.1)
        frames = {}
        for t in (t for m in got for t in m.transforms):     # the newest of each child
            stamp = t.header.stamp.sec + 1e-9 * t.header.stamp.nanosec
            if t.child_frame_id not in frames or frames[t.child_frame_id][2] <= stamp:
                v = t.transform.translation
                frames[t.child_frame_id] = (t.header.frame_id, [v.x, v.y, v.z], stamp)
        if wait_for and wait_for in frames:
            break
    node.destroy_subscription(sub)
    return frames


def _until(check, timeout=30.0, what=""):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if check():
            return
        time.sleep(0.5)
    raise AssertionError(f"not within {timeout:g} s: {what}")


@pytest.fixture(scope="module")
def published(graph):
    """12 planned postures played and recorded, then calibrated and published (model B)."""
    bag = planned_experiment(graph, CONFIG)
    res = _calibrate(graph, bag)
    assert res.error_code == SUCCESSFUL and res.published, res.message
    with open(res.urdf_path) as f:
        text = f.read()
    with open(res.result_path) as f:
        summary = yaml.safe_load(f)
    listed = _restore(graph, "history")
    return {"bag": bag, "result": res, "hash": sha(text), "text": text,
            "nominal_hash": listed.history_hashes[0], "base": summary["base_frame"]}


def test_restore_resets_what_the_next_goal_builds_on(graph, published):
    from figaroh_ros.ros.static_frames import root_link
    b, a = published["hash"], published["nominal_hash"]
    root = root_link(published["text"])
    frames = _static_frames(graph, wait_for=root)
    assert frames[root][0] == "mocap"
    assert np.allclose(frames[root][1], published["base"]["xyz"], atol=1e-9)

    back = _restore(graph, "nominal")
    assert back.success and back.model_hash == a, back.message
    assert sha(_description(graph)) == a
    assert root not in _static_frames(graph), "B's frames left on /tf_static"
    res = _calibrate(graph, published["bag"])                 # from the config's URDF
    assert res.error_code == SUCCESSFUL and res.published, res.message
    assert "started from" not in res.message, res.message

    again = _restore(graph, b[:16])
    assert again.success and again.model_hash == b, again.message
    assert sha(_description(graph)) == b
    frames = _static_frames(graph, wait_for=root)
    assert np.allclose(frames[root][1], published["base"]["xyz"], atol=1e-9)
    res = _calibrate(graph, published["bag"])                 # from the restored B
    assert res.error_code == SUCCESSFUL, res.message
    assert f"started from the published {b}.urdf" in res.message, res.message
    assert not res.published            # B again: no significant improvement on B


def test_previous_steps_back_and_stops_at_the_first(graph, published):
    b, a = published["hash"], published["nominal_hash"]
    assert _restore(graph, b[:16]).model_hash == b
    back = _restore(graph, "previous")
    assert back.success and back.model_hash == a, back.message
    assert sha(_description(graph)) == a
    stop = _restore(graph, "previous")
    assert not stop.success and "no previous model" in stop.message, stop.message
    assert sha(_description(graph)) == a                      # nothing changed
    assert _restore(graph, b[:16]).model_hash == b


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_restarted_node_announces_the_model_and_its_frames(graph, published, sig):
    from figaroh_ros.action import Calibrate
    from figaroh_ros.cli.launch_runner import command
    from figaroh_ros.ros.static_frames import root_link
    from rclpy.action import ActionClient
    g, b, root = graph["graph"], published["hash"], root_link(published["text"])
    assert _restore(graph, b[:16]).model_hash == b
    k = next(i for i, (label, _) in enumerate(g.procs) if label == "calibration")
    ac = ActionClient(graph["node"], Calibrate, "/figaroh/calibrate")
    assert ac.wait_for_server(timeout_sec=60.0)
    handle = accepted_goal(graph["node"], ac, Calibrate.Goal(
        bags=[published["bag"]], config=CONFIG, kind=Calibrate.Goal.GEOMETRIC, publish=True))
    assert handle is not None
    time.sleep(1.0)                                           # the goal's worker runs
    proc = g.procs[k][1]
    os.killpg(proc.pid, sig)
    proc.wait(timeout=30)
    nominal = _restore_text(graph, published)                 # robot_state_publisher
    _set_description(graph, nominal)                          # restarted with the nominal
    assert sha(_description(graph)) == published["nominal_hash"]
    restarted = time.time()
    g.procs[k] = (g.procs[k][0], g._start(g.nodes[k], command(g.nodes[k])))
    _until(lambda: sha(_description(graph)) == b, 60.0, "B announced again")
    frames = _static_frames(graph, wait_for=root)     # sent by the restarted node
    assert frames[root][2] >= restarted - 1.0, (frames[root][2], restarted)
    assert np.allclose(frames[root][1], published["base"]["xyz"], atol=1e-9)
    listed = _restore(graph, "history")                       # the node answers again
    assert listed.success and listed.history_hashes[0] == published["nominal_hash"]


def _restore_text(graph, published) -> str:
    """The nominal model's kept text (``output_dir/models``)."""
    path = graph["work"] / "cal" / "models" / f"{published['nominal_hash']}.urdf"
    with open(path, encoding="utf-8", newline="") as f:
        return f.read()

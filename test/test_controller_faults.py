"""The executor against a robot that misbehaves in time, over DDS: the simulated UR10
(``ros/sim_controllers.py`` faults, set at run time) and the executor in two processes,
driven by the Commander.

- a controller that plays its goal and never reports its end (a hung driver, a result
  lost): the goal ends ``controller_result_timeout`` s after the motion's planned end,
  naming the controller, and the next goal is served;
- a robot whose clock is off ours by more than ``clock_tolerance`` (ahead or behind): the
  pre-flight refuses the goal before anything moves, naming the offset;
- stamps that stop covering a hold (the robot's clock jumps back mid-experiment): the goal
  ends ``hold_timeout`` s after the hold's end on our clock, instead of holding for ever;
- a mocap body the cameras lose during a hold: the hold goes on until its poses come back
  (the bag's posture then has them), or ends ``hold_timeout`` s later with a note in its end
  mark, and the bag names the posture;
- controllers so slow to accept that a goal planned well within ``max_goal_seconds``
  would take longer: the goal is stopped when it has moved and held the robot that long;
- SIGTERM to the executor mid-experiment (the module's last test): it exits at once, and
  the Commander hears that its server left.
"""
import os
import re
import subprocess
import sys
import time

import numpy as np
import pytest
import yaml
from conftest import ROOT, ros_graph_environment, stop_processes

pytest.importorskip("rclpy")
pytestmark = pytest.mark.xdist_group("ros_graph_2")   # the second worker's graphs

NS = "faulty"
JOINTS = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint",
          "wrist_2_joint", "wrist_3_joint"]
RESULT_TIMEOUT = 2.0          # the executor's controller_result_timeout here
HOLD_TIMEOUT = 3.0            # its hold_timeout
MAX_GOAL_SECONDS = 25.0       # its max_goal_seconds


def _node(work, module: str, *params: str) -> subprocess.Popen:
    with open(work / f"{module}.log", "wb") as log:
        return subprocess.Popen([sys.executable, "-m", f"figaroh_ros.ros.{module}",
                                 "--ros-args", "-r", f"__ns:=/{NS}",
                                 *sum((["-p", p] for p in params), [])],
                                stdout=log, stderr=log)


@pytest.fixture(scope="module")
def robot(tmp_path_factory):
    """The simulated UR10 (100 Hz joint states, 50 Hz mocap), its executor, and a
    Commander: ``(commander, work folder, processes)``; each node's output in
    ``<work>/<node>.log``."""
    from figaroh_ros.ros.commander import Commander
    work = tmp_path_factory.mktemp("faults")
    with open(os.path.join(ROOT, "config", "sim_ur10.yaml")) as f:
        cfg = yaml.safe_load(f)
    cfg["rates"] = {"joint_states_hz": 100, "mocap_hz": 50}
    cfg["driver"]["joint_states"]["rate_hz"] = 100
    cfg["robot"]["urdf"] = os.path.join(ROOT, "config", cfg["robot"]["urdf"]) \
        if not cfg["robot"]["urdf"].startswith("example-robot-data:") else cfg["robot"]["urdf"]
    sim = work / "sim.yaml"
    sim.write_text(yaml.safe_dump(cfg))
    ros_graph_environment()
    procs = [_node(work, "sim_robot", f"config:={sim}"),
             _node(work, "recorder", f"config:={sim}", f"bag_dir:={work}"),
             _node(work, "executor", f"config:={sim}", f"bag_dir:={work}",
                   f"controller_result_timeout:={RESULT_TIMEOUT}",
                   f"hold_timeout:={HOLD_TIMEOUT}",
                   f"max_goal_seconds:={MAX_GOAL_SECONDS}")]
    commander = None
    try:
        commander = Commander(NS, node_name="fault_commander")
        commander.wait_until_ready(60.0, actions=["run_experiment"])
        yield commander, work, procs
    finally:
        if commander is not None:
            commander.destroy()
        stop_processes(procs)


def _set_fault(commander, name: str, value) -> None:
    from rcl_interfaces.srv import SetParameters
    from rclpy.parameter import Parameter
    client = commander.node.create_client(SetParameters, f"/{NS}/sim_robot/set_parameters")
    try:
        assert client.wait_for_service(timeout_sec=30.0)
        fut = client.call_async(SetParameters.Request(
            parameters=[Parameter(name, value=value).to_parameter_msg()]))
        end = time.monotonic() + 30.0
        while not fut.done() and time.monotonic() < end:
            time.sleep(0.02)
        assert fut.done() and fut.result().results[0].successful, name
    finally:
        commander.node.destroy_client(client)


def _postures(path, pans) -> str:
    rows = [",".join(JOINTS)] + [",".join(f"{v:.4f}" for v in (p, -1.2, 1.0, 0.0, 0.0, 0.0))
                                 for p in pans]
    path.write_text("\n".join(rows) + "\n")
    return str(path)


def _run(commander, path: str, dwell: float = 0.2, bag: str = "", speed: float = 3.0):
    return commander.run_experiment(postures_file=path, max_velocity=speed, settle_time=0.1,
                                    dwell_time=dwell, bag_path=bag)


def _failure(task, timeout: float):
    """The goal's result, which must not be a success."""
    result = task.result(timeout)
    assert result.error_code != 0, result.message
    return result


def test_a_controller_that_never_reports_ends_the_goal(robot):
    from figaroh_ros.errors import ROS_ERROR
    commander, work, _ = robot
    path = _postures(work / "one.csv", [0.4])
    _set_fault(commander, "withhold_results", True)
    try:
        t0 = time.monotonic()
        task = _run(commander, path)
        result = _failure(task, 120.0)
        took = time.monotonic() - t0
    finally:
        _set_fault(commander, "withhold_results", False)
    assert result.error_code == ROS_ERROR, result.message
    assert f"no result {RESULT_TIMEOUT:g} s after the end of its" in result.message
    assert "controller_result_timeout" in result.message
    assert RESULT_TIMEOUT < took < 60.0, took
    # the node goes on: the next goal (back to the start) is played
    done = _run(commander, _postures(work / "back.csv", [0.0])).check(120.0)
    assert done.postures_done == 1


@pytest.mark.parametrize("offset, side", [(-30.0, "behind"), (30.0, "ahead of")])
def test_a_robot_clock_off_ours_is_refused_before_anything_moves(robot, offset, side):
    from sensor_msgs.msg import JointState

    from figaroh_ros.errors import INVALID_GOAL
    commander, work, _ = robot
    seen = []
    sub = commander.node.create_subscription(JointState, f"/{NS}/joint_states",
                                             lambda m: seen.append(m.position[0]), 100)
    _set_fault(commander, "clock_offset", offset)
    try:
        result = _failure(_run(commander, _postures(work / "clock.csv", [0.8])), 120.0)
    finally:
        _set_fault(commander, "clock_offset", 0.0)
        commander.node.destroy_subscription(sub)
    assert result.error_code == INVALID_GOAL, result.message
    assert "pre-flight FAILED, nothing moved" in result.message
    assert f"clock:/{NS}/joint_states" in result.message
    assert f"clock:/{NS}/mocap/pose" not in result.message   # the mocap's own clock: ours
    assert f"s {side} this computer's clock" in result.message, result.message
    said = float(re.search(r"stamps ([0-9.]+) s", result.message).group(1))
    assert abs(said - abs(offset)) < 0.5, said          # the offset, give or take delivery
    assert seen and np.ptp(seen) < 0.01, "the robot moved"       # noise only (1e-3 rad)


def test_stamps_that_stop_covering_a_hold_end_the_goal(robot):
    from figaroh_ros.errors import ROS_ERROR
    commander, work, _ = robot
    task = _run(commander, _postures(work / "hold.csv", [0.3]), dwell=3.0)
    end = time.monotonic() + 60.0
    while (task.feedback is None or task.feedback.stage != task.feedback.HOLDING) \
            and not task.done() and time.monotonic() < end:
        time.sleep(0.02)
    assert task.feedback is not None and task.feedback.stage == task.feedback.HOLDING
    _set_fault(commander, "clock_offset", -60.0)        # the robot's clock jumps back
    t0 = time.monotonic()
    try:
        result = _failure(task, 120.0)
        took = time.monotonic() - t0
    finally:
        _set_fault(commander, "clock_offset", 0.0)
    assert result.error_code == ROS_ERROR, result.message
    assert "the joint states' stamps do not cover a 3 s hold" in result.message
    assert "is the robot's clock behind" in result.message
    assert HOLD_TIMEOUT < took < HOLD_TIMEOUT + 30.0, took


def _occluded_during_the_hold(commander, work, name: str, seen_again_after: float | None):
    """One posture 2 rad away (a move of seconds) recorded into a bag; the mocap body
    occluded once the move started, seen again ``seen_again_after`` s into the hold (None:
    never): the result and the bag's path."""
    bag = str(work / name)
    task = _run(commander, _postures(work / f"{name}.csv", [2.0]), dwell=0.3, bag=bag,
                speed=1.0)

    def stage(s):
        end = time.monotonic() + 60.0
        while (task.feedback is None or task.feedback.stage != s) and not task.done() \
                and time.monotonic() < end:
            time.sleep(0.01)
        assert task.feedback is not None and task.feedback.stage == s, (s, task.feedback)
    stage(0)                                                   # MOVING
    _set_fault(commander, "occlude_mocap", True)
    try:
        stage(2)                                               # HOLDING
        if seen_again_after is not None:
            time.sleep(seen_again_after)
            _set_fault(commander, "occlude_mocap", False)
        result = task.check(120.0)
    finally:
        _set_fault(commander, "occlude_mocap", False)
    return result, bag


def _bag_postures(bag: str, **kw):
    from figaroh_ros.io.bags import read_bag_postures
    return read_bag_postures([bag], JOINTS, f"/{NS}/joint_states", f"/{NS}/mocap/pose",
                             f"/{NS}/figaroh/posture_events", **kw)


def test_a_hold_waits_for_the_mocap_body_to_come_back(robot):
    commander, work, _ = robot
    result, bag = _occluded_during_the_hold(commander, work, "seen_again", 1.5)
    assert result.postures_done == 1
    bp = _bag_postures(bag)     # not "posture 0: ... 0 poses in its hold window"
    assert bp.indices == [0] and abs(bp.Q[0][0] - 2.0) < 2e-3


def test_a_body_lost_for_good_ends_its_hold_with_a_note(robot):
    from figaroh_ros.errors import DataError
    commander, work, _ = robot
    t0 = time.monotonic()
    result, bag = _occluded_during_the_hold(commander, work, "lost", None)
    assert result.postures_done == 1 and time.monotonic() - t0 >= HOLD_TIMEOUT
    with pytest.raises(DataError, match="posture 0 of bag .* 0 joint states|posture 0 of "
                                        "bag .* poses in its hold window"):
        _bag_postures(bag)
    from rosbags.highlevel import AnyReader
    from pathlib import Path
    with AnyReader([Path(bag)]) as reader:
        conns = [c for c in reader.connections if c.topic.endswith("posture_events")]
        notes = [reader.deserialize(raw, c.msgtype).note
                 for c, _, raw in reader.messages(connections=conns)]
    assert any(f"0 poses on /{NS}/mocap/pose in the hold (need 3) after {HOLD_TIMEOUT:g} s "
               "more" in n for n in notes), notes


def test_a_goal_that_outlasts_max_goal_seconds_is_stopped(robot):
    """Four postures planned in a few seconds, each move accepted 8 s late by the
    controller (``accept_delay``): the goal is stopped max_goal_seconds after its motion
    began, with ROS_ERROR naming the parameter, before its last posture."""
    from figaroh_ros.errors import ROS_ERROR
    commander, work, _ = robot
    path = _postures(work / "slow.csv", [0.1, 0.3, 0.1, 0.3])
    _set_fault(commander, "accept_delay", 8.0)
    try:
        t0 = time.monotonic()
        result = _failure(_run(commander, path), 120.0)
        took = time.monotonic() - t0
    finally:
        _set_fault(commander, "accept_delay", 0.0)
    assert result.error_code == ROS_ERROR, result.message
    assert f"max_goal_seconds ({MAX_GOAL_SECONDS:g} s): stopped" in result.message
    assert result.postures_done < 4
    assert MAX_GOAL_SECONDS < took < MAX_GOAL_SECONDS + 20.0, took


def test_an_executor_told_to_stop_mid_experiment_exits(robot, monkeypatch):
    """SIGTERM to the executor while it plays postures (a user's Ctrl-C, a launch shut
    down): the node exits at once, not when its goal would have ended, and the client
    hears that the server left instead of waiting for a result that cannot come.  (The
    module's last test: its executor is gone after it.)"""
    import signal

    from figaroh_ros.errors import RosError
    from figaroh_ros.ros import commander as commander_module
    commander, work, procs = robot
    monkeypatch.setattr(commander_module, "SERVER_GONE_AFTER", 1.0)
    executor = procs[-1]
    task = _run(commander, _postures(work / "many.csv", [0.3, -0.3] * 10),
                bag=str(work / "stopped"))                        # 20 postures: a minute
    end = time.monotonic() + 60.0
    while (task.feedback is None or task.feedback.stage == task.feedback.PREFLIGHT) \
            and not task.done() and time.monotonic() < end:
        time.sleep(0.02)
    assert task.feedback is not None and not task.done(), task.feedback
    t0 = time.monotonic()
    executor.send_signal(signal.SIGTERM)
    executor.wait(30.0)
    took = time.monotonic() - t0
    log = (work / "executor.log").read_text(errors="replace")[-2000:]
    assert executor.returncode == 0 and took < 5.0, (took, executor.returncode, log)
    with pytest.raises(RosError, match="the action server left the graph"):
        task.result(30.0)

"""Experiment executor: plays static postures (or a trajectory) on the robot's
FollowJointTrajectory controllers, marks each posture in the bag, drives the recorder.

Parameters (``ros/parameters.py``, ExecutorParameters): ``config`` (the robot YAML with
``robot.urdf``, ``controllers: {name: [joints]}`` and ``driver``), ``max_velocity``,
``settle_time``, ``dwell_time``, ``joint_states_timeout``, ``hold_samples``,
``preflight_topic_window``, ``controller_result_timeout``, ``hold_timeout``,
``clock_tolerance``.  Action
``/figaroh/run_experiment`` (figaroh_ros/action/RunExperiment).

Like ros2_control's joint_trajectory_controller, a goal is checked whole before anything
moves: the file is inside the node's read roots and of a bounded size, the bag path inside
``bag_dir`` (``ros/goal_paths.py``), the whole goal lasts at most ``max_goal_seconds``,
every column naming a joint of the model names a joint the
controllers own, every posture (and trajectory speed) is inside the URDF limits, the
timing (``override_timing``) is finite and positive, the bag does not exist yet, no other
experiment runs and (pre-flight, ``preflight_config`` / ``preflight_identification_config``)
the postures or the trajectory identify the model, then the Preflight action's live checks
pass (controllers, topics alive or at their rate: ``preflight_topic_window``, QoS, TF,
model: ``ros/goal_checks.py``); otherwise the goal ends at once with INVALID_GOAL and the
reason.
Each motion is split across the controllers owning its joints; a controller that rejects or
aborts ends the goal with CONTROLLER_ABORTED; cancelling cancels the controllers' goals
(they hold position) and stops the recorder.  A watchdog ends the goal (ROS_ERROR, the
controllers' goals cancelled, the recorder stopped) when no joint state arrived for
``joint_states_timeout`` s: a robot, driver or network that stopped.  Each hold lasts
``dwell_time`` of our clock AND of the robot's stamps (``hold_samples`` joint states stamped
inside it), so that a robot publishing late or in bursts still fills every hold window;
stamps that have not covered a hold ``hold_timeout`` s after it ended on our clock (a robot
clock behind ours, a driver replaying old states) end the goal with ROS_ERROR, as does a
controller whose result is not in ``controller_result_timeout`` s after its trajectory's end
(``ros/moves.py``: every wait of a motion is bounded).
During every move the measured positions are held against the commanded trajectory (the
cubic Hermite interpolation a joint_trajectory_controller follows): a joint further than
``path_tolerance`` from it (``excitation/tracking.py``: joint states may lag ``TRACKING_LAG`` s
plus the controllers' time to accept the goal)
aborts the goal with CONTROLLER_ABORTED naming the joint and its error, the controllers'
goals cancelled and the bag marked; the same tolerance goes to the controllers as the
goal's ``path_tolerance``, and a controller that aborts on it (PATH_TOLERANCE_VIOLATED) is
reported as such.  The joint states (topic of the robot config's ``driver`` section,
subscribed best effort) are heard only while a goal runs: an idle executor costs nothing.
"""
from __future__ import annotations

import contextlib
import math
import sys
import time
from dataclasses import dataclass

import numpy as np
import pinocchio as pin
from control_msgs.action import FollowJointTrajectory
from geometry_msgs.msg import PoseStamped
from rclpy.action import ActionServer, CancelResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node

from figaroh_ros.action import RunExperiment
from figaroh_ros.config.robot import load_robot_config
from figaroh_ros.errors import SUCCESSFUL, FigarohError, ModelError, RosError
from figaroh_ros.excitation.tracking import MeasurementTimes
from figaroh_ros.io.bag_model import nominal_model
from figaroh_ros.io.experiment_files import (check_limits, header, misspelt_columns,
                                             read_postures, read_trajectory,
                                             trajectory_velocities)
from figaroh_ros.msg import PostureEvent
from figaroh_ros.ros.action_client import ActionClient
from figaroh_ros.ros.common import GoalRefused, first_answer, run_node
from figaroh_ros.ros.description import live_providers
from figaroh_ros.ros.goal_checks import goal_timing, play_seconds, preflight_goal
from figaroh_ros.ros.goal_paths import RESULT_TIMEOUT, GoalPaths
from figaroh_ros.ros.goal_runner import GoalLifecycle
from figaroh_ros.ros.memory_lock import lock_node_memory
from figaroh_ros.ros.moves import POLL_S, ControllerMoves
from figaroh_ros.ros.parameters import ExecutorParameters, declare
from figaroh_ros.ros.polled import HeardJointStates, HeardStamps
from figaroh_ros.ros.preflight_action import (
    preflight_calibration, preflight_identification, refuse_unidentifiable, serve_preflight
)
from figaroh_ros.ros.qos import SERVICE_QOS
from figaroh_ros.srv import RecorderControl

Feedback = RunExperiment.Feedback
HOLD_POSES = 3      # mocap poses a hold waits for (what the bag's reading of it needs)


@dataclass
class Experiment:
    """A checked goal: the joints, the postures (or samples) and the timing."""

    names: list[str]
    Q: np.ndarray
    max_velocity: float
    settle_time: float
    dwell_time: float
    bag_path: str
    times: np.ndarray | None = None      # a trajectory: sample times and velocities
    V: np.ndarray | None = None


class Executor(ControllerMoves, Node):
    def __init__(self):
        super().__init__("executor")
        self.params = declare(self, ExecutorParameters)
        lock_node_memory(self, self.params.lock_memory)
        checks_off = self._preflight_switch()
        self.cfg = load_robot_config(self.params.config)
        xml, self.provenance = nominal_model(self.cfg.model, self.cfg.base_dir,
                                             live=live_providers(self))
        self.model_xml, self.preflight = xml, preflight_calibration(
            self.params.preflight_config, xml)
        self.preflight_identification = preflight_identification(
            self.params.preflight_identification_config, xml)
        try:
            self.model = pin.buildModelFromXML(xml)
        except (ValueError, RuntimeError) as exc:
            raise ModelError(f"{self.provenance.location}: {exc}") from None
        self.get_logger().info(f"model from {self.provenance.source} "
                               f"{self.provenance.location} (sha256 "
                               f"{self.provenance.sha256[:12]})")
        self.limits, self.vlimits = {}, {}
        for j in self.cfg.joints:
            if not self.model.existJointName(j):
                raise ModelError(f"{self.params.config}: controlled joint {j!r} is not in "
                                 f"{self.provenance.location}")
            jm = self.model.joints[self.model.getJointId(j)]
            self.limits[j] = (self.model.lowerPositionLimit[jm.idx_q],
                              self.model.upperPositionLimit[jm.idx_q])
            self.vlimits[j] = float(self.model.velocityLimit[jm.idx_v])
        # what goals may read and write, and the words an answer may say (ros/goal_paths.py)
        self.paths = GoalPaths(self.params, self.params.bag_dir,
                               [n for n in self.model.names] + list(self.cfg.joints))
        self.group = ReentrantCallbackGroup()
        self.trajectory_clients = {name: ActionClient(self, FollowJointTrajectory,
                                                      f"{name}/follow_joint_trajectory",
                                                      callback_group=self.group)
                                   for name in self.cfg.controllers}
        self.recorder = self.create_client(RecorderControl, "figaroh/recorder/control",
                                           qos_profile=SERVICE_QOS, callback_group=self.group)
        self.pub_event = self.create_publisher(PostureEvent, "figaroh/posture_events", 100)
        self.unmeasured = {self.resolve_topic_name(t)      # recorded, but not measurements
                           for t in ("figaroh/posture_events", "robot_description")}
        # the joints it drives: a state naming none of them is dropped, by name (polled.py)
        self.heard = HeardJointStates(self, self.cfg.driver.joint_states.topic,
                                      max(64, 2 * self.params.hold_samples),
                                      joints=self.cfg.joints)
        pose = self.cfg.driver.pose              # the mocap body every hold must see
        self.poses = HeardStamps(self.heard.polled, pose.topic, PoseStamped, 256) \
            if pose is not None and pose.required else None
        # one experiment, one Preflight at a time (ros/goal_runner.py, preflight_action.py)
        self.goals = GoalLifecycle(self)
        self.goals.add("experiment", "an experiment", after_bug="experiment stopped")
        self.sent = []          # the goals sent to the controllers in this move
        self.times = MeasurementTimes()     # when the heard joint states were measured
        self.ends_by: float | None = None   # monotonic time the goal under way must end by
        ActionServer(self, RunExperiment, "figaroh/run_experiment", self._execute,
                     cancel_callback=lambda h: CancelResponse.ACCEPT,
                     result_timeout=RESULT_TIMEOUT,
                     callback_group=self.group)
        serve_preflight(self)                  # figaroh/preflight (ros/preflight_action.py)
        for warning in checks_off:             # once started: a refused start says one line
            self.get_logger().warning(warning)

    def _preflight_switch(self) -> list[str]:
        """``preflight`` false: the checks' parameters cleared, with a warning naming the
        argument at once (the operator's choice, said whether the node starts or not).
        Returns the warnings the started node logs: each check left off by its own
        parameter."""
        p = self.params
        if not p.preflight:
            self.params = p.model_copy(update={"preflight_config": "",
                                               "preflight_identification_config": "",
                                               "preflight_topic_window": 0.0})
            self.get_logger().warning("preflight:=false: goals move the robot without their "
                                      "identifiability and topic-rate pre-flight")
            return []
        warnings = []
        if not p.preflight_config:
            warnings.append("preflight_config is '': postures goals are not checked for "
                            "identifiability before they move the robot")
        if p.preflight_topic_window == 0.0:
            warnings.append("preflight_topic_window is 0: the driver's topic rates are not "
                            "checked before a goal moves the robot")
        return warnings

    def destroy_node(self):
        if hasattr(self, "heard"):          # not when a parameter was refused
            self.heard.destroy()
        return super().destroy_node()

    def _watch(self, handle) -> None:
        """Raise when the goal is cancelled, has moved and held the robot for
        ``max_goal_seconds`` (slow controllers, holds waiting for their stamps) or the
        joint states stopped (the robot, its driver or the network is gone: nothing it
        reports can be trusted any more)."""
        self.heard.hear()
        if handle.is_cancel_requested:
            raise RosError("canceled")
        if self.ends_by is not None and time.monotonic() > self.ends_by:
            raise RosError(f"the goal has moved and held the robot for max_goal_seconds "
                           f"({self.params.max_goal_seconds:g} s): stopped")
        silent = self.heard.silence()
        if silent > self.params.joint_states_timeout:
            topic = self.cfg.driver.joint_states.topic
            raise RosError(f"joint states stopped: nothing on {topic} for {silent:.1f} s "
                           f"(joint_states_timeout {self.params.joint_states_timeout} s)")

    # ---------------------------------------------------------------- goal check
    def _unowned(self, path: str) -> list[str]:
        """Columns naming a joint of the model that no controller owns."""
        return [h for h in header(path) if h not in self.cfg.joints
                and h != "universe" and self.model.existJointName(h)]

    def check(self, g) -> Experiment:
        """The goal as an Experiment; GoalRefused saying what is wrong."""
        if bool(g.postures_file) == bool(g.trajectory_file):
            raise GoalRefused("give exactly one of postures_file and trajectory_file")
        path = self.paths.file("trajectory_file" if g.trajectory_file else "postures_file",
                               g.trajectory_file or g.postures_file)
        bag = self.paths.out("bag_path", g.bag_path) if g.bag_path else ""
        try:
            if g.trajectory_file:
                names, times, Q = read_trajectory(path, self.cfg.joints)
                V = trajectory_velocities(times, Q)
            else:
                (names, Q), times, V = read_postures(path, self.cfg.joints), None, None
            misspelt = misspelt_columns(header(path), self.cfg.joints,
                                        self.model.existJointName)
            if misspelt:        # named by their place: the answer quotes nothing of the file
                columns = header(path)
                raise GoalRefused(f"{path}: columns that are no joint of the robot but look "
                                  "like one: " + ", ".join(
                                      f"column {columns.index(c) + 1} -> {j!r}"
                                      for c, j in misspelt.items()))
            unowned = self._unowned(path)
            if unowned:
                raise GoalRefused(f"{path}: columns {unowned} are joints no controller of "
                                  f"{self.params.config} owns {sorted(self.cfg.controllers)}")
            check_limits(names, Q, self.limits, V, self.vlimits)
            refuse_unidentifiable(self, names, Q, times)    # ros/preflight_action.py
        except FigarohError as exc:
            raise GoalRefused(str(exc)) from None
        x = Experiment(names, Q, *goal_timing(g, self.params), bag, times, V)
        seconds, limit = play_seconds(x), self.params.max_goal_seconds
        if seconds > limit:
            raise GoalRefused(f"the goal would move and hold the robot {seconds:.0f} s, more "
                              f"than max_goal_seconds ({limit:g} s)")
        return x

    # ---------------------------------------------------------------- helpers
    def _recorder(self, command: str, path: str = ""):
        if not self.recorder.wait_for_service(timeout_sec=10.0):
            raise RosError("recorder service /figaroh/recorder/control not available")
        # never a second start: a slow refused one repeated could start a recording
        res = first_answer(self.recorder, RecorderControl.Request(command=command, bag_path=path),
                           10.0, f"recorder {command}", math.inf if command == "start" else 2.0)
        if not res.success:
            raise RosError(f"recorder {command}: {res.message}")
        return res

    def _wait_for_data(self, timeout: float = 20.0):
        """Wait until the recorder receives every recorded topic that has a publisher
        (discovery between two other processes can take seconds)."""
        t0 = time.monotonic()
        while True:
            st = self._recorder("status")
            silent = [t for t, c in zip(st.topics, st.counts)
                      if c == 0 and t not in self.unmeasured
                      and self.count_publishers(t) > 0]
            if not silent:
                return
            if time.monotonic() - t0 > timeout:
                raise RosError(f"the recorder receives nothing on {silent}")
            time.sleep(0.05)

    def _event(self, index: int, event: int, names, q, note: str = "") -> int:
        """Publish a mark; its stamp (ns)."""
        msg = PostureEvent(index=index, event=event, joint_names=list(names),
                           positions=[float(v) for v in q], note=note)
        now = self.get_clock().now()
        msg.header.stamp = now.to_msg()
        self.pub_event.publish(msg)
        return now.nanoseconds

    def _sleep(self, seconds: float, handle):
        t0 = time.monotonic()
        while time.monotonic() - t0 < seconds:
            self._watch(handle)
            time.sleep(POLL_S)

    def _held(self, since_ns: int, seconds: float) -> tuple[int, float] | None:
        """None when the robot's own stamps cover the hold: ``hold_samples`` joint states
        stamped after ``since_ns``, the last ``seconds`` after it; else how many are
        stamped after it, and the newest's stamp (s) after it."""
        after = [s for s in list(self.heard.stamps) if s >= since_ns]
        newest = (after[-1] - since_ns) * 1e-9 if after else -math.inf
        if len(after) >= self.params.hold_samples and newest >= seconds:
            return None
        return len(after), newest

    def _hold(self, seconds: float, handle, since_ns: int) -> str:
        """Hold ``seconds`` of our clock and of the robot's: a robot that publishes late or
        in bursts (a loaded machine) still fills every hold window of the bag.  RosError
        when its stamps do not cover the hold ``hold_timeout`` s after our clock's.  Then
        :meth:`_seen`: what the hold's end mark notes."""
        self._sleep(seconds, handle)
        t0, late = time.monotonic(), self.params.hold_timeout
        while (short := self._held(since_ns, seconds)) is not None:
            self._watch(handle)
            if time.monotonic() - t0 > late:
                raise RosError(
                    f"the joint states' stamps do not cover a {seconds:g} s hold "
                    f"{late:g} s after it ended on this computer's clock: "
                    f"{short[0]} states stamped in it (hold_samples "
                    f"{self.params.hold_samples}), the newest {short[1]:.2f} s into it "
                    "(is the robot's clock behind this computer's? hold_timeout)")
            time.sleep(POLL_S)
        return self._seen(handle, since_ns)

    def _seen(self, handle, since_ns: int) -> str:
        """Hold on until ``HOLD_POSES`` poses of the mocap body are stamped in the hold (a
        body the cameras lost a moment, a frame delivered late): ''.  After
        ``hold_timeout`` s without them the hold ends with a warning, noted in its end
        mark (the bag's reading refuses the posture, or leaves it out with
        ``bag.skip_unmeasured``)."""
        t0, late = time.monotonic(), self.params.hold_timeout
        while self.poses is not None and \
                (seen := self.poses.count_from(since_ns)) < HOLD_POSES:
            self._watch(handle)
            if time.monotonic() - t0 > late:
                topic = self.resolve_topic_name(self.poses.topic)
                note = (f"{seen} poses on {topic} in the hold (need {HOLD_POSES}) "
                        f"after {late:g} s more: has the mocap lost the body?")
                self.get_logger().warning(note)
                return note
            time.sleep(POLL_S)
        return ""

    # ---------------------------------------------------------------- playing
    def _trajectory(self, x: Experiment, handle, fb) -> int:
        """Move to the start, then play the whole trajectory; its window is marked as
        posture 0 (HOLD_START .. HOLD_END) in the bag."""
        fb.stage, fb.fraction = Feedback.MOVING, 0.0
        handle.publish_feedback(fb)
        self._move(x.names, x.Q[0], x.max_velocity, handle)
        self._sleep(x.settle_time, handle)
        fb.stage, fb.fraction = Feedback.TRAJECTORY, 0.1
        handle.publish_feedback(fb)
        self.get_logger().info(f"trajectory: {len(x.times)} points over {x.times[-1]:.1f} s, "
                               f"peak joint speed {np.abs(x.V).max():.2f}")
        self._event(0, PostureEvent.HOLD_START, x.names, x.Q[0])
        lead = 0.05                     # the first point is where the joints already are
        self._follow(x.names, x.times[1:] + lead, x.Q[1:], x.V[1:], handle)
        self._event(0, PostureEvent.HOLD_END, x.names, x.Q[-1])
        return len(x.times)

    def _posture(self, i: int, x: Experiment, handle, fb) -> None:
        """Reach posture ``i``, settle, hold; each phase marked in the bag."""
        q, n = x.Q[i], len(x.Q)
        fb.posture, fb.stage, fb.fraction = i, Feedback.MOVING, i / n
        handle.publish_feedback(fb)
        self._move(x.names, q, x.max_velocity, handle)
        self._event(i, PostureEvent.REACHED, x.names, q)
        fb.stage, fb.fraction = Feedback.SETTLING, (i + 0.5) / n
        handle.publish_feedback(fb)
        self._sleep(x.settle_time, handle)
        start = self._event(i, PostureEvent.HOLD_START, x.names, q)
        fb.stage, fb.fraction = Feedback.HOLDING, (i + 1.0) / n
        handle.publish_feedback(fb)
        note = self._hold(x.dwell_time, handle, start)
        self._event(i, PostureEvent.HOLD_END, x.names, q, note)

    def _play(self, x: Experiment, handle, result) -> str:
        fb = Feedback(postures_total=len(x.Q))
        if x.bag_path:
            result.bag_path = self._recorder("start", x.bag_path).bag_path
            self._wait_for_data()
        if x.times is not None:
            result.postures_done = self._trajectory(x, handle, fb)
        else:
            for i in range(len(x.Q)):
                self._posture(i, x, handle, fb)
                result.postures_done = i + 1
        time.sleep(0.1)                  # let the last marks reach the recorder
        if x.bag_path:
            self._recorder("stop")
        return (f"trajectory of {result.postures_done} points played" if x.times is not None
                else f"{result.postures_done} postures played")

    def _stopped(self, x: Experiment | None, why: str, posture: int):
        """After a failure or a cancel: the controllers hold, the bag gets an ABORTED mark
        saying why (at the posture under way), the recorder stops."""
        self._cancel_sent()
        if x is not None and x.bag_path:
            self._event(posture, PostureEvent.ABORTED, x.names, x.Q[min(posture, len(x.Q) - 1)],
                        why)
            time.sleep(0.1)                  # let the mark reach the recorder
            try:
                self._recorder("stop")
            except RosError:
                pass

    # ---------------------------------------------------------------- action
    def _execute(self, handle):
        """One experiment at a time (``ros/goal_runner.py``); a failure once started stops
        it (:meth:`_stopped`), and a failure after a cancel ends it CANCELED."""
        result, goal = RunExperiment.Result(), {}
        return self.goals.exclusive(
            "experiment", handle, result, lambda: self._run(handle, result, goal),
            stop=lambda why: self._stopped(goal.get("x"), why, result.postures_done))

    def _run(self, handle, result, goal: dict):
        goal["x"] = x = self.check(handle.request)
        took = preflight_goal(self, handle, len(x.Q))     # ros/goal_checks.py
        self.get_logger().info(f"pre-flight passed in {took:.2f} s")
        self.times = MeasurementTimes()
        self.ends_by = time.monotonic() + self.params.max_goal_seconds
        try:
            with self.heard.listening(), \
                    self.poses.listening() if self.poses else contextlib.nullcontext():
                message = self._play(x, handle, result)
        finally:
            self.ends_by = None
        return self.goals.end(handle, result, SUCCESSFUL, message)


def main(args=None):
    return run_node(Executor, "executor", 4, args)


if __name__ == "__main__":
    sys.exit(main())

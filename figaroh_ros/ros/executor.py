"""Experiment executor: plays static postures (or a trajectory) on the robot's
FollowJointTrajectory controllers, marks each posture in the bag, drives the recorder.

Parameters: ``config`` (the robot YAML with ``robot.urdf`` and ``controllers: {name:
[joints]}``; the simulation configs serve), ``max_velocity`` (default 1.0), ``settle_time``
(0.2 s), ``dwell_time`` (0.5 s).  Action ``/figaroh/run_experiment``
(figaroh_ros/action/RunExperiment).  Every posture is checked against the URDF limits
before anything moves; each goal is split across the controllers owning its joints;
cancelling cancels the controllers' goals (they hold position) and stops the recorder.
"""
from __future__ import annotations

import sys
import time

import numpy as np
import pinocchio as pin
from control_msgs.action import FollowJointTrajectory
from rclpy.action import ActionClient, ActionServer, CancelResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectoryPoint

from figaroh_ros.action import RunExperiment
from figaroh_ros.config.robot import load_robot_config
from figaroh_ros.errors import DataError
from figaroh_ros.io.experiment_files import (
    check_limits, read_postures, read_trajectory, trajectory_velocities
)
from figaroh_ros.msg import PostureEvent
from figaroh_ros.ros.common import run_node, sec_to_duration
from figaroh_ros.srv import RecorderControl


class Executor(Node):
    def __init__(self):
        super().__init__("executor")
        self.RunExperiment, self.PostureEvent = RunExperiment, PostureEvent
        self.cfg = load_robot_config(self.declare_parameter("config", "").value)
        self.vmax = float(self.declare_parameter("max_velocity", 1.0).value)
        self.settle = float(self.declare_parameter("settle_time", 0.2).value)
        self.dwell = float(self.declare_parameter("dwell_time", 0.5).value)
        model = pin.buildModelFromUrdf(self.cfg.urdf)
        self.limits, self.vlimits = {}, {}
        for j in self.cfg.joints:
            jm = model.joints[model.getJointId(j)]
            self.limits[j] = (model.lowerPositionLimit[jm.idx_q], model.upperPositionLimit[jm.idx_q])
            self.vlimits[j] = float(model.velocityLimit[jm.idx_v])
        self.group = ReentrantCallbackGroup()
        self.trajectory_clients = {name: ActionClient(self, FollowJointTrajectory,
                                           f"/{name}/follow_joint_trajectory",
                                           callback_group=self.group)
                        for name in self.cfg.controllers}
        self.recorder = self.create_client(RecorderControl, "/figaroh/recorder/control",
                                           callback_group=self.group)
        self.RecorderControl = RecorderControl
        self.pub_event = self.create_publisher(PostureEvent, "/figaroh/posture_events", 100)
        self.positions: dict[str, float] = {}
        self.create_subscription(JointState, "/joint_states", self._joint_states, 100,
                                 callback_group=self.group)
        ActionServer(self, RunExperiment, "/figaroh/run_experiment", self._execute,
                     cancel_callback=lambda h: CancelResponse.ACCEPT,
                     callback_group=self.group)
        self.active = []

    def _joint_states(self, msg):
        for n, p in zip(msg.name, msg.position):
            self.positions[n] = p

    # ---------------------------------------------------------------- helpers
    def _wait(self, future, timeout: float, what: str):
        t0 = time.monotonic()
        while not future.done():
            if time.monotonic() - t0 > timeout:
                raise DataError(f"timed out after {timeout:.0f} s waiting for {what}")
            time.sleep(0.005)
        return future.result()

    def _recorder(self, command: str, path: str = ""):
        if not self.recorder.wait_for_service(timeout_sec=10.0):
            raise DataError("recorder service /figaroh/recorder/control not available")
        req = self.RecorderControl.Request(command=command, bag_path=path)
        res = self._wait(self.recorder.call_async(req), 10.0, f"recorder {command}")
        if not res.success:
            raise DataError(f"recorder {command}: {res.message}")
        return res

    def _wait_for_data(self, timeout: float = 20.0):
        """Wait until the recorder receives every recorded topic that has a publisher
        (discovery between two other processes can take seconds)."""
        t0 = time.monotonic()
        while True:
            st = self._recorder("status")
            silent = [t for t, c in zip(st.topics, st.counts)
                      if c == 0 and t not in ("/figaroh/posture_events", "/robot_description")
                      and self.count_publishers(t) > 0]
            if not silent:
                return
            if time.monotonic() - t0 > timeout:
                raise DataError(f"the recorder receives nothing on {silent}")
            time.sleep(0.05)

    def _event(self, index: int, event: int, names, q):
        msg = self.PostureEvent(index=index, event=event, joint_names=list(names),
                                positions=[float(v) for v in q])
        msg.header.stamp = self.get_clock().now().to_msg()
        self.pub_event.publish(msg)

    def _move(self, names, q, handle) -> None:
        """Send the posture to every controller owning some of its joints; wait for all."""
        current = self._current(names)
        if np.any(np.isnan(current)):
            raise DataError("no joint state received for "
                                  f"{[n for n, c in zip(names, current) if np.isnan(c)]}")
        duration = max(0.5, 1.5 * float(np.max(np.abs(q - current))) / self.vmax)
        self._follow(names, np.array([duration]), np.atleast_2d(q),
                     np.zeros((1, len(names))), handle)

    def _current(self, names, timeout: float = 10.0) -> np.ndarray:
        """The latest joint positions of ``names``, waiting up to ``timeout`` for the first
        joint states (discovery of the robot's publisher can take seconds)."""
        t0 = time.monotonic()
        while True:
            current = np.array([self.positions.get(n, np.nan) for n in names])
            if not np.any(np.isnan(current)) or time.monotonic() - t0 > timeout:
                return current
            time.sleep(0.05)

    def _follow(self, names, times, Q, V, handle) -> None:
        """Send a trajectory split per controller; wait for every controller to finish."""
        sends = []
        for ctrl, owned in self.cfg.controllers.items():
            sel = [k for k, n in enumerate(names) if n in owned]
            if not sel:
                continue
            goal = FollowJointTrajectory.Goal()
            goal.trajectory.joint_names = [names[k] for k in sel]
            for t, q, v in zip(times, Q, V):
                pt = JointTrajectoryPoint(positions=[float(q[k]) for k in sel],
                                          velocities=[float(v[k]) for k in sel])
                sec_to_duration(float(t), pt.time_from_start)
                goal.trajectory.points.append(pt)
            client = self.trajectory_clients[ctrl]
            if not client.wait_for_server(timeout_sec=10.0):
                raise DataError(f"controller action /{ctrl}/follow_joint_trajectory "
                                      "not available")
            sends.append((ctrl, client.send_goal_async(goal)))
        handles = []
        for ctrl, fut in sends:
            gh = self._wait(fut, 10.0, f"{ctrl} to accept the goal")
            if not gh.accepted:
                raise DataError(f"{ctrl} rejected the goal")
            handles.append((ctrl, gh, gh.get_result_async()))
        self.active = [gh for _, gh, _ in handles]
        for ctrl, gh, fut in handles:
            while not fut.done():
                if handle.is_cancel_requested:
                    raise DataError("cancelled")
                time.sleep(0.005)
            res = fut.result().result
            if res.error_code != FollowJointTrajectory.Result.SUCCESSFUL:
                raise DataError(f"{ctrl} failed: {res.error_code} {res.error_string}")
        self.active = []

    def _sleep(self, seconds: float, handle):
        t0 = time.monotonic()
        while time.monotonic() - t0 < seconds:
            if handle.is_cancel_requested:
                raise DataError("cancelled")
            time.sleep(0.005)

    def _trajectory(self, names, times, Q, V, handle, fb) -> int:
        """Move to the start, then play the whole trajectory; its window is marked as
        posture 0 (HOLD_START .. HOLD_END) in the bag."""
        vmax = np.abs(V).max(axis=0)
        fb.stage, fb.percent = "moving", 0.0
        handle.publish_feedback(fb)
        self._move(names, Q[0], handle)
        self._sleep(self.settle, handle)
        fb.stage, fb.percent = "trajectory", 10.0
        handle.publish_feedback(fb)
        self.get_logger().info(f"trajectory: {len(times)} points over {times[-1]:.1f} s, "
                               f"peak joint speed {vmax.max():.2f}")
        self._event(0, self.PostureEvent.HOLD_START, names, Q[0])
        lead = 0.05                     # the first point is where the joints already are
        self._follow(names, times[1:] + lead, Q[1:], V[1:], handle)
        self._event(0, self.PostureEvent.HOLD_END, names, Q[-1])
        return len(times)

    # ---------------------------------------------------------------- action
    def _execute(self, handle):
        g = handle.request
        result = self.RunExperiment.Result()
        recording = False
        done = 0
        try:
            if g.trajectory_file:
                names, times, Q = read_trajectory(g.trajectory_file, self.cfg.joints)
            else:
                names, Q = read_postures(g.postures_file, self.cfg.joints)
            V = trajectory_velocities(times, Q) if g.trajectory_file else None
            check_limits(names, Q, self.limits, V, self.vlimits)   # before anything moves
            vmax = g.max_velocity or self.vmax
            settle = g.settle_time or self.settle
            dwell = g.dwell_time or self.dwell
            if g.bag_path:
                result.bag_path = self._recorder("start", g.bag_path).bag_path
                recording = True
                self._wait_for_data()
            fb = self.RunExperiment.Feedback(postures_total=len(Q))
            old_vmax, self.vmax = self.vmax, vmax
            try:
                if g.trajectory_file:
                    done = self._trajectory(names, times, Q, V, handle, fb)
                    Q = Q[:0]
                for i, q in enumerate(Q):
                    fb.posture, fb.stage, fb.percent = i, "moving", 100.0 * i / len(Q)
                    handle.publish_feedback(fb)
                    self._move(names, q, handle)
                    self._event(i, self.PostureEvent.REACHED, names, q)
                    fb.stage = "settling"
                    handle.publish_feedback(fb)
                    self._sleep(settle, handle)
                    self._event(i, self.PostureEvent.HOLD_START, names, q)
                    fb.stage = "holding"
                    handle.publish_feedback(fb)
                    self._sleep(dwell, handle)
                    self._event(i, self.PostureEvent.HOLD_END, names, q)
                    done += 1
            finally:
                self.vmax = old_vmax
            time.sleep(0.1)          # let the last marks reach the recorder
            if recording:
                self._recorder("stop")
                recording = False
            handle.succeed()
            result.success = True
            result.message = (f"trajectory of {done} points played" if g.trajectory_file
                              else f"{done} postures played")
        except Exception as exc:
            for gh in self.active:               # controllers hold where they are
                gh.cancel_goal_async()
            self.active = []
            if recording:
                try:
                    self._recorder("stop")
                except DataError:
                    pass
            result.success = False
            result.message = str(exc)
            self.get_logger().warn(f"experiment stopped: {exc}")
            if handle.is_cancel_requested:
                handle.canceled()
            else:
                handle.abort()
        result.postures_done = done
        return result


def main(args=None):
    return run_node(Executor, "executor", 4, args)


if __name__ == "__main__":
    sys.exit(main())

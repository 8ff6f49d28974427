"""The simulated robot's trajectory controllers, and the faults a test sets on them at run
time (``ros2 param set /sim_robot <fault> <value>``).

Each controller ``<name>`` of the config serves ``<name>/follow_joint_trajectory`` and, like
ros2_control's joint_trajectory_controller, rejects at acceptance a goal with joints it
does not own, positions outside the URDF limits, arrays whose lengths are not the joints',
values not finite (or beyond ``sane.MAX_ABS``), a time line not increasing from 0 (a
first point at 0 s is the start, taken only where the joints are) or a non-zero final
velocity, with a warning naming the controller and why; it follows an
accepted goal from its acceptance; a cancelled goal holds the current position.

Faults (parameters of the node, checked when set):

- ``stuck_joint`` (a controlled joint, "" = none): that joint stops where it is, as a
  blocked joint would, while its controller still reports success;
- ``abort_goals`` ("" = none): every controller aborts its goal under way, and any goal it
  accepts while it is set, with PATH_TOLERANCE_VIOLATED and that text as
  ``error_string``, the joints holding where they are (a fault, a protective stop);
- ``accept_delay`` (s, 0 to 30): the controllers answer a goal that much later;
- ``withhold_results`` (bool): the controllers play their goals and never report an end
  (a hung driver; a result lost on the network), until the goal is cancelled;
- ``clock_offset`` (s, -3600 to 3600): the robot's clock, which stamps its joint states,
  currents, wrench and link encoders, is that far ahead of this computer's (negative:
  behind), as a robot computer without time synchronisation;
- ``occlude_mocap`` (bool): the mocap publishes no pose (the cameras lost the body).
"""
from __future__ import annotations

import math
import time

import numpy as np
import rclpy
from control_msgs.action import FollowJointTrajectory
from rcl_interfaces.msg import SetParametersResult
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.exceptions import ParameterException

from figaroh_ros.errors import ConfigError
from figaroh_ros.ros.common import duration_to_sec
from figaroh_ros.ros.sane import MAX_ABS
from figaroh_ros.sim.motion import Motion

START_TOLERANCE = 0.01  # rad (m): a first point at 0 s this close to the joints is the start

# s between two feedbacks of a controller's goal: 20 Hz, the action_monitor_rate of
# ur_robot_driver's trajectory controllers (each feedback wakes the executor node's
# multi-threaded executor; the executor took 17.3 % of a core during a goal with 50 Hz,
# 14.6 % with 20 Hz)
FEEDBACK_PERIOD = 0.05
# fault -> (default, what a value must be, its check)
FAULTS = {
    "stuck_joint": ("", "a controlled joint or \"\"", None),
    "abort_goals": ("", "a string (\"\" = none)", lambda v: isinstance(v, str)),
    "accept_delay": (0.0, "a float in [0, 30] s",
                     lambda v: isinstance(v, float) and 0.0 <= v <= 30.0),
    "withhold_results": (False, "a bool", lambda v: isinstance(v, bool)),
    "clock_offset": (0.0, "a float in [-3600, 3600] s",
                     lambda v: isinstance(v, float) and -3600.0 <= v <= 3600.0),
    "occlude_mocap": (False, "a bool", lambda v: isinstance(v, bool)),
}


class SimControllers:
    """The controllers and faults of the simulated robot node (a base of ``SimRobot``,
    whose ``joints``, ``lower``/``upper``, ``q``/``v``/``a``, ``lock``, ``motions`` and
    ``cfg.controllers`` they use)."""

    def _serve_controllers(self, group) -> None:
        """Declare the faults (none set, unless given at start: checked as when set) and
        serve every controller's action."""
        self.stuck: tuple[int, float] | None = None
        self.abort_reason, self.accept_delay = "", 0.0
        self.withhold_results, self.clock_offset_ns, self.occluded = False, 0, False
        for name, (default, want, _) in FAULTS.items():
            try:
                value = self.declare_parameter(name, default).value
            except ParameterException:          # a value of another type given at start
                raise ConfigError(f"parameter {name}: "
                                  f"{self._parameter_overrides[name].value!r} refused: "
                                  f"{want}") from None
            done = self._fault_set(name, value)
            if not done.successful:
                raise ConfigError(f"parameter {name}: {value!r} refused: "
                                  f"{done.reason.split(': ', 1)[1]}")
        self.started: dict[int, Motion] = {}     # id of an accepted goal -> its motion
        self.servers = [ActionServer(
            self, FollowJointTrajectory, f"{name}/follow_joint_trajectory",
            execute_callback=lambda h, n=name: self._execute(n, h),
            goal_callback=lambda g, n=name: self._accept(n, g),
            cancel_callback=lambda h: CancelResponse.ACCEPT, callback_group=group)
            for name in self.cfg.controllers]

    def _fault_set(self, name: str, value) -> SetParametersResult:
        """Set the fault ``name`` to ``value``, or refuse it saying what it must be."""
        _, want, valid = FAULTS[name]
        if name == "stuck_joint":
            if value and value not in self.joints:
                return SetParametersResult(successful=False,
                                           reason=f"stuck_joint: unknown joint {value!r}")
        elif not valid(value):
            return SetParametersResult(successful=False, reason=f"{name}: {want}")
        with self.lock:
            if name == "stuck_joint":
                k = self.joints.index(value) if value else None
                self.stuck = None if k is None else (k, float(self.q[k]))
            elif name == "abort_goals":
                self.abort_reason = value
            elif name == "accept_delay":
                self.accept_delay = value
            elif name == "withhold_results":
                self.withhold_results = value
            elif name == "occlude_mocap":
                self.occluded = value
            else:
                self.clock_offset_ns = round(value * 1e9)
        return SetParametersResult(successful=True)

    def _check(self, controller: str, goal) -> str | None:
        """Why a goal is invalid (None if valid)."""
        traj = goal.trajectory
        own = self.cfg.controllers[controller]
        names = list(traj.joint_names)
        if not names or len(set(names)) != len(names):
            return "joint_names empty or repeated"
        unknown = [n for n in names if n not in own]
        if unknown:
            more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
            return f"joints {unknown[:5]}{more} are not controlled by {controller} ({own})"
        if not traj.points:
            return "trajectory has no point"
        last = 0.0
        for k, p in enumerate(traj.points):
            if len(p.positions) != len(names):
                return f"point {k} has {len(p.positions)} positions for {len(names)} joints"
            for field in ("velocities", "accelerations"):
                values = getattr(p, field)
                if len(values) not in (0, len(names)):
                    return f"point {k} has {len(values)} {field} for {len(names)} joints"
                if not all(math.isfinite(v) and abs(v) <= MAX_ABS for v in values):
                    return f"point {k}: {field} not finite or beyond {MAX_ABS:g}"
            t = duration_to_sec(p.time_from_start)
            if k == 0 and t == 0.0 and len(traj.points) > 1:
                jump = self._jump(names, p.positions)
                if jump > START_TOLERANCE:  # a controller would jump its reference there
                    return (f"point 0: time_from_start 0 s at {jump:.3g} rad from the "
                            f"current positions (at most {START_TOLERANCE:g})")
                continue
            if t <= last:       # the motion starts from where the joints are, at 0
                return (f"point {k}: time_from_start {t:g} s must be after "
                        f"{'the previous point' if k else 'the start (0)'}")
            last = t
            for n, x in zip(names, p.positions):
                i = self.joints.index(n)
                if not np.isfinite(x) or x < self.lower[i] - 1e-9 or x > self.upper[i] + 1e-9:
                    return (f"point {k}: {n} = {x} outside its limits "
                            f"[{self.lower[i]:.4g}, {self.upper[i]:.4g}]")
        v_end = traj.points[-1].velocities
        if v_end and np.any(np.abs(v_end) > 1e-9):
            return "the last point must have zero velocity"
        return None

    def _jump(self, names, positions) -> float:
        """The largest distance of ``positions`` from the joints' current positions."""
        with self.lock:
            now = self.q[[self.joints.index(n) for n in names]].copy()
        return float(np.max(np.abs(np.asarray(positions, float) - now), initial=0.0))

    def _accept(self, controller, goal):
        """Accept a valid goal and start it; reject any other with a warning naming the
        controller and why (a goal the checks let through and that still cannot start:
        the error as the reason, the node serving on)."""
        time.sleep(self.accept_delay)
        try:
            why = self._check(controller, goal)
            if not why:
                self._start(controller, goal)
        except Exception as exc:    # noqa: BLE001 - a goal must not take the robot down
            why = f"cannot be followed: {type(exc).__name__}: {exc}"
        if why:
            self.get_logger().warning(f"{controller}/follow_joint_trajectory: goal "
                                      f"rejected: {why}")
            return GoalResponse.REJECT
        return GoalResponse.ACCEPT

    def _start(self, controller, goal) -> None:
        """Follow the goal's trajectory from now, its acceptance, as a
        joint_trajectory_controller does from its next update; not from when the execute
        callback runs, which a loaded computer can delay by more than a tracking check
        allows (a 4000-point sweep started late)."""
        traj = goal.trajectory
        idx = [self.joints.index(n) for n in traj.joint_names]
        points = [p for p in traj.points if duration_to_sec(p.time_from_start) > 0.0]
        times = np.array([duration_to_sec(p.time_from_start) for p in points])
        P = np.array([list(p.positions) for p in points])
        V = np.array([list(p.velocities) if p.velocities else [0.0] * len(idx)
                      for p in points])
        with self.lock:
            motion = Motion(idx, self.q[idx].copy(), times, P, V)
            self.motions[controller] = motion
        self.started[id(goal)] = motion

    def _execute(self, controller, handle):
        motion = self.started.pop(id(handle.request))
        names, idx = list(handle.request.trajectory.joint_names), motion.idx
        fb = FollowJointTrajectory.Feedback()
        fb.joint_names = names
        result = FollowJointTrajectory.Result()
        fed = 0.0                                   # monotonic time of the last feedback
        while rclpy.ok():
            if handle.is_cancel_requested:
                with self.lock:                     # hold where the joints are
                    self.motions.pop(controller, None)
                    self.v[idx] = 0.0
                handle.canceled()
                result.error_string = "cancelled: holding position"
                return result
            with self.lock:
                current = self.motions.get(controller)
                if current is not None and current is not motion:
                    handle.abort()
                    result.error_code = FollowJointTrajectory.Result.INVALID_GOAL
                    result.error_string = "preempted by a newer goal"
                    return result
                reason = self.abort_reason
                if reason:                          # the controller gives up: hold
                    if current is motion:
                        del self.motions[controller]
                    self.v[idx], self.a[idx] = 0.0, 0.0
                done = motion.done and not self.withhold_results
                fb.actual.positions = self.q[idx].tolist()
            if reason:
                handle.abort()
                result.error_code = FollowJointTrajectory.Result.PATH_TOLERANCE_VIOLATED
                result.error_string = reason
                return result
            if time.monotonic() - fed >= FEEDBACK_PERIOD:
                handle.publish_feedback(fb)
                fed = time.monotonic()
            if done:
                break
            time.sleep(0.02)
        handle.succeed()
        result.error_code = FollowJointTrajectory.Result.SUCCESSFUL
        return result

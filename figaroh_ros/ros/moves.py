"""The executor's motions: a trajectory split over the FollowJointTrajectory controllers
that own its joints, sent, followed to its end, its tracking checked meanwhile.

Every wait is bounded and names what it waited for: a controller's acceptance
(``ACCEPT_TIMEOUT``), its result (the node's ``controller_result_timeout`` s after the
trajectory's planned end:
a controller that never reports, a result lost on the network, a controller process gone),
the first joint states.  A goal of a move that stopped (cancel, failure) is cancelled as
soon as the controller accepts it, so that it never moves the robot afterwards.

Used as a base of the executor node (``ros/executor.py``): it reads the node's ``heard``
joint states, ``params.path_tolerance``, ``times``, ``trajectory_clients``, ``cfg`` and
``vlimits``, and calls its ``_watch(handle)`` (cancel, joint-state watchdog).
"""
from __future__ import annotations

import time

import numpy as np
from control_msgs.action import FollowJointTrajectory
from control_msgs.msg import JointTolerance
from trajectory_msgs.msg import JointTrajectoryPoint

from figaroh_ros.errors import CONTROLLER_ABORTED, RosError
from figaroh_ros.excitation.tracking import TRACKING_LAG, reference, tracking_error
from figaroh_ros.model.speeds import joint_speeds, move_duration
from figaroh_ros.ros.common import ResultWatch, sec_to_duration

RESULT_GRACE = 2.0      # s after a trajectory's end before its result is asked for again
ACCEPT_TIMEOUT = 10.0   # s for a controller to accept (or reject) a goal
POLL_S = 0.02   # s between a goal's checks; at 200 Hz: 7.5 CPU-s an experiment, not 4.3
CONTROLLER_ERRORS = {-1: "invalid goal", -2: "invalid joints", -3: "old header timestamp",
                     -4: "path tolerance violated", -5: "goal tolerance violated"}


class ControllerAborted(RosError):
    """A FollowJointTrajectory goal was rejected or aborted by its controller."""

    code = CONTROLLER_ABORTED


class TrackingError(ControllerAborted):
    """A joint left the commanded trajectory by more than the path tolerance."""


class ControllerMoves:
    """Moves on the controllers, for the executor node (see the module's docstring)."""

    def _wait(self, future, timeout: float, what: str, handle=None):
        """The result of ``future``; RosError after ``timeout`` s, or as soon as the goal
        of ``handle`` is cancelled or the joint states stop."""
        t0 = time.monotonic()
        while not future.done():
            if time.monotonic() - t0 > timeout:
                raise RosError(f"timed out after {timeout:.0f} s waiting for {what}")
            if handle is not None:
                self._watch(handle)
            time.sleep(POLL_S)
        return future.result()

    def _current(self, names, timeout: float = 10.0) -> np.ndarray:
        """The latest joint positions of ``names``, waiting up to ``timeout`` for the first
        joint states (discovery of the robot's publisher can take seconds)."""
        t0 = time.monotonic()
        while True:
            self.heard.hear()
            current = np.array([self.heard.positions.get(n, np.nan) for n in names])
            if not np.any(np.isnan(current)):
                return current
            if time.monotonic() - t0 > timeout:
                raise RosError("no joint state received for "
                               f"{[n for n, c in zip(names, current) if np.isnan(c)]}")
            time.sleep(0.05)

    def _move(self, names, q, vmax: float, handle) -> None:
        """Send the posture to every controller owning some of its joints; wait for all.
        One cubic segment (peak speed 1.5 x the average) whose peak stays within each
        joint's speed: its URDF velocity limit, at most ``vmax`` (TIAGo's torso: 0.07 m/s
        against the arm's 1.5 rad/s)."""
        speeds = joint_speeds([self.vlimits[n] for n in names], vmax)
        duration = move_duration(q - self._current(names), speeds, names)
        self._follow(names, np.array([duration]), np.atleast_2d(q),
                     np.zeros((1, len(names))), handle)

    def _goal(self, names, sel, times, Q, V):
        goal = FollowJointTrajectory.Goal()
        goal.trajectory.joint_names = [names[k] for k in sel]
        if self.params.path_tolerance > 0:
            goal.path_tolerance = [JointTolerance(name=names[k],
                                                  position=self.params.path_tolerance)
                                   for k in sel]
        for t, q, v in zip(times, Q, V):
            pt = JointTrajectoryPoint(positions=[float(q[k]) for k in sel],
                                      velocities=[float(v[k]) for k in sel])
            sec_to_duration(float(t), pt.time_from_start)
            goal.trajectory.points.append(pt)
        return goal

    def _send(self, names, times, Q, V, handle) -> list:
        """The trajectory split per controller, sent; the accepted goal handles."""
        sends = []
        for ctrl, owned in self.cfg.controllers.items():
            sel = [k for k, n in enumerate(names) if n in owned]
            if not sel:
                continue
            client = self.trajectory_clients[ctrl]
            if not client.wait_for_server(timeout_sec=10.0):
                raise RosError(f"controller action {ctrl}/follow_joint_trajectory "
                               "not available")
            sends.append((ctrl, client.send_goal_async(self._goal(names, sel, times, Q, V))))
            self.sent.append(sends[-1][1])
        handles = []
        for ctrl, fut in sends:
            gh = self._wait(fut, ACCEPT_TIMEOUT, f"{ctrl} to accept the goal", handle)
            if not gh.accepted:
                raise ControllerAborted(f"{ctrl} rejected the goal")
            handles.append((ctrl, gh))
        return handles

    def _follow(self, names, times, Q, V, handle) -> None:
        """Send a trajectory split per controller; wait for every controller to finish,
        the tracking held against the commanded trajectory meanwhile.  RosError when a
        controller's result is not in ``controller_result_timeout`` s after the
        trajectory's end, counted from the goals' acceptance (where a controller starts a
        trajectory stamped 0)."""
        ref = reference(self._current(names), times, Q, V)
        t0 = time.monotonic()            # the controllers start between sending and acceptance
        handles = self._send(names, times, Q, V, handle)
        accepted = time.monotonic()
        lag = TRACKING_LAG + accepted - t0
        end, timeout = accepted + float(times[-1]), self.params.controller_result_timeout
        for ctrl, gh in handles:
            fut = ResultWatch(gh, end + RESULT_GRACE)
            while not fut.done():
                self._watch(handle)
                self._track(names, ref, t0, lag)
                if time.monotonic() > end + timeout:
                    raise RosError(f"{ctrl}: no result {timeout:g} s after the end of its "
                                   f"{float(times[-1]):.1f} s trajectory ({fut.requests} "
                                   "result requests unanswered; controller_result_timeout)")
                time.sleep(POLL_S)
            res = fut.result()
            if res.error_code != FollowJointTrajectory.Result.SUCCESSFUL:
                why = CONTROLLER_ERRORS.get(res.error_code, "error")
                raise ControllerAborted(f"{ctrl} failed: {res.error_code} ({why}) "
                                        f"{res.error_string}")
        self.sent = []

    def _track(self, names, ref, t0: float, lag: float) -> None:
        """TrackingError when a joint is further than path_tolerance from the commanded
        trajectory over the ``lag`` s before the latest joint state (``t0``: when the goals
        were sent)."""
        tol = self.params.path_tolerance
        if tol <= 0:
            return
        q = np.array([self.heard.positions.get(n, np.nan) for n in names])
        # when the state was measured (its stamp), not when a loaded machine handed it over
        t = self.times.measured(self.heard.last_stamp, self.heard.last_received) - t0
        err = tracking_error(ref, t, q, lag)
        k = int(np.argmax(np.nan_to_num(err, nan=0.0)))
        if err[k] > tol:
            raise TrackingError(f"tracking error of {names[k]}: {err[k]:.3f} beyond "
                                f"path_tolerance {tol:g} {t:.2f} s into the move (measured "
                                f"{q[k]:.3f}, commanded {float(ref(min(t, ref.x[-1]))[k]):.3f})")

    def _cancel_sent(self) -> None:
        """Cancel the goals of the move under way, each once its controller accepted it
        (now, or later: a slow controller)."""
        for fut in self.sent:
            fut.add_done_callback(_cancel_if_accepted)
        self.sent = []


def _cancel_if_accepted(future) -> None:
    """Cancel the goal a send future brought, once accepted: a goal still awaiting its
    acceptance when the experiment stopped must not move the robot afterwards."""
    handle = None if future.cancelled() or future.exception() else future.result()
    if handle is not None and handle.accepted:
        handle.cancel_goal_async()

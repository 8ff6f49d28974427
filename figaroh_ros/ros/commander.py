"""The Python client of the figaroh_ros actions: the :class:`Commander`.

A script (or ``figaroh-ros call``, or ``figaroh-ros demo``) drives the robot-side nodes
without writing any ROS plumbing, in the spirit of nav2's simple commander::

    with Commander() as robot:
        robot.wait_until_ready(30.0)
        bag = robot.run_experiment(postures_file="postures.csv", bag_path="bags/cal")
        bag.result(900.0)
        cal = robot.calibrate(["bags/cal"], "config/ur10_sim_calibration.yaml", "geometric")
        print(cal.result(600.0).position_rmse_m)

The Commander owns its own rclpy context, node and executor thread, so it can live next
to other rclpy code of the same process and never installs signal handlers (Ctrl-C stays a
``KeyboardInterrupt`` of the caller, who may then :meth:`Task.cancel`).  Every goal
returns at once a :class:`Task`: the latest feedback, an optional feedback callback,
``done()``, ``cancel()``, ``result(timeout)`` and the goal's ``error_code``.  A goal whose
server leaves the graph (its node exited or died) fails ``SERVER_GONE_AFTER`` s later,
naming the action, and one whose end the server announced but whose result never arrives
(the answers lost on the network) ``RESULT_LOST_AFTER`` s later, saying how it ended,
instead of waiting out the caller's timeout.
"""
from __future__ import annotations

import sys
import threading
import time
import uuid
from typing import Callable, Iterable, Optional

import rclpy
from action_msgs.msg import GoalStatus
from rclpy.action.client import ClientGoalHandle
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor
from rclpy.signals import SignalHandlerOptions

from figaroh_ros import errors
from figaroh_ros.action import (Calibrate, IdentifyPayload, PlanTrajectory, Preflight,
                                 RunExperiment)
from figaroh_ros.errors import FigarohError, RosError
from figaroh_ros.ros.action_client import ActionClient
from figaroh_ros.srv import RecorderControl, RestoreDescription, StartCalibration

# action name (relative to the namespace) -> (interface, the node serving it)
ACTIONS = {"run_experiment": (RunExperiment, "executor"),
           "preflight": (Preflight, "executor"),
           "calibrate": (Calibrate, "calibration node"),
           "plan_trajectory": (PlanTrajectory, "calibration node"),
           "identify_payload": (IdentifyPayload, "calibration node")}
# what wait_until_ready waits for unless told: an experiment and a calibration
READY_ACTIONS = ("run_experiment", "calibrate", "plan_trajectory")
# service name (relative to the namespace) -> (interface, the node serving it)
SERVICES = {"restore_description": (RestoreDescription, "calibration node"),
            "start_calibration": (StartCalibration, "calibration node"),
            "recorder/control": (RecorderControl, "recorder")}

# a goal the server's (latched) status says ended, its result not in after this many s,
# has its result requested again: a request written just after discovery can be lost
# (volatile DDS samples are not replayed) and the server answers every request alike
RESULT_RESEND_AFTER_END = 1.0
RESULT_RESEND_EVERY = 10.0          # s, while the server's status is not known to have ended
# s without an answer to the goal request before the goal is followed by its id: the answer
# can be lost like any service response ("failed to send response (timeout)": the client's
# reader not yet matched by the server's writer) while the server runs the goal
GOAL_RESPONSE_WAIT = 5.0
GOAL_LOST_AFTER = 60.0              # s of a server not knowing the goal: it never arrived
# s without the goal's action server on the graph (its node exited, crashed, or its
# machine left the network): the goal fails, as nothing can answer it any more
SERVER_GONE_AFTER = 10.0
# s after the server's status said the goal ended, its result still not in despite the
# requests sent again: the goal fails, saying how it ended (the answers cannot reach us)
RESULT_LOST_AFTER = 60.0
ENDED = (GoalStatus.STATUS_SUCCEEDED, GoalStatus.STATUS_ABORTED, GoalStatus.STATUS_CANCELED)

# error_code -> the class of the error it stands for (the others are plain FigarohErrors)
ERROR_CLASSES = {errors.CONFIG_ERROR: errors.ConfigError, errors.DATA_ERROR: errors.DataError,
                 errors.MODEL_ERROR: errors.ModelError, errors.SOLVER_ERROR: errors.SolverError,
                 errors.ROS_ERROR: RosError, errors.CONTROLLER_ABORTED: RosError}


def stage_names(feedback_type) -> dict[int, str]:
    """The integer constants of a message type by value: an action's feedback stages
    (``MOVING``, ``ESTIMATION``...), GoalStatus's ``STATUS_*``."""
    return {getattr(feedback_type, n): n for n in dir(feedback_type)
            if n.isupper() and isinstance(getattr(feedback_type, n), int)}


def error_for(result, what: str) -> FigarohError:
    """The :class:`FigarohError` a failed result stands for, its ``code`` the goal's."""
    err = ERROR_CLASSES.get(result.error_code, FigarohError)(f"{what}: {result.message}")
    err.code = result.error_code
    return err


class Task:
    """One goal sent to an action server, followed from the Commander's executor thread."""

    def __init__(self, name: str, client: ActionClient, goal,
                 on_feedback: Optional[Callable] = None, kind=None):
        self.name = name
        self.feedback = None                  # the latest feedback message
        self.status = None                    # action_msgs GoalStatus of the end
        self._on_feedback = on_feedback
        self._answered, self._finished = threading.Event(), threading.Event()
        self._handle, self._result, self._failure = None, None, None
        self._asked = 0.0                     # monotonic s of the latest result request
        self.result_requests = 0
        self._client, self.adopted = client, False
        self._server_seen = time.monotonic()  # when its server was last on the graph
        self._ended_at = None                 # when its status first said it ended
        self._sent = self._first_sent = time.monotonic()
        self._kind = kind or ACTIONS[name.rsplit("/", 1)[-1]][0]
        self._goal_id = self._kind.Impl.SendGoalService.Request().goal_id   # a UUID message
        self._goal_id.uuid = list(uuid.uuid4().bytes)
        client.send_goal_async(goal, feedback_callback=self._feedback,
                               goal_uuid=self._goal_id).add_done_callback(self._responded)

    def _feedback(self, msg) -> None:
        self.feedback = msg.feedback
        if self._on_feedback is not None:
            try:
                self._on_feedback(msg.feedback)
            except Exception as exc:     # the caller's bug must not stop the client's thread
                print(f"{self.name}: feedback callback failed: {exc!r}", file=sys.stderr)

    def _responded(self, future) -> None:
        handle = future.result() if future.exception() is None else None
        if self.adopted and (handle is None or handle.accepted):
            return                            # followed by its id already (a rejection ends it)
        if handle is None or not handle.accepted:
            self._failure = f"{self.name}: goal rejected"
            self._answered.set()
            self._finished.set()
            return
        self._handle = handle
        self._answered.set()
        self._request_result()

    def _request_result(self) -> None:
        self._asked = time.monotonic()
        self.result_requests += 1
        self._handle.get_result_async().add_done_callback(self._ended)

    def poll(self) -> None:
        """Request the result again when it is overdue (from the Commander's thread); a
        goal whose request went unanswered for ``GOAL_RESPONSE_WAIT`` s is followed by its
        id (:meth:`_adopt`)."""
        if self.done() or self._server_gone():
            return
        if self._handle is None:
            if time.monotonic() - self._sent > GOAL_RESPONSE_WAIT:
                self._adopt()
            return
        now, ended = time.monotonic(), self._handle.status in ENDED
        self._ended_at = (self._ended_at or now) if ended else None
        if ended and now - self._ended_at > RESULT_LOST_AFTER:
            how = stage_names(GoalStatus).get(self._handle.status, "STATUS_?")
            self._failure = (f"{self.name}: the server ended the goal "
                             f"{how.removeprefix('STATUS_').lower()} {now - self._ended_at:.0f}"
                             f" s ago, and its result never reached us ({self.result_requests}"
                             " requests): see the server's log")
            self._finished.set()
            return
        waited = now - self._asked
        if waited > RESULT_RESEND_EVERY or (ended and waited > RESULT_RESEND_AFTER_END):
            self._request_result()

    def _server_gone(self) -> bool:
        """Fail the goal once its server has been off the graph ``SERVER_GONE_AFTER`` s."""
        now = time.monotonic()
        if self._client.server_is_ready():
            self._server_seen = now
            return False
        if now - self._server_seen <= SERVER_GONE_AFTER:
            return False
        self._failure = (f"{self.name}: the action server left the graph "
                         f"{now - self._server_seen:.0f} s ago without answering the goal "
                         "(did its node exit? see its log)")
        self._finished.set()
        return True

    def _adopt(self) -> None:
        """Follow the goal by the id we gave it, its acceptance unheard: the server answers
        a result request for a goal it runs when the goal ends, and at once, with status
        UNKNOWN, for a goal it does not know (yet: a slow acceptance; or ever: the request
        was lost).  UNKNOWN: wait for the answer again, and once more follow by id;
        after ``GOAL_LOST_AFTER`` s of it the goal is reported lost."""
        response = self._kind.Impl.SendGoalService.Response(accepted=True)
        self.adopted, self._handle = True, ClientGoalHandle(self._client, self._goal_id,
                                                            response)
        self._answered.set()
        self._request_result()

    def _ended(self, future) -> None:
        if self._finished.is_set() or future.exception() is not None:
            return
        response = future.result()
        if self.adopted and response.status == GoalStatus.STATUS_UNKNOWN:
            if time.monotonic() - self._first_sent < GOAL_LOST_AFTER:
                self.adopted, self._handle, self._sent = False, None, time.monotonic()
                return
            self._failure = (f"{self.name}: the goal request went unanswered and the server "
                             f"did not know the goal for {GOAL_LOST_AFTER:g} s (lost)")
            self._finished.set()
            return
        self._result, self.status = response.result, response.status
        if response.status != GoalStatus.STATUS_SUCCEEDED and \
                response.result.error_code == errors.SUCCESSFUL:
            # the default result of a goal whose server failed inside its execute callback
            # (rclpy: "Goal state not set, assuming aborted"): not a success
            ended = stage_names(GoalStatus).get(response.status, "STATUS_?")
            self._failure = (f"{self.name}: the server ended the goal "
                             f"{ended.removeprefix('STATUS_').lower()} without a result (it "
                             f"failed inside: see its log)")
        self._finished.set()

    def done(self) -> bool:
        return self._finished.is_set()

    @property
    def error_code(self) -> Optional[int]:
        """The result's ``error_code`` (None while running or when rejected); ``ROS_ERROR``
        for a goal the server ended without a result (whose empty result reads 0,
        ``SUCCESSFUL``)."""
        if self._result is None:
            return None
        return errors.ROS_ERROR if self._failure else self._result.error_code

    def result(self, timeout: Optional[float] = None):
        """The action's result message, waiting at most ``timeout`` s (None: for ever).
        Raises :class:`RosError` when the goal was rejected or did not end in time."""
        if not _wait(self._finished, timeout):
            raise RosError(f"{self.name}: no result after {timeout:g} s")
        if self._failure:
            raise RosError(self._failure)
        return self._result

    def check(self, timeout: Optional[float] = None):
        """:meth:`result`, raising the goal's error when it did not succeed."""
        result = self.result(timeout)
        if result.error_code != errors.SUCCESSFUL:
            raise error_for(result, self.name)
        return result

    def cancel(self, timeout: float = 10.0) -> bool:
        """Ask the server to cancel the goal; True when it accepted to."""
        if not _wait(self._answered, timeout) or self._handle is None or self.done():
            return False
        future = self._handle.cancel_goal_async()
        answered = threading.Event()
        future.add_done_callback(lambda _: answered.set())
        return _wait(answered, timeout) and len(future.result().goals_canceling) > 0


def _wait(event: threading.Event, timeout: Optional[float]) -> bool:
    """``event.wait`` in short slices, so that Ctrl-C interrupts it at once."""
    end = None if timeout is None else time.monotonic() + timeout
    while not event.wait(0.1):
        if end is not None and time.monotonic() >= end:
            return False
    return True


class Commander:
    """A client of the executor, the calibration node and the recorder, with its own node
    and thread.

    ``namespace``: the actions are ``<namespace>/figaroh/{run_experiment, preflight,
    calibrate, plan_trajectory, identify_payload}``, the services
    ``<namespace>/figaroh/{restore_description, start_calibration, recorder/control}``.
    ``server_timeout``: how long a goal or a service call waits for its server."""

    def __init__(self, namespace: str = "", node_name: str = "figaroh_commander",
                 server_timeout: float = 30.0):
        self.server_timeout = server_timeout
        self._context = Context()
        rclpy.init(context=self._context, signal_handler_options=SignalHandlerOptions.NO)
        self.node = rclpy.create_node(node_name, namespace=namespace or None,
                                      context=self._context)
        self._clients = {name: ActionClient(self.node, kind, f"figaroh/{name}")
                         for name, (kind, _) in ACTIONS.items()}
        self._services = {name: self.node.create_client(kind, f"figaroh/{name}")
                          for name, (kind, _) in SERVICES.items()}
        self._tasks: list[Task] = []
        self._tasks_lock = threading.Lock()
        self.node.create_timer(0.5, self._poll_tasks)
        self._executor = SingleThreadedExecutor(context=self._context)
        self._executor.add_node(self.node)
        self._thread = threading.Thread(target=self._executor.spin, daemon=True,
                                        name="figaroh_commander")
        self._thread.start()

    def action_name(self, name: str) -> str:
        """The full name of one of our actions (``/ns/figaroh/calibrate``)."""
        return f"{self.node.get_namespace().rstrip('/')}/figaroh/{name}"

    def wait_until_ready(self, timeout: float = 30.0,
                         actions: Iterable[str] = READY_ACTIONS) -> None:
        """Wait until every server of ``actions`` is available; :class:`RosError` naming
        the missing ones (and the node that serves them) after ``timeout`` s."""
        end = time.monotonic() + timeout
        missing = list(actions)
        while True:
            missing = [a for a in missing if not self._ready(a)]
            if not missing:
                return
            if time.monotonic() >= end:
                names = ", ".join(f"{self.action_name(a)} ({ACTIONS[a][1]})" for a in missing)
                raise RosError(f"action server not available after {timeout:g} s: {names}")
            time.sleep(0.05)

    def _ready(self, name: str) -> bool:
        """The server answers ``name``'s services and its feedback publisher is known: a
        feedback message (volatile) published before our reader matched the server's
        writer is lost, and a short goal's only feedback came right after acceptance."""
        return self._clients[name].server_is_ready() and \
            self.node.count_publishers(f"{self.action_name(name)}/_action/feedback") > 0

    def _send(self, name: str, goal, on_feedback) -> Task:
        self.wait_until_ready(self.server_timeout, [name])
        task = Task(self.action_name(name), self._clients[name], goal, on_feedback,
                    ACTIONS[name][0])
        with self._tasks_lock:
            self._tasks.append(task)
        return task

    def _poll_tasks(self) -> None:
        with self._tasks_lock:
            self._tasks = [t for t in self._tasks if not t.done()]
            live = list(self._tasks)
        for task in live:
            task.poll()

    def run_experiment(self, postures_file: str = "", trajectory_file: str = "",
                       bag_path: str = "", max_velocity: Optional[float] = None,
                       settle_time: Optional[float] = None, dwell_time: Optional[float] = None,
                       on_feedback: Optional[Callable] = None) -> Task:
        """Play static postures (or a trajectory) while the recorder writes ``bag_path``.
        The timing overrides the executor's parameters when all three are given."""
        timing = (max_velocity, settle_time, dwell_time)
        if any(t is not None for t in timing) and any(t is None for t in timing):
            raise errors.ConfigError("max_velocity, settle_time and dwell_time override the "
                                     "executor's parameters together: give all three")
        if bool(postures_file) == bool(trajectory_file):
            raise errors.ConfigError("give one of postures_file and trajectory_file")
        goal = RunExperiment.Goal(postures_file=postures_file, trajectory_file=trajectory_file,
                                  bag_path=bag_path, override_timing=timing[0] is not None)
        if goal.override_timing:
            goal.max_velocity, goal.settle_time, goal.dwell_time = map(float, timing)
        return self._send("run_experiment", goal, on_feedback)

    def calibrate(self, bags: list[str], config: str, kind: str, publish: bool = True,
                  start_urdf: str = "", on_feedback: Optional[Callable] = None,
                  accept_failed_acceptance: bool = False) -> Task:
        """Geometric calibration or dynamic identification (``kind``) on recorded bags.
        ``accept_failed_acceptance``: publish a model that failed only the config's
        acceptance thresholds (never one that failed another check of the gate)."""
        goal = Calibrate.Goal(bags=list(bags), config=config, kind=kind, publish=publish,
                              start_urdf=start_urdf,
                              accept_failed_acceptance=accept_failed_acceptance)
        return self._send("calibrate", goal, on_feedback)

    def plan_trajectory(self, config: str, out: str = "",
                        on_feedback: Optional[Callable] = None) -> Task:
        """An optimal exciting trajectory, written under the node's output_dir."""
        return self._send("plan_trajectory", PlanTrajectory.Goal(config=config, out=out),
                          on_feedback)

    def identify_payload(self, bag: str, config: str,
                         on_feedback: Optional[Callable] = None) -> Task:
        """The payload on the tool (mass, centre of mass, inertia) from a recorded bag."""
        return self._send("identify_payload", IdentifyPayload.Goal(bag=bag, config=config),
                          on_feedback)

    def preflight(self, config: str = "", postures: str = "", trajectory: str = "",
                  topic_window: float = 0.0, on_feedback: Optional[Callable] = None) -> Task:
        """The executor's checks before anything moves (controllers, topics at their rate,
        QoS, clocks, TF, model, identifiability of ``postures`` or ``trajectory``);
        nothing moves.  ``config`` "": the executor's own pre-flight configs."""
        goal = Preflight.Goal(config=config, postures=postures, trajectory=trajectory,
                              topic_window=float(topic_window))
        return self._send("preflight", goal, on_feedback)

    def restore_description(self, which: str, timeout: float = 30.0):
        """Republish an earlier model (``previous``, ``nominal``, a hash) or list the kept
        ones (``history``): the RestoreDescription response."""
        return self._call("restore_description", RestoreDescription.Request(which=which),
                          timeout)

    def start_calibration(self, bags: list[str], config: str, kind: str,
                          publish: bool = True, start_urdf: str = "",
                          accept_failed_acceptance: bool = False, timeout: float = 30.0):
        """A Calibrate goal started by the StartCalibration service, which answers at once
        (``accepted``, ``goal_id``, ``reason``); its progress and result are the action's."""
        return self._call("start_calibration", StartCalibration.Request(
            bags=list(bags), config=config, kind=kind, publish=publish,
            start_urdf=start_urdf, accept_failed_acceptance=accept_failed_acceptance),
            timeout)

    def recorder_control(self, command: str, bag_path: str = "", storage: str = "",
                         timeout: float = 30.0):
        """Start, stop, split a bag or read the recorder's status: the RecorderControl
        response."""
        return self._call("recorder/control", RecorderControl.Request(
            command=command, bag_path=bag_path, storage=storage), timeout)

    def service_name(self, name: str) -> str:
        """The full name of one of our services (``/ns/figaroh/restore_description``)."""
        return self.action_name(name)

    def _call(self, name: str, request, timeout: float):
        """``request`` sent to the service ``name`` once it is on the graph (within
        ``server_timeout`` s): its response within ``timeout`` s, else :class:`RosError`
        naming the service and the node that serves it."""
        client, (_, node) = self._services[name], SERVICES[name]
        if not client.wait_for_service(timeout_sec=self.server_timeout):
            raise RosError(f"service not available after {self.server_timeout:g} s: "
                           f"{self.service_name(name)} ({node})")
        future = client.call_async(request)
        answered = threading.Event()
        future.add_done_callback(lambda _: answered.set())
        if not _wait(answered, timeout):
            raise RosError(f"{self.service_name(name)}: no response after {timeout:g} s")
        return future.result()

    def destroy(self) -> None:
        """Stop the executor thread, then destroy the node and shut the context down (a
        node destroyed under a spinning executor can fail its thread: ``InvalidHandle``)."""
        self._executor.shutdown(timeout_sec=1.0)
        self._thread.join(timeout=5.0)
        self.node.destroy_node()
        self._context.try_shutdown()

    def __enter__(self) -> "Commander":
        return self

    def __exit__(self, *exc) -> None:
        self.destroy()

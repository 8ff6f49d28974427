"""Calibration node: the Calibrate and PlanTrajectory actions, and the updated
robot_description.

``figaroh/identify_payload`` (``ros/payload_action.py``) identifies a tool payload.
``/figaroh/calibrate`` (figaroh_ros/action/Calibrate) runs a geometric calibration
(``figaroh_ros.tasks.calibrate.run``) or a dynamic identification
(``figaroh_ros.tasks.identify.run``) on recorded bags; ``/figaroh/plan_trajectory``
(figaroh_ros/action/PlanTrajectory) plans an exciting trajectory
(``figaroh_ros.tasks.plan_trajectory.run``).  Each goal runs in a worker process
(``ros/worker.py``): the node stays responsive, a cancel ends the worker at once, a worker
that dies ends its goal with WORKER_CRASHED, and what runs on the robot is exactly what
runs offline.  The worker's Progress becomes the feedback; its TaskOutcome (the content of
result.yaml) fills the result.  One goal of each action at a time.

Publication gate: the model is published only when the goal asked for it and the task's
verdict (``publication`` of result.yaml, ``figaroh_ros.tasks.gate``) PASSED: inputs finite
and inside the limits, a held-out improvement beyond its statistical uncertainty and the
configured margin, plausible parameter changes, the URDF round trip, the acceptance
thresholds; otherwise ``not_published_because`` lists each failed check with its
numbers, one per line.  The result's ``acceptance`` (PASSED / FAILED / "" when the config
sets no threshold) and ``acceptance_detail`` give the user's thresholds alone; a goal with
``accept_failed_acceptance`` publishes a model that failed only those, and the result's
message says so (``publication_decision`` of ``tasks.gate``).

One owner of the model: when the parameter ``robot_state_publisher`` names a node (the
robot's robot_state_publisher, or the simulator standing in for it), a published model
is set as that node's ``robot_description`` parameter (SetParameters; the node republishes
it) and this node publishes nothing on ``robot_description``; only when none is named does
it publish the topic itself (std_msgs/String, transient local).  A parameter the node
refuses or a node that does not answer ends the goal with ROS_ERROR, nothing published.
Every published model is kept with its sha256 and the result.yaml that justified it
(``io/model_history.py``, under ``output_dir/models``, so a restarted node knows them);
the first is the nominal model (the ``robot_description`` seen when the node started, else
the config's URDF).  Service ``figaroh/restore_description``
(figaroh_ros/srv/RestoreDescription): ``previous``, ``nominal``, a hash (or a prefix of at
least 8 hex digits) republishes that model the same way; ``history`` lists them.  After a
published geometric result the estimated measurement frame -> robot base and tool ->
measured body placements go out on ``/tf_static`` (``ros/static_frames.py``).  The postures
go on ``calibration/markers`` (``ros/markers.py``, for RViz: ``config/rviz/calibration.rviz``):
measured and nominal as soon as the worker has read them (its ``Partial``), then measured,
nominal and calibrated, coloured by error, when the geometric goal ends.

Calibrations accumulate (``build_on_published``): once this node has published a model,
a later goal whose config names the same nominal URDF starts from the published model, so
identified inertias are written into the geometrically calibrated URDF and a geometric
calibration rewrites the joint origins of a URDF with identified inertias; the nominal
model of that goal's gate is then the published one.
"""
from __future__ import annotations

import os
import sys
import threading
import time
import traceback

from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters
from rclpy.action import ActionServer, CancelResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from std_msgs.msg import String

from figaroh_ros.action import Calibrate, PlanTrajectory
from figaroh_ros.config.calibration import load_calibration_config
from figaroh_ros.config.identification import nominal_urdf
from figaroh_ros.errors import (
    INVALID_GOAL, ROS_ERROR, SUCCESSFUL, DataError, FigarohError, RosError
)
from figaroh_ros.io.bags import measurement_frame_id
from figaroh_ros.io.model_history import ModelHistory
from figaroh_ros.progress import Progress, Stage
from figaroh_ros.ros.calibration_results import (  # noqa: F401 - the node's answers
    dynamic_result, geometric_result, publication_line
)
from figaroh_ros.ros.common import LATCHED, GoalRefused, first_answer, run_node
from figaroh_ros.ros.goal_paths import RESULT_TIMEOUT, GoalPaths
from figaroh_ros.ros.markers import CalibrationMarkers
from figaroh_ros.ros.parameters import CalibrationParameters, declare
from figaroh_ros.ros.payload_action import serve_payload
from figaroh_ros.ros.static_frames import StaticFrames, estimated_transforms, root_link
from figaroh_ros.ros.worker import (
    DYNAMIC, GEOMETRIC, PLAN_TRAJECTORY, POSTURES_NOMINAL, Failure, Job, run_job
)
from figaroh_ros.srv import RestoreDescription
from figaroh_ros.tasks import TaskOutcome

PARAMETER_TIMEOUT = 5.0     # s for robot_state_publisher to answer SetParameters


def check_calibrate_goal(g, paths: GoalPaths) -> tuple[str, list[str], str]:
    """The Calibrate goal's fields, before any work starts: its config, bags and start
    URDF (absolute), each inside the node's read roots (``ros/goal_paths.py``)."""
    if g.kind not in (GEOMETRIC, DYNAMIC):
        raise GoalRefused(f"kind must be {GEOMETRIC} or {DYNAMIC}, got {g.kind!r}")
    config = paths.file("config", g.config)
    if not g.bags:
        raise GoalRefused("no bag given")
    if g.kind == DYNAMIC and len(g.bags) != 1:
        raise GoalRefused(f"a dynamic identification takes one bag, got {len(g.bags)}")
    bags = paths.bags("bags", g.bags)
    return config, bags, paths.file("start_urdf", g.start_urdf) if g.start_urdf else ""


class CalibrationNode(Node):
    def __init__(self):
        super().__init__("calibration")
        self.params = declare(self, CalibrationParameters)
        os.makedirs(self.params.output_dir, exist_ok=True)
        self.paths = GoalPaths(self.params, self.params.output_dir)   # ros/goal_paths.py
        self.published: tuple[str, str] | None = None     # (nominal URDF, published URDF)
        self.group = ReentrantCallbackGroup()
        self.rsp = self.params.robot_state_publisher
        self.pub = (None if self.rsp else
                    self.create_publisher(String, "robot_description", LATCHED))
        # one client for the node's life: a client made just before its request can lose
        # it (its writer not yet matched to the server's reader), and churning clients
        # races the executor's wait set
        self.rsp_client = (self.create_client(SetParameters, f"{self.rsp}/set_parameters",
                                              callback_group=self.group)
                           if self.rsp else None)
        self.history = ModelHistory(self.params.output_dir)
        self.live: str | None = None                       # the model seen at start
        self.create_subscription(String, "robot_description", self._seen, LATCHED,
                                 callback_group=self.group)
        self.frames = StaticFrames(self)
        self.markers = CalibrationMarkers(self)
        self.create_service(RestoreDescription, "figaroh/restore_description", self._restore,
                            callback_group=self.group)
        self.busy = {"calibrate": threading.Lock(), "plan_trajectory": threading.Lock()}
        self.runs = 0
        ActionServer(self, Calibrate, "figaroh/calibrate", self._calibrate,
                     cancel_callback=lambda h: CancelResponse.ACCEPT,
                     result_timeout=RESULT_TIMEOUT,
                     callback_group=self.group)
        ActionServer(self, PlanTrajectory, "figaroh/plan_trajectory", self._plan,
                     cancel_callback=lambda h: CancelResponse.ACCEPT,
                     result_timeout=RESULT_TIMEOUT,
                     callback_group=self.group)
        serve_payload(self)

    # ---------------------------------------------------------------- goals
    def _run_folder(self) -> str:
        """A new timestamped folder under output_dir for a goal's files."""
        self.runs += 1
        return os.path.join(os.path.abspath(self.params.output_dir),
                            time.strftime("%Y%m%d_%H%M%S") + f"_{self.runs}")

    def _work(self, handle, job: Job, Feedback, on_partial=lambda p: None):
        """Run ``job`` in a worker, its progress as feedback."""
        def feedback(p: Progress):
            handle.publish_feedback(Feedback(stage=int(p.stage), fraction=float(p.fraction),
                                             message=p.message))

        def started(pid):
            self.get_logger().info(f"{job.task} goal: worker {pid}, output {job.out}")
        limit = self.params.max_goal_seconds
        end = time.monotonic() + limit
        ended = run_job(job, feedback,
                        lambda: handle.is_cancel_requested or time.monotonic() > end,
                        started, on_partial=on_partial)
        if isinstance(ended, Failure) and ended.kind == "Canceled" and \
                not handle.is_cancel_requested:
            return Failure(ROS_ERROR, "Timeout", f"the {job.task} worker ran longer than "
                           f"max_goal_seconds ({limit:g} s): ended, nothing published")
        return ended

    def _end(self, handle, result, code: int, message: str):
        """End the goal; its message scrubbed of the files the goal named (the log keeps
        it whole)."""
        result.error_code, result.message = code, self.paths.answer(message, handle.request)
        if code == SUCCESSFUL:
            self.get_logger().info(message)
            handle.succeed()
        else:
            self.get_logger().warning(f"goal ended ({code}): {message}")
            handle.canceled() if handle.is_cancel_requested else handle.abort()
        return result

    def _exclusive(self, action: str, handle, result, body):
        """Run ``body()`` unless a goal of the same action is running (INVALID_GOAL);
        a GoalRefused or a FigarohError raised before the worker ends the goal, and so
        does any other exception (a bug: ROS_ERROR "internal error", its traceback
        logged), rather than rclpy's empty result."""
        lock = self.busy[action]
        if not lock.acquire(blocking=False):
            return self._end(handle, result, INVALID_GOAL,
                             f"a {action} goal is running already; retry when it ends")
        try:
            return body()
        except GoalRefused as exc:
            return self._end(handle, result, INVALID_GOAL, str(exc))
        except FigarohError as exc:
            return self._end(handle, result, exc.code, str(exc))
        except Exception as exc:    # noqa: BLE001 - a bug must still answer, nothing published
            why = f"internal error, nothing published: {type(exc).__name__}: {exc}"
            self.get_logger().error(f"{why}\n{traceback.format_exc()}")
            return self._end(handle, result, ROS_ERROR, why)
        finally:
            lock.release()

    def _calibrate(self, handle):
        result = Calibrate.Result()
        return self._exclusive("calibrate", handle, result,
                               lambda: self._calibrate_goal(handle, result))

    def _start_model(self, g, nominal: str, urdf: str) -> tuple[str | None, str]:
        """The model the goal starts from (None: the config's) and how to name it."""
        if urdf:
            return urdf, os.path.basename(urdf)
        if self.params.build_on_published and self.published and \
                self.published[0] == nominal and os.path.isfile(self.published[1]):
            return self.published[1], f"the published {os.path.basename(self.published[1])}"
        return None, ""

    def _calibrate_goal(self, handle, result):
        g = handle.request
        config, bags, urdf = check_calibrate_goal(g, self.paths)
        nominal = nominal_urdf(config)                    # ConfigError: CONFIG_ERROR
        start, origin = self._start_model(g, nominal, urdf)
        job = Job(g.kind, config, self._run_folder(), tuple(bags), start)
        shown = []                                        # the nominal layer, once read

        def partial(p):
            if p.name == POSTURES_NOMINAL:
                shown.append(p.value)
                self._show_nominal(g, p.value)
        ended = self._work(handle, job, Calibrate.Feedback, partial)
        if isinstance(ended, Failure):
            if shown:
                self._show_nominal(g, shown[-1], f"NOT calibrated: {ended.kind}")
            return self._end(handle, result, ended.code, ended.message)
        line = self._calibrated(handle, result, g, ended, nominal)
        if start is not None:
            line += f" (started from {origin})"
        return self._end(handle, result, SUCCESSFUL, line)

    def _calibrated(self, handle, result, g, outcome: TaskOutcome, nominal: str) -> str:
        """The result from the outcome, the model published when the gate passes; the
        result's message."""
        summary = outcome.summary
        result.result_path = os.path.abspath(outcome.paths.get("result", ""))
        urdf = outcome.paths.get("urdf") or ""
        result.urdf_path = os.path.abspath(urdf) if urdf else ""
        override = bool(g.accept_failed_acceptance)
        if g.kind == GEOMETRIC:
            gate, line = geometric_result(result, summary, override)
            line += self._show_postures(g, outcome)
        else:
            gate, line = dynamic_result(result, summary, result.urdf_path, override)
        line += publication_line(gate, g.publish)
        if gate.why:
            result.not_published_because = "\n".join(gate.why) if g.publish else ""
            return line
        if not g.publish:
            return line + "; publish not requested"
        handle.publish_feedback(Calibrate.Feedback(
            stage=int(Stage.PUBLISHING), fraction=1.0, message="publishing the model"))
        kept = self._publish(result.urdf_path, nominal, result.result_path)
        result.published = True
        self.published = (nominal, result.urdf_path)
        if g.kind == GEOMETRIC:
            line += self._broadcast_frames(g, summary, kept)
        return line + f"; published (sha256 {kept.sha256[:12]})"

    def _plan(self, handle):
        result = PlanTrajectory.Result()
        return self._exclusive("plan_trajectory", handle, result,
                               lambda: self._plan_goal(handle, result))

    def _plan_goal(self, handle, result):
        g = handle.request
        config = self.paths.file("config", g.config)
        if os.path.isabs(g.out):
            raise GoalRefused(f"out must be relative to output_dir, got the absolute {g.out!r}")
        out = self.paths.out("out", g.out, base=self.params.output_dir, exist_ok=True) \
            if g.out else self._run_folder()
        job = Job(PLAN_TRAJECTORY, config, out)
        ended = self._work(handle, job, PlanTrajectory.Feedback)
        if isinstance(ended, Failure):
            return self._end(handle, result, ended.code, ended.message)
        s = ended.summary
        result.path = os.path.abspath(ended.paths["trajectory"])
        result.result_path = os.path.abspath(ended.paths.get("result", ""))
        result.condition_number = float(s["condition_number"])
        result.iterations = int(s["iterations"])
        result.duration_s = float(s["duration_s"])
        result.base_size = int(s.get("base_size", 0))
        return self._end(handle, result, SUCCESSFUL,
                         f"planned {result.duration_s:.1f} s, condition number "
                         f"{result.condition_number:.4g}, {result.iterations} iterations")

    # ---------------------------------------------------------------- publication
    def _seen(self, msg):
        if self.live is None:
            self.live = msg.data

    def _publish(self, path: str, nominal: str, result_path: str):
        """Publish the URDF at ``path`` (the nominal model kept first); its history entry."""
        with open(path) as f:
            text = f.read()
        if self.history.nominal is None:
            if self.live is None:
                with open(nominal) as f:
                    self.live = f.read()
            self.history.add(self.live, "nominal")
        self._deliver(text)
        return self.history.add(text, "calibrated", result_path)

    def _deliver(self, text: str) -> None:
        """The model to robot_state_publisher's parameter, or on the topic when none is
        named; RosError when the parameter is not set."""
        if not self.rsp:
            self.pub.publish(String(data=text))
            return
        if not self.rsp_client.wait_for_service(timeout_sec=PARAMETER_TIMEOUT):
            raise RosError(f"robot_state_publisher '{self.rsp}': no set_parameters "
                           f"service within {PARAMETER_TIMEOUT} s; nothing published")
        p = Parameter(name="robot_description",
                      value=ParameterValue(type=ParameterType.PARAMETER_STRING,
                                           string_value=text))
        answer = first_answer(self.rsp_client, SetParameters.Request(parameters=[p]),
                              PARAMETER_TIMEOUT, f"robot_state_publisher '{self.rsp}' "
                              "to answer SetParameters (nothing published)")
        if not answer.results[0].successful:
            raise RosError(f"robot_state_publisher '{self.rsp}' refused the model: "
                           f"{answer.results[0].reason}")

    def _measurement_frame(self, g) -> tuple[dict, str]:
        """The goal's config and the frame_id of its recorded measurements."""
        cfg = load_calibration_config(g.config)
        return cfg, measurement_frame_id(list(g.bags), cfg["bag"]["measurement"])

    def _show_postures(self, g, outcome: TaskOutcome) -> str:
        """The posture markers (measured, nominal, calibrated) for RViz; the result
        line's addition.  Green within the measurement noise."""
        fit = outcome.paths.get("postures_fit")
        if not fit:
            return ""
        try:
            cfg, frame = self._measurement_frame(g)
            n = self.markers.publish(fit, frame,
                                     1e-3 * cfg["measurement"]["noise_position_mm"])
        except DataError as exc:
            return f"; no markers ({exc})"
        return f"; {n} markers on {self.markers.pub.topic_name}"

    def _show_nominal(self, g, fit, note: str = "calibrating") -> None:
        """The measured and nominal layers while the calibration runs (or after it failed)."""
        try:
            cfg, frame = self._measurement_frame(g)
            self.markers.preview(fit, frame, 1e-3 * cfg["measurement"]["noise_position_mm"],
                                 note)
        except FigarohError as exc:      # markers are a view: never the goal's end or error
            self.get_logger().warning(f"no posture markers: {exc}")

    def _broadcast_frames(self, g, summary: dict, kept) -> str:
        """The estimated frames on /tf_static; the result line's addition."""
        try:
            cfg, meas = self._measurement_frame(g)
        except DataError as exc:
            return f"; frames not broadcast ({exc})"
        start = cfg["calibration"]["start_frame"]
        if start == "universe":
            start = root_link(self.history.text(kept))
        tf = estimated_transforms(summary, meas, start, cfg["calibration"]["tool_frame"])
        self.frames.send(tf)
        return "; /tf_static " + ", ".join(f"{p}->{c}" for p, c, _ in tf)

    def _restore(self, req, res):
        which = req.which.strip()[:128]     # a sha256 is 64 hex digits: no longer echoed
        try:
            entry = self._which(which)
            if entry is not None:
                text = self.history.text(entry)
                self._deliver(text)
                self.history.add(text, "restored")
                res.model_hash = entry.sha256
                res.message = f"republished {entry.note} model {entry.sha256[:12]}" + (
                    f" of {entry.result}" if entry.result else "")
            else:
                res.message = f"{len(self.history.entries)} models kept"
            res.success = True
        except FigarohError as exc:
            res.success, res.message = False, str(exc)
        res.history_hashes = [e.sha256 for e in self.history.entries]
        res.history_results = [e.result for e in self.history.entries]
        return res

    def _which(self, which: str):
        """The kept model a restore request names (None: only list them)."""
        if which == RestoreDescription.Request.HISTORY:
            return None
        if which == RestoreDescription.Request.PREVIOUS:
            entry = self.history.previous()
        elif which == RestoreDescription.Request.NOMINAL:
            entry = self.history.nominal
        else:
            return self.history.find(which)
        if entry is None:
            raise DataError(f"no {which} model kept: nothing has been published yet")
        return entry


def main(args=None):
    return run_node(CalibrationNode, "calibration", 4, args)


if __name__ == "__main__":
    sys.exit(main())

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

The model side (``ros/description_owner.py``): the published model goes to
robot_state_publisher's ``robot_description`` parameter (or on the topic when none is
named), each kept with its sha256 and result.yaml under ``output_dir/models``; service
``figaroh/restore_description`` (figaroh_ros/srv/RestoreDescription) republishes
``previous`` (one model back along the models each was built on), ``nominal`` or a hash,
with that model's frames on ``/tf_static``, and makes it the model the next goal builds
on; a (re)started node announces the last model and its frames.  After a published
geometric result the estimated measurement frame -> robot base and tool -> measured body
placements go out on ``/tf_static`` (``ros/static_frames.py``).

Service ``figaroh/start_calibration`` (figaroh_ros/srv/StartCalibration) starts a
Calibrate goal from its request (the goal's fields, checked as the action checks them)
and answers at once with the goal's id, or why it was refused (a calibrate goal running
or starting, a path outside the read roots, ...); feedback and result stay on the action
(``ros/start_service.py``).  Which Calibrate goal runs is decided when the action accepts
it (``CalibrateClaim``), so that two requests sent together never both run.  Goals run
through one ``ros/goal_runner.py``.  The postures go on ``calibration/markers``
(``ros/markers.py``, for RViz: ``config/rviz/calibration.rviz``): measured and nominal
as soon as the worker has read them (its ``Partial``), then measured, nominal and
calibrated, coloured by error, when the geometric goal ends; a camera calibration's
predicted and detected board corners in the camera's optical frame
(``ros/camera_markers.py``).

Calibrations accumulate (``build_on_published``): once this node has published a model,
a later goal whose config names the same nominal URDF starts from the published model, so
identified inertias are written into the geometrically calibrated URDF and a geometric
calibration rewrites the joint origins of a URDF with identified inertias; the nominal
model of that goal's gate is then the published one.
"""
from __future__ import annotations

import os
import sys

from rclpy.action import ActionServer, CancelResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node

from figaroh_ros.action import Calibrate, PlanTrajectory
from figaroh_ros.config.calibration import CalibrationConfig, load_calibration_config
from figaroh_ros.config.identification import nominal_urdf
from figaroh_ros.errors import INVALID_GOAL, SUCCESSFUL, DataError, FigarohError
from figaroh_ros.io.bags import measurement_frame_id
from figaroh_ros.ros.camera_frames import camera_transforms
from figaroh_ros.ros.camera_markers import publish_corners
from figaroh_ros.progress import Stage
from figaroh_ros.ros.common import GoalRefused, run_node
from figaroh_ros.ros.description_owner import DescriptionOwner
from figaroh_ros.ros.goal_paths import RESULT_TIMEOUT, GoalPaths
from figaroh_ros.ros.goal_runner import GoalRunner
from figaroh_ros.ros.markers import CalibrationMarkers
from figaroh_ros.ros.parameters import CalibrationParameters, declare
from figaroh_ros.ros.payload_action import serve_payload
from figaroh_ros.ros.start_service import CalibrateClaim, StartService, goal_id_text
from figaroh_ros.ros.static_frames import estimated_transforms, root_link
from figaroh_ros.ros.worker import (
    DYNAMIC, GEOMETRIC, PLAN_TRAJECTORY, POSTURES_NOMINAL, Failure, Job
)
from figaroh_ros.tasks import TaskOutcome
from figaroh_ros.tasks.result_summary import (  # noqa: F401 - the node's answers
    dynamic_result, geometric_result, publication_line
)


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
        self.group = ReentrantCallbackGroup()
        self.runner = GoalRunner(self, ("calibrate", "plan_trajectory"))
        self.model = DescriptionOwner(self, self.params.robot_state_publisher,
                                      self.params.output_dir, self.group)
        self.markers = CalibrationMarkers(self)
        self.claim = CalibrateClaim()              # one Calibrate goal, taken at acceptance
        ActionServer(self, Calibrate, "figaroh/calibrate", self._calibrate,
                     cancel_callback=lambda h: CancelResponse.ACCEPT,
                     handle_accepted_callback=self.claim.accepted,
                     result_timeout=RESULT_TIMEOUT,
                     callback_group=self.group)
        ActionServer(self, PlanTrajectory, "figaroh/plan_trajectory", self._plan,
                     cancel_callback=lambda h: CancelResponse.ACCEPT,
                     result_timeout=RESULT_TIMEOUT,
                     callback_group=self.group)
        serve_payload(self)
        self.start = StartService(self, lambda g: check_calibrate_goal(g, self.paths),
                                  self.claim)

    # ---------------------------------------------------------------- goals
    def _calibrate(self, handle):
        result = Calibrate.Result()
        gid = goal_id_text(handle.goal_id)
        refused = self.claim.refusal(gid)       # another goal took the claim first
        if refused:
            return self.runner.end(handle, result, INVALID_GOAL, refused)
        try:
            return self.runner.exclusive("calibrate", handle, result,
                                         lambda: self._calibrate_goal(handle, result))
        finally:
            self.claim.release(gid)

    def _start_model(self, g, nominal: str, urdf: str) -> tuple[str | None, str]:
        """The model the goal starts from (None: the config's) and how to name it."""
        if urdf:
            return urdf, os.path.basename(urdf)
        published = self.model.published
        if self.params.build_on_published and published and \
                published[0] == nominal and os.path.isfile(published[1]):
            return published[1], f"the published {os.path.basename(published[1])}"
        return None, ""

    def _calibrate_goal(self, handle, result):
        g = handle.request
        config, bags, urdf = check_calibrate_goal(g, self.paths)
        nominal = nominal_urdf(config)                    # ConfigError: CONFIG_ERROR
        start, origin = self._start_model(g, nominal, urdf)
        job = Job(g.kind, config, self.runner.run_folder(), tuple(bags), start)
        shown = []                                        # the nominal layer, once read

        def partial(p):
            if p.name == POSTURES_NOMINAL:
                shown.append(p.value)
                self._show_nominal(g, p.value)
        ended = self.runner.work(handle, job, Calibrate.Feedback, partial)
        if isinstance(ended, Failure):
            if shown:
                self._show_nominal(g, shown[-1], f"NOT calibrated: {ended.kind}")
            return self.runner.end(handle, result, ended.code, ended.message)
        line = self._calibrated(handle, result, g, ended, nominal)
        if start is not None:
            line += f" (started from {origin})"
        return self.runner.end(handle, result, SUCCESSFUL, line)

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
        frames, said = self._estimated_frames(g, summary, result.urdf_path) \
            if g.kind == GEOMETRIC else (None, "")
        kept = self.model.publish(result.urdf_path, nominal, result.result_path, frames)
        result.published = True
        return line + said + f"; published (sha256 {kept.sha256[:12]})"

    def _plan(self, handle):
        result = PlanTrajectory.Result()
        return self.runner.exclusive("plan_trajectory", handle, result,
                                     lambda: self._plan_goal(handle, result))

    def _plan_goal(self, handle, result):
        g = handle.request
        config = self.paths.file("config", g.config)
        if os.path.isabs(g.out):
            raise GoalRefused(f"out must be relative to output_dir, got the absolute {g.out!r}")
        out = self.paths.out("out", g.out, base=self.params.output_dir, exist_ok=True) \
            if g.out else self.runner.run_folder()
        job = Job(PLAN_TRAJECTORY, config, out)
        ended = self.runner.work(handle, job, PlanTrajectory.Feedback)
        if isinstance(ended, Failure):
            return self.runner.end(handle, result, ended.code, ended.message)
        s = ended.summary
        result.path = os.path.abspath(ended.paths["trajectory"])
        result.result_path = os.path.abspath(ended.paths.get("result", ""))
        result.condition_number = float(s["condition_number"])
        result.iterations = int(s["iterations"])
        result.duration_s = float(s["duration_s"])
        result.base_size = int(s.get("base_size", 0))
        return self.runner.end(handle, result, SUCCESSFUL,
                               f"planned {result.duration_s:.1f} s, condition number "
                               f"{result.condition_number:.4g}, {result.iterations} "
                               "iterations")

    # ---------------------------------------------------------------- views
    def _measurement_frame(self, g) -> tuple[CalibrationConfig, str]:
        """The goal's config and the frame_id of its recorded measurements."""
        cfg = load_calibration_config(g.config)
        return cfg, measurement_frame_id(list(g.bags), cfg.bag.measurement)

    def _show_postures(self, g, outcome: TaskOutcome) -> str:
        """The posture markers (measured, nominal, calibrated) for RViz; the result
        line's addition.  Green within the measurement noise."""
        if outcome.paths.get("corners"):     # a camera calibration (ros/camera_markers.py)
            try:
                n = publish_corners(self.markers, outcome.paths["corners"],
                                    outcome.summary["camera_frame"]["child"])
            except DataError as exc:
                return f"; no markers ({exc})"
            return f"; {n} corner markers on {self.markers.pub.topic_name}"
        fit = outcome.paths.get("postures_fit")
        if not fit:
            return ""
        try:
            cfg, frame = self._measurement_frame(g)
            n = self.markers.publish(fit, frame,
                                     1e-3 * cfg.measurement.noise_position_mm)
        except DataError as exc:
            return f"; no markers ({exc})"
        return f"; {n} markers on {self.markers.pub.topic_name}"

    def _show_nominal(self, g, fit, note: str = "calibrating") -> None:
        """The measured and nominal layers while the calibration runs (or after it failed)."""
        try:
            cfg, frame = self._measurement_frame(g)
            self.markers.preview(fit, frame, 1e-3 * cfg.measurement.noise_position_mm,
                                 note)
        except FigarohError as exc:      # markers are a view: never the goal's end or error
            self.get_logger().warning(f"no posture markers: {exc}")

    def _estimated_frames(self, g, summary: dict, urdf: str) -> tuple[list | None, str]:
        """The estimated frames of a geometric result for /tf_static (None: those of the
        model it was built on); the result line's addition."""
        if "camera_frame" in summary:           # a camera calibration (ros/camera_frames.py)
            return camera_transforms(summary)
        try:
            cfg, meas = self._measurement_frame(g)
        except DataError as exc:
            return None, f"; frames not broadcast ({exc})"
        start = cfg.calibration.start_frame
        if start == "universe":
            with open(urdf) as f:
                start = root_link(f.read())
        tf = estimated_transforms(summary, meas, start, cfg.calibration.tool_frame)
        return tf, "; /tf_static " + ", ".join(f"{p}->{c}" for p, c, _ in tf)


def main(args=None):
    return run_node(CalibrationNode, "calibration", 4, args)


if __name__ == "__main__":
    sys.exit(main())

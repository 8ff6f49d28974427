"""The StartCalibration service of the calibration node: a Calibrate goal started by a
service call, answered at once.

``figaroh/start_calibration`` (figaroh_ros/srv/StartCalibration) checks the request as the
Calibrate action checks its goal (kind, config and bags inside the node's read roots,
``ros/goal_paths.py``), then sends that goal, with a goal id of its own, to the node's own
``figaroh/calibrate`` action: the same worker, publication gate and result.  It answers
once the goal has started (``accepted``, ``goal_id``) or was refused (``reason``: a
calibrate goal running already, a path refused, ...).  Feedback and result stay on the
action: a client follows the goal by its id on ``figaroh/calibrate/_action/feedback`` and
``_action/status`` and asks ``_action/get_result`` for the result.
"""
from __future__ import annotations

import threading
import time
import uuid

from rclpy.action import ActionClient
from unique_identifier_msgs.msg import UUID

from figaroh_ros.action import Calibrate
from figaroh_ros.errors import FigarohError
from figaroh_ros.ros.common import GoalRefused
from figaroh_ros.srv import StartCalibration

START_TIMEOUT = 10.0      # s for the action to start (or refuse) the goal


def goal_id_text(goal_id) -> str:
    """The 8-4-4-4-12 form of an action goal id (unique_identifier_msgs/UUID)."""
    return str(uuid.UUID(bytes=bytes(bytearray(goal_id.uuid))))


class StartService:
    """The service on ``node`` (a CalibrationNode: ``runner``, ``paths``, ``group``);
    ``check(goal)`` is the action's goal check (GoalRefused)."""

    def __init__(self, node, check):
        self.node, self.check = node, check
        self.client = ActionClient(node, Calibrate, "figaroh/calibrate",
                                   callback_group=node.group)
        self.one = threading.Lock()                # one start request at a time
        self.waiting: dict[str, list] = {}         # goal id -> [Event, started, reason]
        node.create_service(StartCalibration, "figaroh/start_calibration", self._start,
                            callback_group=node.group)

    def started(self, handle, ok: bool, reason: str = "") -> None:
        """The action's word on a goal (started, or refused with ``reason``)."""
        wait = self.waiting.get(goal_id_text(handle.goal_id))
        if wait is not None and not wait[0].is_set():
            wait[1:] = [ok, reason]
            wait[0].set()

    def _start(self, req, res):
        res.accepted, res.goal_id = False, ""
        goal = Calibrate.Goal(bags=list(req.bags), config=req.config, kind=req.kind,
                              publish=req.publish, start_urdf=req.start_urdf,
                              accept_failed_acceptance=req.accept_failed_acceptance)
        if not self.one.acquire(blocking=False):
            res.reason = "another start_calibration request is being answered; retry"
            return res
        try:
            self.check(goal)
            if self.node.runner.busy["calibrate"].locked():
                raise GoalRefused("a calibrate goal is running already; retry when it "
                                  "ends (follow it on figaroh/calibrate)")
            gid = uuid.uuid4()
            res.accepted, res.reason = self._send(goal, gid)
            res.goal_id = str(gid) if res.accepted else ""
        except (GoalRefused, FigarohError) as exc:
            res.reason = str(exc)
        finally:
            self.one.release()
        res.reason = self.node.paths.answer(res.reason, goal) if res.reason else ""
        log = self.node.get_logger()
        log.info(f"start_calibration: goal {res.goal_id} started") if res.accepted else \
            log.warning(f"start_calibration refused: {res.reason}")
        return res

    def _send(self, goal, gid: uuid.UUID) -> tuple[bool, str]:
        """Send ``goal`` as ``gid`` to the action; (started, why not)."""
        if not self.client.wait_for_server(timeout_sec=START_TIMEOUT):
            return False, f"the figaroh/calibrate action did not answer in {START_TIMEOUT:g} s"
        wait = [threading.Event(), False, "the goal did not start within "
                f"{START_TIMEOUT:g} s"]
        key = str(gid)
        self.waiting[key] = wait
        try:
            sent = self.client.send_goal_async(goal, goal_uuid=UUID(uuid=list(gid.bytes)))
            end = time.monotonic() + START_TIMEOUT
            while not sent.done() and time.monotonic() < end:
                time.sleep(0.01)
            if not sent.done() or not sent.result().accepted:
                return False, "the figaroh/calibrate action did not accept the goal"
            wait[0].wait(max(0.0, end - time.monotonic()))
            return bool(wait[1]), "" if wait[1] else str(wait[2])
        finally:
            self.waiting.pop(key, None)

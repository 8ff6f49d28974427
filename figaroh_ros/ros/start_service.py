"""The StartCalibration service of the calibration node: a Calibrate goal started by a
service call, answered at once; and the claim that lets one Calibrate goal run at a time.

``figaroh/start_calibration`` (figaroh_ros/srv/StartCalibration) checks the request as the
Calibrate action checks its goal (kind, config and bags inside the node's read roots,
``ros/goal_paths.py``), then sends that goal, with a goal id of its own, to the node's own
``figaroh/calibrate`` action: the same worker, publication gate and result.  It answers
once the action has accepted the goal (``accepted``, ``goal_id``) or why not (``reason``:
a calibrate goal running already, a path refused, ...).  Feedback and result stay on the
action: a client follows the goal by its id on ``figaroh/calibrate/_action/feedback`` and
``_action/status`` and asks ``_action/get_result`` for the result.

One goal at a time (:class:`CalibrateClaim`): the right to run is decided under one lock
when a goal is accepted by the action (``handle_accepted_callback``), not when its execute
callback starts, and a service request reserves it for its own goal id in the same lock as
it checks it, before sending the goal.  Two requests sent together, or a request and a goal
sent straight to the action, cannot both be told they run: the later one is refused with
the reason (the service's answer, or the goal aborted with INVALID_GOAL).
"""
from __future__ import annotations

import threading
import uuid

from rclpy.action import ActionClient
from unique_identifier_msgs.msg import UUID

from figaroh_ros.action import Calibrate
from figaroh_ros.errors import FigarohError
from figaroh_ros.ros.common import GoalRefused
from figaroh_ros.ros.qos import SERVICE_QOS
from figaroh_ros.srv import StartCalibration

START_TIMEOUT = 10.0      # s for the action to accept the goal the service sent
RUNNING = "a calibrate goal is running already; retry when it ends"


def goal_id_text(goal_id) -> str:
    """The 8-4-4-4-12 form of an action goal id (unique_identifier_msgs/UUID)."""
    return str(uuid.UUID(bytes=bytes(bytearray(goal_id.uuid))))


class CalibrateClaim:
    """Which Calibrate goal may run (its goal id), decided when goals are accepted.

    ``reserve(gid)`` (the service, before sending goal ``gid``) and ``accepted(handle)``
    (the action server's ``handle_accepted_callback``) take the claim when it is free;
    ``refusal(gid)`` is why an accepted goal must not run ("" when it holds the claim);
    ``release(gid)`` when the goal has ended."""

    def __init__(self):
        self._cv = threading.Condition()
        self.holder: str | None = None     # goal id holding the claim
        self.arrived = False               # the holder's goal was accepted by the action
        self.withdrawn: set[str] = set()   # reserved ids the service gave up on
        self.refused: dict[str, str] = {}  # accepted goal id -> why it must not run

    def reserve(self, gid: str) -> bool:
        with self._cv:
            if self.holder is not None:
                return False
            self.holder, self.arrived = gid, False
            return True

    def accepted(self, handle) -> None:
        """The action accepted ``handle``: it takes the claim (or the one reserved for its
        id), else it is recorded as refused; then it executes."""
        gid = goal_id_text(handle.goal_id)
        with self._cv:
            if gid in self.withdrawn:
                self.withdrawn.discard(gid)
                self.refused[gid] = ("start_calibration answered that this goal did not "
                                     f"start within {START_TIMEOUT:g} s: not run")
            elif self.holder is None or (self.holder == gid and not self.arrived):
                self.holder, self.arrived = gid, True
            else:
                self.refused[gid] = RUNNING
            self._cv.notify_all()
        handle.execute()

    def refusal(self, gid: str) -> str:
        with self._cv:
            return self.refused.pop(gid, "")

    def release(self, gid: str) -> None:
        with self._cv:
            if self.holder == gid:
                self.holder, self.arrived = None, False

    def wait_arrived(self, gid: str, timeout: float) -> bool:
        """Whether the goal reserved as ``gid`` was accepted within ``timeout`` s; when it
        was not, the reservation is withdrawn (a late goal of that id does not run)."""
        with self._cv:
            self._cv.wait_for(lambda: self.holder != gid or self.arrived, timeout)
            if self.holder == gid and self.arrived:
                return True
            if self.holder == gid:
                self.holder = None
                self.withdrawn.add(gid)
            return False


class StartService:
    """The service on ``node`` (a CalibrationNode: ``paths``, ``group``); ``check(goal)``
    is the action's goal check (GoalRefused); ``claim`` the action's
    :class:`CalibrateClaim`."""

    def __init__(self, node, check, claim: CalibrateClaim):
        self.node, self.check, self.claim = node, check, claim
        self.client = ActionClient(node, Calibrate, "figaroh/calibrate",
                                   callback_group=node.group)
        node.create_service(StartCalibration, "figaroh/start_calibration", self._start,
                            qos_profile=SERVICE_QOS, callback_group=node.group)

    def _start(self, req, res):
        res.accepted, res.goal_id = False, ""
        goal = Calibrate.Goal(bags=list(req.bags), config=req.config, kind=req.kind,
                              publish=req.publish, start_urdf=req.start_urdf,
                              accept_failed_acceptance=req.accept_failed_acceptance)
        try:
            self.check(goal)
            gid = uuid.uuid4()
            if not self.claim.reserve(str(gid)):
                raise GoalRefused(f"{RUNNING} (follow it on figaroh/calibrate)")
            res.accepted, res.reason = self._send(goal, gid)
            res.goal_id = str(gid) if res.accepted else ""
        except (GoalRefused, FigarohError) as exc:
            res.reason = str(exc)
        res.reason = self.node.paths.answer(res.reason, goal) if res.reason else ""
        log = self.node.get_logger()
        log.info(f"start_calibration: goal {res.goal_id} accepted") if res.accepted else \
            log.warning(f"start_calibration refused: {res.reason}")
        return res

    def _send(self, goal, gid: uuid.UUID) -> tuple[bool, str]:
        """Send ``goal`` as ``gid`` (reserved) to the action; (accepted, why not)."""
        key = str(gid)
        if not self.client.wait_for_server(timeout_sec=START_TIMEOUT):
            self.claim.wait_arrived(key, 0.0)               # withdrawn
            return False, f"the figaroh/calibrate action did not answer in {START_TIMEOUT:g} s"
        self.client.send_goal_async(goal, goal_uuid=UUID(uuid=list(gid.bytes)))
        if self.claim.wait_arrived(key, START_TIMEOUT):
            return True, ""
        return False, f"the figaroh/calibrate action did not accept the goal within " \
            f"{START_TIMEOUT:g} s"

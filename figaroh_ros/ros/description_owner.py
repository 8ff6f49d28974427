"""The calibration node's robot model: what it publishes, keeps, restores and announces.

One owner of the model: when the parameter ``robot_state_publisher`` names a node (the
robot's robot_state_publisher, or the simulator standing in for it), a published model is
set as that node's ``robot_description`` parameter (SetParameters; the node republishes
it) and nothing goes on ``robot_description`` from here; only when none is named is the
topic published (std_msgs/String, transient local).  A parameter refused or a node that
does not answer is a :class:`RosError`: nothing published.

Every published model is kept with its sha256 and the result.yaml that justified it
(``io/model_history.py``, under ``output_dir/models``), the nominal model first (the
``robot_description`` seen when the node started, else the config's URDF).  Beside each
kept model, ``<sha256>.published.yaml`` records the nominal URDF its goal named (the key of
``build_on_published``) and the frames it put on ``/tf_static`` (a geometric result's
estimated frames; a dynamic model built on a published one keeps that one's frames).  So:

* a restore (``previous``, ``nominal``, a hash) republishes that model, sends exactly its
  frames on ``/tf_static`` and makes it the model the next goal builds on (``nominal``:
  the next goal starts from its config's URDF);
* ``previous`` steps back one model at a time along the models each was built on
  (``ModelHistory.previous``);
* a (re)started node announces the last model of its history and its frames.

What arrives on ``robot_description`` is only read, never republished: the first message
that is a URDF ``model/urdf_checks.py`` accepts (well-formed, one tree, finite masses and
inertias, at most ``MAX_BYTES``) is the model seen at start; anything else is dropped with
its reason, the topic named in the log (``ros/sane.py``'s :class:`Refusals`).  At the first
publication that model is kept as the nominal one only when it has every movable joint of
the goal's nominal URDF; otherwise (another robot on the topic) the goal's URDF is kept,
and the log says so.
"""
from __future__ import annotations

import os
import xml.etree.ElementTree as ET

import pinocchio as pin
import yaml
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters
from std_msgs.msg import String

from figaroh_ros.errors import DataError, FigarohError, ModelError, RosError
from figaroh_ros.io.model_history import KeptModel, ModelHistory, _write_exact
from figaroh_ros.model.urdf_checks import MAX_BYTES, check_urdf_text
from figaroh_ros.ros.common import LATCHED, first_answer
from figaroh_ros.ros.sane import Refusals
from figaroh_ros.ros.qos import SERVICE_QOS
from figaroh_ros.ros.static_frames import StaticFrames, se3
from figaroh_ros.srv import RestoreDescription

PARAMETER_TIMEOUT = 5.0     # s for robot_state_publisher to answer SetParameters
ANNOUNCE_TIMEOUT = 30.0     # s a starting node waits for robot_state_publisher
Frames = list  # of (parent, child, pin.SE3)


def frames_record(frames: Frames) -> list[dict]:
    return [{"parent": p, "child": c, "xyz": [float(v) for v in T.translation],
             "rpy": [float(v) for v in pin.rpy.matrixToRpy(T.rotation)]}
            for p, c, T in frames]


def frames_of_record(rows) -> Frames:
    return [(str(r["parent"]), str(r["child"]), se3(r)) for r in rows or []]


def movable_joints(urdf_text: str) -> list[str]:
    """The names of the joints of a URDF text that are not fixed ([] when it does not
    parse)."""
    try:
        root = ET.fromstring(urdf_text)
    except ET.ParseError:
        return []
    return [j.get("name", "") for j in root.iter("joint") if j.get("type") != "fixed"]


class DescriptionOwner:
    """The model side of the calibration node (``node``: its logger, clients, publishers)."""

    def __init__(self, node, rsp: str, output_dir: str, group):
        self.node, self.rsp = node, rsp
        self.pub = None if rsp else node.create_publisher(String, "robot_description",
                                                          LATCHED)
        # one client for the node's life: a client made just before its request can lose
        # it (its writer not yet matched to the server's reader)
        self.client = (node.create_client(SetParameters, f"{rsp}/set_parameters",
                                          callback_group=group) if rsp else None)
        self.history = ModelHistory(output_dir)
        self.live: str | None = None                      # the model seen at start
        self.refusals = Refusals(node.get_logger())
        self.sub = node.create_subscription(String, "robot_description", self._seen,
                                            LATCHED, callback_group=group)
        self.frames = StaticFrames(node)
        self.published: tuple[str, str] | None = None    # (nominal URDF, published URDF)
        self.current_frames: Frames = []
        node.create_service(RestoreDescription, "figaroh/restore_description",
                            self._restore, qos_profile=SERVICE_QOS, callback_group=group)
        self._announce_timer = None
        if self.history.current is not None:
            self._announce_timer = node.create_timer(0.2, self._announce,
                                                     callback_group=group)

    # ------------------------------------------------------------ kept with each model
    def _sidecar(self, sha256: str) -> str:
        return os.path.join(self.history.folder, f"{sha256}.published.yaml")

    def _remember(self, entry: KeptModel, nominal: str | None, frames: Frames) -> None:
        _write_exact(self._sidecar(entry.sha256), yaml.safe_dump(
            {"nominal_urdf": nominal or "", "frames": frames_record(frames)}, sort_keys=False))

    def _recall(self, entry: KeptModel) -> tuple[str, Frames]:
        """The nominal URDF key and the frames kept with ``entry`` ("", [] when none)."""
        path = self._sidecar(entry.sha256)
        if not os.path.isfile(path):
            return "", []
        try:
            with open(path, encoding="utf-8") as f:
                raw = yaml.safe_load(f) or {}
            return str(raw.get("nominal_urdf") or ""), frames_of_record(raw.get("frames"))
        except (OSError, yaml.YAMLError, KeyError, TypeError, ValueError) as exc:
            raise DataError(f"{path}: not a published-model record ({exc})") from None

    def _make_current(self, entry: KeptModel) -> str:
        """``entry`` becomes the model goals build on and the one whose frames are on
        /tf_static; the frames' line."""
        nominal, frames = self._recall(entry)
        is_nominal = self.history.nominal is not None and \
            entry.sha256 == self.history.nominal.sha256
        self.published = None if is_nominal or not nominal else (nominal, entry.path)
        self.current_frames = frames
        self.frames.replace(frames)
        return ", ".join(f"{p}->{c}" for p, c, _ in frames) or "none"

    # ------------------------------------------------------------ publication
    def _seen(self, msg):
        """The first valid URDF on robot_description is the model seen at start; each
        invalid one is dropped, its reason logged."""
        topic = self.sub.topic_name
        if len(msg.data) > MAX_BYTES:
            self.refusals.refuse(topic, f"{len(msg.data)} characters (more than "
                                 f"{MAX_BYTES}): not read")
            return
        try:
            check_urdf_text(msg.data, topic)
        except ModelError as exc:
            self.refusals.refuse(topic, str(exc)[:300])
            return
        if self.live is None:
            self.live = msg.data

    def _nominal_text(self, nominal: str | None) -> str | None:
        """The model kept as the nominal one at the first publication: the one seen at
        start when it has every movable joint of the goal's nominal URDF, else that URDF;
        with no nominal URDF file (a model made from xacro), the one seen at start if any."""
        if nominal is None:
            return self.live
        with open(nominal) as f:
            text = f.read()
        if self.live is None:
            return text
        missing = sorted(set(movable_joints(text)) - set(movable_joints(self.live)))
        if not missing:
            return self.live
        self.node.get_logger().warning(
            f"{self.sub.topic_name}: the model seen at start lacks the joints {missing[:6]} "
            f"of {os.path.basename(nominal)}: {os.path.basename(nominal)} kept as the "
            "nominal model")
        return text

    def publish(self, path: str, nominal: str | None, result_path: str,
                frames: Frames | None) -> KeptModel:
        """Publish the URDF at ``path`` (the nominal model kept first) with ``frames`` on
        /tf_static (None: the frames of the model it was built on); its history entry."""
        with open(path) as f:
            text = f.read()
        first = self._nominal_text(nominal) if self.history.nominal is None else None
        if first is not None:
            self._remember(self.history.add(first, "nominal"), "", [])
        self.deliver(text)
        entry = self.history.add(text, "calibrated", result_path)
        frames = self.current_frames if frames is None else frames
        self._remember(entry, nominal, frames)
        self.published, self.current_frames = (nominal, path), frames
        if frames:
            self.frames.replace(frames)
        return entry

    def deliver(self, text: str, timeout: float = PARAMETER_TIMEOUT) -> None:
        """The model to robot_state_publisher's parameter, or on the topic when none is
        named; RosError when the parameter is not set."""
        if not self.rsp:
            self.pub.publish(String(data=text))
            return
        if not self.client.wait_for_service(timeout_sec=timeout):
            raise RosError(f"robot_state_publisher '{self.rsp}': no set_parameters "
                           f"service within {timeout:g} s; nothing published")
        p = Parameter(name="robot_description",
                      value=ParameterValue(type=ParameterType.PARAMETER_STRING,
                                           string_value=text))
        answer = first_answer(self.client, SetParameters.Request(parameters=[p]),
                              PARAMETER_TIMEOUT, f"robot_state_publisher '{self.rsp}' "
                              "to answer SetParameters (nothing published)")
        if not answer.results[0].successful:
            raise RosError(f"robot_state_publisher '{self.rsp}' refused the model: "
                           f"{answer.results[0].reason}")

    def _announce(self) -> None:
        """Once, at start: the last model of the history and its frames again."""
        self._announce_timer.cancel()
        log = self.node.get_logger()
        entry = self.history.current
        try:
            frames = self._make_current(self.history.entries[self.history.live_index()])
            self.deliver(self.history.text(entry), ANNOUNCE_TIMEOUT)
            log.info(f"announced the last published model {entry.sha256[:12]} "
                     f"({entry.note}); /tf_static: {frames}")
        except FigarohError as exc:
            log.error(f"the last published model {entry.sha256[:12]} was not announced: "
                      f"{exc}")

    # ------------------------------------------------------------ restore
    def _restore(self, req, res):
        which = req.which.strip()[:128]     # a sha256 is 64 hex digits: no longer echoed
        try:
            entry = self._which(which)
            if entry is not None:
                text = self.history.text(entry)
                self.deliver(text)
                self.history.add(text, "restored")
                frames = self._make_current(entry)
                res.model_hash = entry.sha256
                res.message = (f"republished {entry.note} model {entry.sha256[:12]}"
                               + (f" of {entry.result}" if entry.result else "")
                               + f"; /tf_static: {frames}; the next goal builds on "
                               + ("it" if self.published else "its config's URDF"))
                self.node.get_logger().info(res.message)
            else:
                res.message = f"{len(self.history.entries)} models kept"
            res.success = True
        except FigarohError as exc:
            res.success, res.message = False, str(exc)
        res.history_hashes = [e.sha256 for e in self.history.entries]
        res.history_results = [e.result for e in self.history.entries]
        return res

    def _which(self, which: str) -> KeptModel | None:
        """The kept model a restore request names (None: only list them)."""
        if which == RestoreDescription.Request.HISTORY:
            return None
        if which == RestoreDescription.Request.PREVIOUS:
            entry = self.history.previous()
            if entry is None and self.history.current is not None:
                raise DataError("no previous model: the live model "
                                f"{self.history.current.sha256[:12]} was built on none "
                                "kept (it is the first)")
        elif which == RestoreDescription.Request.NOMINAL:
            entry = self.history.nominal
        else:
            return self.history.find(which)
        if entry is None:
            raise DataError(f"no {which} model kept: nothing has been published yet")
        return entry

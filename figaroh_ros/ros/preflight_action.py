"""The executor's Preflight action: can this experiment run, and will it identify the
model, before anything moves?

``figaroh/preflight`` (figaroh_ros/action/Preflight), served by the executor, checks in
order, each with its numbers (``tasks/preflight_checks.py``): every controller's
FollowJointTrajectory server answers; every topic of the robot's driver section arrives
(at its stated rate for the joint states) over ``topic_window`` s, and its publishers'
QoS matches what the recorder asks for; the stamps of its messages (joint states, wrench,
mocap) agree with this computer's clock within the executor's ``clock_tolerance`` (the
bag's holds are cut on this computer's clock); the frame of its readings is tied to the model
(a link, or reached by a lookup of a FrameBuffer, ``ros/frames.py``: tf2_ros or our buffer
of /tf and /tf_static, waiting up to ``FRAME_TIMEOUT`` s; a wrench's must be, a mocap frame
may be estimated by the calibration); the model the executor resolved
(source, sha256), which fails when there is none or when it lacks a joint the controllers
or the goal's identification config name; and, given a calibration config (the goal's,
else the executor's ``preflight_config``) and a postures file, the identifiability of
those postures, or given an identification config (the goal's, else the executor's
``preflight_identification_config``) and a trajectory file, that of the trajectory (rank,
condition number, expected std: ``tasks/preflight.py``, loaded by the first goal that
checks them).  Feedback after each check.
Nothing moves.  One goal at a time (another is refused at once); its files must be inside
the executor's read roots (``ros/goal_paths.py``: a path elsewhere refuses the goal,
INVALID_GOAL), its ``topic_window`` at most ``MAX_WINDOW`` s; its answer is scrubbed of
the files it named.  Every RunExperiment goal runs the same checks before moving: the
identifiability ones (:func:`refuse_unidentifiable`) and the live ones
(:func:`live_stages`, over the executor's ``preflight_topic_window``: ``ros/goal_checks.py``).
"""
from __future__ import annotations

import math
import os
import time

from rclpy.action import ActionServer, CancelResponse
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from figaroh_ros import tasks
from figaroh_ros.action import Preflight
from figaroh_ros.config.calibration import CalibrationConfig, load_calibration_config
from figaroh_ros.config.identification import load_config
from figaroh_ros.errors import DATA_ERROR, SUCCESSFUL
from figaroh_ros.io.experiment_files import read_postures, read_trajectory
from figaroh_ros.model.sources import write_model
from figaroh_ros.ros.catch_up import header_stamp_ns, stamped
from figaroh_ros.ros.common import GoalRefused, message_class
from figaroh_ros.ros.frames import FrameBuffer
from figaroh_ros.ros.goal_paths import RESULT_TIMEOUT
from figaroh_ros.ros.polled import WITH_INFO, StampedRate
from figaroh_ros.tasks.gate import Check
from figaroh_ros.tasks.preflight_checks import (
    clock_check, controller_check, identifiability_summary, model_check, qos_check, rate_check,
    tf_check
)
from figaroh_ros.tasks.robot_model import model_cache

CONTROLLER_TIMEOUT = 2.0        # s for a controller's action server to answer
DEFAULT_WINDOW = 2.0            # s of topic traffic measured when the goal gives 0
MAX_WINDOW = 10.0               # s at most a goal makes the executor listen to the topics
LATE = 0.3                      # s more for messages of the window delivered late
FRAME_TIMEOUT = 1.0             # s from the topics' window start a sensor frame's lookup waits
# s a topic has for its first message without a window: 30 frames of a 10 Hz camera, whose
# large best-effort images a loaded computer may drop for a second at a time
ALIVE_TIMEOUT = 3.0
# s the required topics' publishers have to be discovered and matched before the window
# opens: a graph launched a moment ago (under the test suite's load the executor knew the
# simulator's controllers 1.8 s after its start, and none of its publishers 2.8 s after)
DISCOVERY_TIMEOUT = 5.0
# deep enough to hold a window of 1 kHz messages while a busy executor is late to read
# them (a depth of 100 lost most of a 250 Hz topic to a starved executor: 99 Hz measured)
HEAR_ALL = QoSProfile(depth=5000, reliability=ReliabilityPolicy.BEST_EFFORT,
                      durability=DurabilityPolicy.VOLATILE)


def _robot_model(cfg, model_xml: str):
    """The typed config ``cfg`` whose nominal model is the executor's, the robot's own,
    unless the config names a URDF file (a xacro, live or bag source means the robot's
    model before any recording): a copy."""
    if (cfg.robot.source or "urdf") == "urdf":
        return cfg
    robot = cfg.robot.model_copy(update={"urdf": write_model(model_xml, model_cache())})
    return cfg.model_copy(update={"robot": robot})


def preflight_calibration(path: str, model_xml: str) -> CalibrationConfig | None:
    """The calibration config ``path`` for the postures' checks (None for ""), whose nominal
    model is the executor's unless the config names a URDF file (as :func:`_robot_model`)."""
    if not path:
        return None
    cfg = load_calibration_config(path)
    if (cfg.robot.source or "urdf") == "urdf":
        return cfg
    robot = cfg.robot.model_copy(update={"urdf": write_model(model_xml, model_cache())})
    return cfg.model_copy(update={"robot": robot})


def preflight_identification(path: str, model_xml: str):
    """The identification config ``path`` (typed) for the trajectories' checks, its
    nominal model the executor's as :func:`_robot_model` says (None for "")."""
    return _robot_model(load_config(path), model_xml) if path else None


def refuse_unidentifiable(ex, names: list[str], Q, times=None) -> None:
    """GoalRefused when the postures ``Q`` (``times`` None) cannot identify the executor's
    ``preflight_config`` calibration, or the trajectory cannot identify its
    ``preflight_identification_config`` model: before anything moves."""
    if times is None:
        cfg, verdict = ex.preflight, \
            lambda c: tasks.preflight.postures_verdict(c, names, Q)
    else:
        cfg, verdict = ex.preflight_identification, \
            lambda c: tasks.preflight.trajectory_verdict(c, names, times, Q)
    if cfg is None:
        return
    v, _ = verdict(cfg)
    if not v.passed:
        raise GoalRefused("pre-flight FAILED, nothing moved: " + "; ".join(
            c.line() for c in v.failed()))


def _controllers(ex, timeout: float) -> list[Check]:
    return [controller_check(name, ex.trajectory_clients[name].wait_for_server(
        timeout_sec=timeout), list(joints), timeout)
        for name, joints in ex.cfg.controllers.items()]


def _hear(ex, measured, window: float) -> tuple[dict[str, list[float]], float, float,
                                                 dict[str, list[float]], float]:
    """The arrival times (the joint states': the driver's own stamps, of the states the
    executor can use, each after the one before: ``polled.StampedRate``, its drops logged
    in one line) of each topic over ``window`` s, or with
    ``window`` 0 until every required topic has a message (at most ``ALIVE_TIMEOUT`` s),
    once the publishers are discovered (:func:`_discovered`); the span heard, when
    (monotonic s) the window opened, the delays of each stamped topic's messages: arrival
    on this computer's ROS clock less stamp (NaN: unstamped), and the least span the joint
    states' rate is measured over (``StampedRate.over``)."""
    js = ex.cfg.driver.joint_states
    times = {m.topic: [] for m in measured}
    has_header = {m.topic: stamped(message_class(m.type)) for m in measured}
    delays, clock = {m.topic: [] for m in measured}, ex.get_clock()
    rate = StampedRate(ex.cfg.joints)
    times[js.topic] = rate.stamps

    def heard(raw, topic, received=0):
        arrived = clock.now().nanoseconds * 1e-9
        if topic == js.topic:           # its rate from its stamps: never from a jump back
            if (stamp := rate.heard(raw, received)) is None:
                return
        else:
            ns = header_stamp_ns(raw) if has_header[topic] else None
            stamp = None if ns is None else ns * 1e-9
            times[topic].append(time.monotonic())
        if stamp is not None:
            delays[topic].append(arrived - stamp if stamp > 0 else math.nan)

    # a topic's messages heard in the order they were taken: a reentrant group would let
    # two callbacks of one subscription run at once, and a stamp look to go back
    def callback(topic):                # the joint states' with when they were received
        if topic == js.topic and WITH_INFO:
            return lambda raw, info: heard(raw, topic, info.get("received_timestamp", 0))
        return lambda raw: heard(raw, topic)
    subs = [ex.create_subscription(message_class(m.type), m.topic, callback(m.topic),
                                   HEAR_ALL, raw=True,
                                   callback_group=MutuallyExclusiveCallbackGroup())
            for m in measured]
    _discovered(ex, subs, measured)
    t0 = time.monotonic()
    if window > 0:
        time.sleep(window + LATE)
    else:
        while time.monotonic() - t0 < ALIVE_TIMEOUT and not all(
                times[m.topic] for m in measured if m.required):
            time.sleep(0.005)
    for s in subs:
        ex.destroy_subscription(s)
    rate.report(ex.get_logger(), ex.resolve_topic_name(js.topic))
    stamps = times.get(js.topic, [])        # the last window of them (a first state
    # stamped long before the others, as a driver's last one before a restart, is out)
    times[js.topic] = [t for t in stamps if not window or stamps[-1] - t <= window]
    return times, window or min(time.monotonic() - t0, ALIVE_TIMEOUT), t0, delays, \
        rate.over(window)


def _discovered(ex, subs, measured) -> None:
    """Wait, at most ``DISCOVERY_TIMEOUT`` s, until every required topic has a publisher in
    the graph and each subscription has matched every publisher of its topic: the window
    measures the driver, not how long discovery took.  A topic nobody publishes is then
    reported by its window (no message) and its QoS check (no publisher)."""
    end = time.monotonic() + DISCOVERY_TIMEOUT
    while time.monotonic() < end:
        counts = [ex.count_publishers(ex.resolve_topic_name(m.topic)) for m in measured]
        if all((n > 0 or not m.required) and s.get_publisher_count() >= n
               for s, m, n in zip(subs, measured, counts)):
            return
        time.sleep(0.005)


def _topics(ex, window: float) -> list[Check]:
    """Rates and QoS of the driver's topics over ``window`` s (0: each alive, no rate
    checked), the sensor frames tied to the model by TF lookups: the joint states' rate
    from the driver's own stamps (what it publishes, whatever our scheduling), the
    others' from their arrivals."""
    measured = [m for m in ex.cfg.driver.recorded() if not m.topic.endswith("posture_events")]
    js = ex.cfg.driver.joint_states
    tf = FrameBuffer(ex)
    try:
        times, span, opened, delays, over = _hear(ex, measured, window)
        deadline = opened + FRAME_TIMEOUT
        checks = []
        for m in measured:
            topic = ex.resolve_topic_name(m.topic)
            if delays[m.topic] or m.topic == js.topic:     # the stamped topics heard
                checks.append(clock_check(topic, delays[m.topic], ex.params.clock_tolerance))
            rate = js.rate_hz if m.topic == js.topic and window > 0 else None
            checks.append(rate_check(topic, times[m.topic], span, rate, m.required,
                                     over=over if m.topic == js.topic else 0.0))
            infos = ex.get_publishers_info_by_topic(topic)
            offered = [(i.qos_profile.reliability.name.lower(),
                        i.qos_profile.durability.name.lower()) for i in infos]
            checks.append(qos_check(topic, m.reliability, m.durability, offered))
        links = [f.name for f in ex.model.frames]
        # a wrench must be tied to the robot; a mocap frame is estimated
        return checks + frame_checks(tf, links, [
            (ex.resolve_topic_name(m.topic), m.frame, m.type.endswith("WrenchStamped"))
            for m in measured if m.frame], deadline)
    finally:
        tf.close()


def _heard(tf, limit: int = 8) -> str:
    parents = tf.parents()
    known = sorted(set(parents) | set(parents.values()))
    return f"{known[:limit]}{' ...' if len(known) > limit else ''}"


def frame_checks(tf, links: list[str], sensors: list[tuple[str, str, bool]],
                 deadline: float) -> list[Check]:
    """Each ``(topic, frame, required)`` sensor frame against the model's ``links``: a
    link, or reached by a lookup of the FrameBuffer ``tf`` (ros/frames.py), a required
    frame waiting until ``deadline`` (monotonic s) for its transforms."""
    checks = []
    for topic, frame, required in sensors:
        name = frame.lstrip("/")
        wait = max(0.0, deadline - time.monotonic()) if required else 0.0
        path = [name] if name in links else tf.reaches(name, links, wait)
        tried = (f"{tf.backend} lookups against {len(links)} links, waited "
                 f"{wait:.2g} s; frames heard: {_heard(tf)}")
        checks.append(tf_check(topic, frame, path, required, tried))
    return checks


def _identification(ex, g):
    """The identification config of a trajectory goal: the goal's, else the executor's."""
    if not g.trajectory:
        return None
    return preflight_identification(g.config, ex.model_xml) if g.config \
        else ex.preflight_identification


def _model(ex, g) -> Check:
    """The model the executor holds, with every joint the controllers and the goal's
    identification config name."""
    model = getattr(ex, "model", None)
    joints = set() if model is None else {n for n in model.names}
    needed = {"the controllers": list(ex.cfg.joints)}
    cfg = _identification(ex, g)
    if cfg is not None:
        needed[g.config or "preflight_identification_config"] = list(cfg.robot.joints)
    return model_check(ex.provenance if ex.model_xml else None, joints, needed)


def _verdict_checks(verdict, result, rank: int, count: int, cond: float) -> list[Check]:
    result.rank, result.parameter_count, result.condition_number = rank, count, cond
    return [Check(f"identifiability:{c.name}", c.passed, c.value, c.limit, c.detail)
            for c in verdict.checks]


def _missing(path: str) -> list[Check]:
    return [Check("identifiability", False, None, None, f"file not found: {path}")]


def _postures(ex, g, result) -> list[Check]:
    cfg = preflight_calibration(g.config, ex.model_xml) if g.config else ex.preflight
    if cfg is None or not g.postures:
        return []
    if not os.path.isfile(g.postures):
        return _missing(g.postures)
    names, Q = read_postures(g.postures, ex.cfg.joints)
    verdict, ident = tasks.preflight.postures_verdict(cfg, names, Q)
    s = identifiability_summary(ident)
    return _verdict_checks(verdict, result, s["rank"], s["parameters"],
                           s["condition_number"])


def _trajectory(ex, g, result) -> list[Check]:
    cfg = _identification(ex, g)
    if cfg is None:
        return []
    if not os.path.isfile(g.trajectory):
        return _missing(g.trajectory)
    names, t, Q = read_trajectory(g.trajectory, ex.cfg.joints)
    verdict, ident = tasks.preflight.trajectory_verdict(cfg, names, t, Q)
    return _verdict_checks(verdict, result, ident.rank, len(ident.structural),
                           ident.condition_number)


def _identifiability(ex, g, result) -> list[Check]:
    if g.postures and g.trajectory:
        return [Check("identifiability", False, None, None,
                      "give postures or a trajectory, not both")]
    return _trajectory(ex, g, result) if g.trajectory else _postures(ex, g, result)


def live_stages(ex, g, window: float, controller_timeout: float = CONTROLLER_TIMEOUT
                ) -> tuple:
    """The checks of the graph before anything moves, stage by stage: the controllers
    (answering within ``controller_timeout`` s), the driver's topics (``window`` s; 0: no
    rates) and sensor frames, the model (``g``: a Preflight goal, its trajectory and
    config)."""
    return (lambda: _controllers(ex, controller_timeout), lambda: _topics(ex, window),
            lambda: [_model(ex, g)])


def run_stages(stages, each) -> list[Check]:
    """Every check of ``stages`` in order, ``each(check, fraction)`` after each."""
    checks = []
    for k, stage in enumerate(stages):
        for c in stage():
            checks.append(c)
            each(c, float(k + 1) / len(stages))
    return checks


def refuse_goal(ex, g) -> str:
    """Why the Preflight goal ``g`` is refused before any check ('' = it is not): a
    ``topic_window`` not in [0, MAX_WINDOW] s, a file outside the executor's read roots or
    too large (one inside them but missing is the identifiability check's failure)."""
    if not (math.isfinite(g.topic_window) and 0.0 <= g.topic_window <= MAX_WINDOW):
        return f"topic_window must be in [0, {MAX_WINDOW:g}] s, got {g.topic_window}"
    for field in ("config", "postures", "trajectory"):
        if getattr(g, field):
            try:
                ex.paths.file(field, getattr(g, field))
            except GoalRefused as exc:
                if not str(exc).endswith("not found"):
                    return str(exc)
    return ""


def serve_preflight(ex) -> ActionServer:
    """The Preflight action server on the executor ``ex``: one goal at a time, ended
    through the executor's goal lifecycle (``ex.goals``: ``ros/goal_runner.py``)."""
    ex.goals.add("preflight")

    def execute(handle):
        result = Preflight.Result()
        return ex.goals.exclusive("preflight", handle, result, lambda: checked(handle, result))

    def checked(handle, result):
        g = handle.request
        refused = refuse_goal(ex, g)
        if refused:
            raise GoalRefused(refused)
        window = float(g.topic_window) if g.topic_window > 0 else DEFAULT_WINDOW
        stages = live_stages(ex, g, window) + (lambda: _identifiability(ex, g, result),)
        checks = run_stages(stages, lambda c, f: handle.publish_feedback(
            Preflight.Feedback(check_name=c.name, check_passed=c.passed, fraction=f)))
        result.check_names = [c.name for c in checks]
        result.check_passed = [bool(c.passed) for c in checks]
        result.check_details = [ex.paths.answer(c.detail, g) for c in checks]
        result.passed = all(result.check_passed)
        failed = [c for c in checks if not c.passed]
        return ex.goals.end(handle, result, SUCCESSFUL if result.passed else DATA_ERROR,
                            f"{len(checks)} checks passed" if result.passed else
                            "FAILED: " + "; ".join(f"{c.name}: {c.detail}" for c in failed))

    return ActionServer(ex, Preflight, "figaroh/preflight", execute,
                        cancel_callback=lambda h: CancelResponse.ACCEPT,
                        callback_group=ex.group, result_timeout=RESULT_TIMEOUT)

"""Every node's ROS parameters, declared once: type, default, range and description.

Each node has one pydantic model below; :func:`declare` declares its fields on the node
(``ParameterDescriptor`` with the description, ``read_only`` — the nodes read their
parameters once, at start — and the ``floating_point_range`` / ``integer_range`` of the
field's bounds, so ``ros2 param describe`` shows them), then validates the values.  A
parameter of the wrong type, out of its range or naming a missing file raises a
:class:`~figaroh_ros.errors.ConfigError` of one line naming the parameter and the value;
the node then refuses to start (exit 2, no traceback: ``common.run_node``).
"""
from __future__ import annotations

import os
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from rclpy.exceptions import ParameterException

from figaroh_ros.errors import ConfigError
from figaroh_ros.ros.common import message_class


def _existing_file(path: str) -> str:
    if not os.path.isfile(path):
        raise ValueError("no such file" if path else "a file is required")
    return os.path.abspath(path)


def _topic_spec(spec: str) -> str:
    topic, _, type_name = spec.partition(":")
    if not topic.startswith("/"):
        raise ValueError(f"{spec!r} is not '/topic:package/msg/Type'")
    message_class(type_name)          # ValueError when unknown
    return spec


ExistingFile = Annotated[str, AfterValidator(_existing_file)]
TopicSpec = Annotated[str, AfterValidator(_topic_spec)]


class Parameters(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True,
                              allow_inf_nan=False)


def _lock_memory_field(what: str):
    return Field(True, description=f"keep the {what} in RAM (mlockall, as ros2_control's "
                 "real-time node does): it never waits for a page the kernel paged out to "
                 "disk; skipped with a warning where the process may not lock its memory")


def _bag_dir_field(what: str):
    return Field("bags", min_length=1, description=f"folder of the bags: {what}; a request's "
                 "bag path must resolve inside it (docs/security.md)")


def _output_dir_field(what: str):
    return Field("calibration", min_length=1, description=f"folder of the calibration "
                 f"node's runs: {what}")


DATA_ROOTS = Field(
    "", description="more folders, separated by ':', from which a goal may make this node "
    "read files, besides bag_dir, output_dir and the package's shared config folder; any "
    "other path a goal names is refused (docs/security.md)")
MAX_READ_BYTES = Field(
    100_000_000, ge=1, le=2**40, description="bytes at most of a file a goal makes this "
    "node read (postures, trajectory, config, URDF): a larger one is refused")
MAX_BAG_BYTES = Field(
    50_000_000_000, ge=1, le=2**50, description="bytes at most of the bags one goal makes "
    "this node read, all its bags together: more is refused")


class SimRobotParameters(Parameters):
    config: ExistingFile = Field(
        "", description="simulation config (config/sim_<robot>.yaml): model, controllers, "
        "hidden truth, noise, rates")
    lock_memory: bool = _lock_memory_field("simulator's memory (its sensor loops)")
    impersonate: str = Field(
        "", pattern="^(|ur10|tiago|talos)$", description="publish exactly as that robot's "
        "driver does (config/robot_<robot>.yaml): its controllers' action names, its joint "
        "states' rate and topics; run the node as robot_state_publisher (-r "
        "__node:=robot_state_publisher) to hold the model as on the robot ('' = the sim "
        "config's own names)")


class RecorderParameters(Parameters):
    lock_memory: bool = _lock_memory_field("recorder's memory (what it receives)")
    config: str = Field(
        "", description="robot YAML whose `driver` section lists the recorded topics, their "
        "QoS and which are required (replaces `topics`; '' = use `topics`)")
    topics: list[TopicSpec] = Field(
        ["/joint_states:sensor_msgs/msg/JointState",
         "/motor_currents:sensor_msgs/msg/JointState",
         "/link_encoders:sensor_msgs/msg/JointState",
         "/force_plate/wrench:geometry_msgs/msg/WrenchStamped",
         "/mocap/pose:geometry_msgs/msg/PoseStamped",
         "/mocap/base_pose:geometry_msgs/msg/PoseStamped",
         "/tf:tf2_msgs/msg/TFMessage",
         "/figaroh/posture_events:figaroh_ros/msg/PostureEvent"],
        min_length=1, description="recorded topics, each '/topic:package/msg/Type'")
    storage: str = Field("mcap", pattern="^(mcap|sqlite3)$",
                         description="rosbag2 storage of the bags: mcap or sqlite3")
    bag_dir: str = Field("bags", min_length=1,
                         description="folder of the timestamped bags started without a path; "
                         "a start's bag_path must resolve inside it, or is refused "
                         "(docs/security.md)")
    segment_seconds: float = Field(
        600.0, ge=0.0, le=3600.0, description="s of message time per storage file, like "
        "ros2 bag record --max-bag-duration (0: one file); data is committed every second, "
        "so a killed recorder loses at most 1 s")
    start_timeout: float = Field(
        5.0, ge=0.0, le=60.0, description="s a bag start waits, in all, for a publisher on "
        "each required topic (subscribed with the QoS it offers, ros/qos.py) and then for "
        "one message from each; a required topic silent by then fails the start by name")
    max_bag_size: int = Field(
        0, ge=0, le=2**40, description="bytes per storage file, like ros2 bag record "
        "--max-bag-size: a full file is closed and the bag goes on in the next (0: no limit)")
    frame_timeout: float = Field(
        2.0, ge=0.0, le=60.0, description="s of TF a bag start listens to (an idle recorder "
        "subscribes to nothing) before a measurement frame of the driver section that TF "
        "does not give relative to the model root (robot_description's root link) counts "
        "as missing: a bag start waits at most that long; the transforms go into the bag's "
        "custom_data, a missing frame is named in the start reply")
    bag_backend: str = Field(
        "auto", pattern="^(auto|rosbag2_py|rosbags)$", description="bag writer: the ROS "
        "install's rosbag2_py, rosbags, or auto (rosbag2_py when importable); recorded in the "
        "bag's custom_data (io/bag_backend.py)")


class ExecutorParameters(Parameters):
    lock_memory: bool = _lock_memory_field("executor's memory (its watchdogs and holds)")
    config: ExistingFile = Field(
        "", description="robot YAML: robot.urdf and controllers {name: [joints]} "
        "(config/robot_<robot>.yaml; the simulation configs serve)")
    max_velocity: float = Field(1.0, ge=0.01, le=10.0,
                                description="rad/s (m/s) of the moves between postures")
    settle_time: float = Field(0.2, ge=0.0, le=60.0,
                               description="s waited after reaching a posture, before "
                               "its hold")
    dwell_time: float = Field(0.5, ge=0.0, le=600.0,
                              description="s of hold (measurement) at each posture")
    preflight: bool = Field(
        True, description="false: no goal is checked before it moves the robot (neither "
        "preflight_config, preflight_identification_config nor the topic rates of "
        "preflight_topic_window), said in a warning at start")
    preflight_config: str = Field(
        "", description="calibration YAML: a postures goal is refused at acceptance when "
        "its postures cannot identify that calibration (figaroh-ros preflight; '' = no check)")
    preflight_identification_config: str = Field(
        "", description="identification YAML: a trajectory goal is refused at acceptance "
        "when its trajectory cannot identify that model's base parameters: rank, "
        "condition number (its preflight section: torque_noise, max_condition; "
        "figaroh-ros preflight --trajectory; '' = no check)")
    preflight_topic_window: float = Field(
        0.0, ge=0.0, le=10.0, description="s over which every goal's pre-flight measures "
        "the driver's topics before anything moves, the joint states at their rate_hz "
        "(0 = no rate checks: each required topic alive, its first message within 3 s); "
        "with the controllers, QoS, TF and model checks of the Preflight action, a failed "
        "check refuses the goal (e.g. 0.5 on a robot whose driver holds its rate)")
    joint_states_timeout: float = Field(
        1.5, ge=0.1, le=60.0, description="s without a joint state after which a running "
        "goal is aborted (the robot or its driver stopped)")
    hold_samples: int = Field(5, ge=1, le=10_000,
                              description="joint states stamped inside a hold that end it "
                              "(a hold lasts until both dwell_time and these are reached)")
    path_tolerance: float = Field(
        0.2, ge=0.0, le=10.0, description="rad (m) a joint may be from the commanded "
        "trajectory during a move before the goal is aborted (0: not checked); also sent to "
        "the controllers as the goal's path_tolerance")
    controller_result_timeout: float = Field(
        30.0, ge=0.1, le=3600.0, description="s after a motion's planned end within which "
        "every controller must report its result; otherwise the goal ends with ROS_ERROR, "
        "the controllers' goals cancelled (a hung driver, a result lost on the network)")
    hold_timeout: float = Field(
        10.0, ge=0.1, le=600.0, description="s a hold may go on past dwell_time waiting for "
        "the joint states' stamps to cover it (then the goal ends with ROS_ERROR: a robot "
        "clock behind ours) and for 3 mocap poses in it (then the hold ends with a note in "
        "its end mark: a body the cameras lost)")
    clock_tolerance: float = Field(
        2.0, ge=0.001, le=3600.0, description="s the stamps of each stamped driver topic "
        "(joint states, wrench, mocap) may be off this computer's clock (the fastest "
        "arrival less its stamp) before the pre-flight refuses a goal: the bag's holds are "
        "cut on this computer's clock")
    bag_dir: str = _bag_dir_field("a goal's bag_path is written there, never elsewhere "
                                  "(the recorder's bag_dir)")
    output_dir: str = _output_dir_field("a goal may play a trajectory planned there")
    data_roots: str = DATA_ROOTS
    max_read_bytes: int = MAX_READ_BYTES
    max_goal_seconds: float = Field(
        14_400.0, ge=1.0, le=86_400.0, description="s at most a goal may make the robot "
        "move and hold (its postures' moves, settle and dwell times, or its trajectory): a "
        "longer one is refused before anything moves, and one that takes longer (slow "
        "controllers, late stamps) is stopped then with ROS_ERROR")


class CalibrationParameters(Parameters):
    output_dir: str = Field("calibration", min_length=1,
                            description="folder of every goal's run folder (result.yaml, "
                            "URDF, trajectory); PlanTrajectory goals write under it only")
    robot_state_publisher: str = Field(
        "", description="node holding the robot_description parameter: a published model "
        "is set there and this node does not publish the topic ('' = no such node: publish "
        "robot_description, transient local, ourselves); relative names resolve in the "
        "node's namespace")
    build_on_published: bool = Field(
        True, description="a goal whose config has the published model's nominal URDF "
        "starts from the published model (calibrations accumulate)")
    bag_dir: str = _bag_dir_field("goals read their recordings from it")
    data_roots: str = DATA_ROOTS
    max_read_bytes: int = MAX_READ_BYTES
    max_bag_bytes: int = MAX_BAG_BYTES
    max_bags: int = Field(100, ge=1, le=10_000, description="bags at most in one Calibrate "
                          "goal: more are refused")
    max_goal_seconds: float = Field(
        7200.0, ge=1.0, le=86_400.0, description="s at most one goal's worker may compute "
        "(calibration, identification, planning, payload): then it is ended and the goal "
        "fails with ROS_ERROR, nothing published")


def _bounds(field) -> tuple[float | None, float | None]:
    lo = next((m.ge for m in field.metadata if getattr(m, "ge", None) is not None), None)
    hi = next((m.le for m in field.metadata if getattr(m, "le", None) is not None), None)
    return lo, hi


def descriptor(name: str, field) -> ParameterDescriptor:
    """The ROS descriptor of a model field: description, read-only, range."""
    d = ParameterDescriptor(name=name, description=field.description or "", read_only=True)
    lo, hi = _bounds(field)
    if lo is not None and hi is not None:
        if field.annotation is float:
            d.floating_point_range = [FloatingPointRange(from_value=float(lo),
                                                         to_value=float(hi))]
        elif field.annotation is int:
            d.integer_range = [IntegerRange(from_value=int(lo), to_value=int(hi))]
    return d


def _refused(node, name: str, model: type[Parameters]) -> ConfigError:
    field = model.model_fields[name]
    given = node._parameter_overrides[name].value   # rclpy keeps the overrides there only
    lo, hi = _bounds(field)
    want = getattr(field.annotation, "__name__", str(field.annotation))
    if lo is not None:
        want += f" in [{lo:g}, {hi:g}]"
    if field.annotation is float and isinstance(given, int):
        want += f" (write {given}.0)"
    return ConfigError(f"parameter {name}: {given!r} refused, expected a {want}")


def declare(node, model: type[Parameters]) -> Parameters:
    """Declare the fields of ``model`` on ``node``; the validated values."""
    values = {}
    for name, field in model.model_fields.items():
        try:
            values[name] = node.declare_parameter(name, field.default,
                                                  descriptor(name, field)).value
        except ParameterException:
            raise _refused(node, name, model) from None
    try:
        return model(**values)
    except ValidationError as exc:
        e = exc.errors()[0]
        name = ".".join(str(k) for k in e["loc"])
        why = e["msg"].removeprefix("Value error, ")
        raise ConfigError(f"parameter {name}: {e['input']!r} refused: {why}") from None

"""The live robot model: ``robot_description`` from its topic or from robot_state_publisher.

robot_state_publisher publishes the URDF text on ``/robot_description`` with a transient
local (latched) QoS, so a late subscriber still receives the last one, and holds it as its
``robot_description`` parameter.  Both readers wait at most ``timeout`` seconds and raise
a :class:`RosError` naming the topic or node.  ``live_providers`` gives the ``topic`` and
``parameter`` providers of ``figaroh_ros.model.sources.resolve_model_source``.
"""
from __future__ import annotations

import time

import rclpy
from rcl_interfaces.msg import ParameterType
from rcl_interfaces.srv import GetParameters
from rclpy.executors import SingleThreadedExecutor
from std_msgs.msg import String

from figaroh_ros.errors import RosError
from figaroh_ros.ros.common import LATCHED, first_answer

PARAMETER = "robot_description"


def _spin_until(node, done, timeout: float) -> bool:
    executor = SingleThreadedExecutor(context=node.context)
    executor.add_node(node)
    deadline = time.monotonic() + timeout
    try:
        while not done() and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.05)
    finally:
        executor.remove_node(node)
    return done()


def description_from_topic(node, topic: str, timeout: float) -> str:
    """The latched URDF text on ``topic`` (std_msgs/msg/String)."""
    got: list[str] = []
    sub = node.create_subscription(String, topic, lambda m: got.append(m.data), LATCHED)
    try:
        if not _spin_until(node, lambda: bool(got), timeout):
            raise RosError(f"no robot model on '{sub.topic_name}' within {timeout:g} s "
                           "(is robot_state_publisher running, in this ROS domain?)")
    finally:
        node.destroy_subscription(sub)
    return got[-1]


def description_from_parameter(node, publisher_node: str, timeout: float) -> str:
    """The ``robot_description`` parameter of the node ``publisher_node``."""
    name = publisher_node if publisher_node.startswith("/") else "/" + publisher_node
    client = node.create_client(GetParameters, f"{name}/get_parameters")
    try:
        start = time.monotonic()
        if not client.wait_for_service(timeout_sec=timeout):
            raise RosError(f"node '{name}' does not answer get_parameters within "
                           f"{timeout:g} s (is robot_state_publisher running?)")
        answer = first_answer(client, GetParameters.Request(names=[PARAMETER]),
                              max(0.1, timeout - (time.monotonic() - start)),
                              f"node '{name}' to return '{PARAMETER}'",
                              wait=lambda done, s: _spin_until(node, done, s))
    finally:
        node.destroy_client(client)
    values = answer.values
    if not values or values[0].type != ParameterType.PARAMETER_STRING:
        raise RosError(f"node '{name}' has no string parameter '{PARAMETER}'")
    return values[0].string_value


def _with_node(read, *args):
    """``read(node, *args)`` with a node of its own (and a context when none is up)."""
    own = not rclpy.ok()
    if own:
        rclpy.init()
    node = rclpy.create_node("figaroh_model_source")
    try:
        return read(node, *args)
    finally:
        node.destroy_node()
        if own:
            rclpy.shutdown()


def live_providers(node=None) -> dict:
    """``{"topic": ..., "parameter": ...}`` providers reading through ``node`` (or a node
    of their own), with the section's ``description_topic``, ``description_node`` and
    ``description_timeout``."""
    def call(read, *args):
        return read(node, *args) if node is not None else _with_node(read, *args)

    def topic(section):
        name = getattr(section, "description_topic", "/robot_description")
        return call(description_from_topic, name,
                    getattr(section, "description_timeout", 30.0)), name

    def parameter(section):
        name = getattr(section, "description_node", "robot_state_publisher")
        text = call(description_from_parameter, name,
                    getattr(section, "description_timeout", 30.0))
        return text, f"{name} parameter {PARAMETER}"
    return {"topic": topic, "parameter": parameter}

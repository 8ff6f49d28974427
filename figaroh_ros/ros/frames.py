"""Frames from TF: the robot's tf2_ros where its ROS install provides it, else our own
buffer fed from ``/tf`` and ``/tf_static`` (``figaroh_ros.model.transform_tree``: tf2's
interpolation, no extrapolation); and static transforms broadcast the way tf2's static
broadcaster does (every transform of this node in one latched ``/tf_static`` message).

``FrameBuffer(node).lookup(target, source, stamp_ns, timeout)`` -> ``T_target_source``
(pinocchio SE3) or a RosError naming the frames it knows; ``.backend`` says which
implementation serves (``tf2_ros`` or ``figaroh_ros``).  ``.reaches(source, targets,
timeout)``: the frames from ``source`` to the nearest target a lookup reaches (the
pre-flight's sensor frames against the model's links); ``.close()`` stops listening.
"""
from __future__ import annotations

import threading
import time

import numpy as np
import pinocchio as pin
import yaml
from geometry_msgs.msg import TransformStamped
from rclpy.qos import DurabilityPolicy, QoSProfile
from rclpy.time import Time
from tf2_msgs.msg import TFMessage

from figaroh_ros.errors import DataError, RosError
from figaroh_ros.model.transform_tree import TransformTree, pose_xyz_quat
from figaroh_ros.ros.polled import take_received
from figaroh_ros.ros.sane import Refusals, transform_problem

try:                                   # the robot's own TF library, when ROS provides it
    import tf2_ros
except ImportError:                    # the wheels here: our buffer
    tf2_ros = None

STATIC = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
# a late listener receives the latched message of EVERY /tf_static publisher at once
# (robot_state_publisher, a driver, our calibration node): a depth of 1 would keep one
STATIC_LISTEN = QoSProfile(depth=100, durability=DurabilityPolicy.TRANSIENT_LOCAL)
DYNAMIC = QoSProfile(depth=100)


def to_se3(msg_transform) -> pin.SE3:
    t, r = msg_transform.translation, msg_transform.rotation
    return pin.SE3(pin.Quaternion(r.w, r.x, r.y, r.z).normalized().matrix(),
                   np.array([t.x, t.y, t.z]))


def shown_edge(tr) -> str:
    """``'parent' -> 'child'`` of a ``TransformStamped``, the names cut at 80 characters."""
    return f"{tr.header.frame_id[:80]!r} -> {tr.child_frame_id[:80]!r}"


def to_msg(parent: str, child: str, T: pin.SE3, stamp) -> TransformStamped:
    msg = TransformStamped()
    msg.header.stamp, msg.header.frame_id, msg.child_frame_id = stamp, parent, child
    (x, y, z), (qx, qy, qz, qw) = pose_xyz_quat(T)
    tr = msg.transform
    tr.translation.x, tr.translation.y, tr.translation.z = float(x), float(y), float(z)
    tr.rotation.x, tr.rotation.y, tr.rotation.z, tr.rotation.w = (float(qx), float(qy),
                                                                   float(qz), float(qw))
    return msg


class FrameBuffer:
    """TF lookups for ``node`` (see the module documentation)."""

    def __init__(self, node, prefer_tf2: bool = True):
        self.node = node
        self.backend = "tf2_ros" if (tf2_ros is not None and prefer_tf2) else "figaroh_ros"
        if self.backend == "tf2_ros":
            self.buffer = tf2_ros.Buffer()
            self.listener = tf2_ros.TransformListener(self.buffer, node)
            return
        self.tree, self.lock = TransformTree(), threading.Lock()
        self.refusals = Refusals(node.get_logger())      # malformed edges: ros/sane.py
        self.subscriptions = [
            node.create_subscription(TFMessage, "/tf", lambda m: self._fed(m, False),
                                     DYNAMIC),
            node.create_subscription(TFMessage, "/tf_static", lambda m: self._fed(m, True),
                                     STATIC_LISTEN)]

    def _fed(self, msg, static: bool) -> None:
        with self.lock:
            for tr in msg.transforms:
                if why := transform_problem(tr.transform):
                    self.refusals.refuse("/tf_static" if static else "/tf", f"{shown_edge(tr)}"
                                         f": {why}")
                    continue
                stamp = tr.header.stamp.sec * 10**9 + tr.header.stamp.nanosec
                try:
                    self.tree.add(tr.header.frame_id, tr.child_frame_id, stamp,
                                  to_se3(tr.transform), static)
                except DataError:
                    continue                   # a malformed transform is skipped

    def _lookup_once(self, target: str, source: str, stamp_ns: int) -> pin.SE3:
        if self.backend == "tf2_ros":
            msg = self.buffer.lookup_transform(target, source, Time(nanoseconds=stamp_ns))
            return to_se3(msg.transform)
        with self.lock:
            return self.tree.lookup(target, source, stamp_ns)

    def lookup(self, target: str, source: str, stamp_ns: int = 0,
               timeout: float = 1.0) -> pin.SE3:
        """``T_target_source`` at ``stamp_ns`` (0: the latest), waiting up to ``timeout``
        s for the transforms to arrive."""
        deadline, last = time.monotonic() + timeout, None
        while True:
            try:
                return self._lookup_once(target, source, stamp_ns)
            except Exception as exc:           # DataError here, tf2's exceptions there
                last = exc
            if time.monotonic() > deadline:
                raise RosError(f"no transform {target!r} <- {source!r} within {timeout} s "
                               f"({self.backend}): {last}")
            time.sleep(0.01)

    def parents(self) -> dict[str, str]:
        """``{child: parent}`` of every transform heard so far."""
        if self.backend == "tf2_ros":
            known = yaml.safe_load(self.buffer.all_frames_as_yaml()) or {}
            return {c: str(d.get("parent", "")) for c, d in known.items()}
        with self.lock:
            return {c: e.parent for c, e in self.tree.edges.items()}

    def reaches(self, source: str, targets: list[str], timeout: float = 1.0
                ) -> list[str] | None:
        """The frames from ``source`` to the nearest of ``targets`` that a lookup reaches
        (its TF ancestors tried first, then every target), waiting up to ``timeout`` s
        for the transforms to arrive; None when no lookup succeeds."""
        deadline, wanted = time.monotonic() + timeout, set(targets)
        while True:
            parents, chain = self.parents(), [source]
            while chain[-1] in parents and parents[chain[-1]] not in chain:
                chain.append(parents[chain[-1]])
            near = [f for f in chain if f in wanted]
            for target in dict.fromkeys(near + list(targets)):
                try:
                    self._lookup_once(target, source, 0)
                except Exception:              # DataError here, tf2's exceptions there
                    continue
                return chain[:chain.index(target) + 1] if target in chain \
                    else [source, target]
            if time.monotonic() > deadline:
                return None
            time.sleep(0.01)

    def close(self) -> None:
        """Stop listening to /tf and /tf_static (a buffer made for one check)."""
        if self.backend == "tf2_ros":
            self.listener.unregister()
        else:
            for sub in self.subscriptions:
                self.node.destroy_subscription(sub)


class StaticBroadcaster:
    """This node's static transforms, all of them in one latched ``/tf_static`` message
    (what tf2_ros.StaticTransformBroadcaster does; that one serves when available)."""

    def __init__(self, node):
        self.node, self.transforms = node, {}
        self.tf2 = tf2_ros.StaticTransformBroadcaster(node) if tf2_ros is not None else None
        self.pub = None if self.tf2 else node.create_publisher(TFMessage, "/tf_static",
                                                                STATIC)

    def send(self, transforms: list[tuple[str, str, pin.SE3]]) -> None:
        """Publish (or replace) ``(parent, child, T_parent_child)`` transforms."""
        stamp = self.node.get_clock().now().to_msg()
        for parent, child, T in transforms:
            self.transforms[child] = to_msg(parent, child, T, stamp)
        if self.tf2 is not None:
            self.tf2.sendTransform(list(self.transforms.values()))
        else:
            self.pub.publish(TFMessage(transforms=list(self.transforms.values())))


def take_one(sub):
    """The next message (raw for a raw subscription) the middleware delivered on ``sub``
    that no callback took, or None."""
    taken = take_received(sub)
    return None if taken is None else taken[0]


class PumpedFrameBuffer(FrameBuffer):
    """A FrameBuffer for a node whose executor is busy while it looks up (a service
    callback of a single-threaded node: the recorder's start): our buffer takes what its
    ``/tf`` and ``/tf_static`` subscriptions received itself before each try; tf2_ros's
    listener spins its own thread and needs nothing."""

    def __init__(self, node, prefer_tf2: bool = True):
        before = set(node.subscriptions)
        super().__init__(node, prefer_tf2)
        self.subs = [s for s in node.subscriptions if s not in before]

    def _lookup_once(self, target: str, source: str, stamp_ns: int) -> pin.SE3:
        for sub in self.subs:
            while (msg := take_one(sub)) is not None:
                sub.callback(msg)
        return super()._lookup_once(target, source, stamp_ns)

"""The calibration's posture markers as ``visualization_msgs/MarkerArray`` for RViz.

Published by the calibration node on ``calibration/markers`` (relative to its namespace;
transient local, so an RViz started later still shows the last calibration) after every
geometric goal, in the measurement frame of the recording (``mocap`` on the simulated
UR10; ``/tf_static`` links it to the robot once a model is published).  A DELETEALL comes
first, so a new calibration replaces the old one.  The descriptions and the colour rule
are in ``figaroh_ros.calibration.markers``; ``config/rviz/calibration.rviz`` shows them
with the robot model and TF.
"""
from __future__ import annotations

from geometry_msgs.msg import Point
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import ColorRGBA
from visualization_msgs.msg import Marker, MarkerArray

from figaroh_ros.calibration.markers import marker_specs, read_posture_fit

TOPIC = "calibration/markers"
MARKERS_QOS = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                         reliability=ReliabilityPolicy.RELIABLE)
KINDS = {"sphere": Marker.SPHERE, "lines": Marker.LINE_LIST, "text": Marker.TEXT_VIEW_FACING}


def to_marker(spec: dict, frame: str, stamp) -> Marker:
    m = Marker(ns=spec["ns"], id=int(spec["id"]), type=KINDS[spec["kind"]],
               action=Marker.ADD)
    m.header.frame_id, m.header.stamp = frame, stamp
    m.pose.orientation.w = 1.0
    m.color = ColorRGBA(**dict(zip("rgba", map(float, spec["colour"]))))
    s = float(spec["scale"])
    m.scale.x = m.scale.y = m.scale.z = s
    if spec["kind"] == "sphere":
        m.pose.position = Point(**dict(zip("xyz", map(float, spec["points"][0]))))
    elif spec["kind"] == "text":
        m.pose.position = Point(**dict(zip("xyz", map(float, spec["points"][0]))))
        m.text = spec["text"]
    else:
        m.points = [Point(**dict(zip("xyz", map(float, p)))) for p in spec["points"]]
    return m


def marker_array(fit_csv: str, frame: str, good_m: float, stamp) -> MarkerArray:
    """DELETEALL, then the markers of ``postures_fit.csv``."""
    clear = Marker(action=Marker.DELETEALL)
    clear.header.frame_id = frame
    specs = marker_specs(read_posture_fit(fit_csv), good_m)
    return MarkerArray(markers=[clear] + [to_marker(s, frame, stamp) for s in specs])


class CalibrationMarkers:
    """The latched MarkerArray publisher of a node."""

    def __init__(self, node):
        self.node = node
        self.pub = node.create_publisher(MarkerArray, TOPIC, MARKERS_QOS)

    def publish(self, fit_csv: str, frame: str, good_m: float) -> int:
        msg = marker_array(fit_csv, frame, good_m, self.node.get_clock().now().to_msg())
        self.pub.publish(msg)
        return len(msg.markers) - 1

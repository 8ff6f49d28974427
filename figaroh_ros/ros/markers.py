"""The calibration's posture markers as ``visualization_msgs/MarkerArray`` for RViz.

Published by the calibration node on ``calibration/markers`` (relative to its namespace;
transient local, so an RViz started later still shows the last calibration), in the
measurement frame of the recording (``mocap`` on the simulated UR10; ``/tf_static`` links
it to the robot once a model is published), in two steps per geometric goal:

* during the calibration, as soon as the worker has read the postures
  (:func:`preview_array`): the measured positions (blue), the nominal model's predictions
  (grey) and grey lines between them, and a text ``N postures: nominal X mm RMS;
  calibrating`` (``NOT calibrated: <why>`` when the goal then fails or is canceled);
* when it is done (:func:`marker_array`): the same plus the calibrated predictions and the
  error lines coloured by error, and the text with both RMSEs.

A DELETEALL comes first, so each array replaces the previous one; a posture's markers keep
their ids from one step to the next.  The descriptions and the colour rule are in
``figaroh_ros.calibration.markers``; ``config/rviz/calibration.rviz`` shows them with the
robot model and TF.
"""
from __future__ import annotations

from geometry_msgs.msg import Point
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import ColorRGBA
from visualization_msgs.msg import Marker, MarkerArray

import numpy as np

from figaroh_ros.calibration.markers import GREY, PostureFit, marker_specs, read_posture_fit

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


def _array(specs: list[dict], frame: str, stamp) -> MarkerArray:
    clear = Marker(action=Marker.DELETEALL)
    clear.header.frame_id = frame
    return MarkerArray(markers=[clear] + [to_marker(s, frame, stamp) for s in specs])


def marker_array(fit_csv: str, frame: str, good_m: float, stamp) -> MarkerArray:
    """DELETEALL, then the markers of ``postures_fit.csv``."""
    return _array(marker_specs(read_posture_fit(fit_csv), good_m), frame, stamp)


def preview_specs(fit: PostureFit, good_m: float, note: str = "calibrating") -> list[dict]:
    """The layers known before the result (``fit.calibrated`` is not read): the measured
    and nominal spheres, grey error lines between them (the ids of the final ones) and a
    text ending with ``note``."""
    specs = [s for s in marker_specs(fit, good_m) if s["ns"] in ("measured", "nominal")]
    for s in [s for s in specs if s["ns"] == "nominal"]:
        m = fit.measured.reshape(-1, 3)[s["id"]]
        specs.append(dict(s, ns="error", kind="lines", points=[m, s["points"][0]],
                          colour=GREY, scale=s["scale"] / 5))
    rms = 1e3 * float(np.sqrt(np.mean(fit.errors("nominal") ** 2)))
    specs.append(dict(ns="summary", id=0, kind="text", points=[fit.measured.mean(axis=(0, 1))],
                      colour=(1.0, 1.0, 1.0, 1.0), scale=0.05,
                      text=f"{len(fit.ids)} postures: nominal {rms:.2f} mm RMS; {note}"))
    return specs


def preview_array(fit: PostureFit, frame: str, good_m: float, stamp,
                  note: str = "calibrating") -> MarkerArray:
    """DELETEALL, then :func:`preview_specs`."""
    return _array(preview_specs(fit, good_m, note), frame, stamp)


class CalibrationMarkers:
    """The latched MarkerArray publisher of a node."""

    def __init__(self, node):
        self.node = node
        self.pub = node.create_publisher(MarkerArray, TOPIC, MARKERS_QOS)

    def publish(self, fit_csv: str, frame: str, good_m: float) -> int:
        """The calibration's markers (``postures_fit.csv``); how many."""
        return self._send(marker_array(fit_csv, frame, good_m, self._now()))

    def preview(self, fit: PostureFit, frame: str, good_m: float,
                note: str = "calibrating") -> int:
        """The measured and nominal layers before the result; how many markers."""
        return self._send(preview_array(fit, frame, good_m, self._now(), note))

    def _now(self):
        return self.node.get_clock().now().to_msg()

    def _send(self, msg: MarkerArray) -> int:
        self.pub.publish(msg)
        return len(msg.markers) - 1

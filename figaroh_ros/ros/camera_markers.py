"""A camera calibration's corners as ``visualization_msgs/MarkerArray`` for RViz, on the
calibration node's ``calibration/markers`` (the same latched topic as the posture markers).

All in the camera's optical frame as the result places it on ``/tf_static``
(``camera_frame.child`` of result.yaml), one id per view (training, then held-out views,
in ``corners_fit.csv``'s order; :mod:`figaroh_ros.camera.marker_points` computes the
points):

* ``predicted``: the board corners the calibrated model predicts (SPHERE_LIST, orange);
* ``detected``: the detected corners back-projected onto the predicted board plane
  (SPHERE_LIST, blue for training views, violet for held-out ones, red for views the
  outlier rejection dropped);
* ``difference``: a line from each predicted corner to its detected one (LINE_LIST, grey).

A DELETEALL comes first, so the array replaces the previous calibration's markers.
"""
from __future__ import annotations

from geometry_msgs.msg import Point
from std_msgs.msg import ColorRGBA
from visualization_msgs.msg import Marker, MarkerArray

import numpy as np

from figaroh_ros.camera.marker_points import read_corners

PREDICTED = (1.0, 0.55, 0.0, 1.0)
DETECTED = {"training": (0.1, 0.4, 1.0, 1.0), "held-out": (0.7, 0.3, 1.0, 1.0),
            "rejected": (1.0, 0.1, 0.1, 1.0)}
DIFFERENCE = (0.7, 0.7, 0.7, 1.0)


def _marker(ns: str, k: int, kind: int, points, colour, scale: float, frame: str,
            stamp) -> Marker:
    m = Marker(ns=ns, id=k, type=kind, action=Marker.ADD)
    m.header.frame_id, m.header.stamp = frame, stamp
    m.pose.orientation.w = 1.0
    m.color = ColorRGBA(**dict(zip("rgba", map(float, colour))))
    m.scale.x = m.scale.y = m.scale.z = float(scale)
    m.points = [Point(x=float(p[0]), y=float(p[1]), z=float(p[2])) for p in points]
    return m


def corner_array(corners_csv: str, frame: str, stamp) -> MarkerArray:
    """DELETEALL, then the predicted, detected and difference markers of every view of
    ``corners_csv``; a corner whose ray misses the board plane is left out."""
    clear = Marker(action=Marker.DELETEALL)
    clear.header.frame_id = frame
    out = [clear]
    for k, c in enumerate(read_corners(corners_csv)):
        ok = np.all(np.isfinite(c.detected), axis=1)
        p, d = c.predicted, c.detected[ok]
        gaps = np.linalg.norm(np.diff(p, axis=0), axis=1)
        size = 0.2 * float(np.min(gaps[gaps > 0])) if np.any(gaps > 0) else 0.005
        out.append(_marker("predicted", k, Marker.SPHERE_LIST, p, PREDICTED, size, frame,
                           stamp))
        out.append(_marker("detected", k, Marker.SPHERE_LIST, d,
                           DETECTED.get(c.split, DETECTED["training"]), size, frame, stamp))
        pairs = np.stack([p[ok], d], axis=1).reshape(-1, 3)
        out.append(_marker("difference", k, Marker.LINE_LIST, pairs, DIFFERENCE, size / 4,
                           frame, stamp))
    return MarkerArray(markers=out)


def publish_corners(markers, corners_csv: str, frame: str) -> int:
    """Publish on a :class:`figaroh_ros.ros.markers.CalibrationMarkers`; how many markers."""
    return markers._send(corner_array(corners_csv, frame, markers._now()))


__all__ = ["corner_array", "publish_corners"]

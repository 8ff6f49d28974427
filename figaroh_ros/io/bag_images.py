"""Camera frames of a recorded experiment: per hold window, the images of a camera topic,
its CameraInfo and the mean joint positions (a camera calibration from a bag,
``figaroh_ros.tasks.camera_bag``).

Holds are the executor's marks (``HOLD_START`` ... ``HOLD_END`` of the same posture index
on the events topic, by header stamps as for every bag reading, ``io/bags.py``); a frame
belongs to the hold its header stamp (when the scene it shows was) falls in: a frame
delivered late, in the next hold, belongs to none (the recorder keeps a few frames per hold
by their arrival, ``ros/hold_frames.py``).  ``sensor_msgs/Image`` (mono8/16, rgb8, bgr8, rgba8,
bgra8) and ``sensor_msgs/CompressedImage`` are read.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import cv2
import numpy as np

from figaroh_ros.camera.detect import decode_image
from figaroh_ros.errors import DataError
from figaroh_ros.io.bag_backend import every_message
from figaroh_ros.io.bag_fields import (
    checked, decoded, header_or_received, joint_columns, state_values
)
from figaroh_ros.io.bags import complete_holds, mark_hold, open_bag

IMAGE = "sensor_msgs/msg/Image"
COMPRESSED = "sensor_msgs/msg/CompressedImage"
CAMERA_INFO = "sensor_msgs/msg/CameraInfo"
EVENTS = "figaroh_ros/msg/PostureEvent"
_CHANNELS = {"mono8": (np.uint8, 1, None), "mono16": (np.uint16, 1, None),
             "8UC1": (np.uint8, 1, None), "16UC1": (np.uint16, 1, None),
             "rgb8": (np.uint8, 3, cv2.COLOR_RGB2GRAY),
             "bgr8": (np.uint8, 3, cv2.COLOR_BGR2GRAY),
             "rgba8": (np.uint8, 4, cv2.COLOR_RGBA2GRAY),
             "bgra8": (np.uint8, 4, cv2.COLOR_BGRA2GRAY)}


@dataclass
class HoldFrames:
    index: int                     # posture number of the experiment
    q: np.ndarray                  # mean joint positions in the hold window
    images: list[np.ndarray]       # grey frames of the hold
    names: list[str]               # "posture_<index>_<k>"


@dataclass
class BagViews:
    holds: list[HoldFrames]
    joints: list[str]              # the joints of each hold's q
    camera_info: dict | None       # the first CameraInfo: width, height, k, d, model
    robot_description: str | None
    without_frames: list[int] = field(default_factory=list)   # holds with no frame


def image_of(msg, msgtype: str, name: str) -> np.ndarray:
    """The grey uint8/uint16 array of an Image or CompressedImage message."""
    if msgtype == COMPRESSED:
        return decode_image(bytes(msg.data), name)
    layout = _CHANNELS.get(msg.encoding)
    if layout is None:
        raise DataError(f"{name}: image encoding {msg.encoding!r} is not one of "
                        f"{', '.join(_CHANNELS)}")
    dtype, channels, conversion = layout
    h, w, step = int(msg.height), int(msg.width), int(msg.step)
    data = np.frombuffer(bytes(msg.data), np.uint8)
    row = w * channels * np.dtype(dtype).itemsize
    if h * w == 0 or step < row or len(data) < h * step:
        raise DataError(f"{name}: {len(data)} bytes for a {w}x{h} {msg.encoding} image "
                        f"with rows of {step} bytes")
    rows = data[:h * step].reshape(h, step)[:, :row].copy()
    pixels = rows.view(np.dtype(dtype).newbyteorder(">" if msg.is_bigendian else "<"))
    image = pixels.reshape(h, w, channels) if channels > 1 else pixels.reshape(h, w)
    image = image.astype(dtype)
    return cv2.cvtColor(image, conversion) if conversion is not None else image


def read_bag_views(paths: list[str], joints: list[str] | None, joint_topic: str,
                   image_topic: str, info_topic: str, events_topic: str,
                   min_samples: int = 3) -> BagViews:
    """The hold windows of the bags ``paths`` with their camera frames (see the module
    docstring); ``joints`` None: every joint of the first joint state.  A hold with fewer
    than ``min_samples`` joint states refuses the bag; a hold without a frame is listed in
    ``without_frames``."""
    wanted = {joint_topic: "sensor_msgs/msg/JointState", events_topic: EVENTS}
    reader = open_bag(paths, wanted)
    try:
        types = {c.topic: c.msgtype for c in reader.connections}
        if image_topic not in types:
            raise DataError(f"bag {paths} has no topic '{image_topic}' (topics: "
                            f"{sorted(types)})")
        if types[image_topic] not in (IMAGE, COMPRESSED):
            raise DataError(f"topic '{image_topic}' of bag {paths} is "
                            f"{types[image_topic]}, expected {IMAGE} or {COMPRESSED}")
        if info_topic and types.get(info_topic, CAMERA_INFO) != CAMERA_INFO:
            raise DataError(f"topic '{info_topic}' of bag {paths} is {types[info_topic]}, "
                            f"expected {CAMERA_INFO}")
        topics = {joint_topic, events_topic, image_topic, info_topic, "/robot_description"}
        conns = [c for c in reader.connections if c.topic in topics]
        windows: dict[int, list] = {}
        joint_msgs, frames, info, description = [], [], None, None
        for conn, received, raw in every_message(reader, conns, paths):
            msg = decoded(reader, conn, raw, paths, received)
            t = header_or_received(msg, received)
            if conn.topic == image_topic:
                frames.append((t, msg, conn.msgtype))
                continue
            if conn.topic == events_topic:
                mark_hold(windows, msg, t)
            elif conn.topic == joint_topic:
                joint_msgs.append((t, msg))
            elif conn.topic == info_topic:
                if info is None:
                    info = {"width": int(msg.width), "height": int(msg.height),
                            "k": list(msg.k), "d": list(msg.d),
                            "distortion_model": msg.distortion_model}
            else:
                description = msg.data
    finally:
        reader.close()
    complete = complete_holds(windows)
    if not complete:
        raise DataError(f"bag {paths} holds no complete posture (HOLD_START..HOLD_END marks "
                        f"on '{events_topic}')")
    if not joint_msgs:
        raise DataError(f"bag {paths}: no message on '{joint_topic}'")
    if joints is None:
        joints = list(joint_msgs[0][1].name)
    columns = joint_columns(joint_msgs[0][1], joints, joint_topic, paths)
    holds, without = [], []
    for i in complete:
        a, b = windows[i]
        js = [m for t, m in joint_msgs if a <= t <= b]
        if len(js) < min_samples:
            raise DataError(f"posture {i} of bag {paths}: {len(js)} joint states in its hold "
                            f"window (need {min_samples})")
        Q = np.array([state_values(m, "position", joint_topic, paths, a)[columns]
                      for m in js])
        q = np.mean(checked(Q, f"joint positions in posture {i}", joint_topic, paths, a),
                    axis=0)
        mine = [(t, m, ty) for t, m, ty in frames if a <= t <= b]
        if not mine:
            without.append(i)
            continue
        names = [f"posture_{i}_{k}" for k in range(len(mine))]
        holds.append(HoldFrames(i, q, [image_of(m, ty, n) for (_, m, ty), n in
                                       zip(mine, names)], names))
    return BagViews(holds, list(joints), info, description, without)


__all__ = ["BagViews", "HoldFrames", "read_bag_views", "image_of"]

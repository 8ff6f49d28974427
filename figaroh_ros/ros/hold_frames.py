"""Which camera frames a recording keeps: a few per hold, not the stream.

A camera publishes tens of images a second; a calibration uses a few of each posture, taken
while the robot holds still.  The executor marks the holds on ``figaroh/posture_events``
(``HOLD_START`` ... ``HOLD_END``, or ``ABORTED``), and the recorder receives every topic in
the order the middleware delivered it, so the marks and the frames come in time order:
:class:`HoldFrames` keeps the first ``frames`` messages of each image topic
(``sensor_msgs/Image``, ``CompressedImage``, ``CameraInfo``) after a ``HOLD_START`` and
before the hold ends whose header stamp is not before the mark's (a frame of the previous
posture delivered late is not one of the hold's), and drops the others; a bag also opens
with the first message of each image topic (before any mark: it shows the camera was
there, and the executor waits for one message of every recorded topic before it moves).  A recording of no image topic
keeps every message.
"""
from __future__ import annotations

import struct

from rclpy.serialization import deserialize_message

from figaroh_ros.msg import PostureEvent

IMAGE_TYPES = frozenset({"sensor_msgs/msg/Image", "sensor_msgs/msg/CompressedImage",
                         "sensor_msgs/msg/CameraInfo"})
EVENTS_TYPE = "figaroh_ros/msg/PostureEvent"
FRAMES_PER_HOLD = 3


class HoldWindow:
    """The decision, without messages: ``event(kind)`` with a PostureEvent's ``event``,
    ``keeps(topic)`` for an image topic's message."""

    def __init__(self, frames: int = FRAMES_PER_HOLD):
        if frames < 1:
            raise ValueError(f"frames per hold: expected >= 1, got {frames}")
        self.frames, self.holding, self.counts, self.since = frames, False, {}, 0
        self.opening = True            # before the bag's first mark: one frame per topic

    def event(self, kind: int, stamp: int = 0) -> None:
        self.opening = False
        if kind == PostureEvent.HOLD_START:
            self.holding, self.counts, self.since = True, {}, stamp
        else:                             # REACHED (the next posture), HOLD_END, ABORTED
            self.holding = False

    def keeps(self, topic: str, stamp: int = 0) -> bool:
        if self.opening and topic not in self.counts:
            self.counts[topic] = 1
            return True
        if not self.holding or (stamp and stamp < self.since):
            return False
        n = self.counts.get(topic, 0)
        if n >= self.frames:
            return False
        self.counts[topic] = n + 1
        return True


class HoldFrames:
    """For a recorder's topics (topic -> type name): ``keeps(topic, raw)`` says whether a
    received message is written."""

    def __init__(self, topics: dict[str, str], frames: int = FRAMES_PER_HOLD):
        self.images = {t for t, ty in topics.items() if ty in IMAGE_TYPES}
        self.events = {t for t, ty in topics.items() if ty == EVENTS_TYPE}
        self.frames = frames
        self.window = HoldWindow(frames)

    def new_bag(self) -> None:
        """A bag opens: its first frames are kept again, no hold under way."""
        self.window = HoldWindow(self.frames)

    def keeps(self, topic: str, raw: bytes) -> bool:
        if topic in self.events:
            msg = deserialize_message(raw, PostureEvent)
            self.window.event(msg.event, msg.header.stamp.sec * 10**9
                              + msg.header.stamp.nanosec)
            return True
        if topic in self.images:
            return self.window.keeps(topic, header_stamp(raw))
        return True


def header_stamp(raw: bytes) -> int:
    """The header stamp (ns) of a serialized message whose first field is a
    ``std_msgs/Header`` (CDR: a 4-byte encapsulation, then sec and nanosec); 0 if too
    short."""
    if len(raw) < 12:
        return 0
    sec, nanosec = struct.unpack_from("<iI" if raw[1] & 1 else ">iI", raw, 4)
    return sec * 10**9 + nanosec


__all__ = ["HoldFrames", "HoldWindow", "IMAGE_TYPES", "FRAMES_PER_HOLD", "header_stamp"]

"""Which camera frames a recording keeps: a few per hold, not the stream.

A camera publishes tens of images a second; a calibration uses a few of each posture, taken
while the robot holds still.  The executor marks the holds on ``figaroh/posture_events``
(``HOLD_START`` ... ``HOLD_END``, or ``ABORTED``), and the recorder receives every topic in
the order the middleware delivered it, so the marks and the frames come in time order:
:class:`HoldFrames` keeps the first ``frames`` messages of each image topic
(``sensor_msgs/Image``, ``CompressedImage``, ``CameraInfo``) after a ``HOLD_START`` and
before the hold ends, and drops the others.  A recording of no image topic keeps every
message.
"""
from __future__ import annotations

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
        self.frames, self.holding, self.counts = frames, False, {}

    def event(self, kind: int) -> None:
        if kind == PostureEvent.HOLD_START:
            self.holding, self.counts = True, {}
        else:                             # REACHED (the next posture), HOLD_END, ABORTED
            self.holding = False

    def keeps(self, topic: str) -> bool:
        if not self.holding:
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
        self.window = HoldWindow(frames)

    def keeps(self, topic: str, raw: bytes) -> bool:
        if topic in self.events:
            self.window.event(deserialize_message(raw, PostureEvent).event)
            return True
        if topic in self.images:
            return self.window.keeps(topic)
        return True


__all__ = ["HoldFrames", "HoldWindow", "IMAGE_TYPES", "FRAMES_PER_HOLD"]

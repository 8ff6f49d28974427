"""sim_camera node: the simulated robot's camera.

It follows the simulator's joint states (``topics.joint_states`` of the simulated camera
config, ``figaroh_ros.config.sim_camera``) and, ``rate_hz`` times a second, draws the board
as the hidden true camera sees it at the latest reading (``figaroh_ros.sim.camera``:
true mount, hidden joint offsets, OpenCV's distortion, blur and noise), publishing a
``sensor_msgs/Image`` (mono8) and its ``sensor_msgs/CameraInfo`` (the config's nominal
intrinsics) with the reading's stamp.  An image is drawn again only when the joints moved
(more than ``REDRAW_RAD``) since the last one; each frame has its own pixel noise.  While
the joints move (more than ``REDRAW_RAD`` between two frames) no frame is published: its
image would be motion-blurred, and drawing one takes a few tenths of a second of CPU (a
recording keeps frames of the holds only, ``ros/hold_frames.py``).

Parameters: ``config`` (the simulated camera config).
"""
from __future__ import annotations

import sys
import threading

import numpy as np
from pydantic import Field
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import CameraInfo, Image, JointState

from figaroh_ros.ros.common import run_node
from figaroh_ros.ros.parameters import ExistingFile, Parameters, declare
from figaroh_ros.sim.camera import SimCamera

LATEST = QoSProfile(depth=1, reliability=ReliabilityPolicy.BEST_EFFORT)
REDRAW_RAD = 1e-4      # joint motion (rad, any joint; 10 x the encoder noise) that redraws


class SimCameraParameters(Parameters):
    config: ExistingFile = Field("", description="simulated camera config "
                                 "(config/sim_<robot>_<camera>.yaml): robot config, true "
                                 "mount, board, intrinsics, noise, rate, topics")


class SimCameraNode(Node):
    def __init__(self):
        super().__init__("sim_camera")
        params = declare(self, SimCameraParameters)
        self.camera = SimCamera(params.config)
        cfg = self.camera.cfg
        self.lock = threading.Lock()
        self.reading = None            # (stamp, names, positions) of the latest joint state
        self.drawn = None              # (positions, clean image) last drawn
        self.previous = None           # the positions of the previous frame's reading
        self.pub_image = self.create_publisher(Image, cfg.topics.image, 10)
        self.pub_info = self.create_publisher(CameraInfo, cfg.topics.camera_info, 10)
        self.info = self._camera_info()
        # the latest reading only (a frame shows the joints now, not a backlog), taken
        # while a frame is drawn (another callback group)
        self.create_subscription(JointState, cfg.topics.joint_states, self._joints, LATEST,
                                 callback_group=MutuallyExclusiveCallbackGroup())
        self.create_timer(1.0 / cfg.rate_hz, self._frame)
        k = self.camera.intrinsics
        self.get_logger().info(f"simulated {cfg.setup} camera {k.width}x{k.height} at "
                               f"{cfg.rate_hz:g} Hz on {cfg.topics.image}")

    def _camera_info(self) -> CameraInfo:
        c = self.camera.camera_info()
        msg = CameraInfo(width=c["width"], height=c["height"],
                         distortion_model=c["distortion_model"])
        msg.header.frame_id = self.camera.cfg.topics.frame_id
        msg.d, msg.k, msg.r, msg.p = c["D"], c["K"], c["R"], c["P"]
        return msg

    def _joints(self, msg: JointState):
        with self.lock:
            self.reading = (msg.header.stamp, list(msg.name), np.array(msg.position, float))

    def _clean(self, names, positions) -> np.ndarray:
        """The noise-free image at the reading (drawn again only when the joints moved)."""
        if self.drawn is not None and len(self.drawn[0]) == len(positions) and \
                np.max(np.abs(self.drawn[0] - positions), initial=0.0) <= REDRAW_RAD:
            return self.drawn[1]
        cam = self.camera
        image = cam.clean_image(cam.reading_configuration(names, positions))
        self.drawn = (positions, image)
        return image

    def _frame(self):
        with self.lock:
            reading = self.reading
        if reading is None:
            return
        stamp, names, positions = reading
        previous, self.previous = self.previous, positions
        if previous is None or len(previous) != len(positions) or \
                np.max(np.abs(previous - positions), initial=0.0) > REDRAW_RAD:
            return                                          # moving: no frame
        image = self.camera.noisy(self._clean(names, positions))
        h, w = image.shape
        msg = Image(height=h, width=w, encoding="mono8", is_bigendian=0, step=w)
        msg.header.stamp = stamp
        msg.header.frame_id = self.info.header.frame_id
        msg.data = image.tobytes()
        self.info.header.stamp = stamp
        self.pub_image.publish(msg)
        self.pub_info.publish(self.info)


def main(args=None):
    return run_node(SimCameraNode, "sim_camera", 2, args)


if __name__ == "__main__":
    sys.exit(main())

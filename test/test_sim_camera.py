"""The simulated camera against its own truth, and the recorder's choice of camera frames.

An image the simulated UR10 wrist camera or TIAGo head camera draws at a posture is
detected by the package's detector at the pixels the hidden true model projects (within a quarter pixel); the
hidden joint offsets move those pixels as a real encoder offset would; the recorder keeps
the first frames of each hold of each image topic, one frame of each before the first
mark, and nothing else."""
from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from figaroh_ros.camera.detect import detect
from figaroh_ros.errors import ConfigError
from figaroh_ros.sim.camera import SimCamera

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG = os.path.join(ROOT, "config", "sim_ur10_wrist_camera.yaml")


@pytest.fixture(scope="module")
def camera():
    return SimCamera(CONFIG)


TIAGO = os.path.join(ROOT, "config", "sim_tiago_head_camera.yaml")
MOVES = {CONFIG: {"shoulder_pan_joint": 0.05, "shoulder_lift_joint": -0.03, "elbow_joint": 0.02,
                  "wrist_1_joint": 0.04, "wrist_2_joint": -0.05, "wrist_3_joint": 0.1},
         TIAGO: {"arm_1_joint": 0.05, "arm_4_joint": -0.05, "head_1_joint": 0.05}}


@pytest.mark.parametrize("config", [CONFIG, TIAGO], ids=["ur10_wrist", "tiago_head"])
def test_the_drawn_board_is_detected_at_the_true_pixels(config):
    """The UR10's wrist camera (eye-in-hand) and TIAGo's head camera (on the chain, the
    board in the gripper): every corner found within a quarter pixel of the truth."""
    camera = SimCamera(config)
    m = camera.model
    q = camera.q_centre.copy()
    for name, dq in MOVES[config].items():
        q[m.joints[m.getJointId(name)].idx_q] += dq
    det = detect(camera.image(q), camera.board, "view", camera.intrinsics)
    ids, uv = camera.true_pixels(q)
    assert len(det.ids) == camera.board.feature_count == len(ids)
    err = det.pixels - uv[np.searchsorted(ids, det.ids)]
    rms = float(np.sqrt(np.mean(np.sum(err ** 2, axis=1))))
    print(f"{os.path.basename(config)}: detected corners {rms:.3f} px RMS from the true "
          "projections")
    assert rms < 0.25


def test_hidden_offsets_move_the_view_like_encoder_offsets(camera):
    """The true view at a reading is the offset-free view at the reading plus the offsets."""
    q = camera.q_centre
    offsets = camera.joint_offsets
    assert len(offsets) == 6 and max(abs(v) for v in offsets.values()) > 1e-3
    shifted = q.copy()
    m = camera.model
    for name, value in offsets.items():
        shifted[m.joints[m.getJointId(name[len("offset_"):])].idx_q] += value
    x0 = camera.scene.x.copy()
    p = camera.scene.problem
    for name in offsets:
        camera.scene.x[p.names.index(name)] = 0.0
    try:
        without = camera.camera_board(shifted)
    finally:
        camera.scene.x[:] = x0
    assert np.allclose(camera.camera_board(q), without, atol=1e-12)


def test_a_board_behind_the_camera_gives_the_background(camera):
    q = camera.q_centre.copy()
    q[0] += np.pi
    image = camera.image(q)
    assert abs(float(image.mean()) - 110.0) < 1.0 and image.std() < 4.0


def test_an_unknown_joint_of_the_centre_is_named(tmp_path):
    text = open(CONFIG).read().replace("wrist_3_joint: 0.2", "wrist_9_joint: 0.2")
    text = text.replace("robot_config: sim_ur10_camera.yaml",
                        "robot_config: " + os.path.join(ROOT, "config",
                                                        "sim_ur10_camera.yaml"))
    bad = tmp_path / "camera.yaml"
    bad.write_text(text)
    with pytest.raises(ConfigError, match="wrist_9_joint"):
        SimCamera(str(bad))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["start", "end", "abort", "reached", "img", "info"]),
                max_size=60), st.integers(1, 4))
def test_frames_kept_are_the_first_of_each_hold(events, frames):
    pytest.importorskip("rclpy")
    from figaroh_ros.msg import PostureEvent
    from figaroh_ros.ros.hold_frames import HoldWindow
    kinds = {"start": PostureEvent.HOLD_START, "end": PostureEvent.HOLD_END,
             "abort": PostureEvent.ABORTED, "reached": PostureEvent.REACHED}
    w = HoldWindow(frames)
    holding, counts, opening = False, {}, True
    for e in events:
        if e in kinds:
            w.event(kinds[e])
            holding, opening = e == "start", False
            counts = {} if holding else counts
            continue
        if opening:
            assert w.keeps(e) == (e not in counts)
            counts[e] = 1
            continue
        expected = holding and counts.get(e, 0) < frames
        if expected:
            counts[e] = counts.get(e, 0) + 1
        assert w.keeps(e) == expected


def test_the_header_stamp_is_read_from_the_serialized_frame():
    pytest.importorskip("rclpy")
    from rclpy.serialization import serialize_message
    from sensor_msgs.msg import CameraInfo, Image

    from figaroh_ros.ros.hold_frames import header_stamp
    for msg in (Image(height=2, width=3, encoding="mono8", step=3, data=bytes(6)),
                CameraInfo(width=640, height=480)):
        msg.header.stamp.sec, msg.header.stamp.nanosec = 1_796_000_123, 456_789_012
        msg.header.frame_id = "camera_optical_frame"
        assert header_stamp(serialize_message(msg)) == 1_796_000_123_456_789_012


def test_a_frame_older_than_the_hold_is_not_kept():
    pytest.importorskip("rclpy")
    from figaroh_ros.msg import PostureEvent
    from figaroh_ros.ros.hold_frames import HoldWindow
    w = HoldWindow(2)
    w.event(PostureEvent.HOLD_START, 1000)
    assert not w.keeps("img", 999)
    assert w.keeps("img", 1000) and w.keeps("img", 1001) and not w.keeps("img", 1002)


def test_an_on_chain_camera_without_its_frame_is_refused(tmp_path):
    text = open(TIAGO).read().replace("camera_frame: xtion_rgb_optical_frame\n", "")
    text = text.replace("robot_config: sim_tiago_camera.yaml", "robot_config: " + os.path.join(
        ROOT, "config", "sim_tiago_camera.yaml"))
    bad = tmp_path / "camera.yaml"
    bad.write_text(text)
    with pytest.raises(ConfigError, match="camera_frame"):
        SimCamera(str(bad))

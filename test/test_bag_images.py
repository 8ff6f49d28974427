"""Camera frames as recorded: every Image encoding a camera driver publishes decodes to the
same grey image (row padding, byte order, colour order), a CompressedImage too; a frame
cut short or of an unknown encoding is refused naming the frame; a camera config for a bag
refuses a hold-out of one."""
from __future__ import annotations

import os
from types import SimpleNamespace

import cv2
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from figaroh_ros.errors import ConfigError, DataError
from figaroh_ros.io.bag_images import COMPRESSED, IMAGE, image_of

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _msg(array: np.ndarray, encoding: str, pad: int = 0, big: bool = False):
    rows = array.reshape(array.shape[0], -1)
    if array.dtype == np.uint16:
        rows = array.astype(">u2" if big else "<u2").reshape(array.shape[0], -1)
    raw = rows.view(np.uint8).reshape(array.shape[0], -1)
    raw = np.hstack([raw, np.zeros((array.shape[0], pad), np.uint8)])
    return SimpleNamespace(height=array.shape[0], width=array.shape[1], encoding=encoding,
                           step=raw.shape[1], is_bigendian=int(big), data=raw.tobytes())


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 12), st.integers(1, 12), st.integers(0, 5), st.integers(0, 2**31))
def test_every_encoding_gives_the_same_grey_image(h, w, pad, seed):
    rng = np.random.default_rng(seed)
    grey = rng.integers(0, 256, (h, w), dtype=np.uint8)
    colour = np.repeat(grey[..., None], 3, axis=2)
    assert np.array_equal(image_of(_msg(grey, "mono8", pad), IMAGE, "f"), grey)
    assert np.array_equal(image_of(_msg(colour, "rgb8", pad), IMAGE, "f"), grey)
    assert np.array_equal(image_of(_msg(colour, "bgr8", pad), IMAGE, "f"), grey)
    bgra = np.concatenate([colour, np.full((h, w, 1), 255, np.uint8)], axis=2)
    assert np.array_equal(image_of(_msg(bgra, "bgra8", pad), IMAGE, "f"), grey)
    deep = grey.astype(np.uint16) * 257
    for big in (False, True):
        assert np.array_equal(image_of(_msg(deep, "mono16", pad, big), IMAGE, "f"), deep)


def test_a_compressed_frame_decodes_to_its_pixels():
    grey = np.tile(np.arange(0, 250, 10, dtype=np.uint8), (20, 1))
    ok, png = cv2.imencode(".png", grey)
    assert ok
    msg = SimpleNamespace(format="png", data=png.tobytes())
    assert np.array_equal(image_of(msg, COMPRESSED, "f"), grey)


def test_bad_frames_are_named():
    grey = np.zeros((4, 5), np.uint8)
    short = _msg(grey, "mono8")
    short.data = short.data[:-1]
    with pytest.raises(DataError, match="posture_3_1: 19 bytes for a 5x4 mono8 image"):
        image_of(short, IMAGE, "posture_3_1")
    with pytest.raises(DataError, match="posture_3_2: image encoding 'yuv422'"):
        image_of(_msg(grey, "yuv422"), IMAGE, "posture_3_2")


def test_a_holdout_of_one_is_refused(tmp_path):
    from figaroh_ros.tasks.camera_bag import load
    text = open(os.path.join(ROOT, "config", "ur10_camera_calibration.yaml")).read()
    path = tmp_path / "camera.yaml"
    path.write_text(text.replace("holdout_every: 2", "holdout_every: 1"))
    with pytest.raises(ConfigError, match="holdout_every"):
        load(str(path), bags=["anything"])
    path.write_text(text)
    with pytest.raises(ConfigError, match="bag.paths: no bag given"):
        load(str(path))

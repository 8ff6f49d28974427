"""``figaroh-ros calibrate`` on a folder of images and a CSV of joint readings.

A simulated eye-to-hand set (images rendered from a known camera and board mount, a blurred
image and one without the board among them) is calibrated from the command line and the
mounts compared with the truth; the real ChArUco set of test/data/camera (a fixed camera, the
board on a robot's flange) is calibrated from the shipped config and checked against
per-view solvePnP poses with the bounds of that set's own project; bad sets are refused
naming the file, with nothing written.
"""
import os
import subprocess
import sys

import cv2
import numpy as np
import pinocchio as pin
import pytest
import yaml
from conftest import ROOT
from hypothesis import given, settings, strategies as st

from figaroh_ros.camera.detect import detect
from figaroh_ros.camera.images import read_poses_csv
from figaroh_ros.camera.model import Intrinsics
from figaroh_ros.camera.render import board_texture, look_at, render
from figaroh_ros.camera.targets import Board
from figaroh_ros.cli.main import main
from figaroh_ros.errors import DataError

RIG = os.path.join(ROOT, "config", "urdf", "pose_rig.urdf")
REAL = os.path.join(ROOT, "test", "data", "camera", "industrial_calibration_charuco")
BOARD = Board("charuco", 7, 5, 0.04, 0.03, "DICT_6X6_250")
CAMERA = Intrinsics(np.array([[620.0, 0, 322.0], [0, 618.0, 241.0], [0, 0, 1]]),
                    np.array([-0.12, 0.05, 0.0005, -0.0004, 0.0]), 640, 480)
T_BASE_CAMERA = pin.SE3(pin.rpy.rpyToMatrix(-2.2, 0.05, 1.6), np.array([0.9, 0.1, 0.8]))
T_FLANGE_BOARD = pin.SE3(pin.rpy.rpyToMatrix(0.1, -0.05, 0.3), np.array([0.02, -0.03, 0.05]))


def cli(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "figaroh_ros.cli", "calibrate", *args],
                          cwd=cwd, capture_output=True, text=True, timeout=240)


def rig_readings(T: pin.SE3):
    roll, pitch, yaw = pin.rpy.matrixToRpy(T.rotation)
    return [*T.translation, yaw, pitch, roll]


def simulated_set(folder, n=8, seed=0):
    """Images of BOARD seen by CAMERA from n flange poses, their rig readings in poses.csv,
    a blurred copy of the first view and an image without the board."""
    rng = np.random.default_rng(seed)
    images = folder / "images"
    images.mkdir()
    w, h = BOARD.size()
    centre = np.array([w / 2, h / 2, 0.0])
    texture = board_texture(BOARD)
    rows = ["image,x,y,z,yaw,pitch,roll"]
    for k in range(n):
        eye = centre + np.r_[rng.uniform(-0.2, 0.2, 2), -rng.uniform(0.45, 0.6)]
        T_cb = look_at(centre + np.r_[rng.uniform(-0.03, 0.03, 2), 0.0], eye,
                       up=(np.sin(rng.uniform(-0.4, 0.4)), -1.0, 0.0))
        T_bf = T_BASE_CAMERA * pin.SE3(T_cb) * T_FLANGE_BOARD.inverse()
        image = render(BOARD, CAMERA.K, CAMERA.dist, T_cb, 640, 480, blur=0.5, noise=1.5,
                       rng=k, texture=texture)
        cv2.imwrite(str(images / f"view{k}.png"), image)
        rows.append(f"view{k}.png," + ",".join(f"{v:.12g}" for v in rig_readings(T_bf)))
        if k == 0:
            cv2.imwrite(str(images / "shaken.png"), cv2.GaussianBlur(image, (0, 0), 9.0))
            rows.append("shaken.png," + rows[-1].split(",", 1)[1])
    wall = (128 + rng.normal(0, 15, (480, 640))).clip(0, 255).astype(np.uint8)
    cv2.imwrite(str(images / "wall.png"), wall)
    rows.append("wall.png," + rows[1].split(",", 1)[1])
    (folder / "poses.csv").write_text("\n".join(rows) + "\n")
    config = {
        "robot": {"name": "rig", "urdf": RIG},
        "calibration": {"level": "offset", "tool_frame": "tool0"},
        "measurement": {"type": "camera"},
        "camera": {"setup": "eye_to_hand",
                   "board": {"kind": "charuco", "rows": 7, "cols": 5, "square": 0.04,
                             "marker": 0.03, "dictionary": "DICT_6X6_250"},
                   "intrinsics": {"width": 640, "height": 480, "fx": 620.0, "fy": 618.0,
                                  "cx": 322.0, "cy": 241.0,
                                  "dist": CAMERA.dist.tolist()},
                   "estimate": ["camera", "board"], "images": "images",
                   "poses": "poses.csv"},
    }
    path = folder / "camera.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def pose_of(d) -> pin.SE3:
    return pin.SE3(pin.rpy.rpyToMatrix(*d["rpy"]), np.array(d["xyz"]))


def test_simulated_set_recovers_both_mounts_and_names_the_dropped_images(tmp_path):
    config = simulated_set(tmp_path)
    out = tmp_path / "out"
    r = cli(str(config), "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert "rig: eye_to_hand, 8 views of 10 images (2 dropped)" in r.stdout
    assert "dropped shaken.png: " in r.stdout and "dropped wall.png: no charuco" in r.stdout
    result = yaml.safe_load((out / "result.yaml").read_text())
    assert sorted(d["image"] for d in result["dropped_images"]) == ["shaken.png", "wall.png"]
    assert "blurred" in {d["image"]: d["reason"] for d in result["dropped_images"]}[
        "shaken.png"]
    assert result["rmse_train_px"] < 0.3          # the detection noise of the rendered views
    for name, truth in (("camera_mount", T_BASE_CAMERA), ("board_mount", T_FLANGE_BOARD)):
        err = truth.inverse() * pose_of(result[name])
        assert np.linalg.norm(err.translation) < 2e-3, name
        assert np.linalg.norm(pin.log3(err.rotation)) < 2e-3, name
    assert sorted(os.listdir(out)) == ["result.yaml", "rig_calibrated.urdf",
                                       "rig_camera_info.yaml"]


def test_real_charuco_set_from_the_shipped_config(tmp_path):
    out = tmp_path / "real"
    r = cli("config/industrial_calibration_charuco.yaml", "--out", str(out))
    assert r.returncode == 0, r.stderr
    result = yaml.safe_load((out / "result.yaml").read_text())
    assert result["views_train"] == 4 and not result["dropped_images"]
    # their bound, sqrt(Ceres cost / residuals) < 1.5 px, is RMSE / 2 < 1.5 px; measured 1.82
    assert result["rmse_train_px"] < 2.0
    # each view's camera -> board pose by solvePnP against the calibrated chain's prediction:
    # their test's bounds, 6 mm and 1.5 degrees on average
    cfg = yaml.safe_load(open(os.path.join(REAL, "cal_data.yaml")))
    board = Board("charuco", 7, 5, 0.036195, 0.018256, "DICT_6X6_250")
    camera = Intrinsics.from_camera_info(os.path.join(REAL, "camera_info.yaml"))
    T_bc, T_fb = pose_of(result["camera_mount"]), pose_of(result["board_mount"])
    dpos, dang = [], []
    for item in cfg["data"]:
        name = os.path.basename(item["image"])
        if not os.path.exists(os.path.join(REAL, "images", name)):
            continue
        p = yaml.safe_load(open(os.path.join(REAL, item["pose"])))
        T_bf = pin.XYZQUATToSE3(np.array([p[k] for k in ("x", "y", "z", "qx", "qy", "qz",
                                                           "qw")]))
        found = detect(os.path.join(REAL, "images", name), board, intrinsics=camera)
        ok, rvec, tvec = cv2.solvePnP(board.object_points()[found.ids], found.pixels,
                                      camera.K, camera.dist)
        assert ok
        pnp = pin.SE3(cv2.Rodrigues(rvec)[0], tvec.ravel())
        err = pnp.inverse() * (T_bc.inverse() * T_bf * T_fb)
        dpos.append(np.linalg.norm(err.translation))
        dang.append(np.linalg.norm(pin.log3(err.rotation)))
    assert len(dpos) == 4
    assert np.mean(dpos) < 0.006 and np.degrees(np.mean(dang)) < 1.5


def test_bad_sets_are_refused_naming_the_file_and_nothing_is_written(tmp_path, capsys):
    """The command line's own entry point, in this process (exit code 2, one error line)."""
    config = simulated_set(tmp_path, n=3)
    out = tmp_path / "out"
    poses = tmp_path / "poses.csv"
    good = poses.read_text()

    def refused(expected):
        assert main(["calibrate", str(config), "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert expected in err, err
        assert not out.exists()

    poses.write_text(good + "ghost.png,0,0,0,0,0,0\n")
    refused("poses.csv:7: image ghost.png not found")
    lines = good.splitlines()
    lines[3] = "view2.png,abc," + lines[3].split(",", 2)[2]
    poses.write_text("\n".join(lines) + "\n")
    refused("poses.csv:4: x = 'abc' is not a finite number")
    poses.write_text(good)
    (tmp_path / "images" / "view1.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 50)
    refused("view1.png: the PNG file is cut short")
    config.write_text(config.read_text().replace("width: 640", "width: 1280"))
    refused("the image is 640x480 px but the CameraInfo is for 1280x480")


@settings(max_examples=60, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("image,xyz.png\n0123456789-e#abc ")),
                    max_size=120))
def test_any_poses_csv_gives_a_set_or_an_error_naming_the_file(tmp_path_factory, text):
    folder = tmp_path_factory.mktemp("set")
    (folder / "images").mkdir()
    (folder / "images" / "a.png").write_bytes(b"")
    (folder / "poses.csv").write_text(text)
    try:
        found = read_poses_csv(folder / "poses.csv", folder / "images")
    except DataError as exc:
        assert "poses.csv" in str(exc) or "images" in str(exc), str(exc)
    else:
        assert found.images == ("a.png",) * len(found.images) and found.q.shape == (
            len(found.images), len(found.joints))
        assert np.all(np.isfinite(found.q))

"""The camera calibration of a recorded bag (``measurement: camera``), without a graph: a
bag written as the recorder writes one (joint states, the executor's hold marks, a few
frames of the simulated wrist camera per hold, its CameraInfo) calibrates through
``tasks.calibrate.run``; a hold whose frames show no board is dropped and named; a bag whose
CameraInfo is of another size is refused naming both sizes, nothing written."""
from __future__ import annotations

import os

import numpy as np
import pytest
import yaml

from figaroh_ros.errors import DataError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CAMERA = os.path.join(ROOT, "config", "sim_ur10_wrist_camera.yaml")
CONFIG = os.path.join(ROOT, "config", "ur10_camera_calibration.yaml")
JOINTS = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint",
          "wrist_2_joint", "wrist_3_joint"]


def _bag(path, truth, Q, blank: int, size=(640, 480)):
    from figaroh_ros.io.bags import typestore
    from figaroh_ros.io.segmented_bag import SegmentedBagWriter
    from figaroh_ros.sim.camera import BACKGROUND
    store = typestore()
    S = store.types
    topics = {"/joint_states": "sensor_msgs/msg/JointState",
              "/figaroh/posture_events": "figaroh_ros/msg/PostureEvent",
              "/camera/image_raw": "sensor_msgs/msg/Image",
              "/camera/camera_info": "sensor_msgs/msg/CameraInfo"}
    w = SegmentedBagWriter(str(path), topics, store, "mcap", 0.0)
    rng = np.random.default_rng(5)

    def header(ns):
        return S["std_msgs/msg/Header"](stamp=S["builtin_interfaces/msg/Time"](
            sec=ns // 10**9, nanosec=ns % 10**9), frame_id="camera_optical_frame")

    def put(topic, ns, msg):
        w.write(topic, ns, store.serialize_cdr(msg, topics[topic]))
    m = truth.model
    idx = [m.joints[m.getJointId(j)].idx_q for j in JOINTS]
    k = truth.intrinsics
    info = S["sensor_msgs/msg/CameraInfo"](
        header=header(10**18), height=size[1], width=size[0], distortion_model="plumb_bob",
        d=np.asarray(k.dist, float), k=k.K.reshape(-1), r=np.eye(3).reshape(-1),
        p=np.hstack([k.K, np.zeros((3, 1))]).reshape(-1),
        binning_x=0, binning_y=0, roi=S["sensor_msgs/msg/RegionOfInterest"](
            x_offset=0, y_offset=0, height=0, width=0, do_rectify=False))
    t = 10**18
    for i, q in enumerate(Q):
        for event in (1, 2):                      # HOLD_START, then the hold, HOLD_END
            if event == 2:
                for s in range(10):
                    t += 40_000_000
                    put("/joint_states", t, S["sensor_msgs/msg/JointState"](
                        header=header(t), name=JOINTS, position=q[idx]
                        + rng.normal(0, 1e-5, 6), velocity=np.zeros(6), effort=np.zeros(6)))
                    if s in (3, 6):
                        image = truth.image(q) if i != blank else np.full(
                            (480, 640), BACKGROUND, np.uint8)
                        put("/camera/image_raw", t, S["sensor_msgs/msg/Image"](
                            header=header(t), height=480, width=640, encoding="mono8",
                            is_bigendian=0, step=640, data=image.reshape(-1)))
                        put("/camera/camera_info", t, info)
            t += 1_000_000
            put("/figaroh/posture_events", t, S["figaroh_ros/msg/PostureEvent"](
                header=header(t), index=i, event=event, joint_names=JOINTS,
                positions=q[idx], note=""))
        t += 500_000_000
    w.close()


@pytest.fixture(scope="module")
def truth():
    from figaroh_ros.sim.camera import SimCamera
    return SimCamera(CAMERA)


def test_a_recorded_bag_calibrates_and_names_the_dropped_hold(tmp_path, truth):
    from figaroh_ros.tasks import calibrate
    Q = truth.scene.postures(13, spread=0.25, min_visible=1.0, margin=40.0)
    bag = tmp_path / "bag"
    _bag(bag, truth, Q, blank=4)
    out = tmp_path / "out"
    outcome = calibrate.run(CONFIG, bags=[str(bag)], out=str(out))
    s = outcome.summary
    print(f"bag: held-out {s['nominal_rmse_validation_px']:.3f} -> "
          f"{s['rmse_validation_px']:.3f} px over {s['views_validation']} views")
    assert {d["image"] for d in s["dropped_images"]} == {"posture_4_0", "posture_4_1"}
    assert all("no charuco target" in d["reason"] for d in s["dropped_images"])
    assert s["views_train"] + s["views_validation"] == 12
    assert s["rmse_validation_px"] < s["nominal_rmse_validation_px"]
    assert s["camera_frame"]["parent"] == "tool0"
    with open(outcome.paths["camera_info"]) as f:
        info = yaml.safe_load(f)
    assert (info["image_width"], info["image_height"]) == (640, 480)
    assert os.path.isfile(outcome.paths["urdf"])


def test_a_camera_info_of_another_size_is_refused(tmp_path, truth):
    from figaroh_ros.tasks import calibrate
    Q = truth.scene.postures(4, spread=0.2, min_visible=1.0, margin=40.0)
    bag = tmp_path / "bag"
    _bag(bag, truth, Q, blank=-1, size=(1280, 720))
    out = tmp_path / "out"
    with pytest.raises(DataError, match="CameraInfo is 1280x720, the config's camera 640x480"):
        calibrate.run(CONFIG, bags=[str(bag)], out=str(out))
    assert not out.exists()


def test_the_command_line_calibrates_a_recorded_camera_bag(tmp_path, truth, capsys):
    """``figaroh-ros calibrate CONFIG --bag BAG`` with a camera config takes the bag path:
    the same result files as the task, the pixel errors printed."""
    from figaroh_ros.cli.main import main
    Q = truth.scene.postures(13, spread=0.25, min_visible=1.0, margin=40.0)
    bag = tmp_path / "bag"
    _bag(bag, truth, Q, blank=-1)
    out = tmp_path / "out"
    assert main(["calibrate", CONFIG, "--bag", str(bag), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    with open(out / "result.yaml") as f:
        s = yaml.safe_load(f)
    assert s["views_train"] + s["views_validation"] == 13
    assert s["rmse_validation_px"] < s["nominal_rmse_validation_px"]
    assert "px" in printed
    assert any(name.endswith("_camera_info.yaml") for name in os.listdir(out))

"""Camera calibration end to end on a ROS graph: a simulated UR10 with a wrist camera
(eye-in-hand) whose true mount and hidden joint offsets of milliradians only the simulated
camera knows (``config/sim_ur10_wrist_camera.yaml``).  Postures that keep the board in view
are planned from the nominal model and rough mounts (``plan_camera_postures``); the executor
holds each, the recorder keeps a few frames of each hold (not the stream); the Calibrate
action on that bag (``measurement: camera``) detects the board, calibrates and publishes:
the model's held-out reprojection RMSE within 10 % of the true model's own on the same
frames, the camera's estimated pose within 3 standard deviations of the truth, the camera
frame on ``/tf_static`` and in the published URDF, the estimated CameraInfo written."""
import os
import time

import numpy as np
import pinocchio as pin
import pytest
import yaml
from conftest import ROOT, accepted_goal, goal_result, ros_graph_environment

from figaroh_ros.errors import SUCCESSFUL

rclpy = pytest.importorskip("rclpy")
pytestmark = pytest.mark.xdist_group("ros_graph_2")

CAMERA = os.path.join(ROOT, "config", "sim_ur10_wrist_camera.yaml")
CONFIG = os.path.join(ROOT, "config", "ur10_camera_calibration.yaml")
JOINTS = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint",
          "wrist_2_joint", "wrist_3_joint"]
POSTURES = 18                          # every 2nd hold held out


def _goal(node, action_type, name, goal, timeout=300.0):
    from rclpy.action import ActionClient
    ac = ActionClient(node, action_type, name)
    assert ac.wait_for_server(timeout_sec=60.0), name
    handle = accepted_goal(node, ac, goal)
    assert handle is not None, f"{name}: goal refused"
    return goal_result(node, handle, timeout)


@pytest.fixture(scope="module")
def truth():
    from figaroh_ros.sim.camera import SimCamera
    return SimCamera(CAMERA)


def _postures(truth, path) -> None:
    """Postures planned on the nominal model: the camera's design mount, the board's pose
    measured with a tape (1 cm, 20 mrad off the truth)."""
    from figaroh_ros.camera import plan_camera_postures
    board = truth.board_mount * pin.SE3(pin.rpy.rpyToMatrix(0.02, -0.015, 0.01),
                                        np.array([0.01, -0.008, 0.006]))
    plan = plan_camera_postures(truth.urdf, truth.q_centre, board=truth.board,
                                intrinsics=truth.intrinsics, setup="eye_in_hand",
                                tool_frame="tool0", camera_guess=[0, 0.07, 0.05, 0, 0, 0],
                                board_guess=board, spread=0.25, margin=40.0,
                                max_postures=POSTURES, plateau=0.0, n_candidates=300)
    # the D-optimal design's support, then the next candidates by weight
    order = np.argsort(-plan.candidate_weights, kind="stable")[:POSTURES]
    Q = np.asarray(plan.candidates)[order]
    assert len(Q) == POSTURES and len(plan.postures) >= 6, len(plan.postures)
    with open(path, "w") as f:
        f.write(",".join(JOINTS) + "\n")
        for q in Q:
            f.write(",".join(repr(float(v)) for v in q) + "\n")


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    from figaroh_ros.cli.launch_runner import LaunchedGraph
    work = tmp_path_factory.mktemp("camera")
    ros_graph_environment()
    g = LaunchedGraph(os.path.join(ROOT, "launch", "sim_ur10_camera.launch.yaml"),
                      {"bag_dir": str(work / "bags"), "output_dir": str(work / "cal"),
                       "data_roots": str(work)}, env=dict(os.environ), cwd=str(work),
                      quiet=True)
    rclpy.init()
    node = rclpy.create_node("figaroh_camera_test")
    try:
        _first_image(node)
        yield {"graph": g, "node": node, "work": work}
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
        g.stop()


def _first_image(node, timeout: float = 90.0) -> None:
    """Wait for the simulated camera's first frame (it builds its truth at start)."""
    from sensor_msgs.msg import Image
    seen = []
    sub = node.create_subscription(Image, "/camera/image_raw", seen.append, 10)
    t0 = time.monotonic()
    while not seen and time.monotonic() - t0 < timeout:
        rclpy.spin_once(node, timeout_sec=0.1)
    node.destroy_subscription(sub)
    assert seen, "no image from the simulated camera"
    assert (seen[0].width, seen[0].height, seen[0].encoding) == (640, 480, "mono8")


def _tf_static(node, child: str, timeout: float = 30.0):
    """The latched /tf_static transform of ``child``."""
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from tf2_msgs.msg import TFMessage
    found = []
    qos = QoSProfile(depth=10, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                     reliability=ReliabilityPolicy.RELIABLE)
    sub = node.create_subscription(TFMessage, "/tf_static", lambda m: found.extend(
        t for t in m.transforms if t.child_frame_id == child), qos)
    t0 = time.monotonic()
    while not found and time.monotonic() - t0 < timeout:
        rclpy.spin_once(node, timeout_sec=0.1)
    node.destroy_subscription(sub)
    assert found, f"{child} not on /tf_static"
    return found[-1]


def _floor(truth, bag, validation: list[str]) -> float:
    """The true model's reprojection RMSE on the held-out views the calibration used."""
    from figaroh_ros.io.bag_images import read_bag_views
    from figaroh_ros.tasks.camera_bag import CameraBagConfig, hold_view
    cfg = CameraBagConfig.model_validate(yaml.safe_load(open(CONFIG)))
    views = read_bag_views([bag], None, "/joint_states", "/camera/image_raw",
                           "/camera/camera_info", "/figaroh/posture_events")
    errors = []
    for frames in views.holds:
        if f"posture_{frames.index}" not in validation:
            continue
        view = hold_view(frames, truth.board, truth.intrinsics, cfg.detection, [])
        q = truth.reading_configuration(views.joints, frames.q)
        ids, uv = truth.true_pixels(q)
        errors.append(view.pixels - uv[np.searchsorted(ids, view.ids)])
    assert len(errors) == len(validation)
    e = np.vstack(errors)
    return float(np.sqrt(np.mean(np.sum(e ** 2, axis=1))))


def _hand_eye_within_3_std(truth, summary) -> None:
    """The camera's pose and the joint offsets against the truth.  The offset of the last
    joint (wrist_3) cannot be told from a rotation of the camera about it: the base
    parameters group them (``camera_* + c * offset_wrist_3_joint``), so the true mount is
    compared with the offset folded in: the camera's pose in the frame of wrist_3's parent
    link at a reading, true against estimated."""
    m = truth.model
    d = m.createData()
    fid = m.getFrameId("tool0")
    q = truth.q_centre.copy()
    pin.framesForwardKinematics(m, d, q)
    at_reading = d.oMf[fid].copy()
    w3 = m.joints[m.getJointId("wrist_3_joint")].idx_q
    q[w3] += truth.joint_offsets["offset_wrist_3_joint"]
    pin.framesForwardKinematics(m, d, q)
    folded = at_reading.inverse() * d.oMf[fid] * truth.camera_mount
    est = summary["camera_mount"]
    estimated = pin.SE3(pin.rpy.rpyToMatrix(*est["rpy"]), np.array(est["xyz"]))
    std = {p["name"]: p for p in summary["parameters"]}
    dp = np.linalg.norm(estimated.translation - folded.translation)
    dr = np.linalg.norm(pin.log3(folded.rotation.T @ estimated.rotation))
    sp = np.linalg.norm([std[f"camera_p{a}"]["std"] for a in "xyz"])
    sr = np.linalg.norm([std[f"camera_phi{a}"]["std"] for a in "xyz"])
    print(f"hand-eye: {1e3 * dp:.3f} mm (3 std {3e3 * sp:.3f} mm), {1e3 * dr:.3f} mrad "
          f"(3 std {3e3 * sr:.3f} mrad) from the truth")
    assert dp <= 3 * sp and dr <= 3 * sr
    for name, true in truth.joint_offsets.items():
        if name in std:
            z = (std[name]["value"] - true) / std[name]["std"]
            assert abs(z) <= 3.0, (name, std[name]["value"], true, std[name]["std"])


def test_camera_calibration_over_ros(graph, truth):
    from figaroh_ros.action import Calibrate, RunExperiment
    node, work = graph["node"], graph["work"]
    t0 = time.monotonic()
    postures = work / "camera_postures.csv"
    _postures(truth, postures)
    bag = str(work / "bags" / "camera")
    ran = _goal(node, RunExperiment, "/figaroh/run_experiment",
                RunExperiment.Goal(postures_file=str(postures), bag_path=bag,
                                   override_timing=True, max_velocity=3.0, settle_time=0.5,
                                   dwell_time=1.0))
    assert ran.error_code == SUCCESSFUL, ran.message
    # a few frames per hold, not the stream
    with open(os.path.join(bag, "metadata.yaml")) as f:
        meta = yaml.safe_load(f)["rosbag2_bagfile_information"]
    counts = {t["topic_metadata"]["name"]: t["message_count"]
              for t in meta["topics_with_message_count"]}
    assert POSTURES <= counts["/camera/image_raw"] <= 1 + 3 * POSTURES, counts
    res = _goal(node, Calibrate, "/figaroh/calibrate",
                Calibrate.Goal(bags=[bag], config=CONFIG, kind="geometric", publish=True))
    print("calibrate:", res.message)
    assert res.error_code == SUCCESSFUL, res.message
    with open(res.result_path) as f:
        summary = yaml.safe_load(f)
    floor = _floor(truth, bag, summary["validation_views"])
    print(f"held-out reprojection RMSE: nominal {summary['nominal_rmse_validation_px']:.3f} "
          f"px, calibrated {summary['rmse_validation_px']:.3f} px, true model "
          f"{floor:.3f} px; {time.monotonic() - t0:.0f} s")
    assert summary["rmse_validation_px"] <= 1.10 * floor
    assert summary["rmse_validation_px"] < summary["nominal_rmse_validation_px"]
    _hand_eye_within_3_std(truth, summary)
    assert res.published, res.not_published_because
    # the camera frame: in the published URDF and on /tf_static
    assert os.path.isfile(os.path.join(os.path.dirname(res.result_path),
                                       "ur10_camera_info.yaml"))
    frame = summary["camera_frame"]
    urdf = open(res.urdf_path).read()
    assert f'link name="{frame["child"]}"' in urdf
    sent = _tf_static(node, frame["child"])
    assert sent.header.frame_id == frame["parent"] == "tool0"
    t = sent.transform.translation
    assert np.allclose([t.x, t.y, t.z], frame["xyz"], atol=1e-9)

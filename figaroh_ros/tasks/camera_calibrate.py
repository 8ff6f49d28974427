"""Camera calibration from a folder of images and a CSV of joint readings
(``figaroh-ros calibrate CONFIG`` when the config has a ``camera:`` section).

Config -> images and joint readings (:mod:`figaroh_ros.camera.images`) -> board detection
(:mod:`figaroh_ros.camera.detect`: a view with no board, blurred or failing the homography
check is dropped and named) -> :func:`figaroh_ros.camera.solve.calibrate_camera` ->
``result.yaml``, the calibrated URDF and the CameraInfo YAML in ``out`` (written together,
or nothing).
"""
from __future__ import annotations

import os
import xml.etree.ElementTree as ET

from figaroh_ros.camera.images import detect_set, read_poses_csv
from figaroh_ros.camera.solve import calibrate_camera
from figaroh_ros.config.calibration import CalibrationConfig, load_calibration_config
from figaroh_ros.config.camera_detection import CameraDetection
from figaroh_ros.errors import ConfigError, DataError
from figaroh_ros.io.output_dir import staged_output
from figaroh_ros.io.report import write_result
from figaroh_ros.progress import Stage, reporter
from figaroh_ros.tasks import TaskOutcome
from figaroh_ros.tasks.camera_gate import camera_verdict
from figaroh_ros.tasks.robot_model import resolved_robot


Detection = CameraDetection     # the detection: section, under the name tasks import it by


def load_camera_config(path: str, urdf: str | None = None) -> CalibrationConfig:
    """Read and validate the camera calibration YAML at ``path``: a calibration config with
    a ``camera:`` section naming its images and joint readings."""
    cfg = load_calibration_config(path, urdf=urdf)
    cam = cfg.camera
    if cam is None:
        raise ConfigError(f"{path}: measurement.type camera and a camera: section are needed "
                          "to calibrate from images")
    if cam.images is None or cam.poses is None:
        raise ConfigError(f"{path}: camera.images and camera.poses: the folder of images "
                          "and the CSV of joint readings are needed to calibrate")
    cam.board.board()               # the board's own checks (dictionary size...)
    return cfg


def run(config_path: str, out: str, urdf: str | None = None, progress=None) -> TaskOutcome:
    """Detect, calibrate and write the results of the camera config at ``config_path``."""
    say = reporter(progress)
    cfg = load_camera_config(config_path, urdf)
    cam, det = cfg.camera, cfg.detection
    board = cam.board.board()
    intrinsics = cam.camera_intrinsics()
    images = read_poses_csv(cam.poses, cam.images)
    say(Stage.LOADING_DATA, 0.05, f"detecting the {board.kind} board in "
        f"{len(images.images)} images")
    detections, q, dropped = detect_set(images, board, intrinsics,
                                        homography_max=det.homography_max_px,
                                        blur_min=det.blur_min, min_features=det.min_features)
    for d in dropped:
        say(Stage.LOADING_DATA, 0.5, f"dropped {d.image}: {d.reason}")
    if len(detections) < 3:
        reasons = "; ".join(f"{d.image}: {d.reason}" for d in dropped) or "none dropped"
        raise DataError(f"{cam.images}: the board was found in {len(detections)} of "
                        f"{len(images.images)} images, at least 3 views are needed "
                        f"({reasons})")
    train, validation = _split(detections, q, det.validation_every)
    cfg, provenance = resolved_robot(cfg, config_path)
    robot = cfg.robot.urdf
    c = cfg.calibration
    say(Stage.ESTIMATION, 0.6, f"calibrating ({cam.setup}) from {len(train[0])} views")
    result = calibrate_camera(
        robot, train[1], train[0], board=board, intrinsics=intrinsics, setup=cam.setup,
        tool_frame=c.tool_frame, camera_frame=cam.camera_frame, level=c.level,
        joints=c.joints, estimate=tuple(cam.estimate),
        estimate_intrinsics=cam.estimate_intrinsics, prior_sigma=cam.prior_sigma,
        pixel_noise=cam.pixel_noise, camera_guess=cam.camera_guess,
        board_guess=cam.board_guess, outlier_threshold=cam.outlier_threshold,
        validation=None if validation is None else (validation[1], validation[0]),
        name=cfg.robot.name)
    summary = result.to_dict()
    summary["model"] = provenance
    summary["images"] = len(images.images)
    summary["views"] = [{"image": d.image, "features": len(d),
                         "homography_rms_px": round(d.homography_rms, 4)}
                        for d in detections]
    summary["dropped_images"] = [{"image": d.image, "reason": d.reason} for d in dropped]
    name = cfg.robot.name
    files = {"result": "result.yaml", "urdf": f"{name}_calibrated.urdf",
             "camera_info": f"{name}_camera_info.yaml"}
    say(Stage.EXPORTING, 0.9, f"writing {out}")
    with staged_output(out) as stage:
        text = result.to_urdf(stage.path(files["urdf"]), camera_joint=cam.camera_joint)
        result.camera_info_yaml("camera", stage.path(files["camera_info"]))
        verdict = camera_verdict(result, cfg.acceptance, urdf_text=text,
                                 camera_link=_camera_link(text, cam.camera_joint))
        summary["publication"] = verdict.to_dict()
        write_result(summary, stage.dir)
    return TaskOutcome(summary=summary,
                       paths={k: os.path.join(out, v) for k, v in files.items()})


def _camera_link(urdf_text: str, camera_joint: str | None) -> str:
    """The camera's link in the written URDF: the child of ``camera_joint``, else the link
    ``to_urdf`` adds."""
    if camera_joint is None:
        return "camera_optical_frame"
    for joint in ET.fromstring(urdf_text.encode()).findall("joint"):
        if joint.get("name") == camera_joint:
            return joint.find("child").get("link")
    raise ConfigError(f"camera.camera_joint: '{camera_joint}' is not in the URDF")


def _split(detections, q, every: int):
    if not every:
        return (detections, q), None
    held = [k for k in range(len(detections)) if (k + 1) % every == 0]
    kept = [k for k in range(len(detections)) if (k + 1) % every != 0]
    return ([detections[k] for k in kept], q[kept]), ([detections[k] for k in held], q[held])


def print_summary(s: dict) -> None:
    """The lines ``figaroh-ros calibrate`` prints for a camera calibration."""
    dropped = s.get("dropped_images") or []
    print(f"{s['robot']}: {s['setup']}, {s['views_train']} views"
          + (f" of {s['images']} images" if "images" in s else "")
          + (f" ({len(dropped)} dropped)" if dropped else "")
          + (f", {len(s['rejected_views'])} rejected" if s.get("rejected_views") else ""))
    for d in dropped:
        print(f"  dropped {d['image']}: {d['reason']}")
    print(f"reprojection RMSE: nominal {s['nominal_rmse_train_px']:.3f} px -> calibrated "
          f"{s['rmse_train_px']:.3f} px")
    if "rmse_validation_px" in s:
        print(f"validation reprojection RMSE: nominal {s['nominal_rmse_validation_px']:.3f} "
              f"px -> calibrated {s['rmse_validation_px']:.3f} px "
              f"({s['views_validation']} views)")
    m = s.get("camera_mount")
    if m:
        print(f"camera mount: xyz {_fmt(m['xyz'])} m, rpy {_fmt(m['rpy'])} rad")


def _fmt(v) -> str:
    return "[" + ", ".join(f"{x:.4f}" for x in v) + "]"


__all__ = ["Detection", "load_camera_config", "run",
           "print_summary"]

"""Camera calibration from a recorded experiment (``measurement: {type: camera}``): the
Calibrate action and ``figaroh-ros calibrate CONFIG --bag BAG`` reach it through
:func:`figaroh_ros.tasks.calibrate.run`.

Bag -> each hold's camera frames and mean joint positions (:mod:`figaroh_ros.io.bag_images`)
-> board detection in every frame (a frame with no board, blurred or failing the homography
check is dropped and named) -> one view per hold, the pixels of the features every kept
frame of the hold found averaged -> :func:`figaroh_ros.camera.solve.calibrate_camera` (every
``bag.holdout_every``-th hold held out) -> the publication gate on pixels
(:func:`figaroh_ros.tasks.camera_gate.camera_verdict`) -> ``result.yaml``, the calibrated
URDF (the camera joint's origin), the estimated CameraInfo YAML and ``corners_fit.csv``
(every view's predicted and detected corners in the camera's optical frame,
:mod:`figaroh_ros.camera.marker_points`), written together.
"""
from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from typing import Literal

import numpy as np
import pinocchio as pin
from pydantic import Field

from figaroh_ros.camera.detect import DetectionError, detect
from figaroh_ros.camera.marker_points import result_corners, write_corners
from figaroh_ros.camera.solve import calibrate_camera
from figaroh_ros.camera.targets import Detection as Found
from figaroh_ros.config.base import Section, parse
from figaroh_ros.config.calibration import Calibration
from figaroh_ros.config.camera import Camera
from figaroh_ros.config.sections import NamedRobot, Output
from figaroh_ros.config.yaml_file import read_mapping
from figaroh_ros.errors import ConfigError, DataError
from figaroh_ros.io.bag_images import read_bag_views
from figaroh_ros.io.output_dir import staged_output
from figaroh_ros.io.report import write_result
from figaroh_ros.progress import Stage, reporter
from figaroh_ros.tasks import TaskOutcome
from figaroh_ros.tasks.camera_calibrate import Detection as DetectionSpec
from figaroh_ros.tasks.camera_gate import camera_verdict
from figaroh_ros.tasks.robot_model import resolved_robot


class CameraMeasurement(Section):
    """The measurement is the camera's pixels (the `camera:` section)."""

    type: Literal["camera"] = Field(description="camera: board features in images")


class CameraBag(Section):
    """Where the recorded experiment's topics are."""

    paths: list[str] = Field(default_factory=list, description="bags (the goal's bags "
                             "replace them)")
    joint_states: str = Field("/joint_states", min_length=1)
    image: str = Field("/camera/image_raw", min_length=1, description="sensor_msgs/Image or "
                       "CompressedImage")
    camera_info: str = Field("/camera/camera_info", description="sensor_msgs/CameraInfo "
                             "('' : none recorded)")
    events: str = Field("/figaroh/posture_events", min_length=1)
    holdout_every: int = Field(4, ge=0, le=10_000, description="every k-th hold held out "
                               "for validation (0: none, else >= 2)")


class CameraBagConfig(Section):
    """Camera calibration from a bag (`measurement: {type: camera}`)."""

    robot: NamedRobot
    calibration: Calibration
    measurement: CameraMeasurement
    camera: Camera
    detection: DetectionSpec = Field(default_factory=DetectionSpec)
    bag: CameraBag = Field(default_factory=CameraBag)
    output: Output = Field(default_factory=Output)


def load(path: str, bags: list[str] | None = None, urdf: str | None = None
         ) -> CameraBagConfig:
    """The camera bag config at ``path`` with ``bag.paths`` absolute (``bags`` in their
    place when given) and ``urdf`` in place of the robot's model when given."""
    raw = dict(read_mapping(path))
    if urdf is not None and isinstance(raw.get("robot"), dict):
        raw["robot"] = dict(raw["robot"], urdf=os.path.abspath(urdf), source="urdf",
                            xacro_args={})
    cfg = parse(CameraBagConfig, raw, path)
    if cfg.bag.holdout_every == 1:
        raise ConfigError(f"{path}: bag.holdout_every: expected 0 (none) or an integer >= 2")
    cfg.camera.board.board()
    paths = list(bags) if bags else [
        os.path.join(os.path.dirname(os.path.abspath(path)), p) for p in cfg.bag.paths]
    if not paths:
        raise ConfigError(f"{path}: bag.paths: no bag given")
    return cfg.model_copy(update={"bag": cfg.bag.model_copy(update={"paths": paths})})


def hold_view(frames, board, intrinsics, det: DetectionSpec, dropped: list):
    """One Detection of a hold: the features every detected frame found, averaged."""
    found = []
    for image, name in zip(frames.images, frames.names):
        try:
            found.append(detect(image, board, name, intrinsics,
                                homography_max=det.homography_max_px, blur_min=det.blur_min,
                                min_features=det.min_features))
        except DetectionError as exc:
            dropped.append({"image": name, "reason": str(exc)})
    if not found:
        return None
    ids = found[0].ids
    for d in found[1:]:
        ids = np.intersect1d(ids, d.ids)
    if len(ids) < det.min_features:
        dropped.append({"image": f"posture_{frames.index}", "reason": f"only {len(ids)} "
                        "features found in every frame of the hold"})
        return None
    pixels = np.mean([d.pixels[np.searchsorted(d.ids, ids)] if np.all(np.diff(d.ids) > 0)
                      else d.pixels[[list(d.ids).index(i) for i in ids]] for d in found],
                     axis=0)
    return Found(f"posture_{frames.index}", ids, pixels,
                 float(max(d.homography_rms for d in found)), found[0].width,
                 found[0].height)


def camera_placement(result, urdf_text: str, camera_joint: str | None):
    """(parent link, pose of the camera in it) as the calibrated URDF places the camera:
    ``camera_joint``'s parent link, else the link of the camera's mount frame."""
    parent, T = result._camera_in_link()
    if camera_joint is None:
        return parent, T
    for j in ET.fromstring(urdf_text).findall("joint"):
        if j.get("name") == camera_joint:
            plink = j.find("parent").get("link")
            return plink, result._link_pose(plink).inverse() * result._link_pose(parent) * T
    raise ConfigError(f"camera.camera_joint: no joint {camera_joint!r} in the URDF")


def camera_link(urdf_text: str, camera_joint: str | None) -> str:
    """The camera's link in the calibrated URDF: ``camera_joint``'s child, else the link
    ``to_urdf`` adds."""
    if camera_joint is None:
        return "camera_optical_frame"
    for j in ET.fromstring(urdf_text).findall("joint"):
        if j.get("name") == camera_joint:
            return j.find("child").get("link")
    raise ConfigError(f"camera.camera_joint: no joint {camera_joint!r} in the URDF")


def run(config_path: str, *, bags: list[str] | None = None, urdf: str | None = None,
        out: str, progress=None) -> TaskOutcome:
    """Calibrate the camera of the config at ``config_path`` from its bags (see the module
    docstring); ``out``: the folder of the results."""
    say = reporter(progress)
    cfg = load(config_path, bags, urdf)
    cam, det, b = cfg.camera, cfg.detection, cfg.bag
    cfg, provenance = resolved_robot(cfg, config_path, b.paths)
    robot = cfg.robot.urdf
    board, intrinsics = cam.board.board(), cam.camera_intrinsics()
    say(Stage.LOADING_DATA, 0.05, f"reading the holds and frames of {b.paths}")
    views = read_bag_views(b.paths, None, b.joint_states, b.image,
                           b.camera_info, b.events)
    info = views.camera_info
    if info is not None and (info["width"], info["height"]) != (intrinsics.width,
                                                                intrinsics.height):
        raise DataError(f"{b.camera_info}: the recorded CameraInfo is {info['width']}x"
                        f"{info['height']}, the config's camera {intrinsics.width}x"
                        f"{intrinsics.height}")
    model = pin.buildModelFromUrdf(robot)
    dropped, kept, Q = [], [], []
    for frames in views.holds:
        view = hold_view(frames, board, intrinsics, det, dropped)
        if view is None:
            continue
        q = pin.neutral(model)
        for name, value in zip(views.joints, frames.q):
            if model.existJointName(name):
                q[model.joints[model.getJointId(name)].idx_q] = value
        kept.append(view)
        Q.append(q)
    for d in dropped:
        say(Stage.LOADING_DATA, 0.5, f"dropped {d['image']}: {d['reason']}")
    if len(kept) < 3:
        raise DataError(f"bag {b.paths}: the board was found in {len(kept)} of "
                        f"{len(views.holds)} holds, at least 3 views are needed ("
                        + ("; ".join(f"{d['image']}: {d['reason']}" for d in dropped)
                           or "no frame dropped") + ")")
    Q = np.array(Q)
    every = b.holdout_every
    held = [k for k in range(len(kept)) if every and (k + 1) % every == 0]
    train = [k for k in range(len(kept)) if k not in held]
    c = cfg.calibration
    say(Stage.ESTIMATION, 0.6, f"calibrating ({cam.setup}) from {len(train)} views")
    result = calibrate_camera(
        robot, Q[train], [kept[k] for k in train], board=board, intrinsics=intrinsics,
        setup=cam.setup, tool_frame=c.tool_frame, camera_frame=cam.camera_frame,
        level=c.level, joints=c.joints, estimate=tuple(cam.estimate),
        estimate_intrinsics=cam.estimate_intrinsics, prior_sigma=cam.prior_sigma,
        pixel_noise=cam.pixel_noise, camera_guess=cam.camera_guess,
        board_guess=cam.board_guess, outlier_threshold=cam.outlier_threshold,
        validation=(Q[held], [kept[k] for k in held]) if held else None,
        name=cfg.robot.name)
    name = cfg.robot.name
    files = {"result": "result.yaml", "urdf": f"{name}_calibrated.urdf",
             "camera_info": f"{name}_camera_info.yaml", "corners": "corners_fit.csv"}
    say(Stage.EXPORTING, 0.9, f"writing {out}")
    with staged_output(out) as stage:
        text = result.to_urdf(stage.path(files["urdf"]), camera_joint=cam.camera_joint)
        result.camera_info_yaml("camera", stage.path(files["camera_info"]))
        write_corners(stage.path(files["corners"]), result_corners(result))   # RViz's corners
        summary = result.to_dict()
        link = camera_link(text, cam.camera_joint)
        verdict = camera_verdict(result, urdf_text=text, camera_link=link)
        parent, T = camera_placement(result, text, cam.camera_joint)
        summary.update({"model": provenance, "measurement": "camera",
                        "bags": list(b.paths), "holds": len(views.holds),
                        "holds_without_frames": views.without_frames,
                        "views": [{"image": d.image, "features": len(d.ids),
                                   "homography_rms_px": round(d.homography_rms, 4)}
                                  for d in kept],
                        "validation_views": [kept[k].image for k in held],
                        "dropped_images": dropped, "publication": verdict.to_dict(),
                        "camera_frame": {"parent": parent, "child": link,
                                         "xyz": T.translation.tolist(),
                                         "rpy": pin.rpy.matrixToRpy(T.rotation).tolist()}})
        write_result(summary, stage.dir)
    return TaskOutcome(summary=summary,
                       paths={k: os.path.join(out, v) for k, v in files.items()})


__all__ = ["CameraBagConfig", "load", "run", "hold_view"]

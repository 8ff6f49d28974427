"""``figaroh-ros calibrate``: geometric calibration from static postures.  The config is
validated before the task (the solver's scipy.optimize, the plots) is imported, so that a
refused config costs little."""
from __future__ import annotations

import os

from figaroh_ros import tasks
from figaroh_ros.cli.output import print_publication, say
from figaroh_ros.config.calibration import load_calibration_config
from figaroh_ros.config.yaml_file import read_mapping
from figaroh_ros.errors import ConfigError


def cmd_calibrate(args) -> int:
    if _is_camera_config(args.config):
        return _camera(args)
    out = args.out or os.path.join("results", _robot_name(args.config) + "_calibration")
    load_calibration_config(args.config, args.data, args.validate, args.bag, args.urdf)
    outcome = tasks.calibrate.run(args.config, data=args.data, validate=args.validate,
                                  bags=args.bag, urdf=args.urdf, out=out,
                                  accept_poor_fit=args.accept_poor_fit, progress=say)
    print_summary(outcome.summary)
    print_publication(outcome.summary)
    return 0


def _camera(args) -> int:
    """A config with a ``camera:`` section: a folder of images and a CSV of joint readings
    (``camera.images``, ``camera.poses``), or a recorded experiment (``--bag`` or the
    config's bags), which :func:`figaroh_ros.tasks.calibrate.run` reads."""
    camera_calibrate = tasks.camera_calibrate
    for flag, value in (("--data", args.data), ("--validate", args.validate)):
        if value:
            raise ConfigError(f"{flag}: a camera calibration reads images (camera.images "
                              "and camera.poses) or a bag (--bag), not posture tables")
    raw = read_mapping(args.config)
    name = str((raw.get("robot") or {}).get("name", "camera"))
    out = args.out or os.path.join("results", name + "_calibration")
    if args.bag or not (raw.get("camera") or {}).get("images"):
        outcome = tasks.calibrate.run(args.config, bags=args.bag, urdf=args.urdf, out=out,
                                      accept_poor_fit=args.accept_poor_fit, progress=say)
    else:
        outcome = camera_calibrate.run(args.config, out, urdf=args.urdf, progress=say)
    camera_calibrate.print_summary(outcome.summary)
    print_publication(outcome.summary)
    return 0


def _is_camera_config(path: str) -> bool:
    """Whether the calibration config at ``path`` calibrates from images (a ``camera:``
    section): read before the camera modules (OpenCV) are loaded."""
    raw = read_mapping(path)
    return isinstance(raw, dict) and isinstance(raw.get("camera"), dict)


def _robot_name(config_path: str) -> str:
    return load_calibration_config(config_path).robot.name


def print_summary(s: dict) -> None:
    """The lines ``figaroh-ros calibrate`` prints on stdout."""
    print(f"{s['robot']}: {s['level']} level, {len(s['parameters'])} identified parameters, "
          f"{s['postures_train']} training postures"
          + (f" ({len(s['rejected_postures'])} rejected)" if s["rejected_postures"] else ""))
    print(f"training RMSE: nominal {s['nominal_rmse_train_mm']:.3f} mm -> calibrated "
          f"{s['rmse_train_mm']:.3f} mm (max {s['max_train_mm']:.3f} mm)")
    if "rmse_validation_mm" in s:
        _print_validation(s)
    if "leave_one_out" in s:
        lo = s["leave_one_out"]
        print(f"leave-one-out RMSE: nominal {lo['nominal_rmse_mm']:.3f} mm -> calibrated "
              f"{lo['rmse_mm']:.3f} mm (max {lo['max_mm']:.3f} mm)")
    if s["unidentifiable"]:
        print("without effect on the measurements: " + ", ".join(s["unidentifiable"]))


def _print_validation(s: dict) -> None:
    print(f"validation RMSE: nominal {s['nominal_rmse_validation_mm']:.3f} mm -> "
          f"calibrated {s['rmse_validation_mm']:.3f} mm (max {s['max_validation_mm']:.3f} mm, "
          f"{s['postures_validation']} postures)")
    if "rmse_validation_point1_mm" in s:
        print(f"validation RMSE of point 1: {s['rmse_validation_point1_mm']:.3f} mm")
    ins = s.get("inside_training_ranges")
    if ins:
        print(f"validation postures inside the training ranges ({ins['postures']}): "
              f"nominal {ins['nominal_rmse_mm']:.3f} mm -> calibrated {ins['rmse_mm']:.3f} mm")

"""``figaroh-ros calibrate``: geometric calibration from static postures."""
from __future__ import annotations

import os
import sys

from figaroh_ros.cli.output import say
from figaroh_ros.config.calibration import load_calibration_config
from figaroh_ros.tasks import calibrate


def add_parsers(sub) -> None:
    p = sub.add_parser("calibrate", help="geometric calibration from static postures")
    p.add_argument("config", help="calibration YAML (see config/)")
    p.add_argument("--data", help="training posture CSV (overrides data.path)")
    p.add_argument("--validate", help="validation posture CSV (overrides data.validation)")
    p.add_argument("--bag", action="append", help="rosbag2 folder recorded by the executor "
                   "(repeatable; replaces data.path)")
    p.add_argument("--out", help="output folder (default results/<robot>_calibration)")
    p.add_argument("--urdf", help="start from this model instead of robot.urdf (e.g. one "
                   "with identified inertias: only its joint origins are rewritten)")
    add_accept_poor_fit(p)
    p.set_defaults(func=cmd_calibrate)


def add_accept_poor_fit(p) -> None:
    """``--accept-poor-fit``: keep a fit whose residual is far above the noise (warned)."""
    p.add_argument("--accept-poor-fit", action="store_true", help="keep a fit whose "
                   "residual exceeds acceptance.residual_limit x the stated noise, with a "
                   "warning in the result (never publishable), instead of exit code 2")


def cmd_calibrate(args) -> int:
    out = args.out or os.path.join("results", _robot_name(args.config) + "_calibration")
    outcome = calibrate.run(args.config, data=args.data, validate=args.validate,
                            bags=args.bag, urdf=args.urdf, out=out,
                            accept_poor_fit=args.accept_poor_fit, progress=say)
    print_summary(outcome.summary)
    print_publication(outcome.summary)
    return 0


def print_publication(s: dict) -> None:
    """The warnings and the publication gate's verdict, with each failed check."""
    for w in s.get("warnings", []):
        print(f"WARNING: {w}", file=sys.stderr)
    pub = s.get("publication")
    if pub is None:
        return
    failed = [c for c in pub["checks"] if not c["passed"]]
    print(f"publication: {pub['verdict']} ({len(pub['checks']) - len(failed)} of "
          f"{len(pub['checks'])} checks passed)")
    for c in failed:
        print(f"  failed {c['name']}: {c['detail']}")


def _robot_name(config_path: str) -> str:
    return load_calibration_config(config_path)["robot"]["name"]


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

"""Command line: ``figaroh-ros identify CONFIG [--data PATH] [--out DIR]``."""
from __future__ import annotations

import argparse
import os
import sys

from numpy.linalg import LinAlgError

from .config import ConfigError, load_config


def _progress(msg: str):
    print(f"[figaroh-ros] {msg}", file=sys.stderr, flush=True)


def cmd_identify(args) -> int:
    from numpy.linalg import LinAlgError
    from .identify import identify
    from .report import (format_cross_validation, format_table, plot_torques,
                         prediction_band, write_result)
    try:
        cfg = load_config(args.config, args.data, args.bag, args.urdf)
        result = identify(cfg, progress=_progress)
    except (ConfigError, ValueError, LinAlgError) as exc:   # DataError is a ValueError
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out = args.out or os.path.join("results", cfg["robot"]["name"])
    d = result.to_dict()
    print(format_table(d))
    print(f"condition number: {d['condition_number']:.4g}")
    print("RMSE per joint [N.m]: " + ", ".join(f"{k} {v:.4g}" for k, v in d["rmse"].items()))
    if "validation_rmse" in d:
        print("hold-out RMSE [N.m]: " + ", ".join(
            f"{k} {v:.4g}" for k, v in d["validation_rmse"].items()))
    if "cross_validation" in d:
        print(format_cross_validation(d))
    print(f"essential parameters ({len(d['essential_parameters'])}):")
    print(format_table(d, "essential_parameters"))
    if "physical" in d:
        from .physical.fit import physical_summary
        print(physical_summary(d["physical"], d.get("nominal_validation_rmse")))
    path = write_result(d, out)
    if "physical" in d and d["physical"]["publishable"]:
        from .physical.urdf_inertia import InertiaExportError
        from .report import write_covariance
        try:
            urdf = write_identified_urdf(result, cfg, out)
        except InertiaExportError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        cov = write_covariance(result, out)
        _progress(f"wrote {urdf} and {cov}")
    elif "physical" in d:
        _progress("identified URDF not written: " + d["physical"]["not_published_because"])
    if cfg["output"]["plots"]:
        obs = result.observation
        plot_torques(obs.Y, obs.Wb @ result.estimate.phi, obs.row_joint, result.joints,
                     out, f"{result.robot} ({result.method.upper()})",
                     band=prediction_band(obs.Wb, result.estimate.cov))
    if args.reference:
        from .reference import compare, markdown_table, read_reference
        ref = read_reference(args.reference)
        try:
            rows = {m: compare(d[m], ref, m) for m in ("ols", "wls") if m in d}
        except KeyError as exc:
            print(f"error: result and reference {args.reference} differ: {exc}", file=sys.stderr)
            return 2
        if "wls" in rows:
            print("\nWell-identified reference parameters (std < 5 %), ours vs reference; "
                  "z = difference in reference standard deviations:")
            print(markdown_table(rows["ols"], rows["wls"], only_well=5.0))
        for m, rs in rows.items():
            well = [r for r in rs if r.ref_std_percent < 5.0]
            inside = sum(abs(r.z) <= 3 for r in well)
            print(f"{m.upper()}: {inside} of {len(well)} well-identified reference parameters "
                  f"within 3 std; {len(d[m])} base parameters (reference {len(ref)})")
    _progress(f"wrote {path}")
    return 0


def write_identified_urdf(result, cfg, out: str) -> str:
    """``<out>/<robot>_identified.urdf`` with the consistent standard parameters."""
    from .identify import drive_options, robot_from_config
    from .parameters import parameter_layout
    from .physical.urdf_inertia import write_identified_urdf as write
    robot = robot_from_config(cfg)
    layout = parameter_layout(robot, drive_options(cfg))
    path = os.path.join(out, f"{result.robot}_identified.urdf")
    return write(path, robot, layout, result.physical.phi)


def cmd_identify_gains(args) -> int:
    from numpy.linalg import LinAlgError
    from .gains import gains_dict, identify_gains, load_gains_config
    from .report import write_result
    try:
        cfg = load_gains_config(args.config)
        g = identify_gains(cfg)
    except (ConfigError, ValueError, LinAlgError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    d = gains_dict(g)
    print(f"drive and sensor gains (TLS with a payload of known {g.payload_known}, refined; "
          "TLS alone in brackets):")
    for j in g.joints:
        cells = []
        for key in ("drive_gains", "sensor_gains"):
            if d[key] is not None:
                cells.append(f"{key.split('_')[0]} {d[key][j]:.5g} ({d['tls_' + key][j]:.5g})")
        print(f"  {j}: " + ", ".join(cells))
    out = args.out or os.path.join("results", cfg["robot"]["name"] + "_gains")
    path = write_result(d, out)
    _progress(f"wrote {path}")
    return 0


def _bag_command(args, load, run, show, suffix: str) -> int:
    """Config + bag -> ``run`` -> printed by ``show`` and written to result.yaml."""
    from .report import write_result
    try:
        out = run(load(args.config), os.path.abspath(args.bag))
    except (ConfigError, ValueError, LinAlgError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    show(out)
    path = write_result(out, args.out or os.path.join("results", out["robot"] + suffix))
    _progress(f"wrote {path}")
    return 0


def cmd_identify_backlash(args) -> int:
    from .joint_play import identify_backlash, load_backlash_config

    def show(out):
        print("joint            degrees  rho      R2 train  R2 validation  gap [mrad]")
        for name, r in out["joints"].items():
            if "skipped" in r:
                print(f"{name:16s} skipped: {r['skipped']}")
                continue
            print(f"{name:16s} {r['degrees'][0]},{r['degrees'][1]}      {r['rho']:<8.3g} "
                  f"{r['train_r2']:<9.4f} {r['validation_r2']:<14.4f} "
                  f"{1e3 * r['gap_rad']:.2f}")
    return _bag_command(args, load_backlash_config, identify_backlash, show, "_backlash")


def cmd_identify_suspension(args) -> int:
    from .suspension_bag import identify_from_bag, load_suspension_config

    def show(out):
        print(out["report"])
        print("hold-out wrench RMSE: " + ", ".join(
            f"{k} {v:.3g}" for k, v in out["validation_rmse"].items()))
    return _bag_command(args, load_suspension_config, identify_from_bag, show, "_suspension")


def cmd_calibrate(args) -> int:
    from .model import ModelError
    from .calibration.config import load_calibration_config
    from .calibration.data import CalibrationDataError
    from .calibration.pipeline import export, run_calibration
    from .calibration.solve import CalibrationError
    from .calibration.urdf_export import ExportError
    try:
        cfg = load_calibration_config(args.config, args.data, args.validate, args.bag,
                                      args.urdf)
        rep = run_calibration(cfg, progress=_progress)
        out = args.out or os.path.join("results", cfg["robot"]["name"] + "_calibration")
        paths = export(rep, cfg, out)
    except (ConfigError, CalibrationDataError, CalibrationError, ModelError,
            ExportError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    s = rep.summary
    print(f"{s['robot']}: {s['level']} level, {len(s['parameters'])} identified parameters, "
          f"{s['postures_train']} training postures"
          + (f" ({len(s['rejected_postures'])} rejected)" if s["rejected_postures"] else ""))
    print(f"training RMSE: nominal {s['nominal_rmse_train_mm']:.3f} mm -> calibrated "
          f"{s['rmse_train_mm']:.3f} mm (max {s['max_train_mm']:.3f} mm)")
    if "rmse_validation_mm" in s:
        print(f"validation RMSE: nominal {s['nominal_rmse_validation_mm']:.3f} mm -> "
              f"calibrated {s['rmse_validation_mm']:.3f} mm (max {s['max_validation_mm']:.3f} mm, "
              f"{s['postures_validation']} postures)")
        if "rmse_validation_point1_mm" in s:
            print(f"validation RMSE of point 1: {s['rmse_validation_point1_mm']:.3f} mm")
        ins = s.get("inside_training_ranges")
        if ins:
            print(f"validation postures inside the training ranges ({ins['postures']}): "
                  f"nominal {ins['nominal_rmse_mm']:.3f} mm -> calibrated {ins['rmse_mm']:.3f} mm")
    if "leave_one_out" in s:
        lo = s["leave_one_out"]
        print(f"leave-one-out RMSE: nominal {lo['nominal_rmse_mm']:.3f} mm -> calibrated "
              f"{lo['rmse_mm']:.3f} mm (max {lo['max_mm']:.3f} mm)")
    if s["unidentifiable"]:
        print("without effect on the measurements: " + ", ".join(s["unidentifiable"]))
    _progress(f"wrote {paths['result']} and {paths['urdf']}")
    return 0


def cmd_plan_postures(args) -> int:
    from .model import ModelError
    from .calibration.config import load_calibration_config
    from .calibration.postures import plan_from_config
    from .calibration.solve import CalibrationError
    try:
        cfg = load_calibration_config(args.config)
        plan = plan_from_config(cfg, args.out, progress=_progress)
    except (ConfigError, CalibrationError, ModelError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"{len(plan.selected)} postures selected from {plan.n_candidates} feasible "
          f"candidates; criterion O1 {plan.criterion[len(plan.selected) - 1]:.4g}")
    _progress(f"wrote {args.out}")
    return 0


def cmd_plan_trajectory(args) -> int:
    from .excitation.command import plan_from_config
    from .excitation.config import load_trajectory_config
    from .excitation.planner import PlanningError
    from .calibration.solve import CalibrationError
    from .experiment_files import ExperimentError
    from .model import ModelError
    try:
        cfg = load_trajectory_config(args.config)
        res = plan_from_config(cfg, args.out, progress=_progress)
    except (ConfigError, PlanningError, CalibrationError, ExperimentError, ModelError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    c = res.checks
    print(f"{cfg['trajectory']['parameterisation']} trajectory, {res.t[-1]:.1f} s at "
          f"{cfg['trajectory']['rate_hz']:g} Hz: condition number {res.condition_number:.4g} "
          f"({res.base_size} base parameters), {res.iterations} IPOPT iterations, "
          f"{res.starts} starts, {res.seconds:.1f} s")
    print("peak use of the limits: " + ", ".join(
        f"{k} {100 * v:.0f} %" for k, v in c.items() if k not in ("collisions", "ok")))
    _progress(f"wrote {args.out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "launch":          # name:=value arguments, not argparse's
        from .launch_runner import main as launch_main
        return launch_main(argv[1:])
    if argv and argv[0] == "demo":
        from .ros.demo import main as demo_main
        return demo_main(argv[1:])
    parser = argparse.ArgumentParser(prog="figaroh-ros",
                                     description="Robot identification and calibration")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("identify", help="dynamic identification from a recording")
    p.add_argument("config", help="identification YAML (see config/)")
    p.add_argument("--data", help="folder holding the recording (overrides data.path)")
    p.add_argument("--bag", help="rosbag2 folder recorded by the executor (data.format bag)")
    p.add_argument("--out", help="output folder (default results/<robot>)")
    p.add_argument("--urdf", help="start from this model instead of robot.urdf (e.g. a "
                   "geometrically calibrated URDF: the identified inertias are written into "
                   "it)")
    p.add_argument("--reference", help="published base-parameter CSV to compare with "
                   "(expression, OLS value, OLS %%std, WLS value, WLS %%std)")
    p.set_defaults(func=cmd_identify)
    p = sub.add_parser("calibrate", help="geometric calibration from static postures")
    p.add_argument("config", help="calibration YAML (see config/)")
    p.add_argument("--data", help="training posture CSV (overrides data.path)")
    p.add_argument("--validate", help="validation posture CSV (overrides data.validation)")
    p.add_argument("--bag", action="append", help="rosbag2 folder recorded by the executor "
                   "(repeatable; replaces data.path)")
    p.add_argument("--out", help="output folder (default results/<robot>_calibration)")
    p.add_argument("--urdf", help="start from this model instead of robot.urdf (e.g. one "
                   "with identified inertias: only its joint origins are rewritten)")
    p.set_defaults(func=cmd_calibrate)
    p = sub.add_parser("identify-gains", help="drive / torque-sensor gains by TLS with a "
                       "known payload (two experiments)")
    p.add_argument("config", help="identification YAML with a tls section")
    p.add_argument("--out", help="output folder (default results/<robot>_gains)")
    p.set_defaults(func=cmd_identify_gains)
    for name, what, func in (
            ("backlash", "backlash / encoder discrepancy model per joint from a bag with "
             "motor and link encoders", cmd_identify_backlash),
            ("suspension", "base suspension from a bag with the force-plate wrench and "
             "the base pose", cmd_identify_suspension)):
        p = sub.add_parser(f"identify-{name}", help=what)
        p.add_argument("config", help=f"{name} YAML (robot, {name} sections)")
        p.add_argument("--bag", required=True, help="rosbag2 folder")
        p.add_argument("--out", help=f"output folder (default results/<robot>_{name})")
        p.set_defaults(func=func)
    p = sub.add_parser("plan-postures", help="optimal calibration postures (D-optimal)")
    p.add_argument("config", help="calibration YAML (see config/)")
    p.add_argument("--out", required=True, help="CSV of postures for the executor")
    p.set_defaults(func=cmd_plan_postures)
    p = sub.add_parser("plan-trajectory", help="optimal exciting trajectory (IPOPT)")
    p.add_argument("config", help="trajectory YAML (see config/*_trajectory.yaml)")
    p.add_argument("--out", required=True, help="trajectory CSV for the executor")
    p.set_defaults(func=cmd_plan_trajectory)
    sub.add_parser("launch", help="run a launch/*.launch.yaml file: FILE [name:=value ...]")
    sub.add_parser("demo", help="simulated UR10: plan, execute, record, calibrate, publish")
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())

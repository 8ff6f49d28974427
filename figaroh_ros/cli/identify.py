"""``figaroh-ros identify`` and ``identify-gains``: dynamic identification from a recording."""
from __future__ import annotations

import os
import sys

from numpy.linalg import LinAlgError

from figaroh_ros.cli.output import say
from figaroh_ros.config.gains import load_gains_config
from figaroh_ros.config.identification import load_config
from figaroh_ros.errors import ConfigError, ModelError
from figaroh_ros.identification.parameters import parameter_layout
from figaroh_ros.identification.physical.fit import physical_summary
from figaroh_ros.identification.physical.urdf_inertia import write_identified_urdf as write
from figaroh_ros.identification.pipeline import drive_options, identify, robot_from_config
from figaroh_ros.io.reference import compare, markdown_table, read_reference
from figaroh_ros.io.report import (
    format_cross_validation, format_table, plot_torques, prediction_band, write_covariance,
    write_result
)
from figaroh_ros.tasks.gains import gains_dict, identify_gains


def add_parsers(sub) -> None:
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
    p = sub.add_parser("identify-gains", help="drive / torque-sensor gains by TLS with a "
                       "known payload (two experiments)")
    p.add_argument("config", help="identification YAML with a tls section")
    p.add_argument("--out", help="output folder (default results/<robot>_gains)")
    p.set_defaults(func=cmd_identify_gains)


def cmd_identify(args) -> int:
    try:
        cfg = load_config(args.config, args.data, args.bag, args.urdf)
        result = identify(cfg, progress=say)
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
        print(physical_summary(d["physical"], d.get("nominal_validation_rmse")))
    path = write_result(d, out)
    if "physical" in d and d["physical"]["publishable"]:

        try:
            urdf = write_identified_urdf(result, cfg, out)
        except ModelError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        cov = write_covariance(result, out)
        say(f"wrote {urdf} and {cov}")
    elif "physical" in d:
        say("identified URDF not written: " + d["physical"]["not_published_because"])
    if cfg["output"]["plots"]:
        obs = result.observation
        plot_torques(obs.Y, obs.Wb @ result.estimate.phi, obs.row_joint, result.joints,
                     out, f"{result.robot} ({result.method.upper()})",
                     band=prediction_band(obs.Wb, result.estimate.cov))
    if args.reference:
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
    say(f"wrote {path}")
    return 0


def write_identified_urdf(result, cfg, out: str) -> str:
    """``<out>/<robot>_identified.urdf`` with the consistent standard parameters."""
    robot = robot_from_config(cfg)
    layout = parameter_layout(robot, drive_options(cfg))
    path = os.path.join(out, f"{result.robot}_identified.urdf")
    return write(path, robot, layout, result.physical.phi)


def cmd_identify_gains(args) -> int:
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
    say(f"wrote {path}")
    return 0

"""Command line: ``figaroh-ros identify CONFIG [--data PATH] [--out DIR]``."""
from __future__ import annotations

import argparse
import os
import sys

from .config import ConfigError, load_config


def _progress(msg: str):
    print(f"[figaroh-ros] {msg}", file=sys.stderr, flush=True)


def cmd_identify(args) -> int:
    from numpy.linalg import LinAlgError
    from .identify import DataError, identify
    from .report import format_table, plot_torques, write_result
    try:
        cfg = load_config(args.config, args.data)
        result = identify(cfg, progress=_progress)
    except (ConfigError, DataError, LinAlgError) as exc:
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
    path = write_result(d, out)
    if cfg["output"]["plots"]:
        obs = result.observation
        plot_torques(obs.Y, obs.Wb @ result.estimate.phi, obs.row_joint, result.joints,
                     out, f"{result.robot} ({result.method.upper()})")
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="figaroh-ros",
                                     description="Robot identification and calibration")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("identify", help="dynamic identification from a recording")
    p.add_argument("config", help="identification YAML (see config/)")
    p.add_argument("--data", help="folder holding the recording (overrides data.path)")
    p.add_argument("--out", help="output folder (default results/<robot>)")
    p.add_argument("--reference", help="published base-parameter CSV to compare with "
                   "(expression, OLS value, OLS %%std, WLS value, WLS %%std)")
    p.set_defaults(func=cmd_identify)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())

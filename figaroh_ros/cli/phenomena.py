"""``figaroh-ros identify-backlash`` and ``identify-suspension``: joint play and base
suspension from bags."""
from __future__ import annotations

import os
import sys

from numpy.linalg import LinAlgError

from figaroh_ros.cli.output import say
from figaroh_ros.config.backlash import load_backlash_config
from figaroh_ros.config.suspension import load_suspension_config
from figaroh_ros.errors import ConfigError
from figaroh_ros.io.report import write_result
from figaroh_ros.tasks.backlash import identify_backlash
from figaroh_ros.tasks.suspension import identify_from_bag


def add_parsers(sub) -> None:
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


def _bag_command(args, load, run, show, suffix: str) -> int:
    """Config + bag -> ``run`` -> printed by ``show`` and written to result.yaml."""
    try:
        out = run(load(args.config), os.path.abspath(args.bag))
    except (ConfigError, ValueError, LinAlgError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    show(out)
    path = write_result(out, args.out or os.path.join("results", out["robot"] + suffix))
    say(f"wrote {path}")
    return 0


def cmd_identify_backlash(args) -> int:

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

    def show(out):
        print(out["report"])
        print("hold-out wrench RMSE: " + ", ".join(
            f"{k} {v:.3g}" for k, v in out["validation_rmse"].items()))
    return _bag_command(args, load_suspension_config, identify_from_bag, show, "_suspension")

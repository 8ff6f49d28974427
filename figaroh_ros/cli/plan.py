"""``figaroh-ros plan-postures`` and ``plan-trajectory``: what the robot should play."""
from __future__ import annotations

import sys

from figaroh_ros.cli.output import say
from figaroh_ros.config.calibration import load_calibration_config
from figaroh_ros.config.trajectory import load_trajectory_config
from figaroh_ros.errors import ConfigError, DataError, ModelError, SolverError
from figaroh_ros.tasks import plan_postures, plan_trajectory


def add_parsers(sub) -> None:
    p = sub.add_parser("plan-postures", help="optimal calibration postures (D-optimal)")
    p.add_argument("config", help="calibration YAML (see config/)")
    p.add_argument("--out", required=True, help="CSV of postures for the executor")
    p.set_defaults(func=cmd_plan_postures)
    p = sub.add_parser("plan-trajectory", help="optimal exciting trajectory (IPOPT)")
    p.add_argument("config", help="trajectory YAML (see config/*_trajectory.yaml)")
    p.add_argument("--out", required=True, help="trajectory CSV for the executor")
    p.set_defaults(func=cmd_plan_trajectory)


def cmd_plan_postures(args) -> int:


    try:
        cfg = load_calibration_config(args.config)
        plan = plan_postures.plan_from_config(cfg, args.out, progress=say)
    except (ConfigError, SolverError, ModelError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"{len(plan.selected)} postures selected from {plan.n_candidates} feasible "
          f"candidates; criterion O1 {plan.criterion[len(plan.selected) - 1]:.4g}")
    say(f"wrote {args.out}")
    return 0


def cmd_plan_trajectory(args) -> int:




    try:
        cfg = load_trajectory_config(args.config)
        res = plan_trajectory.plan_from_config(cfg, args.out, progress=say)
    except (ConfigError, SolverError, SolverError, DataError, ModelError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    c = res.checks
    print(f"{cfg['trajectory']['parameterisation']} trajectory, {res.t[-1]:.1f} s at "
          f"{cfg['trajectory']['rate_hz']:g} Hz: condition number {res.condition_number:.4g} "
          f"({res.base_size} base parameters), {res.iterations} IPOPT iterations, "
          f"{res.starts} starts, {res.seconds:.1f} s")
    print("peak use of the limits: " + ", ".join(
        f"{k} {100 * v:.0f} %" for k, v in c.items() if k not in ("collisions", "ok")))
    say(f"wrote {args.out}")
    return 0

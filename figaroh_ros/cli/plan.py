"""``figaroh-ros plan-postures`` and ``plan-trajectory``: what the robot should play."""
from __future__ import annotations

from figaroh_ros.cli.output import say
from figaroh_ros.tasks import plan_postures, plan_trajectory


def add_parsers(sub) -> None:
    p = sub.add_parser("plan-postures", help="optimal calibration postures (D-optimal)")
    p.add_argument("config", help="calibration YAML (see config/)")
    p.add_argument("--out", required=True, help="CSV of postures for the executor (or a "
                   "folder: FOLDER/postures.csv); result.yaml is written beside it")
    p.set_defaults(func=cmd_plan_postures)
    p = sub.add_parser("plan-trajectory", help="optimal exciting trajectory (IPOPT)")
    p.add_argument("config", help="trajectory YAML (see config/*_trajectory.yaml)")
    p.add_argument("--out", required=True, help="trajectory CSV for the executor (or a "
                   "folder: FOLDER/trajectory.csv); result.yaml is written beside it")
    p.set_defaults(func=cmd_plan_trajectory)


def cmd_plan_postures(args) -> int:
    s = plan_postures.run(args.config, out=args.out, progress=say).summary
    print(f"{s['postures']} postures selected from {s['candidates']} feasible "
          f"candidates; criterion O1 {s['criterion_o1']:.4g}")
    return 0


def cmd_plan_trajectory(args) -> int:
    s = plan_trajectory.run(args.config, out=args.out, progress=say).summary
    c = s["checks"]
    print(f"{s['parameterisation']} trajectory, {s['duration_s']:.1f} s at "
          f"{s['rate_hz']:g} Hz: condition number {s['condition_number']:.4g} "
          f"({s['base_size']} base parameters), {s['iterations']} IPOPT iterations, "
          f"{s['starts']} starts, {s['seconds']:.1f} s")
    print("peak use of the limits: " + ", ".join(
        f"{k} {100 * v:.0f} %" for k, v in c.items() if k not in ("collisions", "ok")))
    return 0

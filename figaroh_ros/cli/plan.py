"""``figaroh-ros plan-postures`` and ``plan-trajectory``: what the robot should play (each
verb imports its own task only: ``figaroh_ros.tasks`` loads a task module at first use)."""
from __future__ import annotations

from figaroh_ros import tasks
from figaroh_ros.cli.output import say


def cmd_plan_postures(args) -> int:
    s = tasks.plan_postures.run(args.config, out=args.out, progress=say).summary
    print(f"{s['postures']} postures selected from {s['candidates']} feasible "
          f"candidates; criterion O1 {s['criterion_o1']:.4g}")
    return 0


def cmd_plan_trajectory(args) -> int:
    s = tasks.plan_trajectory.run(args.config, out=args.out, progress=say).summary
    c = s["checks"]
    print(f"{s['parameterisation']} trajectory, {s['duration_s']:.1f} s at "
          f"{s['rate_hz']:g} Hz: condition number {s['condition_number']:.4g} "
          f"({s['base_size']} base parameters), {s['iterations']} IPOPT iterations, "
          f"{s['starts']} starts, {s['seconds']:.1f} s")
    print("peak use of the limits: " + ", ".join(
        f"{k} {100 * v:.0f} %" for k, v in c.items() if k not in ("collisions", "ok")))
    return 0

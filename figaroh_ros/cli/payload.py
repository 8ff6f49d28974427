"""``figaroh-ros identify-payload CONFIG [--data CSV | --bag BAG]``: payload mass, centre of
mass and inertia (``tasks.payload``); ``figaroh-ros plan-payload CONFIG --hold Q... --out
FILE.csv``: the excitation to record for it, as a trajectory file the executor plays."""
from __future__ import annotations

from figaroh_ros.cli.output import say
from figaroh_ros.tasks import payload


def print_payload(summary: dict) -> None:
    com = ", ".join(f"{1e3 * c:.1f} +- {1e3 * s:.1f}"
                    for c, s in zip(summary["com"], summary["com_std"]))
    print(f"mass {summary['mass']:.4g} +- {summary['mass_std']:.2g} kg; centre of mass "
          f"[{com}] mm in {summary['tool_frame']}; condition number "
          f"{summary['condition_number']:.3g}")


def cmd_identify_payload(args) -> int:
    outcome = payload.run(args.config, data=args.data, bag=args.bag,
                          out=args.out or payload.default_out(args.config), progress=say)
    print_payload(outcome.summary)
    for name, path in outcome.paths.items():
        print(f"{name}: {path}")
    return 0


def cmd_plan_payload(args) -> int:
    s = payload.plan(args.config, hold=args.hold, out=args.out, duration=args.duration,
                     joints=args.joints, velocity_scale=args.velocity_scale,
                     acceleration_limit=args.acceleration_limit, seed=args.seed,
                     progress=say).summary
    print(f"{s['measurements']} payload excitation of {', '.join(s['moving_joints'])}: "
          f"{s['duration_s']:.1f} s at {s['rate_hz']:g} Hz, condition number "
          f"{s['condition_number']:.3g}; peak speed {100 * s['peak_velocity_of_limit']:.0f} "
          f"% of the velocity limit, peak acceleration {s['peak_acceleration_rad_s2']:.3g} "
          "rad/s^2")
    print(f"trajectory: {s['trajectory']}")
    return 0

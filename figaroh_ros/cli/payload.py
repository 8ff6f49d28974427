"""``figaroh-ros identify-payload CONFIG [--data CSV | --bag BAG]``: payload mass, centre of
mass and inertia (``tasks.payload``)."""
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

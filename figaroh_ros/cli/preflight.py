"""``figaroh-ros preflight``: will planned postures (or an exciting trajectory) identify
the model, before moving?"""
from __future__ import annotations

from figaroh_ros.cli.output import say
from figaroh_ros.tasks import preflight


def cmd_preflight(args) -> int:
    """Exit 0 with every check when the postures (trajectory) pass; exit 2 naming the
    failed ones."""
    s = preflight.run(args.config, postures=args.postures, trajectory=args.trajectory,
                      out=args.out, progress=say).summary
    for c in s["preflight"]["checks"]:
        print(f"{'PASSED' if c['passed'] else 'FAILED'}  {c['name']}: {c['detail']}")
    return 0

"""``figaroh-ros identify-backlash`` and ``identify-suspension``: joint play and base
suspension from bags (``tasks.backlash``, ``tasks.suspension``; each verb imports its own
task only)."""
from __future__ import annotations

from figaroh_ros import tasks
from figaroh_ros.cli.output import print_publication, say


def print_backlash(summary: dict) -> None:
    print("joint            degrees  rho      R2 train  R2 validation  gap [mrad]")
    for name, r in summary["joints"].items():
        if "skipped" in r:
            print(f"{name:16s} skipped: {r['skipped']}")
            continue
        print(f"{name:16s} {r['degrees'][0]},{r['degrees'][1]}      {r['rho']:<8.3g} "
              f"{r['train_r2']:<9.4f} {r['validation_r2']:<14.4f} {1e3 * r['gap_rad']:.2f}")


def print_suspension(summary: dict) -> None:
    print(summary["report"])
    print("hold-out wrench RMSE: " + ", ".join(
        f"{k} {v:.3g}" for k, v in summary["validation_rmse"].items()))


def cmd_identify_backlash(args) -> int:
    outcome = tasks.backlash.run(args.config, bag=args.bag,
                                 out=args.out or tasks.backlash.default_out(args.config),
                                 accept_poor_fit=args.accept_poor_fit, progress=say)
    print_backlash(outcome.summary)
    print_publication(outcome.summary)
    return 0


def cmd_identify_suspension(args) -> int:
    outcome = tasks.suspension.run(args.config, bag=args.bag,
                                   out=args.out or tasks.suspension.default_out(args.config),
                                   accept_poor_fit=args.accept_poor_fit, progress=say)
    print_suspension(outcome.summary)
    print_publication(outcome.summary)
    return 0

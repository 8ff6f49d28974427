"""``figaroh-ros batch identify|calibrate CONFIG BAG_OR_DIR... --out DIR``: a fleet's recordings in
parallel (local processes, or a Dask cluster with ``--scheduler``), one table and a drift
report (``figaroh_ros.tasks.batch``)."""
from __future__ import annotations

from figaroh_ros.cli.output import say
from figaroh_ros.tasks import batch


def add_parsers(sub) -> None:
    p = sub.add_parser("batch", help="many recordings (robots x days) in parallel: one "
                       "table and a drift report")
    p.add_argument("kind", choices=["identify", "calibrate"], help="what each recording is "
                   "used for: dynamic identification or geometric calibration")
    p.add_argument("config", help="identification YAML (its data section: a bag) or "
                   "calibration YAML (its bag section)")
    p.add_argument("inputs", nargs="+", help="rosbag2 bags or folders of them (fleet "
                   "layout ROBOT/BAG: the robot is the folder holding the bag)")
    p.add_argument("--out", required=True, help="folder for batch.csv, drift.yaml and "
                   "the drift plots")
    p.add_argument("--scheduler", help="address of a dask.distributed scheduler (e.g. "
                   "tcp://host:8786); default: a local process pool")
    p.add_argument("--workers", type=int, help="local processes (default: one per core)")
    p.set_defaults(func=cmd_batch)


def cmd_batch(args) -> int:
    s = batch.run(args.config, args.inputs, out=args.out, scheduler=args.scheduler,
                  workers=args.workers, progress=say, kind=args.kind).summary
    print(f"{s['identified']} of {s['recordings']} recordings used ({args.kind}) "
          f"({len(s['robots'])} robots); {s['failed']} failed")
    print("moved beyond their uncertainty: " + (", ".join(s["moved"]) or "none"))
    return 0

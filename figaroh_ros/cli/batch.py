"""``figaroh-ros batch identify|calibrate CONFIG BAG_OR_DIR... --out DIR``: a fleet's recordings in
parallel (local processes, or a Dask cluster with ``--scheduler``), one table and a drift
report (``figaroh_ros.tasks.batch``)."""
from __future__ import annotations

from figaroh_ros.cli.output import say
from figaroh_ros.tasks import batch


def cmd_batch(args) -> int:
    s = batch.run(args.config, args.inputs, out=args.out, scheduler=args.scheduler,
                  workers=args.workers, progress=say, kind=args.kind).summary
    print(f"{s['identified']} of {s['recordings']} recordings used ({args.kind}) "
          f"({len(s['robots'])} robots); {s['failed']} failed")
    print("moved beyond their uncertainty: " + (", ".join(s["moved"]) or "none"))
    return 0

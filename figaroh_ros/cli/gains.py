"""``figaroh-ros identify-gains``: drive and sensor gains by total least squares
(``figaroh_ros.tasks.gains`` does the work; this module prints).  Apart from ``identify``,
whose runs then never load the gains task; the config is validated before the task (with
scipy.optimize and the filters) is imported, so that a refused config costs little."""
from __future__ import annotations

import os

from figaroh_ros import tasks
from figaroh_ros.cli.output import say
from figaroh_ros.config.gains import load_gains_config


def cmd_identify_gains(args) -> int:
    cfg = load_gains_config(args.config)       # refused here, before the task is imported
    out = args.out or os.path.join("results", cfg.robot.name + "_gains")
    d = tasks.gains.run(args.config, out=out, progress=say).summary
    print(f"drive and sensor gains (TLS with a payload of known {d['payload_known']}, "
          "refined, ± std; TLS alone in brackets):")
    for j in (d["drive_gains"] or d["sensor_gains"]):
        cells = [f"{key.split('_')[0]} {d[key][j]:.5g} ± {d[key + '_std'][j]:.2g} "
                 f"({d['tls_' + key][j]:.5g})"
                 for key in ("drive_gains", "sensor_gains") if d[key] is not None]
        print(f"  {j}: " + ", ".join(cells))
    return 0

"""``figaroh-ros identify-gains``: drive and sensor gains by total least squares
(``figaroh_ros.tasks.gains`` does the work; this module prints).  Apart from ``identify``,
whose runs then never load the gains task."""
from __future__ import annotations

import os

from figaroh_ros.cli.output import say
from figaroh_ros.config.gains import load_gains_config
from figaroh_ros.tasks import gains


def cmd_identify_gains(args) -> int:
    out = args.out or os.path.join(
        "results", load_gains_config(args.config)["robot"]["name"] + "_gains")
    d = gains.run(args.config, out=out, progress=say).summary
    print(f"drive and sensor gains (TLS with a payload of known {d['payload_known']}, "
          "refined, ± std; TLS alone in brackets):")
    for j in (d["drive_gains"] or d["sensor_gains"]):
        cells = [f"{key.split('_')[0]} {d[key][j]:.5g} ± {d[key + '_std'][j]:.2g} "
                 f"({d['tls_' + key][j]:.5g})"
                 for key in ("drive_gains", "sensor_gains") if d[key] is not None]
        print(f"  {j}: " + ", ".join(cells))
    return 0

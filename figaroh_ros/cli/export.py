"""``figaroh-ros export FORMAT RESULT --out FILE``: a calibration or identification result
as the files the robot's own software takes (see :mod:`figaroh_ros.io.export`)."""
from __future__ import annotations

from figaroh_ros.io.export import export


def cmd_export(args) -> int:
    for path in export(args.format, args.result, args.out, hash=args.hash):
        print(path)
    return 0

"""``figaroh-ros export FORMAT RESULT --out FILE``: a calibration or identification result
as the files the robot's own software takes (see :mod:`figaroh_ros.io.export`)."""
from __future__ import annotations

from figaroh_ros.io.export import FORMATS, export


def add_parsers(sub) -> None:
    p = sub.add_parser("export", help="write a result as deploy files: " + ", ".join(FORMATS))
    p.add_argument("format", choices=FORMATS, help="what to write")
    p.add_argument("result", help="result folder (or its result.yaml)")
    p.add_argument("--out", required=True, help="file to write (companion files beside it)")
    p.add_argument("--hash", default=None,
                   help="ur-kinematics: the robot's calibration hash (from ur_calibration's "
                        "file), else one derived from the values")
    p.set_defaults(func=cmd_export)


def cmd_export(args) -> int:
    for path in export(args.format, args.result, args.out, hash=args.hash):
        print(path)
    return 0

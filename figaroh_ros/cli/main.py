"""``figaroh-ros VERB ...``: every verb in one parser; each module of this package adds
its own verbs.  An error the package raises on purpose (:class:`FigarohError`) ends the
command with its message on stderr and exit code 2, never a traceback."""
from __future__ import annotations

import argparse
import os
import sys

from numpy.linalg import LinAlgError

from figaroh_ros.cli import calibrate, call, config_schema, identify, phenomena, plan
from figaroh_ros.cli.launch_runner import main as launch_main
from figaroh_ros.errors import FigarohError

VERB_MODULES = (identify, calibrate, phenomena, plan, call, config_schema)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="figaroh-ros",
                                     description="Robot identification and calibration")
    sub = parser.add_subparsers(dest="command", required=True)
    for module in VERB_MODULES:
        module.add_parsers(sub)
    sub.add_parser("launch", help="run a launch/*.launch.yaml file: FILE [name:=value ...]")
    sub.add_parser("demo", help="simulated UR10: plan, execute, record, calibrate, publish")
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "launch":          # name:=value arguments, not argparse's
        return launch_main(argv[1:])
    if argv and argv[0] == "demo":
        from figaroh_ros.ros.demo import main as demo_main  # rclpy only for this verb
        return demo_main(argv[1:])
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (FigarohError, LinAlgError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:      # stdout piped into a reader that stopped (e.g. `| head`)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())

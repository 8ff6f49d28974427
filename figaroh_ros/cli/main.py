"""``figaroh-ros VERB ...``: every verb in one parser; each module of this package adds
its own verbs.  An error the package raises on purpose (:class:`FigarohError`) ends the
command with one ``error:`` line on stderr and exit code 2, never a traceback.  Any other
exception is a bug: one ``error: internal error`` line and exit code 3 (the traceback
with ``FIGAROH_ROS_DEBUG=1``).  SIGTERM ends a command like an error, so its staging
folder is removed."""
from __future__ import annotations

import argparse
import os
import signal
import sys

from numpy.linalg import LinAlgError

from figaroh_ros.cli import (
    batch, calibrate, call, config_schema, export, identify, payload, phenomena, plan,
    preflight
)
from figaroh_ros.cli.launch_runner import main as launch_main
from figaroh_ros.cli.output import error_line
from figaroh_ros.errors import FigarohError
from figaroh_ros.threads import limited_threads

VERB_MODULES = (identify, calibrate, phenomena, plan, preflight, call, config_schema, export,
                batch, payload)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="figaroh-ros",
                                     description="Robot identification and calibration")
    sub = parser.add_subparsers(dest="command", required=True)
    for module in VERB_MODULES:
        module.add_parsers(sub)
    sub.add_parser("launch", help="run a launch/*.launch.yaml file: FILE [name:=value ...]")
    sub.add_parser("demo", help="simulated UR10: plan, execute, record, calibrate, publish")
    return parser


INTERNAL_ERROR = 3


def _terminate(signum, frame):
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    from_shell = argv is None
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "launch":          # name:=value arguments, not argparse's
        return launch_main(argv[1:])
    if argv and argv[0] == "demo":
        from figaroh_ros.ros.demo import main as demo_main  # rclpy only for this verb
        return demo_main(argv[1:])
    args = build_parser().parse_args(argv)
    if from_shell and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _terminate)   # run the `finally` of staged outputs
    try:
        with limited_threads():     # 1 BLAS thread unless FIGAROH_THREADS (threads.py)
            return args.func(args)
    except (FigarohError, LinAlgError) as exc:
        print(error_line(exc), file=sys.stderr)
        return 2
    except BrokenPipeError:      # stdout piped into a reader that stopped (e.g. `| head`)
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as exc:     # a bug: say so in one line, not a traceback
        if os.environ.get("FIGAROH_ROS_DEBUG"):
            raise
        print(error_line(f"internal error ({type(exc).__name__}: {exc}); please report it "
                         "with the input (FIGAROH_ROS_DEBUG=1 shows the traceback)"),
              file=sys.stderr)
        return INTERNAL_ERROR


if __name__ == "__main__":
    sys.exit(main())

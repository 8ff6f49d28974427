"""``figaroh-ros VERB ...``: every verb in one parser (:mod:`figaroh_ros.cli.parsers`),
each verb's module, and the task it runs, imported only when that verb runs.  An error
the package raises on purpose (:class:`FigarohError`) ends the command with one
``error:`` line on stderr and exit code 2, never a traceback.  Any other exception is a
bug: one ``error: internal error`` line and exit code 3 (the traceback with
``FIGAROH_ROS_DEBUG=1``).  SIGTERM ends a command like an error, so its staging folder is
removed."""
from __future__ import annotations

import argparse
import os
import signal
import sys

from figaroh_ros.cli import parsers
from figaroh_ros.cli.output import error_line
from figaroh_ros.errors import FigarohError
from figaroh_ros.threads import limited_threads


def build_parser() -> argparse.ArgumentParser:
    """Every verb's arguments (:mod:`figaroh_ros.cli.parsers`): no task is imported."""
    parser = argparse.ArgumentParser(prog="figaroh-ros",
                                     description="Robot identification and calibration")
    sub = parser.add_subparsers(dest="command", required=True)
    for add in parsers.VERBS:
        add(sub)
    return parser


def _refused() -> tuple[type[BaseException], ...]:
    """The errors that end a command with one ``error:`` line: ours, and numpy's
    LinAlgError once numpy is loaded (a verb that never loaded numpy cannot raise it,
    and ``--help`` does not pay numpy's import)."""
    linalg = sys.modules.get("numpy.linalg")
    return (FigarohError,) + ((linalg.LinAlgError,) if linalg is not None else ())


INTERNAL_ERROR = 3


def _terminate(signum, frame):
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    from_shell = argv is None
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "launch":          # name:=value arguments, not argparse's
        return parsers.Handler("figaroh_ros.cli.launch_runner:main")(argv[1:])
    if argv and argv[0] == "demo":
        from figaroh_ros.ros.demo import main as demo_main  # rclpy only for this verb
        return demo_main(argv[1:])
    args = build_parser().parse_args(argv)
    if from_shell and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _terminate)   # run the `finally` of staged outputs
    try:
        run = parsers.resolve(args.func)    # its task loaded: BLAS is there to be limited
        with limited_threads():     # 1 BLAS thread unless FIGAROH_THREADS (threads.py)
            return run(args)
    except _refused() as exc:
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

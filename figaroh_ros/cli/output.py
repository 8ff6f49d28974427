"""What every verb prints besides its results: progress lines on stderr, the one
``error:`` line a refused command ends with, and the publication gate's verdict."""
from __future__ import annotations

import sys

from figaroh_ros.progress import Progress

ERROR_PREFIX = "error: "


def say(msg) -> None:
    """One progress line on stderr (a :class:`Progress` or a plain message)."""
    text = msg.message if isinstance(msg, Progress) else str(msg)
    print(f"[figaroh-ros] {text}", file=sys.stderr, flush=True)


def error_line(exc: BaseException) -> str:
    """``error: <message>`` on one line: the message's own lines joined by ``; `` and any
    ``error:`` prefix it already carries dropped (never ``error: error:``)."""
    text = "; ".join(line.strip() for line in str(exc).splitlines() if line.strip())
    while text.lower().startswith(ERROR_PREFIX):
        text = text[len(ERROR_PREFIX):].lstrip()
    return ERROR_PREFIX + (text or type(exc).__name__)


def print_publication(s: dict) -> None:
    """The warnings and the publication gate's verdict, with each failed check."""
    for w in s.get("warnings", []):
        print(f"WARNING: {w}", file=sys.stderr)
    pub = s.get("publication")
    if pub is None:
        return
    failed = [c for c in pub["checks"] if not c["passed"]]
    print(f"publication: {pub['verdict']} ({len(pub['checks']) - len(failed)} of "
          f"{len(pub['checks'])} checks passed)")
    for c in failed:
        print(f"  failed {c['name']}: {c['detail']}")

"""What every verb prints besides its results: progress lines on stderr, and the one
``error:`` line a refused command ends with."""
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

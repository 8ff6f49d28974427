"""What every verb prints besides its results: progress lines on stderr."""
from __future__ import annotations

import sys

from figaroh_ros.progress import Progress


def say(msg) -> None:
    """One progress line on stderr (a :class:`Progress` or a plain message)."""
    text = msg.message if isinstance(msg, Progress) else str(msg)
    print(f"[figaroh-ros] {text}", file=sys.stderr, flush=True)

"""A progress line at least every ``period`` seconds while a task runs.

Some steps of a long identification are one library call each (a QR factorisation, the
essential-parameter search on a large system) and say nothing for many seconds: a person
watching the command line, or an action client, cannot tell work from a hang.  While a
task runs inside :func:`heartbeat`, a daemon thread repeats the last progress message
with the time since it whenever ``period`` seconds pass without one.
"""
from __future__ import annotations

import contextlib
import threading
import time

from figaroh_ros.progress import Progress


@contextlib.contextmanager
def heartbeat(progress, period: float = 1.0):
    """``progress`` wrapped (None stays None): its callers' messages go through, and a
    repeat of the last one whenever ``period`` s pass without any."""
    if progress is None:
        yield None
        return
    lock, stop = threading.Lock(), threading.Event()
    last = {"msg": None, "at": time.monotonic(), "said": time.monotonic()}

    def forward(msg):
        with lock:
            last.update(msg=msg, at=time.monotonic(), said=time.monotonic())
            progress(msg)

    def beat():
        while not stop.wait(period / 4):
            with lock:
                now, m = time.monotonic(), last["msg"]
                if m is None or now - last["said"] < period:
                    continue
                last["said"] = now
                progress(Progress(m.stage, m.fraction, f"working ({now - last['at']:.0f} s "
                                                       f"since: {m.message})"))
    thread = threading.Thread(target=beat, name="progress-heartbeat", daemon=True)
    thread.start()
    try:
        yield forward
    finally:
        stop.set()
        thread.join()

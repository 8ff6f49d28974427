"""How many threads the numerical libraries (OpenBLAS, OpenMP) may use in a stage.

The matrices of one identification or planning step are small (hundreds of rows by tens
of columns) and the robot's computer is shared: with one BLAS thread per core, OpenBLAS
threads that wait for a busy core spin, and one SVD of a 360 x 40 regressor took 0.97 s
instead of 0.014 s on a loaded 2-core machine.  A threaded reduction also sums in an order
that depends on the thread count, and an optimiser amplifies those last bits into a
different answer.  Every stage therefore runs with ``stage_threads()`` BLAS threads: 1
unless ``FIGAROH_THREADS`` says otherwise (e.g. one big least-squares fit on an idle
machine).  The limits are set through ``threadpoolctl`` on the libraries already loaded
and restored on exit.
"""
from __future__ import annotations

import contextlib
import os

from threadpoolctl import threadpool_info, threadpool_limits

from figaroh_ros.errors import ConfigError

ENVIRONMENT = "FIGAROH_THREADS"


def stage_threads() -> int:
    """Threads a stage may use: ``FIGAROH_THREADS`` (a positive integer) or 1."""
    text = os.environ.get(ENVIRONMENT, "1").strip() or "1"
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise ConfigError(f"environment variable {ENVIRONMENT}={text!r}: expected a "
                          "positive integer (threads of the numerical libraries)")
    return n


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity; the machine's count elsewhere
    than Linux)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:      # not on Linux
        return os.cpu_count() or 1


@contextlib.contextmanager
def limited_threads(n: int | None = None):
    """Run the enclosed code with at most ``n`` (default :func:`stage_threads`) BLAS and
    OpenMP threads; the previous limits are restored afterwards."""
    with threadpool_limits(limits=stage_threads() if n is None else int(n)):
        yield


def thread_settings() -> str:
    """One line: each loaded thread pool, its library and its current thread count."""
    pools = threadpool_info()
    if not pools:
        return "no BLAS / OpenMP thread pool loaded"
    return "; ".join(f"{p['internal_api']} {os.path.basename(p['filepath'])}: "
                     f"{p['num_threads']} thread(s)" for p in pools)

"""Per-sample work shared out to forked worker processes writing into one shared array.

pinocchio's Python calls keep the GIL: two threads computing joint torque regressors took
as long as one (measured on a 7-joint arm).  The samples are therefore split into
contiguous ranges and handed to processes started by ``os.fork``: each worker sees the
model and the inputs without copying or pickling them, and writes its rows of an output
allocated in an anonymous shared mapping (:func:`shared_zeros`).  Every sample is computed
alone, so the result is bit-identical whatever the number of workers (unlike a threaded
BLAS reduction, the reason why ``figaroh_ros.threads`` defaults to one thread).

A process is forked only when it is safe and useful: on a system with ``os.fork``, from a
process running no other Python thread than a progress heartbeat (a thread holding a
lock at the fork would leave it locked in the child), outside a pool's worker (which already has its share of the
cores), with at least :data:`MIN_SAMPLES` samples per worker; a caller may ask for a
number of workers itself.  A worker runs only the given function (numpy and pinocchio
calls) and leaves by ``os._exit``.  A worker that fails leaves
its range to the parent, which computes it again and so raises the error itself.
"""
from __future__ import annotations

import mmap
import multiprocessing
import os
import threading
import warnings
from collections.abc import Callable

import numpy as np

from figaroh_ros.threads import ENVIRONMENT, stage_threads

# samples per worker below which a fork costs more than it saves (a fork, exit and wait of
# a 350 MB process: 3 to 5 ms; 5000 regressors of a 7-joint arm: about 20 ms)
MIN_SAMPLES = 5000
# threads that only wait and print progress (figaroh_ros.tasks.heartbeat): a worker never
# prints, so a lock they hold at the fork is never needed in it
QUIET_THREADS = ("progress-heartbeat",)


def available_workers() -> int:
    """Processes a per-sample computation may use: the cores this process may run on, or
    ``FIGAROH_THREADS`` when it is set."""
    if os.environ.get(ENVIRONMENT, "").strip():
        return stage_threads()
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:      # not on Linux
        return os.cpu_count() or 1


def worker_count(n_samples: int, workers: int | None = None) -> int:
    """Workers for ``n_samples``: ``workers`` if given (the caller vouches that forking is
    safe), else :func:`available_workers` when forking is safe and useful here; at most
    one per :data:`MIN_SAMPLES` samples, 1 without ``os.fork``."""
    if not hasattr(os, "fork"):
        return 1
    if workers is None:
        others = [t for t in threading.enumerate() if t is not threading.current_thread()
                  and t.name not in QUIET_THREADS]
        if others or multiprocessing.current_process().daemon:
            return 1
        workers = available_workers()
    return max(1, min(int(workers), n_samples // MIN_SAMPLES))


def shared_zeros(shape: tuple[int, ...], shared: bool) -> np.ndarray:
    """Float64 zeros in column-major order; with ``shared``, in an anonymous shared mapping
    that forked workers write into."""
    if not shared:
        return np.zeros(shape, order="F")
    count = int(np.prod(shape))
    buffer = mmap.mmap(-1, max(count, 1) * 8)
    return np.ndarray(shape, dtype=float, buffer=buffer, order="F")


def _child(fill: Callable[[int, int], None], i0: int, i1: int) -> None:
    code = 1
    try:
        fill(i0, i1)
        code = 0
    finally:
        os._exit(code)  # no atexit handlers, no flush of the parent's buffers


def split_samples(n_samples: int, workers: int, fill: Callable[[int, int], None],
                  parent_too: Callable[[], None] | None = None) -> None:
    """Call ``fill(i0, i1)`` on contiguous ranges covering ``range(n_samples)``: the first
    range in this process, the others in ``workers - 1`` forked ones; ``parent_too`` runs
    here meanwhile.  Returns when every range is filled."""
    bounds = np.linspace(0, n_samples, max(workers, 1) + 1).astype(int)
    children = []
    try:
        for i0, i1 in zip(bounds[1:-1], bounds[2:]):
            with warnings.catch_warnings():   # Python >= 3.12 warns of threads at a fork
                warnings.simplefilter("ignore", DeprecationWarning)
                pid = os.fork()
            if pid == 0:
                _child(fill, int(i0), int(i1))
            children.append((pid, int(i0), int(i1)))
        fill(int(bounds[0]), int(bounds[1]))
        if parent_too is not None:
            parent_too()
    finally:
        failed = [(i0, i1) for pid, i0, i1 in children
                  if os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) != 0]
    for i0, i1 in failed:
        fill(i0, i1)

"""Per-sample work shared out to forked worker processes writing into one shared array.

pinocchio's Python calls keep the GIL: two threads computing joint torque regressors took
as long as one (measured on a 7-joint arm).  The samples are therefore split into
contiguous ranges and handed to processes started by ``os.fork``: each worker sees the
model and the inputs without copying or pickling them, and writes its rows of an output
allocated in an anonymous shared mapping (:func:`mapped_zeros`; or
:func:`partly_shared_zeros`, private where no worker writes).  Every sample is computed
alone, so the result is bit-identical whatever the number of workers (unlike a threaded
BLAS reduction, the reason why ``figaroh_ros.threads`` defaults to one thread).

A process is forked only when it is safe and useful: on a system with ``os.fork``, from a
process running no other Python thread than a progress heartbeat (a thread holding a
lock at the fork would leave it locked in the child), outside a pool's worker (which
already has its share of the cores), with at least :data:`MIN_SAMPLES` samples per
worker; a caller may ask for a number of workers itself.  A worker runs only the given
function (numpy and pinocchio calls) and leaves by ``os._exit``.  A worker that fails
leaves its range to the parent, which computes it again and so raises the error itself.
"""
from __future__ import annotations

import atexit
import contextlib
import ctypes
import mmap
import multiprocessing
import os
import sys
import threading
import warnings
from collections.abc import Callable

import numpy as np

from figaroh_ros.threads import ENVIRONMENT, stage_threads, usable_cores

# samples per worker below which a fork costs more than it saves (a fork, exit and wait of
# a 350 MB process: 3 to 5 ms; 5000 regressors of a 7-joint arm: about 20 ms)
MIN_SAMPLES = 5000
# threads that only wait and print progress (figaroh_ros.tasks.heartbeat): a worker never
# prints, so a lock they hold at the fork is never needed in it.  A ``fill`` given to
# split_samples must therefore never print, log or call back into progress reporting
QUIET_THREADS = ("progress-heartbeat",)
MAP_FIXED = 0x10    # Linux: place a mapping at the given address, replacing what was there
MADV_POPULATE_READ = 22     # Linux >= 5.14: map a range now, as reading it would
HUGE_PAGE = 2 << 20         # bytes of a transparent huge page (x86-64, arm64 with 4 KiB pages)
DONE = b"\x01"               # what a worker writes to its pipe when its range is filled


def _libc_mmap():
    """libc's ``mmap`` (Python's ``mmap`` module cannot place a mapping), Linux only."""
    if sys.platform != "linux":
        return None
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                          ctypes.c_int, ctypes.c_long]
    return libc


_LIBC = _libc_mmap()


def available_workers() -> int:
    """Processes a per-sample computation may use: the cores this process may run on, or
    ``FIGAROH_THREADS`` when it is set."""
    if os.environ.get(ENVIRONMENT, "").strip():
        return stage_threads()
    return usable_cores()


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


def mapped_zeros(shape: tuple[int, ...], shared: bool) -> np.ndarray:
    """Float64 zeros in column-major order in an anonymous mapping of small pages (numpy
    would ask huge pages for a large array, see ``regressor.BIG``), shared with forked
    workers or private to this process.  A page costs its allocation when first written;
    a private page never written reads as the kernel's zero page, a shared one is
    allocated by its first read as well.  numpy's zeros where there are no such mappings."""
    if not hasattr(mmap, "MAP_ANONYMOUS"):
        return np.zeros(shape, order="F")
    count = int(np.prod(shape))
    flags = (mmap.MAP_SHARED if shared else mmap.MAP_PRIVATE) | mmap.MAP_ANONYMOUS
    buffer = mmap.mmap(-1, max(count, 1) * 8, flags=flags)
    return np.ndarray(shape, dtype=float, buffer=buffer, order="F")


def partly_shared_zeros(shape: tuple[int, ...], shared_runs) -> np.ndarray:
    """Like ``mapped_zeros(shape, shared=True)``, but only the pages holding the element
    runs ``shared_runs`` (``(start, stop)`` in column-major order: what the workers
    write) stay shared; the whole pages between them are mapped again, private (Linux
    ``mmap`` with ``MAP_FIXED`` over them), so that reading the zeros there costs no
    allocation.  A worker must write inside the runs only.  Elsewhere than on Linux the
    whole array is shared."""
    out = mapped_zeros(shape, shared=True)
    if _LIBC is None:
        return out
    base, page, pos = out.ctypes.data, mmap.PAGESIZE, 0
    for start, stop in sorted(shared_runs) + [(out.size, out.size)]:
        lo, hi = -(-pos * 8 // page) * page, start * 8 // page * page
        if hi > lo:
            _private_pages(int(base + lo), int(hi - lo))
        pos = max(pos, stop)
    return out


def huge_zero_pages(array: np.ndarray, written_runs) -> int:
    """Advise huge pages (``MADV_HUGEPAGE``) on the whole 2 MiB pages of ``array``'s
    anonymous mapping that hold none of the element runs ``written_runs`` (``(start,
    stop)``, column-major order): reading such a page maps the kernel's huge zero page,
    one mapping for 512 small ones (Linux, transparent huge pages with ``use_zero_page``;
    :func:`map_for_reading` then maps a 700 000 x 118 regressor's zero blocks in 0.04 s
    less).  Nothing may be written there later: a write would allocate and clear a whole
    huge page (on this VM 5x slower per byte than small pages).  Returns the bytes
    advised; nothing where the system cannot."""
    if not isinstance(array.base, mmap.mmap) or not hasattr(mmap, "MADV_HUGEPAGE"):
        return 0
    base, pos, advised = array.ctypes.data, 0, 0
    for start, stop in sorted(written_runs) + [(array.size, array.size)]:
        lo = -(-(base + pos * 8) // HUGE_PAGE) * HUGE_PAGE
        hi = (base + start * 8) // HUGE_PAGE * HUGE_PAGE
        if hi > lo:
            with contextlib.suppress(OSError, ValueError):
                array.base.madvise(mmap.MADV_HUGEPAGE, lo - base, hi - lo)
                advised += hi - lo
        pos = max(pos, stop)
    return advised


def map_for_reading(array: np.ndarray) -> None:
    """Map every page of ``array``'s anonymous mapping now, as reading them would (the
    kernel's zero page where nothing was written): one system call instead of a page
    fault per page in the first reader.  Nothing if the system cannot."""
    if isinstance(array.base, mmap.mmap):
        with contextlib.suppress(OSError, ValueError):
            array.base.madvise(MADV_POPULATE_READ)


def _private_pages(address: int, length: int) -> None:
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | MAP_FIXED
    got = _LIBC.mmap(ctypes.c_void_p(address), ctypes.c_size_t(length),
                     mmap.PROT_READ | mmap.PROT_WRITE, flags, -1, 0)
    if got != address:
        raise MemoryError(f"mmap of {length} private bytes at {address:#x} failed "
                          f"(errno {ctypes.get_errno()})")


def sample_bounds(n_samples: int, ranges: int, parent_extra: float = 0.0) -> np.ndarray:
    """Bounds of ``ranges`` contiguous ranges of samples taking the same time when the
    first one also has ``parent_extra`` times a sample's work per sample to do: it holds
    ``(1 - (ranges - 1) parent_extra) / ranges`` of them, the others share the rest."""
    head = n_samples * max(0.0, 1.0 - (ranges - 1) * parent_extra) / ranges
    return np.concatenate(([0], np.linspace(head, n_samples, ranges))).astype(int)


def _child(fill: Callable[[int, int], None], i0: int, i1: int, done: int) -> None:
    try:
        fill(i0, i1)
        os.write(done, DONE)
    finally:
        os._exit(0)  # no atexit handlers, no flush of the parent's buffers


def _finished(done: int) -> bool:
    """Whether the worker writing to the pipe ``done`` filled its range: its byte came
    (an exit without it, by an error or a crash, closes the pipe empty)."""
    try:
        return os.read(done, 1) == DONE
    finally:
        os.close(done)


def _reap(pids: list[int], wait: bool = False) -> list[int]:
    """Wait for the workers that have exited (all of them with ``wait``); the others."""
    left = []
    for pid in pids:
        with contextlib.suppress(ChildProcessError):   # reaped by someone else
            if os.waitpid(pid, 0 if wait else os.WNOHANG)[0] == 0:
                left.append(pid)
    return left


def split_samples(n_samples: int, workers: int, fill: Callable[[int, int], None],
                  parent_too: Callable[[], None] | None = None,
                  parent_extra: float = 0.0) -> None:
    """Call ``fill(i0, i1)`` on contiguous ranges covering ``range(n_samples)``: the first
    range in this process, the others in ``workers - 1`` forked ones; ``parent_too`` runs
    here meanwhile, costing about ``parent_extra`` times ``fill`` per sample: the first
    range is shortened to even out.  Returns when every range is filled: a worker says so
    through a pipe, so the release of its memory (20-30 ms for a large process) is not
    waited for; it is reaped later (:data:`_EXITING`)."""
    _EXITING[:] = _reap(_EXITING, wait=True)
    bounds = sample_bounds(n_samples, max(workers, 1), parent_extra)
    children = []
    try:
        for i0, i1 in zip(bounds[1:-1], bounds[2:]):
            children.append(_fork_worker(fill, int(i0), int(i1)))
        fill(int(bounds[0]), int(bounds[1]))
        if parent_too is not None:
            parent_too()
    finally:
        failed = [(i0, i1) for _, done, i0, i1 in children if not _finished(done)]
        _EXITING.extend(_reap([pid for pid, *_ in children]))
    for i0, i1 in failed:
        fill(i0, i1)


def _fork_worker(fill: Callable[[int, int], None], i0: int, i1: int):
    """``(pid, read end of its pipe, i0, i1)`` of a worker forked to fill ``i0:i1``."""
    read, write = os.pipe()
    with warnings.catch_warnings():   # Python >= 3.12 warns of threads at a fork
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:
        os.close(read)
        _child(fill, i0, i1, write)
    os.close(write)
    return pid, read, i0, i1


# workers that said they were done but had not exited yet: reaped at the next split or exit
_EXITING: list[int] = []
atexit.register(lambda: _reap(_EXITING, wait=True))

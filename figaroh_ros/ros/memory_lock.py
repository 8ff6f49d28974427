"""Memory locked in RAM for a process with real-time duties (the simulated robot, the
executor's watchdogs, the recorder).

A kernel may page out the memory of a running process that it judges cold: under memory
pressure, or proactively (DAMON's ``pageout`` scheme runs on the virtual machines these
tests run on: pages unused for 60 s leave the page cache).  A page used once per
experiment (the code that accepts a goal) then has to be read back, from a disk that may
be busy.  ``mlockall`` keeps every page the process has touched resident, as real-time
robot drivers do.  It does not make a page resident before its first use: an executor
idle for 100 s took 86 major page faults in its first experiment, 68 with its memory
locked, the code of a goal read for the first time.  (Under the test suite's load,
simulators have stopped for 0.6-2.8 s at the first posture of an experiment; that page
faults cause it is not shown.)
"""
from __future__ import annotations

import ctypes
import os
import resource

MCL_CURRENT, MCL_FUTURE, MCL_ONFAULT = 1, 2, 4


def lock_memory() -> str:
    """Lock the process's pages, present and future, each as it is first touched
    (``MCL_ONFAULT``: no page is made resident for the lock).  Returns '' when locked,
    else why not.  Only where locking cannot make a later allocation fail: as root
    (``CAP_IPC_LOCK``) or with an unlimited ``RLIMIT_MEMLOCK``; under a finite limit every
    allocation past it would fail with ENOMEM."""
    soft, _ = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    if os.geteuid() != 0 and soft != resource.RLIM_INFINITY:
        return f"RLIMIT_MEMLOCK is {soft} bytes (ulimit -l): memory not locked"
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT) != 0:
        return f"mlockall: {os.strerror(ctypes.get_errno())}: memory not locked"
    return ""


def lock_node_memory(node, wanted: bool) -> None:
    """:func:`lock_memory` for ``node`` when its ``lock_memory`` parameter is ``wanted``; a
    warning in its log where the process may not lock."""
    if wanted and (why := lock_memory()):
        node.get_logger().warning(f"lock_memory: {why}")

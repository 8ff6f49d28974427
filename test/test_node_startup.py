"""What each ROS node loads when it starts: the graph tests start the nodes hundreds of
times, each paying its imports.  A node imports what it uses at start; what a goal needs
(a task, the pre-flight identifiability, the executor's tracking spline) is loaded when
the goal comes (``figaroh_ros.lazy``, scipy's own lazy submodules).  These libraries must not come back at start."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

SOLVERS = ("cvxpy", "cyipopt", "matplotlib", "scipy.signal", "scipy.stats")
TASKS = ("figaroh_ros.tasks.calibrate", "figaroh_ros.tasks.identify",
         "figaroh_ros.tasks.payload", "figaroh_ros.tasks.plan_trajectory",
         "figaroh_ros.tasks.preflight", "figaroh_ros.identification.filters")


def _loaded(module: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", f"import json, sys, {module}; "
                          "print(json.dumps(sorted(sys.modules)))"],
                         capture_output=True, text=True, check=True, timeout=120).stdout
    return set(json.loads(out.splitlines()[-1]))


@pytest.mark.parametrize("node, absent", [
    ("executor", SOLVERS + TASKS + ("scipy.optimize", "scipy.interpolate",
                                    "figaroh_ros.calibration.solve")),
    ("recorder", SOLVERS + TASKS + ("scipy.optimize", "scipy.interpolate", "scipy.special",
                                    "figaroh_ros.calibration.solve")),
    ("calibration_node", SOLVERS + TASKS + ("scipy.optimize", "scipy.interpolate",
                                            "scipy.special", "figaroh_ros.calibration.solve",
                                            "figaroh_ros.tasks.improvement")),
    ("sim_robot", SOLVERS + TASKS),
    # the monitor's causal filter is scipy.signal's Butterworth design (scipy.signal
    # loads scipy.stats, scipy.optimize and scipy.interpolate)
    ("dynamics_monitor", ("cvxpy", "cyipopt", "matplotlib") + TASKS
     + ("figaroh_ros.identification.result",)),
])
def test_a_node_starts_without_what_its_goals_load(node, absent):
    module = f"figaroh_ros.ros.{node}"
    loaded = _loaded(module)
    assert module in loaded
    assert sorted(loaded & set(absent)) == []


def test_the_lazy_task_modules_are_the_modules():
    from figaroh_ros import tasks
    from figaroh_ros.tasks import preflight
    assert tasks.preflight is preflight and "calibrate" in dir(tasks)
    with pytest.raises(AttributeError, match="no_such_task"):
        tasks.no_such_task


def test_memory_is_locked_only_where_no_later_allocation_can_fail(monkeypatch):
    """Under a finite RLIMIT_MEMLOCK (not root) a lock of every future page would make the
    allocations past the limit fail: lock_memory refuses and says why, without calling
    mlockall."""
    import resource

    from figaroh_ros.ros import memory_lock
    monkeypatch.setattr(memory_lock.os, "geteuid", lambda: 1000)
    monkeypatch.setattr(memory_lock.resource, "getrlimit", lambda which: (8 << 20, 8 << 20))
    monkeypatch.setattr(memory_lock.ctypes, "CDLL", lambda *a, **k: pytest.fail("mlockall"))
    assert memory_lock.lock_memory() == ("RLIMIT_MEMLOCK is 8388608 bytes (ulimit -l): "
                                         "memory not locked")
    monkeypatch.setattr(memory_lock.resource, "getrlimit",
                        lambda which: (resource.RLIM_INFINITY,) * 2)
    with pytest.raises(pytest.fail.Exception):
        memory_lock.lock_memory()                  # unlimited: it would lock

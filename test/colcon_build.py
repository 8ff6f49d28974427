"""``colcon build`` of this checkout in a fresh workspace: ``python test/colcon_build.py WS``
copies the checkout's tracked and untracked files to ``WS/src/figaroh_ros``, builds it, and
writes ``WS/build.json`` (the exit code and the tails of colcon's output) when done.

``test_colcon.py`` checks the install space.  Under ``make test`` (pytest-xdist) the
controller starts this build in the background at the suite's start (``conftest.py``,
:func:`start`): the build's 35 CPU-s of CMake, rosidl generators and compiler run on the
cores the tests leave idle (``SCHED_IDLE``) instead of holding a worker for 38 s; the
test, scheduled last, waits for it.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV = os.path.dirname(os.path.dirname(sys.executable))
# ccache's folder: tools/build_interfaces.sh (make setup) compiled our generated interfaces
# through it, from the same msg/srv/action files and with the same flags as the build below
CCACHE_DIR = os.path.join(ROOT, "build", "ccache")
RESULT = "build.json"
# set by conftest.py for the workers: the workspace of the build started in the background
BACKGROUND_ENV = "FIGAROH_TEST_COLCON_WS"
NICE = 10           # conftest.BATCH_NICE: a batch job beside the graphs' simulators


def build_tools(build_dir) -> tuple[list[str], dict[str, str]]:
    """CMake arguments and environment that make the build cheaper without changing what it
    builds: Ninja (the Makefiles' generator spends ~8 CPU-s starting make and cmake for each
    step) and ccache (35 of the build's ~80 CPU-s are the C/C++ compiler on 83 files). Both
    are the caller's choices, which CMakeLists.txt leaves open and a robot's ``colcon build``
    may make too. Ninja runs the same compile and link commands: its install space is that
    of the Makefiles' byte for byte but for the .pyc timestamps. ccache returns an object only
    for the same compiler, flags, source text and included headers (direct mode hashes each)
    and never caches a failed compile; with the build folder as base_dir, paths inside it are
    compared as relative paths, so a hit works across workspaces (the generated C's
    ``__FILE__`` is then the relative path, as in any ccache build with base_dir). CMake, every
    rosidl generator, the linker and the install still run in full."""
    args, env = [], {}
    if shutil.which("ninja"):
        args.append("-GNinja")
    if shutil.which("ccache"):
        args += ["-DCMAKE_C_COMPILER_LAUNCHER=ccache", "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"]
        env = {"CCACHE_DIR": CCACHE_DIR, "CCACHE_BASEDIR": str(build_dir)}
    return args, env


def copy_checkout(src: str) -> None:
    """The checkout's tracked and untracked (not ignored) files, copied to ``src``."""
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                           cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    for f in filter(lambda f: os.path.isfile(os.path.join(ROOT, f)), files):
        os.makedirs(os.path.join(src, os.path.dirname(f)), exist_ok=True)
        shutil.copy2(os.path.join(ROOT, f), os.path.join(src, f))


def build(ws: str, idle: bool = False) -> dict:
    """Copy the checkout into ``ws/src`` and ``colcon build`` it at nice :data:`NICE` (at
    least), its disk reads and writes in the idle class when ``idle`` (``ionice -c 3``:
    served when no other process waits on the disk): {"returncode", "output"} (colcon's
    last 3000 characters of each stream)."""
    copy_checkout(os.path.join(ws, "src", "figaroh_ros"))
    tool_args, tool_env = build_tools(os.path.join(ws, "build", "figaroh_ros"))
    # the generated C compiles in parallel; MAKEFLAGS keeps colcon from adding a load limit,
    # CMAKE_BUILD_PARALLEL_LEVEL is what `cmake --build` gives Ninja
    jobs = str(os.cpu_count() or 1)
    env = dict(os.environ, AMENT_PREFIX_PATH=VENV, CMAKE_PREFIX_PATH=VENV,
               PATH=os.path.dirname(sys.executable) + ":" + os.environ["PATH"],
               MAKEFLAGS=f"-j{jobs}", CMAKE_BUILD_PARALLEL_LEVEL=jobs, **tool_env)
    # nice(1) rather than a preexec_fn, which is unsafe in a process with threads
    more = max(0, NICE - os.getpriority(os.PRIO_PROCESS, 0))
    t0 = time.monotonic()
    io = ["ionice", "-c", "3"] if idle and shutil.which("ionice") else []
    r = subprocess.run(["nice", "-n", str(more), *io,
                        os.path.join(os.path.dirname(sys.executable), "colcon"), "build",
                        "--cmake-args", f"-DPython3_EXECUTABLE={sys.executable}",
                        "-DBUILD_TESTING=OFF", *tool_args], cwd=ws, env=env,
                       capture_output=True, text=True, timeout=600)
    return {"returncode": r.returncode, "output": r.stdout[-3000:] + r.stderr[-3000:],
            "seconds": round(time.monotonic() - t0, 1)}


def start(ws: str) -> subprocess.Popen:
    """This script building into ``ws`` in a child process at ``SCHED_IDLE``, the leader
    of a process group of its own (the caller reaps it, or kills the group: colcon, CMake,
    the compilers).  Not a session of its own: where the kernel groups processes by
    session for the scheduler (autogroup), the build then competes inside the suite's
    group, where its policy ranks it below every test."""
    os.makedirs(ws, exist_ok=True)
    return subprocess.Popen([sys.executable, os.path.abspath(__file__), ws, "--idle"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            process_group=0)


def result(ws: str, timeout: float = 900.0) -> dict:
    """The build's ``build.json`` in ``ws``, once written (AssertionError after ``timeout``
    s: a build started by :func:`start` that never ended)."""
    path, t0 = os.path.join(ws, RESULT), time.monotonic()
    while not os.path.exists(path):
        assert time.monotonic() - t0 < timeout, f"no {path} after {timeout:g} s"
        time.sleep(0.5)
    with open(path) as f:
        return json.load(f)


def main(ws: str, idle: bool = False) -> None:
    """Build into ``ws`` and write its ``build.json``; ``idle``: under the ``SCHED_IDLE``
    policy (inherited by colcon, CMake and the compilers), run only on a core nothing else
    wants, and read and write the disk in its idle class: in the background of ``make
    test`` it takes the idle share of the cores the suite leaves (its graph tests wait on
    real time).  (At the suite's start, two namespaced graphs beside a build can take over
    10 s to start their nodes; whether the build's disk use is why is not shown.)"""
    if idle:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    try:
        out = build(ws, idle)
    except Exception as exc:                       # reported to the test, which fails
        out = {"returncode": -1, "output": f"{type(exc).__name__}: {exc}"}
    tmp = os.path.join(ws, RESULT + ".part")
    with open(tmp, "w") as f:
        json.dump(out, f)
    os.replace(tmp, os.path.join(ws, RESULT))      # whole, or not there


if __name__ == "__main__":
    main(sys.argv[1], idle="--idle" in sys.argv[2:])

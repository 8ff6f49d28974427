import contextlib
import glob
import itertools
import os
import re
import shutil
import signal
import subprocess
import sys

import numpy as np
import pytest
import yaml
from hypothesis import settings
from threadpoolctl import threadpool_limits

from figaroh_ros.model.robot import example_robot_urdf, load_urdf_model
from figaroh_ros.ros.transport import MAX_DOMAIN, without_shared_memory

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.normpath(os.path.join(ROOT, "..", "shared"))
TX40_DIR = os.path.join(SHARED, "data", "staubli_tx40")
# the shipped configs name real recordings as ${FIGAROH_DATA}/... (config/env_paths.py)
os.environ.setdefault("FIGAROH_DATA", os.path.join(SHARED, "data"))

UR10_JOINTS = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint",
               "wrist_1_joint", "wrist_2_joint", "wrist_3_joint"]
PANDA_JOINTS = [f"panda_joint{i}" for i in range(1, 8)]


# one BLAS thread per test process (and its children): `make test` runs 2 workers on 2
# cores, and spinning OpenBLAS threads waiting for a busy core slow a worker tenfold
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
threadpool_limits(int(os.environ["OPENBLAS_NUM_THREADS"]))

# property tests: random draws while developing (each run explores new inputs); the gate
# (`.ci/run` sets HYPOTHESIS_PROFILE=ci) draws the same examples every run, so that a clean
# clone's verdict depends on the code, not on the draw.  A failure found while developing
# is kept in .hypothesis/ and replayed first.
settings.register_profile("ci", derandomize=True, database=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


def _worker_domains() -> list[int]:
    """The odd ROS domain ids of this pytest-xdist worker (``gw<k>`` of
    ``PYTEST_XDIST_WORKER_COUNT``; all of them without xdist), in random order: two
    workers never share a domain, two test runs on one machine rarely do.  Ids and
    ``id + 1`` up to ``transport.MAX_DOMAIN``: above it a domain's ports can be taken by
    other sockets' ephemeral ports (and a graph in such a domain is never discovered)."""
    k = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
    n = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    ids = np.arange(1, MAX_DOMAIN, 2)
    return np.random.default_rng().permutation(ids[(ids // 2) % n == k]).tolist()


# a worker's graphs take its domains in turn, the least recently used first once all were
# used (four workers have 12 or 13 each: the second graph group uses more)
_DOMAINS = itertools.cycle(_worker_domains())


def _marked_groups() -> tuple[dict, dict]:
    """The ``xdist_group`` markers written in the test files: {module path: group} of
    module-wide ``pytestmark`` lines and {(module path, test name): group} of decorated
    tests (the scheduler sees node ids only, not the items' markers)."""
    modules, tests = {}, {}
    for path in sorted(glob.glob(os.path.join(ROOT, "test", "test_*.py"))):
        rel = os.path.relpath(path, ROOT).replace(os.sep, "/")
        with open(path, encoding="utf-8") as f:
            text = f.read()
        m = re.search(r'^pytestmark = pytest\.mark\.xdist_group\("([^"]+)"\)', text, re.M)
        if m:
            modules[rel] = m.group(1)
        for group, name in re.findall(r'^@pytest\.mark\.xdist_group\("([^"]+)"\)[^\n]*\n'
                                      r'(?:@[^\n]*\n)*def (\w+)', text, re.M):
            tests[(rel, name)] = group
    return modules, tests


# the longest units outside the graph groups (50-55 s each): started first, they do not
# end the suite alone (the monitor's, started last, would end it at 5 min 54 s)
LONG_FIRST = ("test/test_monitor_graph.py", "test/test_pipeline.py",
              "test/test_wrench_pipeline.py")
# last: the colcon build it checks runs in the background from the suite's start
# (pytest_sessionstart), done by then
LAST = ("test/test_colcon.py",)


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_xdist_make_scheduler(config, log):
    """``make test`` (``-n 4 --dist loadgroup``): whole groups go to one worker -- a test
    without an ``xdist_group`` is in its module's group (the module's fixtures, a planned
    trajectory or an identification, are set up once), and every ROS graph test is in
    one of the groups ``ros_graph`` and ``ros_graph_2``, scheduled first: with two
    workers or more, two graphs run at once, each in its worker's ROS domains; within a
    group, one graph at a time.  pytest-xdist's own
    loadgroup renames the node ids, which pytest 9 no longer allows, so the groups are
    read from the test files here."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling  # only under pytest-xdist
    modules, tests = _marked_groups()

    class GroupScheduling(LoadScopeScheduling):
        graphs_first = False

        def _assign_work_unit(self, node) -> None:
            """The graph groups first, then the longest other units (``LONG_FIRST``), then
            the largest groups first, as xdist orders; ``LAST`` at the end."""
            if not self.graphs_first:
                for scope in LAST:
                    if scope in self.workqueue:
                        self.workqueue.move_to_end(scope)
                for scope in reversed(LONG_FIRST):
                    if scope in self.workqueue:
                        self.workqueue.move_to_end(scope, last=False)
                for scope in sorted(self.workqueue, reverse=True):
                    if scope.startswith("ros_graph"):
                        self.workqueue.move_to_end(scope, last=False)
                self.graphs_first = True
            super()._assign_work_unit(node)

        def _split_scope(self, nodeid: str) -> str:
            if "@" in nodeid:                 # pytest-xdist's suffix, where it works
                return nodeid.rsplit("@", 1)[1]
            path, _, rest = nodeid.partition("::")
            name = rest.split("::")[0].split("[")[0]
            return tests.get((path, name)) or modules.get(path) or path

    return GroupScheduling(config, log)


_COLCON = pytest.StashKey()          # (workspace, process) of the background colcon build


def _runs_colcon_test(config) -> bool:
    """Whether this pytest-xdist controller's session will run test_colcon.py's build: a
    run of the whole suite (``make test``), without a mark or keyword selection."""
    if getattr(config, "workerinput", None) is not None \
            or config.getoption("dist", "no") == "no" \
            or config.option.markexpr or config.option.keyword:
        return False
    wanted = {ROOT, os.path.join(ROOT, "test"), os.path.join(ROOT, "test", "test_colcon.py")}
    return any(os.path.abspath(str(a).split("::")[0]) in wanted for a in config.args) and \
        shutil.which("colcon", path=os.path.dirname(sys.executable)) is not None


def pytest_sessionstart(session):
    """``make test``: the controller starts test_colcon.py's build (``colcon_build.py``) in
    the background, on idle cores only (``SCHED_IDLE``), before the workers start; they
    find its workspace in ``colcon_build.BACKGROUND_ENV``, and the test, scheduled last,
    waits for its result.  The build's 35 CPU-s then fill the cores the graph tests leave
    idle instead of a worker's 38 s."""
    if not _runs_colcon_test(session.config):
        return
    import tempfile

    import colcon_build
    ws = tempfile.mkdtemp(prefix="figaroh_colcon_")
    session.config.stash[_COLCON] = (ws, colcon_build.start(ws))
    os.environ[colcon_build.BACKGROUND_ENV] = ws


def pytest_sessionfinish(session):
    """The background build stopped (a run interrupted before the test) and its workspace
    removed."""
    ws, proc = session.config.stash.get(_COLCON, (None, None))
    if proc is None:
        return
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    shutil.rmtree(ws, ignore_errors=True)


def pytest_configure(config):
    config.addinivalue_line("markers", "ros_graph: a test that runs a ROS graph (every test "
                            "of the xdist group ros_graph; `make test ROS_DISTRO=jazzy` runs "
                            "these on the other distribution)")


def pytest_collection_modifyitems(config, items):
    """Mark the tests of the xdist groups ``ros_graph*`` as ``ros_graph`` (``-m ros_graph``)."""
    for item in items:
        group = item.get_closest_marker("xdist_group")
        if group is not None and group.args and str(group.args[0]).startswith("ros_graph"):
            item.add_marker(pytest.mark.ros_graph)


# A worker that runs no more test of the ros_graph* groups (make test) runs its CPU-bound
# tests on the cores the graphs leave: under SCHED_IDLE (the background colcon build's
# policy) at nice BATCH_NICE.  The graphs' simulators keep a robot's real time (a
# simulated TIAGo starved beside them can stop publishing for 1.8 s, with one worker at
# nice 10); four workers fill the two cores the graphs wait on (docs/testing.md).
BATCH_NICE = 10
BATCH_POLICY = os.SCHED_IDLE
START_NICE = os.getpriority(os.PRIO_PROCESS, 0)   # the suite's own, as it was started


def pytest_runtest_setup(item):
    """Under pytest-xdist, a worker starting a test outside the xdist groups ``ros_graph*``
    (they are scheduled first, so it runs none of them after it) puts all its threads
    under :data:`BATCH_POLICY` at :data:`BATCH_NICE` for good; the processes its tests
    start inherit both.  A graph test that is a throughput job (the monitor fed as fast as
    it answers) is in no such group: it runs there too."""
    group = item.get_closest_marker("xdist_group")
    if "PYTEST_XDIST_WORKER" not in os.environ or (
            group is not None and group.args and str(group.args[0]).startswith("ros_graph")):
        return
    if os.sched_getscheduler(0) == BATCH_POLICY:
        return
    for tid in os.listdir("/proc/self/task"):     # Linux: a priority per thread
        with contextlib.suppress(ProcessLookupError):
            os.setpriority(os.PRIO_PROCESS, int(tid), max(BATCH_NICE, START_NICE))
            os.sched_setscheduler(int(tid), BATCH_POLICY, os.sched_param(0))


def said_line(proc, pattern: str) -> str:
    """The first line of ``proc``'s stdout matching the regular expression ``pattern``
    (the DDS middleware may print lines of its own first); AssertionError at its end."""
    said = []
    while True:
        line = proc.stdout.readline()
        if not line:
            raise AssertionError(f"the process ended its output without {pattern!r}: {said}")
        if re.fullmatch(pattern, line.strip()):
            return line.strip()
        said.append(line.strip())


# Fast DDS without shared memory: UDP on the loopback interface (ros/transport.py)
WITHOUT_SHARED_MEMORY = without_shared_memory()


def ros_graph_environment() -> int:
    """Point this process (and the graphs it launches) at a ROS domain of this worker's,
    the least recently used (no other worker's graph runs there), discovery kept on this
    machine; returns the domain id.  Odd
    ids only, so that ``id + 1`` is free for a second graph of the same test.  The graph
    tests are in the xdist groups ``ros_graph`` and ``ros_graph_2`` (``make test``: one
    worker runs each group, one graph after the other; the two groups' workers have
    disjoint domain ids).  Over UDP on the loopback interface, without Fast DDS's shared
    memory, whose publish can stop a whole process for 0.33-1 s (test_dds_transport.py;
    docs/troubleshooting.md); ``FIGAROH_TEST_DDS=shm``: the rmw's LOCALHOST range, shared memory."""
    domain = next(_DOMAINS)
    os.environ["ROS_DOMAIN_ID"] = str(domain)
    if os.environ.get("FIGAROH_TEST_DDS", "udp") == "udp":
        os.environ.update(WITHOUT_SHARED_MEMORY)
    else:
        os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    return domain


def locked_kb(pid: int) -> int:
    """The memory process ``pid`` holds locked in RAM (``VmLck``, kB)."""
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmLck:"))


def may_lock_memory() -> bool:
    """Whether a process started by this one may lock its memory (``ros/memory_lock.py``):
    as root, or with an unlimited ``ulimit -l``."""
    import resource
    return os.geteuid() == 0 or \
        resource.getrlimit(resource.RLIMIT_MEMLOCK)[0] == resource.RLIM_INFINITY


def stop_processes(procs, timeout: float = 20.0) -> None:
    """Terminate the node processes a test started (SIGTERM: they shut down as on Ctrl-C)
    and reap them; one still alive after ``timeout`` s (a starved machine) is killed."""
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def node_script(script: str, *args, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run ``test/<script>`` (a node of its own) with ``args`` in a fresh ROS domain."""
    ros_graph_environment()
    return subprocess.run([sys.executable, os.path.join(ROOT, "test", script), *args],
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="session")
def ur10():
    return load_urdf_model(example_robot_urdf("ur_description/urdf/ur10_robot.urdf"),
                           UR10_JOINTS)


@pytest.fixture(scope="session")
def panda():
    return load_urdf_model(example_robot_urdf("panda_description/urdf/panda.urdf"),
                           PANDA_JOINTS)


@pytest.fixture()
def rng():
    return np.random.default_rng(1234)


def cli_in_process(*args) -> subprocess.CompletedProcess:
    """``figaroh-ros ARGS`` run by the command's own ``main`` in this process: its exit
    code, stdout and stderr, as a finished child process would give them.  The command's
    whole path but the interpreter's start and the imports this process holds already
    (1-2 CPU-s a command); the tests of what a process adds (signals, exit codes of
    ``python -m``, what gets imported) keep their child processes."""
    import contextlib
    import io

    from figaroh_ros.cli.main import main
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main([str(a) for a in args])
        except SystemExit as exc:             # argparse's refusals and --help
            code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
    return subprocess.CompletedProcess(list(args), code, out.getvalue(), err.getvalue())


def cli_identify(config, out, in_process: bool = False):
    """``figaroh-ros identify CONFIG --out OUT`` in a child process (or
    :func:`cli_in_process`): (process, the result.yaml it wrote); fails the test with its
    stderr if it did not succeed."""
    proc = cli_in_process("identify", config, "--out", out) if in_process else \
        subprocess.run([sys.executable, "-m", "figaroh_ros.cli", "identify", str(config),
                        "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return proc, yaml.safe_load((out / "result.yaml").read_text())


def accepted_goal(node, client, goal, timeout: float = 60.0, resend_after: float = 10.0,
                  feedback=None):
    """The handle of ``goal`` sent through the action ``client`` once the server answers
    (None when it rejects the goal).  A request written just after discovery can be lost
    (the server's reader has not matched ours yet: DDS does not replay volatile samples),
    so an unanswered request is sent again every ``resend_after`` s; the first answer
    wins."""
    import time

    import rclpy
    futures, t0 = [], time.monotonic()
    while time.monotonic() - t0 < timeout:
        if not futures or time.monotonic() - t0 > resend_after * len(futures):
            futures.append(client.send_goal_async(goal, feedback_callback=feedback))
        rclpy.spin_once(node, timeout_sec=0.05)
        done = [f.result() for f in futures if f.done()]
        if any(h.accepted for h in done):      # a resent goal refused as a duplicate
            return next(h for h in done if h.accepted)       # does not hide the first
        if done and len(done) == len(futures):
            return None
    raise AssertionError(f"no answer to the goal within {timeout:g} s "
                         f"({len(futures)} requests sent)")


# ur_description's UR (test/data, its xacro as the driver's launch expands it) and the
# robot section of a config that takes the UR10 from it
UR_DESCRIPTION = os.path.join(ROOT, "test", "data", "ur_description")
UR10_XACRO = {"source": "xacro",
              "xacro": os.path.join(UR_DESCRIPTION, "urdf", "ur.urdf.xacro"),
              "xacro_args": {"ur_type": "ur10", "name": "ur"}}


def ur_description_prefix(root) -> str:
    """An ament prefix made at ``root`` where ``$(find ur_description)`` is the fixture."""
    index = root / "share" / "ament_index" / "resource_index" / "packages"
    index.mkdir(parents=True)
    (index / "ur_description").write_text("")
    (root / "share" / "ur_description").symlink_to(UR_DESCRIPTION)
    return str(root)


def config_with_robot(src: str, dst, robot: dict, **sections) -> str:
    """A copy of the config ``src`` written to ``dst`` whose robot section is the UR10 of
    ``robot`` (e.g. :data:`UR10_XACRO`) and whose ``sections`` are updated: its path."""
    with open(src) as f:
        raw = yaml.safe_load(f)
    raw["robot"] = dict(name="ur10", **robot)
    for name, fields in sections.items():
        raw[name] = dict(raw.get(name) or {}, **fields)
    dst.write_text(yaml.safe_dump(raw, sort_keys=False))
    return str(dst)


def sim_at_rate(sim_config, out, joint_states_hz: float):
    """A copy of the simulator config ``sim_config`` written to ``out`` whose joint-rate
    sensors (joint states, currents, wrench) and driver section say ``joint_states_hz``:
    its path."""
    with open(sim_config) as f:
        sim = yaml.safe_load(f)
    sim["rates"]["joint_states_hz"] = sim["driver"]["joint_states"]["rate_hz"] = joint_states_hz
    with open(out, "w") as f:
        yaml.safe_dump(sim, f, sort_keys=False)
    return str(out)


@contextlib.contextmanager
def sim_ur10_graph(work, node_name: str, joint_states_hz: float | None = None, **args):
    """``launch/sim_ur10.launch.yaml`` started in a fresh ROS domain with its bags and
    calibrations under ``work``, its goals reading files from ``work`` (``data_roots``;
    ``args``: more launch arguments), and a client node:
    ``(graph, node)``; everything stopped on exit.  ``joint_states_hz``: the simulator's
    joint-rate sensors at that rate instead of its config's (:func:`sim_at_rate`)."""
    import rclpy

    from figaroh_ros.cli.launch_runner import LaunchedGraph
    if joint_states_hz is not None:
        base = args.get("sim_config", os.path.join(ROOT, "config", "sim_ur10.yaml"))
        args["sim_config"] = sim_at_rate(base, work / f"sim_at_{joint_states_hz:g}hz.yaml",
                                         joint_states_hz)
    ros_graph_environment()
    g = LaunchedGraph(os.path.join(ROOT, "launch", "sim_ur10.launch.yaml"),
                      {"bag_dir": str(work / "bags"), "output_dir": str(work / "cal"),
                       "data_roots": str(work), **args},
                      env=dict(os.environ), cwd=str(work), quiet=True)
    rclpy.init()
    node = rclpy.create_node(node_name)
    try:
        yield g, node
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
        g.stop()


def goal_result(node, handle, timeout: float = 300.0, resend_after: float = 15.0):
    """The result of an accepted goal.  The result request can be lost like a goal request
    (see :func:`accepted_goal`): it is sent again every ``resend_after`` s (each request is
    answered with the same result)."""
    import time

    import rclpy
    futures, t0 = [handle.get_result_async()], time.monotonic()
    while time.monotonic() - t0 < timeout:
        rclpy.spin_once(node, timeout_sec=0.05)
        done = [f for f in futures if f.done()]
        if done:
            return done[0].result().result
        if time.monotonic() - t0 > resend_after * len(futures):
            futures.append(handle.get_result_async())
    raise AssertionError(f"action did not finish within {timeout:g} s")


# ---- the simulated UR10 graph tests' shared helpers (test_publish_gate.py,
# test_restore_restart.py, test_calibration_service.py, ...): a graph as a dict
# {"graph": LaunchedGraph, "node": client node, "work": folder}

@contextlib.contextmanager
def ur10_test_graph(work, node_name: str, **args):
    """:func:`sim_ur10_graph` in ``work`` with the graph tests' defaults (joint states at
    125 Hz, no postures pre-flight; ``args`` override them) as the dict the helpers below
    take."""
    args = {"joint_states_hz": 125, "preflight_config": "", **args}
    with sim_ur10_graph(work, node_name, **args) as (g, node):
        yield {"graph": g, "node": node, "work": work}


def action_result(g, action_type, name: str, goal, timeout: float = 300.0):
    """The result of ``goal`` sent to the action ``name`` of the graph ``g`` (accepted,
    then waited for up to ``timeout`` s)."""
    from rclpy.action import ActionClient
    ac = ActionClient(g["node"], action_type, name)
    assert ac.wait_for_server(timeout_sec=60.0), (name, g["graph"].tails())
    handle = accepted_goal(g["node"], ac, goal)
    assert handle is not None, f"{name} refused the goal"
    return goal_result(g["node"], handle, timeout)


def service_answer(g, srv_type, name: str, request, timeout: float = 30.0):
    """The answer of the service ``name`` of the graph ``g`` to ``request``."""
    import rclpy
    node = g["node"]
    cli = node.create_client(srv_type, name)
    try:
        assert cli.wait_for_service(timeout_sec=60.0), (name, g["graph"].tails())
        fut = cli.call_async(request)
        rclpy.spin_until_future_complete(node, fut, timeout_sec=timeout)
        assert fut.done(), f"{name}: no answer within {timeout:g} s"
        return fut.result()
    finally:
        node.destroy_client(cli)


def sim_description(g) -> str:
    """The simulator's robot_description parameter (robot_state_publisher's role)."""
    from rcl_interfaces.srv import GetParameters
    answer = service_answer(g, GetParameters, "/sim_robot/get_parameters",
                            GetParameters.Request(names=["robot_description"]))
    return answer.values[0].string_value


def planned_experiment(g, config: str, name: str = "exp") -> str:
    """12 postures planned for ``config`` (a calibration config), played and recorded on
    the graph ``g`` into ``bags/<name>``: the bag's path."""
    from figaroh_ros.action import RunExperiment
    from figaroh_ros.config.calibration import load_calibration_config
    from figaroh_ros.errors import SUCCESSFUL
    from figaroh_ros.tasks.plan_postures import plan_from_config
    cfg = load_calibration_config(config).with_postures(max_postures=12, plateau=1e-6,
                                                        candidates=400)
    postures = str(g["work"] / "postures.csv")
    plan_from_config(cfg, postures)
    bag = str(g["work"] / "bags" / name)
    ran = action_result(g, RunExperiment, "/figaroh/run_experiment",
                        RunExperiment.Goal(postures_file=postures, bag_path=bag))
    assert ran.error_code == SUCCESSFUL, ran.message
    return bag

"""A hostile client on the robot's DDS domain, against launch/sim_ur10.launch.yaml: every
path a goal or a request carries is confined to the nodes' folders (io/confine.py), no
answer quotes a file, requests are bounded, a flood starves neither the recorder nor a
running experiment, and every node stays alive.  The graph's folders: bag_dir ``bags``,
output_dir ``cal``, data_roots ``data`` under the test's work folder; ``secret`` beside
them is what the client must never reach.  Also the SROS2 wiring (docs/security.md)."""
import os
import subprocess
import threading
import time

import pytest
import yaml
from conftest import ROOT, goal_result, ros_graph_environment, sim_ur10_graph
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from figaroh_ros.errors import INVALID_GOAL, SUCCESSFUL

rclpy = pytest.importorskip("rclpy")

pytestmark = pytest.mark.xdist_group("ros_graph_2")   # the second worker's graphs
SECRET = "hostile-secret-7f3a9c"          # in every file the client must not read back
INSIDE = "hostile_line_inside_the_roots_51d2"


def _tree(work):
    """The folders and the traps: a secret outside the roots, links out of them, a FIFO,
    a file inside the roots that is no postures table."""
    for d in ("bags", "cal", "data", "secret"):
        (work / d).mkdir()
    (work / "secret" / "token.csv").write_text(f"{SECRET}:x:0:0\n1,2\n")
    (work / "data" / "link_out.csv").symlink_to(work / "secret" / "token.csv")
    (work / "data" / "dir_out").symlink_to(work / "secret")
    (work / "bags" / "escape").symlink_to(work / "secret")
    (work / "bags" / "bag_out").symlink_to(work / "secret")
    (work / "data" / "notes.csv").write_text(f"{INSIDE}:a:b\n1\n")
    (work / "data" / "two.csv").write_text(
        "shoulder_pan_joint,shoulder_lift_joint,elbow_joint,wrist_1_joint,wrist_2_joint,"
        "wrist_3_joint\n0,-1.2,1.2,0,0,0\n0.1,-1.2,1.2,0,0,0\n")
    os.mkfifo(work / "data" / "fifo.csv")


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    from figaroh_ros.action import (Calibrate, IdentifyPayload, PlanTrajectory, Preflight,
                                    RunExperiment)
    from figaroh_ros.srv import RecorderControl
    work = tmp_path_factory.mktemp("hostile")
    _tree(work)
    with sim_ur10_graph(work, "hostile_client", joint_states_hz=125, preflight_config="",
                        data_roots=str(work / "data")) as (g, node):
        from rclpy.action import ActionClient
        clients = {"run": ActionClient(node, RunExperiment, "/figaroh/run_experiment"),
                   "calibrate": ActionClient(node, Calibrate, "/figaroh/calibrate"),
                   "plan": ActionClient(node, PlanTrajectory, "/figaroh/plan_trajectory"),
                   "payload": ActionClient(node, IdentifyPayload, "/figaroh/identify_payload"),
                   "preflight": ActionClient(node, Preflight, "/figaroh/preflight")}
        for name, c in clients.items():
            assert c.wait_for_server(timeout_sec=60.0), (name, g.tails(20))
        recorder = node.create_client(RecorderControl, "/figaroh/recorder/control")
        assert recorder.wait_for_service(timeout_sec=60.0), g.tails(20)
        yield {"graph": g, "node": node, "work": work, "recorder": recorder, **clients}


def _outside(work) -> set[str]:
    """Every path under the work folder outside bags/ and cal/ (what a node may write)."""
    found = set()
    for top, dirs, files in os.walk(work):
        rel = os.path.relpath(top, work)
        if rel.split(os.sep)[0] in ("bags", "cal"):
            continue
        found |= {os.path.join(rel, n) for n in dirs + files}
    return found


def _request(g, command: str, bag_path: str = "", timeout: float = 30.0):
    from figaroh_ros.srv import RecorderControl
    fut = g["recorder"].call_async(RecorderControl.Request(command=command, bag_path=bag_path))
    rclpy.spin_until_future_complete(g["node"], fut, timeout_sec=timeout)
    assert fut.done(), f"no answer to {command}"
    return fut.result()


def _goal(g, which: str, goal, timeout: float = 60.0):
    fut = g[which].send_goal_async(goal)
    rclpy.spin_until_future_complete(g["node"], fut, timeout_sec=30.0)
    handle = fut.result()
    assert handle is not None and handle.accepted, which
    return goal_result(g["node"], handle, timeout)


def _alive(g):
    assert not g["graph"].failed(), g["graph"].tails(30)


def _no_file_text(message: str):
    assert SECRET not in message and INSIDE not in message, message
    with open("/etc/passwd") as f:
        for line in f:
            assert line.strip() not in message, message


def test_a_recorder_start_outside_bag_dir_is_refused_and_creates_nothing(graph):
    work, before = graph["work"], _outside(graph["work"])
    bags_before = sorted(os.listdir(work / "bags"))
    for path in (str(work / "elsewhere" / "bag"), "../escaped_bag", str(work / "bags" / ".." /
                 "up"), str(work / "bags" / "escape" / "bag"), "/tmp/hostile_bag",
                 "x" * 300, "a\x7fb"):
        res = _request(graph, "start", path)
        assert not res.success and res.message.startswith("bag_path: "), res.message
        assert "escapes the folders" in res.message and str(work / "bags") in res.message \
            or "component" in res.message or "control" in res.message, res.message
    assert _outside(work) == before and sorted(os.listdir(work / "bags")) == bags_before
    assert not os.path.exists(work.parent / "escaped_bag") and \
        not os.path.exists("/tmp/hostile_bag")
    _alive(graph)


def test_a_goal_naming_etc_passwd_is_refused_without_its_text(graph):
    from figaroh_ros.action import (Calibrate, IdentifyPayload, PlanTrajectory, Preflight,
                                    RunExperiment)
    work, runs = graph["work"], sorted(os.listdir(graph["work"] / "cal"))
    cfg = os.path.join(ROOT, "config", "ur10_sim_calibration.yaml")     # a readable config
    goals = [("run", RunExperiment.Goal(postures_file="/etc/passwd"), "postures_file"),
             ("run", RunExperiment.Goal(trajectory_file="/etc/passwd"), "trajectory_file"),
             ("calibrate", Calibrate.Goal(config="/etc/passwd", bags=[str(work / "bags")],
                                          kind="geometric"), "config"),
             ("calibrate", Calibrate.Goal(config=cfg, bags=["/etc"], kind="geometric"), "bags"),
             ("calibrate", Calibrate.Goal(config=cfg, bags=[str(work / "bags" / "bag_out")],
                                          kind="geometric"), "bags"),
             ("plan", PlanTrajectory.Goal(config="/etc/passwd"), "config"),
             ("payload", IdentifyPayload.Goal(config="/etc/passwd", bag="/etc"), "config"),
             ("preflight", Preflight.Goal(postures="/etc/passwd"), "postures")]
    for which, goal, field in goals:
        res = _goal(graph, which, goal)
        assert res.error_code == INVALID_GOAL, (which, res.message)
        assert res.message.startswith(f"{field}: ") and "escapes the folders" in \
            res.message, (which, res.message)
        _no_file_text(res.message)
    # a file inside the roots that is no postures table: refused, its text not quoted
    res = _goal(graph, "run", RunExperiment.Goal(postures_file=str(work / "data" / "notes.csv")))
    assert res.error_code == INVALID_GOAL and "notes.csv" in res.message, res.message
    _no_file_text(res.message)
    assert sorted(os.listdir(work / "cal")) == runs      # no run folder: nothing ran
    _alive(graph)


PATHS = st.one_of(
    st.sampled_from(["/etc/passwd", "/etc/shadow", "/dev/zero", "/dev/urandom", "/proc/self/environ",
                     "/sys/kernel/notes", "{w}/secret/token.csv", "{w}/data/link_out.csv",
                     "{w}/data/dir_out/token.csv", "{w}/data/fifo.csv",
                     "{w}/data/../secret/token.csv", "../secret/token.csv", "{w}/data",
                     "{w}/data/notes.csv"]),
    st.builds(lambda n: "{w}/data/" + "n" * n, st.integers(256, 5000)),          # huge
    st.builds(lambda s: "{w}/data/" + s, st.text(st.sampled_from("\ufffd\x01é/.x"),
                                                  min_size=1, max_size=12)))     # not UTF-8


@settings(max_examples=30, deadline=None, suppress_health_check=list(HealthCheck))
@given(path=PATHS, field=st.sampled_from(["postures", "config", "bags", "bag_path",
                                          "plan_config", "start"]))
def test_any_hostile_path_is_refused_quotes_nothing_and_writes_nothing(graph, path, field):
    """Property: whatever path a field carries (absolute, ``..``, links out, devices,
    FIFOs, huge, not UTF-8), the goal or request is refused with a message naming the
    field, quoting no file, nothing is written outside bags/ and cal/, every node lives."""
    from figaroh_ros.action import Calibrate, PlanTrajectory, RunExperiment
    work = graph["work"]
    path = path.replace("{w}", str(work))
    before = _outside(work)
    cfg = os.path.join(ROOT, "config", "ur10_sim_calibration.yaml")
    if field == "start":
        res = _request(graph, "start", path)
        ok, message = res.success, res.message
        if ok:                            # inside bag_dir after all: a bag, stopped
            _request(graph, "stop")
    else:
        which, goal = {
            "postures": ("run", RunExperiment.Goal(postures_file=path)),
            "bag_path": ("run", RunExperiment.Goal(
                postures_file=str(work / "data" / "two.csv"), bag_path=path)),
            "config": ("calibrate", Calibrate.Goal(config=path, bags=[str(work / "bags")],
                                                   kind="geometric")),
            "bags": ("calibrate", Calibrate.Goal(config=cfg, bags=[path], kind="geometric")),
            "plan_config": ("plan", PlanTrajectory.Goal(config=path))}[field]
        res = _goal(graph, which, goal)
        ok, message = res.error_code == SUCCESSFUL, res.message
    assert not ok, message
    _no_file_text(message)
    assert _outside(work) == before, _outside(work) - before
    _alive(graph)


def test_oversized_and_endless_requests_are_refused(graph):
    """Bounded: a Preflight that would listen for an hour, timings that would hold the
    robot for days, too many bags, an oversized name: refused at once, nothing moved."""
    from figaroh_ros.action import Calibrate, Preflight, RunExperiment
    work = graph["work"]
    postures = work / "data" / "two.csv"
    t0 = time.monotonic()
    res = _goal(graph, "preflight", Preflight.Goal(topic_window=3600.0))
    assert res.error_code == INVALID_GOAL and "topic_window" in res.message, res.message
    res = _goal(graph, "preflight", Preflight.Goal(topic_window=float("nan")))
    assert res.error_code == INVALID_GOAL, res.message
    res = _goal(graph, "run", RunExperiment.Goal(postures_file=str(postures),
                                                 override_timing=True, max_velocity=1.0,
                                                 settle_time=1e6, dwell_time=1e6))
    assert res.error_code == INVALID_GOAL and "max_goal_seconds" in res.message, res.message
    bags = [str(work / "bags")] * 101
    res = _goal(graph, "calibrate", Calibrate.Goal(config=os.path.join(
        ROOT, "config", "ur10_sim_calibration.yaml"), bags=bags, kind="geometric"))
    assert res.error_code == INVALID_GOAL and "at most 100" in res.message, res.message
    res = _request(graph, "start", "/" + "y" * 100_000)
    assert not res.success and len(res.message) < 300, res.message[:300]
    assert time.monotonic() - t0 < 30.0
    _alive(graph)


def test_a_flood_starves_neither_the_recorder_nor_a_running_experiment(graph):
    """An experiment of 4 postures recorded into a bag while 3 threads' worth of requests
    (recorder status and refused starts, refused goals of every action) flood the nodes:
    the experiment succeeds (its watchdog never fired), concurrent goals are refused as
    "running already", and the bag holds the joint states at >= 80 % of their rate."""
    from figaroh_ros.action import Preflight, RunExperiment
    from figaroh_ros.io.bags import open_bag
    from figaroh_ros.srv import RecorderControl
    work = graph["work"]
    postures = work / "data" / "four.csv"
    rows = ["0,-1.2,1.2,0,0,0", "0.2,-1.2,1.2,0,0,0", "0.2,-1.0,1.2,0,0,0", "0,-1.0,1.0,0,0,0"]
    postures.write_text("shoulder_pan_joint,shoulder_lift_joint,elbow_joint,wrist_1_joint,"
                        "wrist_2_joint,wrist_3_joint\n" + "\n".join(rows) + "\n")
    bag = str(work / "bags" / "flooded")
    node = graph["node"]
    fut = graph["run"].send_goal_async(RunExperiment.Goal(postures_file=str(postures),
                                                          bag_path=bag))
    rclpy.spin_until_future_complete(node, fut, timeout_sec=30.0)
    handle = fut.result()
    assert handle.accepted
    flood, stop, answers = [], threading.Event(), []

    def send():
        k = 0
        while not stop.is_set():
            k += 1
            command = "status" if k % 2 else "start"
            flood.append((command, graph["recorder"].call_async(RecorderControl.Request(
                command=command, bag_path="/etc/flood"))))
            if k % 10 == 0:
                answers.append(graph["run"].send_goal_async(     # its bag: the one
                    RunExperiment.Goal(postures_file=str(postures), bag_path=bag)))  # written
                answers.append(graph["preflight"].send_goal_async(
                    Preflight.Goal(postures="/etc/passwd")))
            time.sleep(0.005)
    t = threading.Thread(target=send)
    t.start()
    results, asked = [], 0          # the refused goals' results, asked as soon as answered:
    ended = handle.get_result_async()   # a server keeps an ended goal's result 10 s only
    try:
        deadline = time.monotonic() + 240.0
        while not ended.done() and time.monotonic() < deadline:
            rclpy.spin_once(node, timeout_sec=0.02)
            while asked < len(answers) and answers[asked].done():
                if answers[asked].result().accepted:
                    results.append(answers[asked].result().get_result_async())
                asked += 1
    finally:
        stop.set()
        t.join()
    result = ended.result().result if ended.done() else goal_result(node, handle, 60.0)
    assert result.error_code == SUCCESSFUL, result.message
    deadline = time.monotonic() + 30.0
    while time.monotonic() < deadline and not all(f.done() for f in results):
        rclpy.spin_once(node, timeout_sec=0.05)
    # a service's queues are bounded (the last SERVICE_QOS.depth requests and answers, the
    # executor's own among them): what overflows is dropped, the rest answered, and the
    # recorder still answers at once
    answered = [(c, f.result()) for c, f in flood if f.done()]
    assert len(flood) > 200 and len(answered) > 100, (len(flood), len(answered))
    assert not any(r.success for c, r in answered if c == "start")
    assert not os.path.exists("/etc/flood")
    t0 = time.monotonic()
    assert _request(graph, "status", timeout=10.0).success
    assert time.monotonic() - t0 < 5.0
    refused = [f.result().result for f in results if f.done()]
    running = [r for r in refused if "running already" in r.message]
    assert len(refused) > 3 and all(r.error_code == INVALID_GOAL for r in refused), \
        [r.message for r in refused]
    assert running, [r.message for r in refused]
    reader = open_bag([bag], {"/joint_states": "sensor_msgs/msg/JointState"})
    try:
        stamps = [t for c, t, _ in reader.messages(connections=[
            c for c in reader.connections if c.topic == "/joint_states"])]
    finally:
        reader.close()
    span = (stamps[-1] - stamps[0]) * 1e-9
    rate = (len(stamps) - 1) / span
    assert span > 2.0 and rate >= 0.8 * 125, (len(stamps), span, rate)
    _alive(graph)


def _secured_recorder(tmp_path, enclave_files: bool) -> str:
    """stderr of a recorder started as the launch files start it, security enforced, with
    a keystore that has (``enclave_files``: placeholder files in) its enclave or nothing."""
    keystore = tmp_path / "keystore"
    enclave = keystore / "enclaves" / "figaroh_ros" / "recorder"
    enclave.mkdir(parents=True) if enclave_files else keystore.mkdir()
    if enclave_files:
        for f in ("identity_ca.cert.pem", "cert.pem", "key.pem", "permissions_ca.cert.pem",
                  "governance.p7s", "permissions.p7s"):
            (enclave / f).write_text("placeholder\n")
    ros_graph_environment()
    env = dict(os.environ, ROS_SECURITY_ENABLE="true", ROS_SECURITY_STRATEGY="Enforce",
               ROS_SECURITY_KEYSTORE=str(keystore))
    from figaroh_ros.cli.launch_runner import command, parse
    node = next(n for n in parse(os.path.join(ROOT, "launch", "sim_ur10.launch.yaml"), {})
                if n["name"] == "recorder")
    cmd = command(node) + ["-p", f"bag_dir:={tmp_path}"]
    proc = subprocess.run(cmd, env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=60)
    return proc.stderr


def test_each_node_is_launched_in_its_enclave(tmp_path):
    """Every node of every launch file gets ``--enclave /figaroh_ros/<name>`` (a launch
    argument each), and rcl takes it: a recorder with security enforced and no such enclave
    in the keystore refuses to start, naming the enclave's folder."""
    from figaroh_ros.cli.launch_runner import command, parse
    for name in ("sim_ur10", "ur10", "tiago", "sim_tiago", "talos"):
        for node in parse(os.path.join(ROOT, "launch", f"{name}.launch.yaml"), {}):
            cmd = command(node)
            assert cmd[cmd.index("--enclave") + 1] == f"/figaroh_ros/{node['name']}", cmd
    node = next(n for n in parse(os.path.join(ROOT, "launch", "ur10.launch.yaml"),
                                 {"executor_enclave": "/robot1/executor"})
                if n["name"] == "executor")
    assert "/robot1/executor" in command(node)
    said = _secured_recorder(tmp_path, enclave_files=False)
    assert "enclaves/figaroh_ros/recorder' does not exist" in said, said[-2000:]


def test_a_secured_graph_hides_our_interfaces_from_an_unauthenticated_participant(tmp_path):
    """With DDS security (SROS2 keystore, ROS_SECURITY_ENABLE) an unauthenticated
    participant neither sees nor calls our services.  Runs only where the middleware has
    its security plugins: the one here says whether it has."""
    said = _secured_recorder(tmp_path, enclave_files=True)
    if "doesn't have the security libraries" in said:
        pytest.skip("the Fast DDS of these rmw wheels is built without its security "
                    "plugins (the recorder in its enclave: \"This Fast DDS version doesn't "
                    "have the security libraries\"): no secured graph can run here")
    try:
        import sros2  # noqa: F401 - a keystore of real certificates is made with it
    except ImportError:
        pytest.skip("the middleware has security plugins but sros2 (ros2 security) is not "
                    "installed: no keystore can be made here")
    pytest.fail("a secured graph run is not written for a middleware with security: "
                f"{yaml.safe_dump(said[-500:])}")

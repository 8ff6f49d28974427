"""The real-robot launch files as an operator starts them: ``figaroh-ros launch
launch/<robot>.launch.yaml`` (``ros2 launch figaroh_ros <robot>.launch.yaml`` on the robot)
beside the simulator impersonating the robot's driver and robot_state_publisher
(``sim_robot -r __node:=robot_state_publisher -p impersonate:=<robot>``), driven from the
command line: plan-postures, then ``figaroh-ros call`` run-experiment, calibrate, restore
(and, on the UR10, start-calibration: the calibration service).

Checked against the simulator's hidden truth: the identified model predicts the held-out
mocap poses to a fraction of a millimetre, and after ``restore previous`` the model on
``/robot_description`` is the nominal one again (its sha256).  Safe defaults: a goal's
pre-flight measures the joint states at the driver profile's rate and refuses postures that
cannot identify the calibration, with no argument given; ``preflight:=false`` is warned;
``monitor:=true`` starts the dynamics monitor, which publishes on the driver's joint
states."""
import hashlib
import math
import os
import re
import subprocess
import sys
import threading
import time

import pytest

from conftest import ROOT, UR10_JOINTS, ros_graph_environment, stop_processes

CLI = os.path.join(os.path.dirname(sys.executable), "figaroh-ros")
# robot -> its calibration from the bag, the driver profile's joint-state rate (Hz, as the
# pre-flight states it), the robot's launch file's pre-flight config
ROBOTS = {"ur10": ("ur10_sim_calibration.yaml", 500),
          "tiago": ("tiago_sim_calibration.yaml", 50),
          "talos": ("talos_sim_calibration.yaml", 100)}
UR10_URDF = "example-robot-data:ur_description/urdf/ur10_joint_limited_robot.urdf"
POSTURES = 12           # of the planned ones: a short experiment (about 30 s of motion)


def _cli(work, *args, timeout: float = 300.0) -> subprocess.CompletedProcess:
    return subprocess.run([CLI, *args], cwd=str(work), capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ))


def _start(work, log: str, cmd: list) -> subprocess.Popen:
    out = open(work / log, "w")
    return subprocess.Popen(cmd, cwd=str(work), stdout=out, stderr=subprocess.STDOUT,
                            env=dict(os.environ), start_new_session=True)


def _wait_in_log(path, pattern: str, timeout: float) -> str:
    """The first line of the log file ``path`` matching ``pattern``, waiting for it."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        text = path.read_text() if path.exists() else ""
        m = re.search(pattern, text)
        if m:
            return m.group(0)
        time.sleep(0.2)
    raise AssertionError(f"{path.name}: no {pattern!r} after {timeout:g} s:\n{text[-3000:]}")


class Descriptions:
    """The texts received on /robot_description (transient local, as robot_state_publisher
    publishes it), by their sha256."""

    def __init__(self):
        import rclpy
        from rclpy.qos import DurabilityPolicy, QoSProfile
        from std_msgs.msg import String
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node("launch_test_listener", context=self.context)
        self.seen, self.lock = [], threading.Lock()
        self.node.create_subscription(String, "/robot_description", self._heard, QoSProfile(
            depth=10, durability=DurabilityPolicy.TRANSIENT_LOCAL))
        self.executor = rclpy.executors.SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.thread = threading.Thread(target=self.executor.spin, daemon=True)
        self.thread.start()

    def _heard(self, msg):
        with self.lock:
            self.seen.append(hashlib.sha256(msg.data.encode()).hexdigest())

    def latest(self, want: str, timeout: float = 30.0) -> str:
        """The latest model's hash once it is ``want`` (else the latest, after ``timeout``)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self.lock:
                if self.seen and self.seen[-1] == want:
                    return want
            time.sleep(0.1)
        with self.lock:
            return self.seen[-1] if self.seen else ""

    def close(self):
        self.executor.shutdown(timeout_sec=1.0)
        self.thread.join(timeout=5.0)
        self.node.destroy_node()
        self.context.try_shutdown()


def _sequence(robot: str, work) -> None:
    config, rate = ROBOTS[robot]
    cal = os.path.join(ROOT, "config", config)
    ros_graph_environment()
    # plan while the graph starts; a short experiment of the first postures
    plan = _start(work, "plan.log", [CLI, "plan-postures", cal, "--out",
                                     f"my_{robot}/postures.csv"])
    # the driver and robot_state_publisher (the simulator), then the launch file as shipped
    procs = [plan, _start(work, "sim.log", [
        sys.executable, "-m", "figaroh_ros.ros.sim_robot", "--ros-args",
        "-r", "__node:=robot_state_publisher",
        "-p", f"config:={os.path.join(ROOT, 'config', f'sim_{robot}.yaml')}",
        "-p", f"impersonate:={robot}"])]
    descriptions = None
    try:
        _wait_in_log(work / "sim.log", rf"as {robot}'s driver publishes", 60.0)
        # joint_states_timeout: the simulator shares two cores with another graph and the
        # suite's other tests, and has been starved of its joint states for 2.6 s
        procs.append(_start(work, "launch.log", [
            CLI, "launch", os.path.join(ROOT, "launch", f"{robot}.launch.yaml"),
            f"data_roots:={work}", "joint_states_timeout:=10.0"]))
        descriptions = Descriptions()
        assert plan.wait(timeout=300) == 0, (work / "plan.log").read_text()
        rows = (work / f"my_{robot}" / "postures.csv").read_text().splitlines()
        (work / f"my_{robot}" / "short.csv").write_text("\n".join(rows[:POSTURES + 1]) + "\n")
        (work / f"my_{robot}" / "three.csv").write_text("\n".join(rows[:4]) + "\n")
        # 4. postures that cannot identify the calibration: refused before anything moves,
        # with no pre-flight argument given
        few = _cli(work, "call", "run-experiment", "--postures-file",
                   f"my_{robot}/three.csv", "--bag-path", f"bags/{robot}_few",
                   "--timeout", "120")
        assert few.returncode == 2 and "identif" in few.stderr, (few.stdout, few.stderr)
        assert not (work / "bags" / f"{robot}_few").exists()
        # the experiment: its pre-flight measured the joint states at the driver's rate
        ran = _cli(work, "call", "run-experiment", "--postures-file", f"my_{robot}/short.csv",
                   "--bag-path", f"bags/{robot}_cal", "--max-velocity", "3",
                   "--settle-time", "0.15", "--dwell-time", "0.3", "--timeout", "240")
        assert ran.returncode == 0, (ran.stdout, ran.stderr[-3000:])
        assert f"postures done: {POSTURES}" in ran.stdout, ran.stdout
        assert re.search(r"PREFLIGHT .*topic:/joint_states", ran.stderr), ran.stderr[-3000:]
        line = _wait_in_log(work / "launch.log",
                            r"pre-flight topic:/joint_states: [^\n]*", 5.0)
        assert f"(driver: {rate} Hz, at least {0.8 * rate:.1f})" in line, line
        # 5. calibrate: the hidden placement errors found, the model published
        done = _cli(work, "call", "calibrate", "--bags", f"bags/{robot}_cal",
                    "--config", cal, "--kind", "geometric", "--timeout", "240")
        assert done.returncode == 0, (done.stdout, done.stderr[-3000:])
        m = re.search(r"nominal ([\d.]+) mm -> calibrated ([\d.]+) mm", done.stdout)
        assert m, done.stdout
        nominal_mm, calibrated_mm = map(float, m.groups())
        assert nominal_mm > 1.0 and calibrated_mm < 0.3, done.stdout
        assert "published: robot_description updated" in done.stdout, done.stdout
        # 6. restore: the nominal model back on /robot_description
        history = _cli(work, "call", "restore", "history", "--timeout", "60")
        assert history.returncode == 0, history.stderr
        hashes = re.findall(r"^  - ([0-9a-f]{64}): (.*)$", history.stdout, re.M)
        assert len(hashes) == 2 and hashes[0][1] == "nominal", history.stdout
        assert descriptions.latest(hashes[1][0]) == hashes[1][0]
        back = _cli(work, "call", "restore", "previous", "--timeout", "60")
        assert back.returncode == 0, (back.stdout, back.stderr)
        assert f"model_hash: {hashes[0][0]}" in back.stdout, back.stdout
        assert descriptions.latest(hashes[0][0]) == hashes[0][0]
        if robot != "ur10":
            return
        # the calibration service from the command line: started at once with its goal id
        # (a second request while one runs: test_calibration_service.py)
        args = ("call", "start-calibration", "--bags", f"bags/{robot}_cal", "--config", cal,
                "--kind", "geometric", "--no-publish", "--timeout", "60")
        first = _cli(work, *args)
        assert first.returncode == 0, (first.stdout, first.stderr)
        assert re.search(r"^goal_id: [0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}$",
                         first.stdout, re.M), first.stdout
    finally:
        if descriptions is not None:
            descriptions.close()
        stop_processes(procs[::-1])


@pytest.mark.xdist_group("ros_graph")
def test_ur10_launch_file_as_shipped(tmp_path):
    _sequence("ur10", tmp_path)


@pytest.mark.xdist_group("ros_graph_2")
def test_tiago_launch_file_as_shipped(tmp_path):
    _sequence("tiago", tmp_path)


@pytest.mark.xdist_group("ros_graph")
def test_talos_launch_file_as_shipped(tmp_path):
    _sequence("talos", tmp_path)


@pytest.mark.xdist_group("ros_graph_2")
def test_preflight_off_is_warned(tmp_path):
    """preflight:=false: the executor names the argument in a warning at start."""
    ros_graph_environment()
    proc = _start(tmp_path, "launch.log", [
        CLI, "launch", os.path.join(ROOT, "launch", "ur10.launch.yaml"), "preflight:=false",
        f"data_roots:={tmp_path}"])
    try:
        line = _wait_in_log(tmp_path / "launch.log", r"WARN.*\[executor\]: [^\n]*", 60.0)
        assert "preflight:=false" in line and "without their identifiability and " \
            "topic-rate pre-flight" in line, line
    finally:
        stop_processes([proc])


def _ur10_identification(path) -> None:
    """result.yaml at ``path``: an identification of a UR10 with hidden inertias and
    friction from 30 s of simulated torques (the monitor's model)."""
    import numpy as np
    import yaml

    from figaroh_ros import identify, load_model
    from figaroh_ros.excitation.fourier import fourier_trajectory
    from figaroh_ros.identification.parameters import DriveOptions, parameter_layout
    from figaroh_ros.identification.regressor import joint_torques_from_parameters
    from figaroh_ros.sim.dynamics import perturbed_parameters
    arm = load_model(UR10_URDF, UR10_JOINTS)
    drive = DriveOptions()
    layout = parameter_layout(arm, drive)
    phi = perturbed_parameters(arm, layout, seed=11)

    def experiment(seed):
        traj = fourier_trajectory(arm, 30.0, 100.0, harmonics=5, base_freq_hz=0.1,
                                  seed=seed)
        tau = joint_torques_from_parameters(arm, layout, drive, phi, traj.q, traj.dq,
                                            traj.ddq)
        return traj.q, traj.dq, traj.ddq, tau + np.random.default_rng(seed).normal(
            0, 0.05, tau.shape)
    res = identify(arm, *experiment(1), validation=experiment(2))
    path.write_text(yaml.safe_dump(res.to_dict()))


@pytest.mark.xdist_group("ros_graph")
def test_monitor_from_the_launch_argument(tmp_path):
    """``monitor:=true`` on the UR10 launch file beside the simulator impersonating
    ur_robot_driver: the dynamics monitor runs on the driver's joint states and publishes
    finite predicted torques and residuals of the six joints, stamped like the samples."""
    import rclpy
    from sensor_msgs.msg import JointState
    _ur10_identification(tmp_path / "result.yaml")
    ros_graph_environment()
    procs = [_start(tmp_path, "sim.log", [
        sys.executable, "-m", "figaroh_ros.ros.sim_robot", "--ros-args",
        "-r", "__node:=robot_state_publisher",
        "-p", f"config:={os.path.join(ROOT, 'config', 'sim_ur10.yaml')}",
        "-p", "impersonate:=ur10"])]
    context = rclpy.Context()
    rclpy.init(context=context)
    node = rclpy.create_node("monitor_launch_listener", context=context)
    heard = {"predicted": [], "residual": []}
    for name, got in heard.items():
        node.create_subscription(JointState, f"/dynamics_monitor/{name}", got.append, 500)
    executor = rclpy.executors.SingleThreadedExecutor(context=context)
    executor.add_node(node)
    try:
        _wait_in_log(tmp_path / "sim.log", r"as ur10's driver publishes", 60.0)
        procs.append(_start(tmp_path, "launch.log", [
            CLI, "launch", os.path.join(ROOT, "launch", "ur10.launch.yaml"),
            f"data_roots:={tmp_path}", "monitor:=true",
            f"monitor_result:={tmp_path / 'result.yaml'}", f"monitor_urdf:={UR10_URDF}"]))
        end = time.monotonic() + 90.0
        while min(len(g) for g in heard.values()) < 200 and time.monotonic() < end:
            executor.spin_once(timeout_sec=0.05)
        assert min(len(g) for g in heard.values()) >= 200, (
            {k: len(v) for k, v in heard.items()}, (tmp_path / "launch.log").read_text()[-3000:])
        for got in heard.values():
            assert all(list(m.name) == UR10_JOINTS for m in got)
            assert all(len(m.effort) == 6 and all(map(math.isfinite, m.effort)) for m in got)
            stamps = [m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec for m in got]
            assert stamps == sorted(stamps) and stamps[-1] > stamps[0]
        said = (tmp_path / "launch.log").read_text()
        assert "[dynamics_monitor]" in said, said[-3000:]
        print(f"dynamics_monitor from monitor:=true: {len(heard['predicted'])} predicted, "
              f"{len(heard['residual'])} residual messages")
    finally:
        executor.shutdown(timeout_sec=1.0)
        node.destroy_node()
        context.try_shutdown()
        stop_processes(procs[::-1])


@pytest.mark.parametrize("robot", sorted(ROBOTS))
def test_monitor_only_when_asked(robot):
    """The dynamics monitor is in the launch only with monitor:=true, at the driver's rate."""
    from figaroh_ros.cli.launch_runner import parse
    path = os.path.join(ROOT, "launch", f"{robot}.launch.yaml")
    assert "dynamics_monitor" not in [n["exec"] for n in parse(path, {})]
    nodes = parse(path, {"monitor": "true", "monitor_result": "r.yaml", "monitor_urdf": "u"})
    monitor = [n for n in nodes if n["exec"] == "dynamics_monitor"]
    assert len(monitor) == 1
    params = dict(monitor[0]["param"])
    assert float(params["rate_hz"]) == ROBOTS[robot][1]
    assert (params["result"], params["urdf"]) == ("r.yaml", "u")
    executor = next(n for n in parse(path, {}) if n["exec"] == "executor")
    defaults = dict(executor["param"])
    assert str(defaults["preflight"]).lower() == "true"
    assert float(defaults["preflight_topic_window"]) > 0
    assert float(defaults["joint_states_timeout"]) == 1.5       # the executor's default
    assert defaults["preflight_config"].endswith(ROBOTS[robot][0])


def test_impersonation_takes_the_driver_names_and_rate():
    """impersonate: the real driver section's controller names and joint-state rate (when
    it states one); a simulation of another robot is refused, naming both."""
    from figaroh_ros.errors import ConfigError
    from figaroh_ros.ros.sim_robot import impersonate
    from figaroh_ros.sim.truth import load_sim_config

    def sim(robot):
        return load_sim_config(os.path.join(ROOT, "config", f"sim_{robot}.yaml"))
    ur = sim("ur10")
    impersonate(ur, "ur10")
    assert list(ur.controllers) == ["scaled_joint_trajectory_controller"]
    assert ur.rates.joint_states_hz == ur.driver.joint_states.rate_hz == 500
    tiago = sim("tiago")
    impersonate(tiago, "tiago")
    assert list(tiago.controllers) == ["torso_controller", "arm_controller"]
    assert tiago.rates.joint_states_hz == 50
    talos = sim("talos")
    impersonate(talos, "talos")          # PAL's TALOS profile states no rate: the sim's kept
    assert list(talos.controllers) == ["torso_controller", "left_arm_controller"]
    assert talos.rates.joint_states_hz == 200
    with pytest.raises(ConfigError, match=r"impersonate: tiago: .*robot_tiago\.yaml drives "
                                          r"tiago .*the simulation ur10"):
        impersonate(sim("ur10"), "tiago")

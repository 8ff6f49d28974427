"""The ``dynamics_monitor`` node in a ROS graph (real processes over DDS): fed by a
replay process publishing simulated Panda joint states at 250 Hz with the simulator's
noise, first without contact, then with two 20 N pushes on the hand.  Every push is
flagged within 50 ms of its start (in the samples' own time stamps), nothing is flagged
outside them, and the predicted + residual torques add up to the filtered measurement.
Started without an identified model, the node stops with one line (exit 2)."""
import os
import subprocess
import sys
import time

import numpy as np
import pytest
import rclpy
import yaml
from conftest import ROOT, ros_graph_environment
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool
from test_monitor import ARM, PANDA, PUSH_N, RATE, TAU_NOISE, Sim

from figaroh_ros import identify
from figaroh_ros.errors import DataError
from figaroh_ros.identification.monitor import DynamicsModel, learn_band
from figaroh_ros.ros.dynamics_monitor import DynamicsMonitorParameters, band_of

pytestmark = pytest.mark.xdist_group("ros_graph")   # one worker runs every graph test

STAMP0 = 1000.0                 # monitor_replay.py's first stamp
PUSHES = [(4.0, 0.5, (PUSH_N, 0, 0)), (9.0, 0.5, (0, 0, -PUSH_N))]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """result.yaml of an identification, the band learned on validation data, and the
    replayed recording."""
    sim, work = Sim(), tmp_path_factory.mktemp("monitor")

    def experiment(seed):
        traj = sim.motion(seed, 30.0, 100.0)
        tau = sim.torques(traj) + np.random.default_rng(seed).normal(0, TAU_NOISE,
                                                                      traj.q.shape)
        return traj.q, traj.dq, traj.ddq, tau
    res = identify(sim.arm, *experiment(1), validation=experiment(2))
    (work / "result.yaml").write_text(yaml.safe_dump(res.to_dict()))
    _, q, tau = sim.recording(3, 30.0)
    learn_band(DynamicsModel.from_result(res), q, tau, RATE).save(str(work / "band.yaml"))
    t, q, tau = sim.recording(5, 12.0, PUSHES)
    np.savez(work / "replay.npz", q=q, tau=tau, rate=RATE, names=np.array(ARM))
    return work


def node_env():
    before = dict(os.environ)
    ros_graph_environment()
    env = dict(os.environ)
    return env, before


def test_monitor_flags_the_pushes_over_dds(files):
    env, before = node_env()
    monitor = subprocess.Popen(
        [sys.executable, "-m", "figaroh_ros.ros.dynamics_monitor", "--ros-args",
         "-p", f"result:={files / 'result.yaml'}", "-p", f"urdf:={PANDA}",
         "-p", f"band:={files / 'band.yaml'}", "-r", "joint_states:=/joint_states"],
        env=env, cwd=files, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    replay = None
    rclpy.init()
    try:
        node = rclpy.create_node("monitor_graph_test")
        residual, contact = [], []
        node.create_subscription(JointState, "/dynamics_monitor/residual",
                                 lambda m: residual.append(m), 5000)
        node.create_subscription(Bool, "/dynamics_monitor/contact",
                                 lambda m: contact.append((time.monotonic(), m.data)), 5000)
        # the monitor's outputs matched to our readers before anything is replayed (a
        # discovery of 1-3 s otherwise loses the first second of residuals, volatile)
        t0 = time.monotonic()
        while time.monotonic() - t0 < 60.0 and not all(
                node.count_publishers(t) for t in ("/dynamics_monitor/residual",
                                                   "/dynamics_monitor/contact")):
            rclpy.spin_once(node, timeout_sec=0.05)
        time.sleep(0.5)
        replay = subprocess.Popen([sys.executable, os.path.join(ROOT, "test",
                                                                "monitor_replay.py"),
                                   str(files / "replay.npz")], env=env, cwd=files)
        deadline = time.monotonic() + 120.0
        while replay.poll() is None and time.monotonic() < deadline:
            rclpy.spin_once(node, timeout_sec=0.05)
        quiet_until, end = time.monotonic() + 2.0, time.monotonic() + 60.0
        while time.monotonic() < min(quiet_until, end):   # drain: until 2 s without news
            count = len(residual) + len(contact)
            rclpy.spin_once(node, timeout_sec=0.05)
            if len(residual) + len(contact) > count:
                quiet_until = time.monotonic() + 2.0
        assert replay.returncode == 0
    finally:
        rclpy.try_shutdown()
        for p in (replay, monitor):
            if p is not None and p.poll() is None:
                p.terminate()
                p.wait(10)
        os.environ.clear()
        os.environ.update(before)
    n = int(12.0 * RATE)
    print(f"{len(residual)} residual and {len(contact)} contact messages of {n} samples")
    assert len(residual) == len(contact) >= n - 5          # one per sample, none lost
    stamps = np.array([m.header.stamp.sec + 1e-9 * m.header.stamp.nanosec - STAMP0
                       for m in residual])
    flags = np.array([c for _, c in contact])
    for start, length, _ in PUSHES:
        during = np.flatnonzero(flags & (stamps >= start) & (stamps < start + length))
        assert len(during), f"push at {start} s not flagged"
        delay = stamps[during[0]] + 1.0 / RATE - start   # decided on the next sample
        print(f"push at {start} s flagged after {1e3 * delay:.0f} ms (sample time)")
        assert delay <= 0.050
    quiet = np.ones(len(flags), bool)
    for start, length, _ in PUSHES:
        quiet &= ~((stamps >= start) & (stamps < start + length + 0.3))
    assert not flags[quiet].any(), f"false contact at {stamps[quiet & flags][:5]} s"


def test_monitor_without_a_model_stops_with_one_line(tmp_path):
    env, before = node_env()
    os.environ.clear()
    os.environ.update(before)
    proc = subprocess.run([sys.executable, "-m", "figaroh_ros.ros.dynamics_monitor",
                           "--ros-args", "-p", f"urdf:={PANDA}"], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path, env=env)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "parameter result" in lines[0], proc.stderr
    bad = tmp_path / "cal.yaml"
    bad.write_text("rmse_train_mm: 1.0\n")
    proc = subprocess.run([sys.executable, "-m", "figaroh_ros.ros.dynamics_monitor",
                           "--ros-args", "-p", f"result:={bad}", "-p", f"urdf:={PANDA}"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    assert proc.returncode == 2 and "not a dynamic identification" in proc.stderr, proc.stderr


def test_band_from_the_identification_or_a_file(files, tmp_path):
    """Without a band file the node takes the identification's held-out RMSE per joint;
    its k_sigma / persistence parameters apply to either."""
    result = str(files / "result.yaml")
    rmse = yaml.safe_load(open(result))["validation_rmse"]
    p = DynamicsMonitorParameters(result=result, urdf=PANDA, k_sigma=4.0, persistence=2)
    band = band_of(p, ARM)
    assert np.allclose(band.sigma, [rmse[j] for j in ARM]) and band.k == 4.0
    learned = band_of(DynamicsMonitorParameters(result=result, urdf=PANDA,
                                                band=str(files / "band.yaml")), ARM)
    saved = yaml.safe_load(open(files / "band.yaml"))["sigma"]
    assert np.allclose(learned.sigma, [saved[j] for j in ARM]) and learned.persistence == 3
    no_rmse = tmp_path / "result.yaml"
    no_rmse.write_text(yaml.safe_dump({k: v for k, v in yaml.safe_load(open(result)).items()
                                       if k != "validation_rmse"}))
    with pytest.raises(DataError, match="no validation_rmse"):
        band_of(DynamicsMonitorParameters(result=str(no_rmse), urdf=PANDA), ARM)

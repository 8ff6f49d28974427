"""Long recordings: the observation matrix built and decimated chunk by chunk, the chunks
overlapping by the decimation filter's decay, gives the rows of the whole-array parallel
decimation (to 1e-9), and the identification from a bag through that path equals the
whole-array one and stays at the hidden parameters.  (The 10-minute 1 kHz bag and its
memory: bench/bench_long_bag.py.)"""
import os
import time

import numpy as np
import pytest
import yaml
from conftest import ROOT

from figaroh_ros.config.identification import load_config
from figaroh_ros.excitation.fourier import fourier_trajectory
from figaroh_ros.identification.observation import Processing, torque_equations
from figaroh_ros.identification.parameters import DriveOptions, parameter_layout
from figaroh_ros.identification.segments import (
    decimated, decimated_torque_equations, decimation_margin
)
from figaroh_ros.io.bags import typestore
from figaroh_ros.io.recording import read_recording
from figaroh_ros.io.segmented_bag import SegmentedBagWriter
from figaroh_ros.model.robot import load_urdf_model
from figaroh_ros.progress import Progress, Stage
from figaroh_ros.sim.dynamics import measured_torques, perturbed_parameters
from figaroh_ros.tasks import identify
from figaroh_ros.tasks.heartbeat import heartbeat

URDF = os.path.join(ROOT, "test", "data", "iiwa14.urdf")
RATE = 1000.0
NOISE = 0.3
DRIVE = DriveOptions(viscous_friction=True, coulomb_friction=True, rotor_inertia=False,
                     torque_offset=False)


def write_bag(folder, joints, traj, tau):
    """One JointState topic carrying positions and efforts, as a driver publishes."""
    store = typestore()
    T, JS = store.types, "sensor_msgs/msg/JointState"
    w = SegmentedBagWriter(str(folder), {"/joint_states": JS}, store, "mcap", 0.0)
    for k in range(len(traj.t)):
        ns = int(1_700_000_000 * 10**9 + round(traj.t[k] * 1e9))
        hdr = T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](
            sec=ns // 10**9, nanosec=ns % 10**9), frame_id="")
        msg = T[JS](header=hdr, name=joints, position=traj.q[k], velocity=np.zeros(0),
                    effort=tau[k])
        w.write("/joint_states", ns, store.serialize_cdr(msg, JS))
    w.close()
    return str(folder)


@pytest.fixture(scope="module")
def arm(tmp_path_factory):
    robot = load_urdf_model(URDF, None)
    joints = robot.active_joints
    layout = parameter_layout(robot, DRIVE)
    phi = perturbed_parameters(robot, layout, seed=3)
    traj = fourier_trajectory(robot, 16.0, RATE, harmonics=5, base_freq_hz=0.1,
                              amplitude=0.7, seed=8)
    tau = measured_torques(robot, layout, DRIVE, phi, traj, NOISE, seed=9)
    bag = write_bag(tmp_path_factory.mktemp("long") / "bag", joints, traj, tau)
    cfg_path = tmp_path_factory.mktemp("cfg") / "identify.yaml"
    cfg_path.write_text(yaml.safe_dump({
        "robot": {"name": "iiwa14", "urdf": URDF, "joints": joints},
        "model": {"viscous_friction": True, "coulomb_friction": True,
                  "rotor_inertia": False, "torque_offset": False},
        "data": {"format": "bag", "path": bag, "joint_topic": "/joint_states",
                 "torque_topic": "/joint_states", "events_topic": ""},
        "processing": {"position_cutoff_hz": 8.0, "decimation": 10, "min_velocity": 0.05},
        "estimation": {"method": "wls", "validation_fraction": 0.2},
        "output": {"plots": False}}))
    return robot, layout, phi, load_config(str(cfg_path))


@pytest.fixture(scope="module")
def recording(arm):
    """The bag read once for the parametrized chunk tests."""
    robot, _, _, cfg = arm
    return read_recording(cfg, robot, split_gaps=True)


@pytest.mark.parametrize("factor, chunk, one_pass", [
    (10, 3000, False), (20, 4000, False), (1, 4000, False),
    (20, 7000, True)])    # 15 244 samples: no more than a chunk and its margins (2 x 4500)
def test_chunks_give_the_whole_array_rows(arm, recording, factor, chunk, one_pass):
    """Chunked rows are the whole array's to round-off; a recording no longer than one
    chunk with its margins is built in one pass, each sample once."""
    robot, layout, _, _ = arm
    rec = recording
    p = Processing(8.0, 4, factor, 0.0)
    whole = torque_equations(robot, layout, DRIVE, rec.t, rec.q, rec.tau, p)
    kept = whole[2].shape[0]                       # samples clear of the filter's edges
    W, Y, dq = decimated(whole, factor)
    seen = []
    Wc, Yc, dqc = decimated_torque_equations(robot, layout, DRIVE, rec.t, rec.q, rec.tau,
                                             p, chunk, lambda k, n: seen.append(k))
    assert (seen == [kept]) if one_pass else (len(seen) >= 3 and seen[-1] == kept)
    assert Wc.shape == W.shape and Yc.shape == Y.shape and dqc.shape == dq.shape
    scale = max(1.0, float(np.abs(W).max()))
    print(f"decimation {factor}, margin {decimation_margin(factor)}: max |W - W_chunks| = "
          f"{np.abs(W - Wc).max():.2e} (|W| <= {scale:.3g})")
    assert np.abs(W - Wc).max() <= 1e-9 * scale
    assert np.abs(Y - Yc).max() <= 1e-9 and np.abs(dq - dqc).max() <= 1e-9


def test_identification_in_chunks_equals_the_whole_array_one(arm, monkeypatch):
    robot, layout, phi, cfg = arm
    lines = []
    monkeypatch.setattr(identify, "CHUNK_BYTES", 2**40)        # the whole array at once
    whole = identify.identify_config(cfg, progress=lambda m: lines.append(m.message))
    assert not any(m.startswith("equations:") for m in lines)  # not the chunked path
    monkeypatch.setattr(identify, "CHUNK_BYTES", 2**23)        # ~ 2600 samples a chunk
    chunked = identify.identify_config(cfg, progress=lambda m: lines.append(m.message))
    assert np.allclose(chunked.estimate.phi, whole.estimate.phi, rtol=1e-7, atol=1e-9)
    assert np.allclose(chunked.validation_rmse, whole.validation_rmse, rtol=1e-7)
    assert any(m.startswith("equations:") for m in lines)
    # and at the hidden truth: held-out error at the floor the true parameters reach
    ho = chunked.held_out
    res = ho.Y - ho.Wb @ chunked.base.from_standard(phi)
    floor = np.array([np.sqrt(np.mean(res[ho.row_joint == j] ** 2)) for j in range(7)])
    print("held-out RMSE / floor:", np.round(chunked.validation_rmse / floor, 3))
    assert np.all(chunked.validation_rmse <= 1.1 * floor)


def test_heartbeat_speaks_during_a_silent_step():
    """A step that says nothing (here a 1 s sleep; in a long identification one LAPACK
    call) is covered by 'working' lines repeating the last message."""
    lines = []
    with heartbeat(lines.append, period=0.1) as say:
        say(Progress(Stage.ESTIMATION, 0.5, "estimation"))
        time.sleep(1.0)
        say(Progress(Stage.VALIDATION, 0.7, "validation"))
    texts = [m.message for m in lines]
    assert texts[0] == "estimation" and texts[-1] == "validation"
    beats = texts[1:-1]
    assert beats and all(t.startswith("working (") and t.endswith("since: estimation)")
                         for t in beats)
    assert all(m.stage == Stage.ESTIMATION for m in lines[1:-1])
    with heartbeat(None) as say:
        assert say is None

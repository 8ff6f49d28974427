"""Identification from a bag with recording gaps (a stalled joint-state publisher): the
recording is split at the gaps and each segment filtered and differentiated on its own.
Ground truth: a simulated arm with hidden parameters and torque noise of known std; the
held-out RMSE must stay at the noise floor as for a gapless bag, while the same bag
resampled across its gaps (one segment, the old way) does not."""
import os

import numpy as np
import pytest
import yaml
from conftest import ROOT

from figaroh_ros.config.identification import load_config
from figaroh_ros.errors import DataError
from figaroh_ros.excitation.fourier import fourier_trajectory
from figaroh_ros.identification.observation import Processing
from figaroh_ros.identification.parameters import DriveOptions, parameter_layout
from figaroh_ros.identification.segments import gap_segments, shortest_segment
from figaroh_ros.io.bags import typestore
from figaroh_ros.io.recording import Recording, segmented
from figaroh_ros.io.segmented_bag import SegmentedBagWriter
from figaroh_ros.model.robot import load_urdf_model
from figaroh_ros.sim.dynamics import measured_torques, perturbed_parameters
from figaroh_ros.tasks import identify

URDF = os.path.join(ROOT, "test", "data", "two_dof.urdf")
JOINTS = ["joint1", "joint2"]
DRIVE = DriveOptions(viscous_friction=True, coulomb_friction=True, rotor_inertia=False,
                     torque_offset=True)
NOISE = 0.05                        # N.m, std of the torque noise: the floor of any fit
RATE = 200.0
STALLS = [(7.0, 0.1), (13.0, 0.3), (27.5, 0.2)]   # (start, length) s; the last held out
T0 = 1.7e9


def write_bag(folder, traj, tau, stalls=(), storage="mcap"):
    """Joint states and torques at every sample, the joint states missing in ``stalls``
    (``storage``: mcap or sqlite3)."""
    store = typestore()
    T, JS = store.types, "sensor_msgs/msg/JointState"
    w = SegmentedBagWriter(str(folder), {"/joint_states": JS, "/joint_torques": JS}, store,
                           storage, 0.0)
    stalled = np.zeros(len(traj.t), bool)
    for a, length in stalls:
        stalled |= (traj.t >= a) & (traj.t < a + length)
    for k in range(len(traj.t)):
        ns = int(round((T0 + traj.t[k]) * 1e9))
        hdr = T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](
            sec=ns // 10**9, nanosec=ns % 10**9), frame_id="")
        for topic, pos, eff in (("/joint_states", traj.q[k], np.zeros(0)),
                                ("/joint_torques", np.zeros(0), tau[k])):
            if topic == "/joint_states" and stalled[k]:
                continue
            msg = T[JS](header=hdr, name=JOINTS, position=pos, velocity=np.zeros(0),
                        effort=eff)
            w.write(topic, ns, store.serialize_cdr(msg, JS))
    w.close()
    return str(folder)


def config(tmp_path, bag, name, **data):
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({
        "robot": {"name": "two_dof", "urdf": URDF, "joints": JOINTS},
        "model": {"viscous_friction": True, "coulomb_friction": True,
                  "rotor_inertia": False, "torque_offset": True},
        "data": {"format": "bag", "path": bag, "joint_topic": "/joint_states",
                 "torque_topic": "/joint_torques", "events_topic": "", **data},
        "processing": {"position_cutoff_hz": 10.0, "decimation": 1, "min_velocity": 0.1},
        "estimation": {"method": "wls", "validation_fraction": 0.25,
                       "cross_validation_folds": 0},
        "output": {"plots": False}}))
    return str(path)


@pytest.fixture(scope="module")
def bags(tmp_path_factory):
    root = tmp_path_factory.mktemp("gaps")
    robot = load_urdf_model(URDF, JOINTS)
    layout = parameter_layout(robot, DRIVE)
    phi = perturbed_parameters(robot, layout, seed=4)
    traj = fourier_trajectory(robot, 36.0, RATE, harmonics=5, base_freq_hz=0.1,
                              amplitude=0.8, seed=12)
    tau = measured_torques(robot, layout, DRIVE, phi, traj, NOISE, seed=5)
    return root, write_bag(root / "gapless", traj, tau), \
        write_bag(root / "stalled", traj, tau, STALLS)


def held_out_rmse(path) -> float:
    res = identify.identify_config(load_config(path))
    return float(np.max(res.validation_rmse))


def test_held_out_error_at_the_noise_floor_despite_stalls(bags, tmp_path):
    root, gapless, stalled = bags
    clean = held_out_rmse(config(tmp_path, gapless, "gapless"))
    split = held_out_rmse(config(tmp_path, stalled, "split"))
    across = held_out_rmse(config(tmp_path, stalled, "across", max_gap=10.0))
    print(f"held-out RMSE (N.m): gapless {clean:.4f}, stalled split {split:.4f}, "
          f"stalled resampled across {across:.4f}; noise {NOISE}")
    assert clean <= 1.1 * NOISE
    assert split <= 1.1 * NOISE
    assert across > 1.1 * NOISE           # the old way: lines drawn across the stalls


def test_result_reports_the_segments(bags, tmp_path):
    _, _, stalled = bags
    out = identify.run(config(tmp_path, stalled, "report"), out=str(tmp_path / "out"))
    with open(out.paths["result"]) as f:
        rec = yaml.safe_load(f)["recording"]
    assert rec["count"] == 4 and rec["used"] == 4 and rec["dropped_samples"] == 0
    assert rec["max_gap_s"] == pytest.approx(5 / RATE, rel=1e-3)
    starts = [s["from_s"] for s in rec["segments"]]
    ends = [s["to_s"] for s in rec["segments"]]
    for (a, length), end, start in zip(STALLS, ends, starts[1:]):
        assert end == pytest.approx(a - 1 / RATE, abs=1.5 / RATE)
        assert start == pytest.approx(a + length, abs=1.5 / RATE)


def test_a_segment_too_short_for_the_filter_is_left_out_and_reported(bags, tmp_path):
    root, gapless, _ = bags
    robot = load_urdf_model(URDF, JOINTS)
    layout = parameter_layout(robot, DRIVE)
    traj = fourier_trajectory(robot, 20.0, RATE, harmonics=5, base_freq_hz=0.1,
                              amplitude=0.8, seed=3)
    tau = measured_torques(robot, layout, DRIVE, perturbed_parameters(robot, layout, seed=4),
                           traj, NOISE, seed=6)
    # a 0.3 s island of joint states between two stalls
    bag = write_bag(root / "island", traj, tau, [(8.0, 0.5), (8.8, 0.5)])
    path = config(tmp_path, bag, "island")
    report = {}
    res = identify.identify_config(load_config(path), report=report)
    rec = report["recording"]
    short = [s for s in rec["segments"] if not s["used"]]
    assert rec["count"] == 3 and len(short) == 1
    assert short[0]["from_s"] == pytest.approx(8.5, abs=0.01)
    assert rec["dropped_samples"] == short[0]["samples"] == pytest.approx(0.3 * RATE, abs=2)
    assert short[0]["samples"] < rec["min_samples"] <= min(
        s["samples"] for s in rec["segments"] if s["used"])
    assert rec["min_samples"] >= shortest_segment(Processing(10.0, 4, 1), RATE)
    assert float(np.max(res.validation_rmse)) <= 1.1 * NOISE


def test_segments_of_stamps():
    t = np.r_[np.arange(100) * 0.01, 1.5 + np.arange(50) * 0.01]
    assert gap_segments(t, 0.05) == [(0, 100), (100, 150)]
    assert gap_segments(t, 1.0) == [(0, 150)]
    rec = segmented(t, np.c_[t], np.c_[2 * t], None, None, "table")
    assert rec.bounds() == [(0, 100), (100, 149)] or rec.bounds() == [(0, 99), (99, 148)]
    assert np.allclose(rec.q[:, 0], rec.t) and np.all(np.diff(rec.t)[:98] > 0.0099)
    part = rec.rows(50, 120)
    assert part.bounds() == [(0, 50), (50, 70)] or part.bounds() == [(0, 49), (49, 70)]
    assert Recording(t, np.c_[t], np.c_[t]).bounds() == [(0, 150)]


def test_no_segment_long_enough_is_refused(tmp_path):
    robot = load_urdf_model(URDF, JOINTS)
    layout = parameter_layout(robot, DRIVE)
    traj = fourier_trajectory(robot, 2.0, RATE, seed=3)
    tau = measured_torques(robot, layout, DRIVE, perturbed_parameters(robot, layout), traj,
                           NOISE)
    stalls = [(a, 0.1) for a in np.arange(0.2, 2.0, 0.3)]
    bag = write_bag(tmp_path / "choppy", traj, tau, stalls)
    with pytest.raises(DataError, match="data.max_gap"):
        identify.identify_config(load_config(config(tmp_path, bag, "choppy")))


def test_a_max_gap_below_the_sample_period_or_too_few_stamps_is_refused_by_name():
    from figaroh_ros.io.recording import segmented
    t = np.arange(50) * 0.005                             # 200 Hz
    P, T = np.zeros((50, 2)), np.zeros((50, 2))
    with pytest.raises(DataError, match=r"no two stamps closer than data.max_gap = 0.001 s"):
        segmented(t, P, T, None, 0.001, "log.csv")
    for n in (0, 1):
        with pytest.raises(DataError, match=f"log.csv: {n} time stamp"):
            segmented(t[:n], P[:n], T[:n], None, None, "log.csv")


def test_any_stamps_and_max_gap_give_a_recording_or_a_data_error():
    """Property: increasing or not, gaps or not, whatever data.max_gap the schema lets
    through: segments on their own grids or a DataError, never another exception."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from figaroh_ros.io.recording import segmented

    @settings(max_examples=150, deadline=None)
    @given(st.lists(st.floats(1e-4, 2.0, allow_nan=False), min_size=0, max_size=60),
           st.one_of(st.none(), st.floats(1e-6, 3600.0)), st.booleans())
    def check(steps, max_gap, shuffle):
        t = np.cumsum([0.0] + steps)
        if shuffle and len(t) > 2:
            t[[1, 2]] = t[[2, 1]]
        P = np.ones((len(t), 2))
        try:
            rec = segmented(t, P, P, None, max_gap, "log.csv")
        except DataError:
            return
        assert len(rec.t) == len(rec.q) >= 1 and np.all(rec.q == 1.0)     # on its grids
        assert all(b > a for a, b in rec.bounds()) and np.all(np.diff(rec.t) != 0)
    check()

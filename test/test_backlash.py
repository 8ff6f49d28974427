"""Backlash and encoder discrepancy (Nguyen et al. 2024 Eq. 6-7) on a simulated joint whose hidden
truth is *not* the model: a gear play (deadband operator), an eccentric encoder and a
compliant shaft, measured by a motor and a link encoder with noise."""
import numpy as np
import pinocchio as pin
import pytest
import yaml
from conftest import SHARED

from figaroh_ros.cli.main import main
from figaroh_ros.errors import ConfigError, DataError
from figaroh_ros.io.bags import typestore
from figaroh_ros.io.segmented_bag import SegmentedBagWriter
from figaroh_ros.model.robot import load_urdf_model
from figaroh_ros.phenomena import identify_backlash, sweep_trajectory
from figaroh_ros.phenomena.backlash import fit_backlash, r_squared, select_degrees
from figaroh_ros.sim.phenomena import JointPlay, PlayTracker

GAP = 0.012          # rad of play
ECC = 0.004          # rad, eccentric link encoder
COMPLIANCE = 2e-4    # rad per N.m
NOISE = 3e-4         # rad, encoder noise


def sweep(speeds, rate=100.0, lo=-1.8, hi=1.8):
    """Back-and-forth sweeps across the range at each speed (the protocol of Nguyen et al. 2024)."""
    theta = []
    x = lo
    for v in speeds:
        for target in (hi, lo):
            n = int(abs(target - x) / v * rate)
            theta.append(np.linspace(x, target, n, endpoint=False))
            x = target
    th = np.concatenate(theta)
    dth = np.gradient(th, 1.0 / rate)
    return th, dth


def truth(theta, dtheta, seed):
    rng = np.random.default_rng(seed)
    tau = 25.0 * np.cos(theta + 0.3) + 4.0 * np.tanh(dtheta / 0.05)   # gravity + friction
    link = np.empty_like(theta)
    x = theta[0] - GAP / 2
    for k, th in enumerate(theta):                # play operator: the link lags
        x = min(max(x, th - GAP / 2), th + GAP / 2)
        link[k] = x
    d = (link - theta) + ECC * np.sin(theta + 0.7) - COMPLIANCE * tau     # the link sags
    return tau, d + NOISE * rng.normal(size=theta.shape)


@pytest.fixture(scope="module")
def data():
    tr = sweep([0.1, 0.3, 0.6, 1.0])
    va = sweep([0.2, 0.5, 0.8], lo=-1.7, hi=1.75)
    tau_t, d_t = truth(*tr, 1)
    tau_v, d_v = truth(*va, 2)
    return (tr[0], tr[1], tau_t, d_t), (va[0], va[1], tau_v, d_v)


def test_backlash_model_predicts_validation_data(data):
    train, valid = data
    model, table = select_degrees(train, valid, degrees=range(1, 6))
    r2 = r_squared(valid[3], model.predict(*valid[:3]))
    assert r2 >= 0.9, (r2, table)
    assert model.rho > 0
    # the chosen degrees are the smallest within 0.005 of the best validation R^2
    assert r2 >= max(table.values()) - 0.005
    assert (model.m, model.n) != (5, 5) or max(table.values()) - table[1, 1] > 0.005
    # the gap itself: the two direction surfaces differ by about the play
    Phi = model.monomials(np.zeros(1), np.zeros(1))
    assert abs((Phi @ model.A.ravel() - Phi @ model.B.ravel())[0]) == pytest.approx(GAP, rel=0.2)


def test_the_direction_carries_most_of_the_signal(data):
    """A polynomial in the angle alone with no direction switch (S = 1/2, no torque)
    leaves the play unexplained: R^2 well below the model's."""
    train, valid = data
    one = fit_backlash(*train, m=5, n=0, rho=1e-6)
    blind = r_squared(valid[3], one.predict(*valid[:3]))
    model, _ = select_degrees(train, valid, degrees=range(1, 4))
    full = r_squared(valid[3], model.predict(*valid[:3]))
    assert blind < full - 0.15, (blind, full)


def test_too_few_samples_is_refused():
    with pytest.raises(DataError, match="record more"):
        fit_backlash(np.zeros(10), np.zeros(10), np.zeros(10), np.zeros(10), m=5, n=5)


def test_array_interface_fits_every_column_and_skips_a_still_joint(data):
    """``phenomena.identify_backlash``: one recording (the training sweeps, then the
    validation sweeps, held out as its last part) of a joint with play beside a joint
    that never moves; arrays in, a result object out."""
    train, valid = data
    th, dth, tau, d = (np.r_[a, b] for a, b in zip(train, valid))
    still = np.full_like(th, 0.3)
    res = identify_backlash(np.c_[th, still], np.c_[th + d, still], np.c_[tau, tau],
                            dq=np.c_[dth, np.zeros_like(th)], joints=["play", "still"],
                            max_degree=5, validation_fraction=len(valid[0]) / len(th))
    jb = res.joints["play"]
    assert jb.model.info["validation_r2"] >= 0.9, jb.degree_table
    assert jb.gap == pytest.approx(GAP, rel=0.2)
    assert "moved 0.000 rad only" in res.joints["still"].skipped
    pred = res.predict(np.c_[valid[0], valid[0]], np.c_[valid[1], valid[1]],
                       np.c_[valid[2], valid[2]])
    assert r_squared(valid[3], pred[:, 0]) >= 0.9 and np.isnan(pred[:, 1]).all()
    doc = res.to_dict()
    assert doc["joints"]["still"] == {"skipped": res.joints["still"].skipped}
    assert doc["joints"]["play"]["samples"] == list(jb.samples)
    with pytest.raises(ConfigError, match="max_degree"):
        identify_backlash(th[:, None], th[:, None], tau[:, None], dt=0.01, max_degree=9)
    with pytest.raises(DataError, match="same shape"):
        identify_backlash(th[:, None], th[:200, None], tau[:, None], dt=0.01)


def test_identify_backlash_from_a_bag_with_a_stall_and_a_long_rest(tmp_path, capsys):
    """``figaroh-ros identify-backlash`` on a rosbag2 recording of two TIAGo arm joints
    whose hidden truth is the play operator (plus eccentric encoder and sag under the
    gravity torque): the publisher stalls for 0.4 s mid-sweep, and the recording goes on
    for 6 s at rest after the motion, as it does when the recorder is stopped late.
    Neither the stall's straight line nor the rest (where the velocity sigmoid cannot
    know on which side the link sits) may spoil the validation."""
    urdf = f"{SHARED}/data/tiago/urdf/tiago_48_schunk.urdf"
    joints = ["arm_1_joint", "arm_2_joint"]
    robot = load_urdf_model(urdf, joints)
    traj = sweep_trajectory(robot, joints, duration=30.0, rate_hz=250.0, periods=(5.0, 7.0))
    rest = np.arange(1, 1501) * 0.004 + traj.t[-1]
    t = np.r_[traj.t, rest]
    q = np.vstack([traj.q, np.repeat(traj.q[-1:], len(rest), axis=0)])
    plays = [JointPlay(0.004, 0.002, 0.5, 1e-4), JointPlay(0.006, 0.0015, -1.0, 2e-4)]
    tracker = PlayTracker(plays, q[0])
    data = robot.model.createData()
    rng = np.random.default_rng(3)
    store = typestore()
    w = SegmentedBagWriter(str(tmp_path / "bag"), {"/joint_states": "sensor_msgs/msg/JointState",
                                                   "/link_encoders": "sensor_msgs/msg/JointState"},
                           store, "mcap", 0.0)
    JS, H, T = (store.types[k] for k in ("sensor_msgs/msg/JointState", "std_msgs/msg/Header",
                                         "builtin_interfaces/msg/Time"))
    t0 = 10**18
    for k in range(len(t)):
        tau = pin.computeGeneralizedGravity(robot.model, data,
                                            robot.full_configuration(q[k:k + 1])[0])[robot.idx_v]
        link = tracker.update(q[k], tau)
        if 12.0 < t[k] < 12.4:                  # the publisher stalls
            continue
        ns = t0 + int(round(t[k] * 1e9))
        for topic, pos, sd in (("/joint_states", q[k], 1e-5), ("/link_encoders", link, 1e-4)):
            msg = JS(header=H(stamp=T(sec=ns // 10**9, nanosec=ns % 10**9), frame_id=""),
                     name=joints, position=pos + rng.normal(0, sd, 2),
                     velocity=np.zeros(0), effort=np.zeros(0))
            w.write(topic, ns, store.serialize_cdr(msg, "sensor_msgs/msg/JointState"))
    w.close()
    cfg_path = tmp_path / "backlash.yaml"
    cfg_path.write_text(yaml.safe_dump({"robot": {"name": "tiago", "urdf": urdf},
                                        "backlash": {"joints": joints, "max_degree": 3}}))
    out = tmp_path / "out"
    assert main(["identify-backlash", str(cfg_path), "--bag", str(tmp_path / "bag"),
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    res = yaml.safe_load((out / "result.yaml").read_text())
    assert all(name in printed for name in joints) and "gap [mrad]" in printed
    assert res["samples_in_gaps"] >= 100          # 0.4 s + 2 x 0.1 s at 250 Hz
    for name, play in zip(joints, plays):
        r = res["joints"][name]
        assert r["validation_r2"] >= 0.95, res["joints"]
        assert r["gap_rad"] == pytest.approx(play.gap, rel=0.05), res["joints"]

"""Torque monitor (``identification/monitor.py``) against simulated truth: a Panda whose
hidden inertias and friction are identified, then monitored at 250 Hz with the simulated
robot's noise (joint encoders 1e-5 rad, torques 0.01 N.m; ``config.sim`` defaults).

* the online prediction equals the identified model's (``IdentificationResult.predict``)
  and the one rebuilt from ``result.yaml`` + URDF;
* its gravity, friction and inertial parts add up to it, gravity is pinocchio's
  ``computeGeneralizedGravity`` of the identified standard model, friction the identified
  ``fv dq + fs sign(dq) + off``;
* a 20 N push on the end effector (``tau_ext = J^T f``) is flagged within 50 ms;
* no false flag over a 60 s exciting trajectory the band was not learned on;
* one sample costs at most 1 ms for the 7 joints.
"""
import time

import numpy as np
import pinocchio as pin
import pytest
import yaml

from figaroh_ros import identify, load_model
from figaroh_ros.errors import DataError, ModelError
from figaroh_ros.excitation.fourier import fourier_trajectory
from figaroh_ros.identification import DriveOptions, parameter_layout
from figaroh_ros.identification.monitor import (
    DynamicsModel, ResidualBand, TorqueMonitor, learn_band
)
from figaroh_ros.identification.regressor import joint_torques_from_parameters
from figaroh_ros.sim.dynamics import perturbed_parameters

PANDA = "example-robot-data:panda_description/urdf/panda.urdf"
ARM = [f"panda_joint{i}" for i in range(1, 8)]
RATE = 250.0
Q_NOISE, TAU_NOISE = 1e-5, 0.01          # the simulated robot's default noise
PUSH_N = 20.0


class Sim:
    """The hidden robot and its recordings (with optional pushes on the hand)."""

    def __init__(self):
        self.arm = load_model(PANDA, ARM)
        self.drive = DriveOptions()
        self.layout = parameter_layout(self.arm, self.drive)
        self.phi = perturbed_parameters(self.arm, self.layout, seed=11)
        self.hand = self.arm.model.getFrameId("panda_hand")

    def motion(self, seed, duration, rate):
        return fourier_trajectory(self.arm, duration, rate, harmonics=5, base_freq_hz=0.1,
                                  seed=seed)

    def torques(self, traj):
        return joint_torques_from_parameters(self.arm, self.layout, self.drive, self.phi,
                                             traj.q, traj.dq, traj.ddq)

    def push_torques(self, q, force):
        """``J^T f`` of a force (world axes) on the hand, per sample."""
        model, data = self.arm.model, self.arm.model.createData()
        Q = self.arm.full_configuration(q)
        out = np.empty_like(q)
        for i, qi in enumerate(Q):
            J = pin.computeFrameJacobian(model, data, qi, self.hand,
                                         pin.LOCAL_WORLD_ALIGNED)[:3, self.arm.idx_v]
            out[i] = J.T @ force
        return out

    def recording(self, seed, duration, pushes=()):
        """Measured positions and torques at 250 Hz; ``pushes``: (start s, length s,
        force) -- the motors hold the motion, so they carry ``-J^T f`` on top."""
        traj = self.motion(seed, duration, RATE)
        tau = self.torques(traj)
        for start, length, force in pushes:
            on = (traj.t >= start) & (traj.t < start + length)
            tau[on] -= self.push_torques(traj.q[on], np.asarray(force, float))
        rng = np.random.default_rng(seed + 1000)
        return (traj.t, traj.q + rng.normal(0, Q_NOISE, traj.q.shape),
                tau + rng.normal(0, TAU_NOISE, tau.shape))


@pytest.fixture(scope="module")
def sim():
    return Sim()


@pytest.fixture(scope="module")
def identified(sim):
    """Identification at 100 Hz (30 s) with a held-out trajectory, as the README."""
    def experiment(seed):
        traj = sim.motion(seed, 30.0, 100.0)
        tau = sim.torques(traj) + np.random.default_rng(seed).normal(0, TAU_NOISE,
                                                                      traj.q.shape)
        return traj.q, traj.dq, traj.ddq, tau
    return identify(sim.arm, *experiment(1), validation=experiment(2))


@pytest.fixture(scope="module")
def monitor_parts(sim, identified):
    model = DynamicsModel.from_result(identified)
    _, q, tau = sim.recording(3, 60.0)                 # contact-free validation data
    return model, learn_band(model, q, tau, RATE)


def test_prediction_is_the_identified_model(sim, identified, tmp_path):
    model = DynamicsModel.from_result(identified)
    traj = sim.motion(4, 2.0, 50.0)
    expected = identified.predict(traj.q, traj.dq, traj.ddq)
    got = np.array([model.torque(*s) for s in zip(traj.q, traj.dq, traj.ddq)])
    assert np.max(np.abs(got - expected)) < 1e-8
    truth = sim.torques(traj)
    assert np.max(np.abs(got - truth)) < 0.1            # the identified model is good
    path = tmp_path / "result.yaml"
    path.write_text(yaml.safe_dump(identified.to_dict()))
    from_files = DynamicsModel.from_files(str(path), PANDA)
    got_f = np.array([from_files.torque(*s) for s in zip(traj.q, traj.dq, traj.ddq)])
    # the grouped expressions carry 6 significant digits
    assert np.max(np.abs(got_f - expected)) < 2e-3 * np.max(np.abs(expected))


def identified_pinocchio_model(model: DynamicsModel):
    """A copy of the pinocchio model carrying the identified standard inertias."""
    pm = model.robot.model.copy()
    for j in range(1, pm.njoints):
        pm.inertias[j] = pin.Inertia.FromDynamicParameters(
            model.inertial[10 * (j - 1):10 * j])
    return pm


def test_parts_add_up_and_gravity_is_pinocchios(sim, identified):
    """``tau_hat = g + friction + inertial`` (1e-9); ``g`` = computeGeneralizedGravity of
    the identified model; ``friction`` = the identified drive terms; at rest the
    inertial part vanishes; the monitor's sample carries the same parts."""
    model = DynamicsModel.from_result(identified)
    pm = identified_pinocchio_model(model)
    pdata, idx_v = pm.createData(), model.robot.idx_v
    traj = sim.motion(4, 2.0, 50.0)
    expected = identified.predict(traj.q, traj.dq, traj.ddq)
    Q = model.robot.full_configuration(traj.q)
    for k in range(len(traj.q)):
        q, dq, ddq = traj.q[k], traj.dq[k], traj.ddq[k]
        parts = model.parts(q, dq, ddq)
        total = parts.gravity + parts.friction + parts.inertial
        assert np.max(np.abs(total - model.torque(q, dq, ddq))) < 1e-9
        assert np.max(np.abs(total - expected[k])) < 1e-8
        g = pin.computeGeneralizedGravity(pm, pdata, Q[k])[idx_v]
        assert np.max(np.abs(parts.gravity - g)) < 1e-9
        friction = model.fv * dq + model.fs * np.sign(dq) + model.off
        assert np.max(np.abs(parts.friction - friction)) < 1e-12
        assert not np.allclose(parts.inertial, 0)
    rest = model.parts(traj.q[0], np.zeros(7), np.zeros(7))
    assert np.max(np.abs(rest.inertial)) < 1e-9
    assert np.any(model.fv != 0) and np.any(model.fs != 0)   # friction identified
    mon = TorqueMonitor(model, None, RATE)
    _, q, tau = sim.recording(8, 0.1)
    judged = 0
    for qi, ti in zip(q, tau):
        s = mon.step(qi, ti)
        if s is not None:
            p = s.parts
            assert np.max(np.abs(p.gravity + p.friction + p.inertial - s.predicted)) < 1e-9
            judged += 1
    assert judged >= len(q) - 2, (judged, len(q))       # every sample after the first two


def test_push_flagged_within_50ms_and_no_false_flag(sim, monitor_parts):
    model, band = monitor_parts
    pushes = [(10.0, 0.5, (PUSH_N, 0, 0)), (25.0, 0.5, (0, PUSH_N, 0)),
              (40.0, 0.5, (0, 0, -PUSH_N)), (52.0, 0.5, (0, -PUSH_N, 0))]
    t, q, tau = sim.recording(5, 60.0, pushes)
    _, C, _ = TorqueMonitor(model, band, RATE).run(q, tau)
    delays = []
    for start, length, _ in pushes:
        window = np.flatnonzero((t >= start) & (t < start + length) & C)
        assert len(window), f"push at {start} s not flagged"
        delays.append(t[window[0]] - start)
    print("detection delays (ms):", np.round(1e3 * np.array(delays), 1),
          "thresholds (N.m):", np.round(band.threshold, 3))
    assert max(delays) <= 0.050
    # contact-free trajectory (another seed than the band's): never flagged
    _, q, tau = sim.recording(6, 60.0)
    _, C, _ = TorqueMonitor(model, band, RATE).run(q, tau)
    assert not C.any(), f"false contact at {np.flatnonzero(C)[:5] / RATE} s"


def test_band_is_tight_enough_to_matter(sim, monitor_parts):
    """The band is noise-level, not wide: a 5 N push (a quarter of the requirement) is
    flagged too, and the threshold of every joint is under 0.5 N.m."""
    model, band = monitor_parts
    assert np.all(band.threshold < 0.5)
    pushes = [(5.0, 0.5, (5.0, 0, 0)), (12.0, 0.5, (0, 0, 5.0))]
    t, q, tau = sim.recording(7, 20.0, pushes)
    _, C, _ = TorqueMonitor(model, band, RATE).run(q, tau)
    for start, length, _ in pushes:
        assert C[(t >= start) & (t < start + length)].any()
    assert not C[(t < 5.0) | ((t > 6.0) & (t < 12.0)) | (t > 13.0)].any()


def test_one_sample_under_1ms(monitor_parts, sim):
    model, band = monitor_parts
    mon = TorqueMonitor(model, band, RATE)
    _, q, tau = sim.recording(8, 4.0)
    times = np.empty(len(q))
    for i, (qi, ti) in enumerate(zip(q, tau)):
        t0 = time.thread_time()
        mon.step(qi, ti)
        times[i] = time.thread_time() - t0
    # the calling thread's CPU time (a loaded machine's preemptions are not the monitor's
    # cost; make test runs this test under SCHED_IDLE), the median: the typical sample
    print(f"{1e6 * np.median(times):.0f} us per 7-joint sample (median)")
    assert np.median(times) < 1e-3


def test_reset_after_a_gap(sim, monitor_parts):
    """A 1 s hole in the stream: judged across it, the jump looks like a collision;
    after :meth:`TorqueMonitor.reset` (the node resets on a gap) nothing is flagged."""
    model, band = monitor_parts
    t, q, tau = sim.recording(9, 8.0)
    keep = (t < 3.0) | (t >= 4.0)
    _, C, _ = TorqueMonitor(model, band, RATE).run(q[keep], tau[keep])
    assert C.any()
    mon = TorqueMonitor(model, band, RATE)
    flags = []
    for i in np.flatnonzero(keep):
        if t[i] == t[keep][t[keep] >= 4.0][0]:
            mon.reset()
        s = mon.step(q[i], tau[i])
        flags.append(s is not None and s.contact)
    assert not any(flags)


def test_bad_inputs(sim, monitor_parts, tmp_path):
    model, _ = monitor_parts
    with pytest.raises(DataError, match="not a dynamic identification"):
        bad = tmp_path / "cal.yaml"
        bad.write_text("rmse_train_mm: 1.0\n")
        DynamicsModel.from_files(str(bad), PANDA)
    with pytest.raises(DataError, match="joints .a list."):
        bad.write_text("base_parameters: [{name: Izz1, value: 1.0}]\n")
        DynamicsModel.from_files(str(bad), PANDA)
    with pytest.raises(DataError, match="names 'Izz42'"):
        bad.write_text(f"joints: {ARM}\nbase_parameters: [{{name: Izz42, value: 1.0}}]\n")
        DynamicsModel.from_files(str(bad), PANDA)
    with pytest.raises(DataError, match="cannot read"):
        DynamicsModel.from_files(str(tmp_path / "missing.yaml"), PANDA)
    with pytest.raises(DataError, match="N x 7"):
        learn_band(model, np.zeros((10, 6)), np.zeros((10, 6)), RATE)
    with pytest.raises(ModelError, match="cutoff"):
        TorqueMonitor(model, None, RATE, cutoff_hz=200.0)
    band_file = tmp_path / "band.yaml"
    band_file.write_text("sigma: {panda_joint1: 0.1}\n")
    with pytest.raises(DataError, match="panda_joint2"):
        ResidualBand.load(str(band_file), ARM)


def test_contact_rule_at_its_bounds(monitor_parts, tmp_path):
    """``persistence`` samples in a row outside the band flag a contact, one fewer (or a
    run broken by a sample inside) does not; as many inside in a row clear it.  The band's
    threshold is ``k sigma``; a band file's bounds: sigma > 0, k > 0, persistence >= 1,
    k 5 and persistence 3 when not given."""
    model, band = monitor_parts
    rule = ResidualBand(ARM, np.full(7, 0.02), k=4.0, persistence=3)
    assert rule.threshold.tolist() == [0.08] * 7
    mon = TorqueMonitor(model, rule, RATE)
    flags = []
    for out in [True, True, False, True, True, True, False, False, True, False, False,
                False, True]:
        mon._update(out)
        flags.append(mon.contact)
    assert flags == [False, False, False, False, False, True, True, True, True, True, True,
                     False, False]
    one = TorqueMonitor(model, ResidualBand(ARM, np.ones(7), persistence=1), RATE)
    one._update(True)
    assert one.contact
    one._update(False)
    assert not one.contact
    path = tmp_path / "band.yaml"
    sigma = {j: 0.1 * (i + 1) for i, j in enumerate(ARM)}
    path.write_text(yaml.safe_dump({"sigma": sigma}))
    loaded = ResidualBand.load(str(path), ARM)
    assert (loaded.k, loaded.persistence, loaded.joints) == (5.0, 3, ARM)
    assert loaded.sigma.tolist() == [0.1 * (i + 1) for i in range(7)]
    path.write_text(yaml.safe_dump({"sigma": sigma, "k": 0.5, "persistence": 1}))
    assert (ResidualBand.load(str(path), ARM).k, ResidualBand.load(str(path), ARM)
            .persistence) == (0.5, 1)
    for bad in ({"k": 0.0}, {"persistence": 0}, {"sigma": dict(sigma, panda_joint3=0.0)}):
        path.write_text(yaml.safe_dump(dict({"sigma": sigma}, **bad)))
        with pytest.raises(DataError, match="sigma must be > 0, k > 0 and persistence >= 1"):
            ResidualBand.load(str(path), ARM)
    path.write_text("sigma: [1, 2\n")
    with pytest.raises(DataError, match=r"cannot read residual band .* for joints"):
        ResidualBand.load(str(path), ARM)

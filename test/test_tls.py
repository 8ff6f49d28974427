"""Total least squares with a known payload (Nguyen et al. 2023 Eq. 8-10): a simulated UR10 whose
drive gains, torque-sensor gains and inertial parameters are hidden, run unloaded and
loaded with a 4 kg payload of known mass only."""
import numpy as np
import pinocchio as pin
import pytest
from conftest import cli_in_process

from figaroh_ros.errors import SolverError
from figaroh_ros.excitation.fourier import fourier_trajectory
from figaroh_ros.identification.base_parameters import base_parameters
from figaroh_ros.identification.parameters import PIN_TO_STD, DriveOptions, parameter_layout
from figaroh_ros.identification.regressor import standard_regressor
from figaroh_ros.identification.payload_feasibility import (
    PayloadBounds, PayloadStructure, constrain_payload
)
from figaroh_ros.identification.tls import (
    Experiment, payload_split, payload_structure, refine, total_least_squares
)
from figaroh_ros.sim.dynamics import perturbed_parameters


@pytest.fixture(scope="module")
def experiments(ur10):
    payload = pin.Inertia(4.0, np.array([0.02, -0.01, 0.06]),
                          np.diag([0.012, 0.015, 0.008])).toDynamicParameters()[PIN_TO_STD]
    return _experiments(ur10, payload, 0.005, 30.0)


def _experiments(ur10, payload, noise, seconds, seed=0, loaded_seconds=None, amplitude=0.6):
    """Unloaded and loaded runs of a UR10 with hidden gains, the loaded one carrying the
    standard vector ``payload`` on the last body (``loaded_seconds`` long, default
    ``seconds``, joint ``amplitude`` rad); readings with ``noise`` x their peak."""
    drive = DriveOptions(rotor_inertia=True, torque_offset=False)
    layout = parameter_layout(ur10, drive)
    phi = perturbed_parameters(ur10, layout, seed=11)
    n = ur10.n_joints
    rng = np.random.default_rng(12)
    g_true = rng.uniform(5.0, 15.0, n)          # N.m per A (motor constant x gear ratio)
    K_true = rng.uniform(0.9, 1.1, n)           # sensor gain
    last = layout.inertial_cols[max(layout.inertial_cols)]
    tu = fourier_trajectory(ur10, seconds, 100, harmonics=5, amplitude=0.6, seed=13 + seed)
    tl = fourier_trajectory(ur10, loaded_seconds or seconds, 100, harmonics=5,
                            amplitude=amplitude, seed=14 + seed)
    Wu = standard_regressor(ur10, layout, drive, tu.q, tu.dq, tu.ddq)
    Wl = standard_regressor(ur10, layout, drive, tl.q, tl.dq, tl.ddq)
    bp = base_parameters(np.vstack([Wu, Wl]), layout.names)
    tau_u = Wu @ phi
    tau_l = Wl @ phi + Wl[:, last] @ payload
    rows_u = np.repeat(np.arange(n), tu.q.shape[0])
    rows_l = np.repeat(np.arange(n), tl.q.shape[0])

    def measure(tau, rows, seed):
        r = np.random.default_rng(seed)
        i = tau / g_true[rows]
        s = tau / K_true[rows]
        # noise: a fraction of each joint's peak current / sensor reading
        si = np.array([noise * np.abs(i[rows == j]).max() for j in range(n)])[rows]
        ss = np.array([noise * np.abs(s[rows == j]).max() for j in range(n)])[rows]
        return i + si * r.normal(size=i.shape), s + ss * r.normal(size=s.shape)
    iu, su = measure(tau_u, rows_u, 15 + seed)
    il, sl = measure(tau_l, rows_l, 16 + seed)
    names = [layout.names[c] for c in last]
    k, unknown = payload_split(Wl[:, last], names)
    return dict(bp=bp, Wu=Wu, Wl=Wl, rows_u=rows_u, rows_l=rows_l, iu=iu, su=su, il=il,
                sl=sl, last=last, k=k, unknown=unknown, payload=payload, g=g_true,
                K=K_true, phi=phi, n=n, names=names)


def _solve(E, currents=True, sensors=True, mass=None, known="m", refined=True):
    U, L, Wp, wk, names = _system(E, currents, sensors, mass, known)
    res = total_least_squares(U, L, Wp, wk, E["n"], names)
    return refine(U, L, Wp, wk, E["n"], res) if refined else res


def _system(E, currents=True, sensors=True, mass=None, known="m"):
    """``known``: "m" (only the payload's mass is known) or "all" (a calibration mass of
    known geometry: all ten parameters known)."""
    bp, last = E["bp"], E["last"]
    U = Experiment(bp.base_regressor(E["Wu"]), E["rows_u"], E["iu"] if currents else None,
                   E["su"] if sensors else None)
    L = Experiment(bp.base_regressor(E["Wl"]), E["rows_l"], E["il"] if currents else None,
                   E["sl"] if sensors else None)
    Wp = E["Wl"][:, last]
    scale = 1.0 if mass is None else mass / E["payload"][0]
    if known == "all":
        return U, L, Wp[:, []], Wp @ (scale * E["payload"]), []
    return (U, L, Wp[:, E["unknown"]], Wp[:, E["k"]] * scale * E["payload"][0],
            [E["names"][i] for i in E["unknown"]])


def test_tls_recovers_hidden_gains_within_one_percent(experiments):
    E = experiments
    res = _solve(E, known="all")
    assert np.all(np.abs(res.drive_gains / E["g"] - 1) < 0.01), res.drive_gains / E["g"]
    assert np.all(np.abs(res.sensor_gains / E["K"] - 1) < 0.01), res.sensor_gains / E["K"]
    # each gain's standard deviation describes its error (z-scores of the hidden gains)
    z = np.r_[(res.drive_gains - E["g"]) / res.drive_gains_std,
              (res.sensor_gains - E["K"]) / res.sensor_gains_std]
    print("gain z-scores", np.round(z, 2))
    assert np.all(np.abs(z) < 4.5) and np.mean(np.abs(z) < 3) >= 0.8, z
    assert np.all(res.drive_gains_std < 0.01 * np.abs(res.drive_gains))
    # and the robot's base parameters with them
    truth = E["bp"].from_standard(E["phi"])
    big = np.abs(truth) > 0.05 * np.abs(truth).max()
    assert np.all(np.abs(res.phi_b[big] / truth[big] - 1) < 0.05)
    # a well-separated null space: the smallest singular value is alone
    assert res.singular_values[0] > 3 * res.singular_values[1]
    # TLS alone (Eq. 10) is biased where the payload hardly loads a joint (the regressor
    # columns are exact, only the measurements are noisy); the refinement is not
    tls = _solve(E, known="all", refined=False)
    e_tls = np.abs(tls.drive_gains / E["g"] - 1)
    e_ref = np.abs(res.drive_gains / E["g"] - 1)
    assert np.median(e_tls) < 0.01 and e_ref.max() < e_tls.max()


@pytest.fixture(scope="module")
def mass_only(experiments):
    return _solve(experiments, known="m")


def test_tls_payload_of_known_mass_only(experiments, mass_only):
    """Only the mass known: the payload's centre of mass and inertia are estimated too."""
    E, res = experiments, mass_only
    assert np.all(np.abs(res.drive_gains / E["g"] - 1) < 0.01), res.drive_gains / E["g"]
    assert np.all(np.abs(res.sensor_gains / E["K"] - 1) < 0.01), res.sensor_gains / E["K"]
    assert len(res.payload) == len(E["unknown"]) == 9


def test_tls_currents_only_and_wrong_mass_scales_the_gains(experiments):
    E = experiments
    res = _solve(E, sensors=False, known="all")
    assert res.sensor_gains is None
    assert np.all(np.abs(res.drive_gains / E["g"] - 1) < 0.01)
    # the known mass sets the scale: a payload weighed 10 % heavy gives 10 % larger gains
    heavy = _solve(E, sensors=False, mass=1.1 * E["payload"][0], known="all")
    assert np.allclose(heavy.drive_gains / res.drive_gains, 1.1, rtol=2e-3)


def test_tls_refuses_experiments_without_measurements(experiments):
    E = experiments
    with pytest.raises(SolverError, match="neither motor currents"):
        _solve(E, currents=False, sensors=False)


# the object that holds the payload: a box around it, joint frame (m)
BOX = PayloadBounds([-0.06, -0.08, 0.0], [0.08, 0.06, 0.14])


@pytest.fixture(scope="module")
def poor(ur10):
    """A short, weak loaded run (3 s, 0.3 rad) with readings at 3 % of their peak: per
    seed, the hidden truth and the unconstrained and constrained results."""
    payload = pin.Inertia(4.0, np.array([0.02, -0.01, 0.06]),
                          np.diag([0.012, 0.015, 0.008])).toDynamicParameters()[PIN_TO_STD]
    out = []
    for seed in range(3):
        E = _experiments(ur10, payload, 0.03, 10.0, seed=10 * seed, loaded_seconds=3.0,
                         amplitude=0.3)
        res = _solve(E, known="m")
        _, unknown, deps = payload_structure(E["Wl"][:, E["last"]], E["names"])
        assert unknown == E["unknown"]
        out.append((E, res, constrain_payload(res, PayloadStructure({0: 4.0}, unknown, deps),
                                              BOX)))
    return out


def _gain_error(E, res):
    """RMS relative error of every drive and sensor gain."""
    return float(np.sqrt(np.mean(np.r_[res.drive_gains / E["g"] - 1,
                                       res.sensor_gains / E["K"] - 1] ** 2)))


def test_constrained_payload_is_realisable_and_no_farther_from_the_hidden_truth(poor):
    """Noise and a poor loaded run leave the TLS payload's inertia non-realisable; the
    constrained payload is realisable with its centre of mass in the box, the whole
    solution no farther from the truth in the information metric (the projection's
    guarantee) and the gains, over the seeds, at least as close to the hidden ones."""
    e_free, e_phys = [], []
    for E, res, c in poor:
        truth = np.r_[E["bp"].from_standard(E["phi"]), E["payload"][E["unknown"]],
                      1 / E["g"], 1 / E["K"]]
        x = lambda r: np.r_[r.phi_b, r.payload, 1 / r.drive_gains, 1 / r.sensor_gains]
        H = res.information
        d0, d1 = x(res) - truth, x(c.result) - truth
        e_free.append(_gain_error(E, res))
        e_phys.append(_gain_error(E, c.result))
        print(f"min eig {c.identified_verdict.pseudo_inertia_min_eigenvalue:.3g} -> "
              f"{c.verdict.pseudo_inertia_min_eigenvalue:.3g} kg.m^2, shift {c.shift:.2f} "
              f"std, H-distance {np.sqrt(d0 @ H @ d0):.3f} -> {np.sqrt(d1 @ H @ d1):.3f}, "
              f"gain RMS error {e_free[-1]:.3%} -> {e_phys[-1]:.3%}")
        assert not c.identified_verdict.realisable() and c.active
        assert c.verdict.realisable(1e-7) and c.verdict.com_outside_box <= 1e-7
        assert d1 @ H @ d1 <= d0 @ H @ d0
        # the payload moved by what its noise explains, and the gains by less than their
        # own standard deviations
        assert c.shift < 4.0
        assert np.all(np.abs(c.result.drive_gains - res.drive_gains) < res.drive_gains_std)
    print("mean gain RMS error", np.mean(e_free), "->", np.mean(e_phys))
    assert np.mean(e_phys) <= np.mean(e_free)


def test_tls_payload_moves_within_its_noise_and_a_realisable_one_stays(experiments,
                                                                      mass_only):
    """30 s of loaded motion at 0.5 % noise: the payload's inertia, the least excited of
    its parameters, comes out slightly non-realisable; the constraint moves it by less
    than one standard deviation and the gains stay within 1 % of the hidden ones.  The
    realisable result, constrained again, comes back bit for bit."""
    E, res = experiments, mass_only
    _, unknown, deps = payload_structure(E["Wl"][:, E["last"]], E["names"])
    s = PayloadStructure({0: 4.0}, unknown, deps)
    c = constrain_payload(res, s, BOX)
    print(f"min eig {c.identified_verdict.pseudo_inertia_min_eigenvalue:.3g} kg.m^2, shift "
          f"{c.shift:.3f} std, gain RMS error {_gain_error(E, res):.4%} -> "
          f"{_gain_error(E, c.result):.4%}")
    assert c.shift < 1.0 and c.verdict.realisable()
    assert np.all(np.abs(c.result.drive_gains / E["g"] - 1) < 0.01)
    assert np.all(np.abs(c.result.sensor_gains / E["K"] - 1) < 0.01)
    again = constrain_payload(c.result, s, BOX)
    assert again.result is c.result and not again.active and again.shift == 0.0
    assert np.array_equal(again.payload[1:], c.result.payload)


def _bag(folder, joints, t, q, currents, sensors, drop_sensor=None):
    """One experiment as a rosbag2 bag: /joint_states, /motor_currents and
    /joint_torques (JointState, the readings in ``effort``), same stamps (sample
    ``drop_sensor`` of /joint_torques lost)."""
    from figaroh_ros.io.bags import typestore
    from figaroh_ros.io.segmented_bag import SegmentedBagWriter
    store = typestore()
    T = store.types
    JS = "sensor_msgs/msg/JointState"
    w = SegmentedBagWriter(str(folder), {"/joint_states": JS, "/motor_currents": JS,
                                         "/joint_torques": JS}, store, "mcap", 0.0)
    for k in range(len(t)):
        ns = 10**18 + int(round(t[k] * 1e9))
        hdr = T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](
            sec=ns // 10**9, nanosec=ns % 10**9), frame_id="")
        for topic, pos, eff in (("/joint_states", q[k], np.zeros(0)),
                                ("/motor_currents", np.zeros(0), currents[k]),
                                ("/joint_torques", np.zeros(0), sensors[k])):
            if topic == "/joint_torques" and k == drop_sensor:
                continue
            msg = T[JS](header=hdr, name=joints, position=pos, velocity=np.zeros(0),
                        effort=eff)
            w.write(topic, ns, store.serialize_cdr(msg, JS))
    w.close()


@pytest.mark.parametrize("fmt", ["csv_table", "bag"])
def test_cli_identify_gains_from_two_recordings(tmp_path, ur10, fmt):
    """Two recordings (unloaded, loaded with a 4 kg payload of known mass and centre of
    mass), each with joint positions, motor currents and torque-sensor readings, as CSV
    tables or as bags: the CLI recovers the hidden gains within 1 %."""
    import yaml
    from conftest import UR10_JOINTS

    from figaroh_ros.model.robot import example_robot_urdf
    from figaroh_ros.sim.dynamics import measured_torques
    drive = DriveOptions(rotor_inertia=True, torque_offset=False)
    layout = parameter_layout(ur10, drive)
    phi = perturbed_parameters(ur10, layout, seed=71)
    rng = np.random.default_rng(72)
    g = rng.uniform(5.0, 15.0, 6)
    K = rng.uniform(0.9, 1.1, 6)
    last = layout.inertial_cols[max(layout.inertial_cols)]
    com = np.array([0.01, 0.02, 0.05])
    payload = pin.Inertia(4.0, com, np.diag([0.01, 0.012, 0.006])).toDynamicParameters()[PIN_TO_STD]
    for name, seed, load in (("unloaded", 73, False), ("loaded", 74, True)):
        tr = fourier_trajectory(ur10, 40.0, 200, harmonics=5, base_freq_hz=0.1,
                                amplitude=0.6, seed=seed)
        p = phi.copy()
        if load:
            p[last] += payload
        tau = measured_torques(ur10, layout, drive, p, tr, 0.0)
        i = tau / g + 0.005 * np.abs(tau / g).max(axis=0) * rng.normal(size=tau.shape)
        s = tau / K + 0.005 * np.abs(tau / K).max(axis=0) * rng.normal(size=tau.shape)
        d = tmp_path / name
        if fmt == "bag":
            _bag(d, UR10_JOINTS, tr.t, tr.q, i, s)
            if load:        # the lossy config replaces the loaded recording only
                _bag(tmp_path / f"{name}_lossy", UR10_JOINTS, tr.t, tr.q, i, s,
                     drop_sensor=2000)
            continue
        d.mkdir()
        header = (["t"] + [f"{j}_position" for j in UR10_JOINTS]
                  + [f"{j}_current" for j in UR10_JOINTS] + [f"{j}_sensor" for j in UR10_JOINTS])
        np.savetxt(d / "log.csv", np.column_stack([tr.t, tr.q, i, s]), delimiter=",",
                   header=",".join(header), comments="")
    cfg = {"robot": {"name": "ur10", "urdf": example_robot_urdf("ur_description/urdf/ur10_robot.urdf"),
                     "joints": UR10_JOINTS},
           "model": {"rotor_inertia": True, "torque_offset": False},
           "data": {"format": "csv_table", "table": "log.csv", "time_column": "t"},
           "processing": {"position_cutoff_hz": 10.0, "decimation": 4, "min_velocity": 0.02},
           "tls": {"unloaded": "unloaded", "loaded": "loaded", "current_column": "{joint}_current",
                   "sensor_column": "{joint}_sensor", "payload_mass": 4.0,
                   "payload_com": com.tolist(),
                   "payload_box": {"lower": [-0.06, -0.05, 0.0], "upper": [0.08, 0.09, 0.12]}}}
    if fmt == "bag":
        cfg["data"] = {"format": "bag", "events_topic": ""}
        cfg["tls"].update(current_topic="/motor_currents", sensor_topic="/joint_torques")
    (tmp_path / "gains.yaml").write_text(yaml.safe_dump(cfg))
    out = tmp_path / "out"
    proc = cli_in_process("identify-gains", tmp_path / "gains.yaml", "--out", out)
    assert proc.returncode == 0, proc.stderr
    res = yaml.safe_load((out / "result.yaml").read_text())
    got_g = np.array([res["drive_gains"][j] for j in UR10_JOINTS])
    got_K = np.array([res["sensor_gains"][j] for j in UR10_JOINTS])
    assert np.all(np.abs(got_g / g - 1) < 0.01), got_g / g
    assert np.all(np.abs(got_K / K - 1) < 0.01), got_K / K
    # the payload's verdict, as identified and as reported, and each gain's std
    feas = res["payload_feasibility"]
    assert feas["box"] == cfg["tls"]["payload_box"] and feas["physical_payload"] is True
    assert feas["constrained"]["verdict"]["realisable"] is True
    assert feas["constrained"]["verdict"]["com_outside_box"] == 0.0
    # well-excited, noise-level data: the identified payload is realisable as it is, the
    # constraint stays inactive and no unconstrained copy is reported
    assert feas["constraint_active"] is False and "unconstrained" not in feas
    assert feas["identified"]["com"] == pytest.approx(com.tolist())
    std = np.array([res["drive_gains_std"][j] for j in UR10_JOINTS])
    assert np.all((std > 0) & (std < 0.01 * got_g))
    if fmt == "bag":
        # one sensor message lost: the two measurements no longer share their samples
        lossy = dict(cfg, tls=dict(cfg["tls"], loaded="loaded_lossy"))
        (tmp_path / "lossy.yaml").write_text(yaml.safe_dump(lossy))
        proc = cli_in_process("identify-gains", tmp_path / "lossy.yaml", "--out",
                              tmp_path / "x")
        assert proc.returncode == 2 and "same joint states" in proc.stderr, proc.stderr
        assert not (tmp_path / "x").exists()
    # a config without any measured column is refused, naming the section
    for key in ("column", "topic"):
        cfg["tls"][f"current_{key}"] = None
        cfg["tls"].pop(f"sensor_{key}", None)
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(cfg))
    proc = cli_in_process("identify-gains", tmp_path / "bad.yaml")
    assert proc.returncode == 2 and "tls" in proc.stderr


def test_one_pass_over_a_bag_reads_each_topic_as_its_own_pass(tmp_path):
    """``read_bag_samples_each`` (the gains' currents and sensor torques in one pass):
    each topic's samples exactly those of a pass for that topic alone, each paired with
    the joint states on its own (a lost sensor message loses one sample of that topic
    only)."""
    from conftest import UR10_JOINTS

    from figaroh_ros.io.bags import read_bag_samples, read_bag_samples_each
    rng = np.random.default_rng(5)
    t = np.arange(300) / 200.0
    _bag(tmp_path / "b", UR10_JOINTS, t, *(rng.normal(size=(300, 6)) for _ in range(3)),
         drop_sensor=100)
    bag, topics = [str(tmp_path / "b")], ["/motor_currents", "/joint_torques"]
    each = read_bag_samples_each(bag, UR10_JOINTS, "/joint_states", topics)
    assert list(each) == topics
    for topic in topics:
        alone = read_bag_samples(bag, UR10_JOINTS, "/joint_states", topic)
        assert all(np.array_equal(a, b) for a, b in zip(each[topic], alone)), topic
    assert [len(each[k][0]) for k in topics] == [300, 299]

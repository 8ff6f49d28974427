"""Fleet processing (``figaroh-ros batch identify``): 20 simulated bags of two robots (ten
days each) on a dask.distributed LocalCluster.  Robot B's joint-1 viscous friction grows
by 60 % from day 6 on: the drift report must say it moved and nothing else did, and the
table must hold each robot's hidden parameters within their uncertainty."""
import os

import numpy as np
import pytest
import yaml
from conftest import ROOT

from figaroh_ros.cli.main import main as cli_main
from figaroh_ros.errors import DataError
from figaroh_ros.excitation.fourier import fourier_trajectory
from figaroh_ros.identification.parameters import DriveOptions, parameter_layout
from figaroh_ros.io.bags import typestore
from figaroh_ros.io.segmented_bag import SegmentedBagWriter
from figaroh_ros.model.robot import load_urdf_model
from figaroh_ros.sim.dynamics import measured_torques, perturbed_parameters
from figaroh_ros.tasks import batch

URDF = os.path.join(ROOT, "test", "data", "two_dof.urdf")
JOINTS = ["joint1", "joint2"]
DRIVE = DriveOptions(viscous_friction=True, coulomb_friction=True, rotor_inertia=False,
                     torque_offset=False)
NOISE = 0.05
DAY = 86400.0
START = 1.7e9                    # 2023-11-14, the first day's first stamp (s)


def _write_bag(folder, t0, traj, tau):
    store = typestore()
    T, JS = store.types, "sensor_msgs/msg/JointState"
    w = SegmentedBagWriter(str(folder), {"/joint_states": JS, "/joint_torques": JS}, store,
                           "mcap", 0.0)
    for k in range(len(traj.t)):
        ns = int(round((t0 + traj.t[k]) * 1e9))
        hdr = T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](
            sec=ns // 10**9, nanosec=ns % 10**9), frame_id="")
        for topic, pos, eff in (("/joint_states", traj.q[k], np.zeros(0)),
                                ("/joint_torques", np.zeros(0), tau[k])):
            msg = T[JS](header=hdr, name=JOINTS, position=pos, velocity=np.zeros(0),
                        effort=eff)
            w.write(topic, ns, store.serialize_cdr(msg, JS))
    w.close()


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    """tmp/robot_a/day00..day09 and tmp/robot_b/day00..day09, and the hidden truth."""
    root = tmp_path_factory.mktemp("fleet")
    robot = load_urdf_model(URDF, JOINTS)
    layout = parameter_layout(robot, DRIVE)
    fv1 = layout.names.index("fv1")
    truth = {}
    for r, name in enumerate(("robot_a", "robot_b")):
        phi = perturbed_parameters(robot, layout, seed=10 + r)
        truth[name] = (phi, phi.copy())
        for day in range(10):
            p = phi.copy()
            if name == "robot_b" and day >= 5:
                p[fv1] *= 1.6
                truth[name] = (phi, p)
            traj = fourier_trajectory(robot, 20.0, 100.0, harmonics=4, base_freq_hz=0.1,
                                      amplitude=0.8, seed=100 * r + day)
            tau = measured_torques(robot, layout, DRIVE, p, traj, NOISE, seed=7 + day)
            _write_bag(root / name / f"day{day:02d}", START + day * DAY, traj, tau)
    config = root / "identify.yaml"
    config.write_text(yaml.safe_dump({
        "robot": {"name": "two_dof", "urdf": URDF, "joints": JOINTS},
        "model": {"viscous_friction": True, "coulomb_friction": True,
                  "rotor_inertia": False, "torque_offset": False},
        "data": {"format": "bag", "path": ".", "joint_topic": "/joint_states",
                 "torque_topic": "/joint_torques", "events_topic": ""},
        "estimation": {"method": "wls", "validation_fraction": 0.0}}))
    return root, str(config), truth, layout


@pytest.fixture(scope="module")
def on_cluster(fleet, tmp_path_factory):
    from dask.distributed import LocalCluster
    root, config, _, _ = fleet
    out = str(tmp_path_factory.mktemp("batch") / "out")
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=":0") as cluster:
        outcome = batch.run(config, [str(root / "robot_a"), str(root / "robot_b")],
                            out=out, scheduler=cluster.scheduler_address)
    return outcome


def test_twenty_bags_of_two_robots_on_a_local_cluster(on_cluster, fleet):
    s, paths = on_cluster.summary, on_cluster.paths
    assert s["recordings"] == s["identified"] == 20 and s["failed"] == 0
    assert s["robots"] == ["robot_a", "robot_b"]
    with open(paths["table"]) as f:
        header, *lines = [line.rstrip("\n").split(",") for line in f]
    assert header[:5] == ["robot", "date", "recording", "model_sha256", "rmse"]
    assert len(lines) == 20 and len({line[3] for line in lines}) == 1   # one model
    assert lines[0][1].startswith("2023-11-14") and lines[9][1].startswith("2023-11-23")
    rmse = np.array([float(line[4]) for line in lines])
    assert np.all(rmse < 2 * NOISE) and np.all(rmse > 0.5 * NOISE), rmse


def test_drift_report_flags_the_changed_friction_only(on_cluster):
    s = on_cluster.summary
    assert s["moved"] == ["robot_b: fv1"], s["moved"]
    report = yaml.safe_load(open(on_cluster.paths["drift"]))
    fv1 = next(d for d in report["parameters"]
               if d["robot"] == "robot_b" and d["parameter"] == "fv1")
    assert len(fv1["beyond"]) >= 4 and fv1["z_last"] > 10
    assert [os.path.basename(p) for p in on_cluster.paths["plots"]] == ["drift_robot_b.png"]
    assert os.path.getsize(on_cluster.paths["plots"][0]) > 1000


def test_identified_values_match_each_robots_hidden_truth(on_cluster, fleet):
    """The friction of the last day, per robot, within 4 standard deviations of the
    truth that robot had that day."""
    _, _, truth, layout = fleet
    with open(on_cluster.paths["table"]) as f:
        header, *lines = [line.rstrip("\n").split(",") for line in f]
    for name in ("robot_a", "robot_b"):
        last = [line for line in lines if line[0] == name][-1]
        for p in ("fv1", "fv2", "fs1", "fs2"):
            v, sd = float(last[header.index(p)]), float(last[header.index(p + "_std")])
            true = truth[name][1][layout.names.index(p)]
            assert abs(v - true) <= 4 * sd + 1e-3, (name, p, v, sd, true)


def test_local_pool_and_bad_inputs(fleet, tmp_path, capsys):
    root, config, _, _ = fleet
    with pytest.raises(DataError, match="no rosbag2 bag"):
        batch.recordings([str(tmp_path)])
    code = cli_main(["batch", "identify", config, str(root / "robot_a" / "day00"),
                     str(root / "robot_a" / "day01"), "--out", str(tmp_path / "o"),
                     "--workers", "2"])
    out = capsys.readouterr().out
    assert code == 0 and "2 of 2 recordings used (identify) (1 robots)" in out, out
    assert cli_main(["batch", "identify", config, str(tmp_path / "absent"), "--out",
                     str(tmp_path / "p")]) == 2
    assert not os.path.exists(tmp_path / "p")


def test_batch_calibrate_flags_the_joint_that_moved(tmp_path, capsys):
    """``batch calibrate``: two UR10s with their own hidden placement errors, three days
    each; robot B's elbow origin shifts 2 mm after day 1 (a knock).  The table holds six
    calibrations at the noise floor on held-out postures, and the drift report names
    robot B's parameters only."""
    from test_gate import measure, random_postures, truth_model, write_bag, write_config

    from figaroh_ros.tasks.batch import DRIFT_Z
    fleet = tmp_path / "fleet"
    for robot, seed in (("robot_a", 31), ("robot_b", 32)):
        km, x, rng = truth_model(seed)
        for day in range(3):
            xd = x.copy()
            if robot == "robot_b" and day > 0:
                xd[km.groups["elbow_joint"].start] += 2e-3
            data = measure(km, random_postures(km, 40, rng), xd, rng)
            (fleet / robot).mkdir(parents=True, exist_ok=True)
            write_bag(fleet / robot / f"day{day}", km, data)
    config = write_config(str(tmp_path))
    code = cli_main(["batch", "calibrate", config, str(fleet), "--out", str(tmp_path / "o"),
                     "--workers", "2"])
    out = capsys.readouterr().out
    assert code == 0 and "6 of 6 recordings used (calibrate) (2 robots)" in out, out
    with open(tmp_path / "o" / "batch.csv") as f:
        rows = f.read().splitlines()
    assert len(rows) == 7 and len({r.split(",")[3] for r in rows[1:]}) == 1   # one model
    rmse = [float(r.split(",")[4]) for r in rows[1:]]
    assert max(rmse) < 0.5e-3, rmse                    # held out, 0.1 mm / 0.5 mrad noise
    with open(tmp_path / "o" / "drift.yaml") as f:
        report = yaml.safe_load(f)
    moved = {(d["robot"], d["parameter"]) for d in report["parameters"] if d["moved"]}
    assert moved and {r for r, _ in moved} == {"robot_b"}, moved
    assert report["z_threshold"] == DRIFT_Z
    assert any(p.endswith("elbow_joint") or "elbow" in p for _, p in moved), moved

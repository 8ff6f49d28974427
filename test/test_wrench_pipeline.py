"""Force-plate identification through the CLI and the pipeline: a UR10 bolted on a plate
and a TALOS standing on one foot on a plate, their true inertias hidden; the recording holds
joint positions and the plate wrench (plate frame), nothing else."""

import numpy as np
import pinocchio as pin
import pytest
import yaml
from conftest import UR10_JOINTS, cli_identify

from figaroh_ros.config.identification import load_config
from figaroh_ros.errors import ConfigError
from figaroh_ros.excitation.fourier import fourier_trajectory
from figaroh_ros.identification.parameters import parameter_layout
from figaroh_ros.identification.wrench import (
    COMPONENTS, base_motion, contact_frame, contact_wrench_regressor, plate_to_world
)
from figaroh_ros.io.recording import read_recording
from figaroh_ros.model.robot import example_robot_urdf
from figaroh_ros.sim.dynamics import perturbed_parameters
from figaroh_ros.tasks.identify import drive_options, identify_config, robot_from_config

RATE = 200.0
NOISE = np.array([1.0, 1.0, 2.0, 0.3, 0.3, 0.2])


def _record(tmp_path, name, urdf, joints, contact, plate_xyz, plate_rpy, duration,
            seed, amplitude=0.6, base_freq=0.1, extra=None):
    cfg = {
        "robot": {"name": name, "urdf": urdf, "joints": joints, "floating_base": True},
        "measurements": {"kind": "wrench", "plate_xyz": plate_xyz, "plate_rpy": plate_rpy,
                         **({"contact_frame": contact} if contact else {})},
        "model": {"viscous_friction": False, "coulomb_friction": False,
                  "rotor_inertia": False, "torque_offset": False},
        "data": {"format": "csv_table", "path": str(tmp_path), "table": "log.csv",
                 "time_column": "t"},
        "processing": {"position_cutoff_hz": 10.0, "decimation": 4},
        "estimation": {"method": "wls", "validation_fraction": 0.25},
        "output": {"plots": False},
        **(extra or {}),
    }
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    full = load_config(str(path))
    robot = robot_from_config(full)
    layout = parameter_layout(robot, drive_options(full))
    phi = perturbed_parameters(robot, layout, seed=seed)
    tr = fourier_trajectory(robot, duration, RATE, harmonics=5, base_freq_hz=base_freq,
                            amplitude=amplitude, seed=seed + 1)
    frame = contact_frame(robot, full.measurements.contact_frame)
    Q, V, A = base_motion(robot, tr.q, frame, 1.0 / RATE)
    V[:, robot.idx_v], A[:, robot.idx_v] = tr.dq, tr.ddq
    W = contact_wrench_regressor(robot, layout, Q, V, A)
    world = (W @ phi).reshape(6, -1).T
    plate = pin.SE3(pin.rpy.rpyToMatrix(*plate_rpy), np.array(plate_xyz, float))
    rng = np.random.default_rng(seed + 2)
    reading = plate_to_world(world, plate.inverse()) + NOISE * rng.normal(size=world.shape)
    header = ["t"] + [f"{j}_position" for j in joints] + list(COMPONENTS)
    np.savetxt(tmp_path / "log.csv", np.column_stack([tr.t, tr.q, reading]), delimiter=",",
               header=",".join(header), comments="")
    return path, full, robot, layout, phi


def _floor(result, phi):
    """RMS of the true model on the held-out window through the same processing."""
    obs = result.held_out
    err = obs.Y - obs.Wb @ result.base.from_standard(phi)
    return np.array([np.sqrt(np.mean(err[obs.row_joint == k] ** 2)) for k in range(6)])


def test_cli_identifies_an_arm_on_a_force_plate(tmp_path):
    urdf = example_robot_urdf("ur_description/urdf/ur10_robot.urdf")
    path, full, robot, layout, phi = _record(tmp_path, "ur10_plate", urdf, UR10_JOINTS, None,
                                             [0.3, -0.2, -0.05], [0.0, 0.0, 0.8], 60.0, 51)
    _, res = cli_identify(path, tmp_path / "out", in_process=True)
    assert list(res["rmse"]) == list(COMPONENTS)
    result = identify_config(full)
    floor = _floor(result, phi)
    val = np.array([res["validation_rmse"][c] for c in COMPONENTS])
    assert np.all(val <= 1.1 * floor), val / floor
    nom = np.array([res["nominal_validation_rmse"][c] for c in COMPONENTS])
    assert np.all(nom > 3 * val)


def test_humanoid_on_one_foot(tmp_path):
    """TALOS on its left sole: the base pose follows from the joint positions."""
    urdf = example_robot_urdf("talos_data/robots/talos_reduced.urdf")
    joints = ([f"leg_{s}_{i}_joint" for s in ("left", "right") for i in range(1, 7)]
              + ["torso_1_joint", "torso_2_joint"]
              + [f"arm_{s}_{i}_joint" for s in ("left", "right") for i in range(1, 5)])
    path, full, robot, layout, phi = _record(
        tmp_path, "talos_plate", urdf, joints, "left_sole_link", [0.0, 0.0, -0.01],
        [0.0, 0.0, 0.0], 60.0, 61, amplitude=0.15, base_freq=0.1,
        extra={"physical": {"method": "lmi"}})
    result = identify_config(full)
    floor = _floor(result, phi)
    assert np.all(result.validation_rmse <= 1.1 * floor), result.validation_rmse / floor
    assert result.physical.consistent
    assert np.all(result.physical_validation_rmse <= 1.15 * floor)


def test_wrench_config_errors(tmp_path):
    base = {"robot": {"name": "x", "urdf": example_robot_urdf("ur_description/urdf/ur10_robot.urdf"),
                      "joints": UR10_JOINTS},
            "measurements": {"kind": "wrench"}, "model": {},
            "data": {"format": "csv_table", "path": str(tmp_path), "table": "log.csv",
                     "time_column": "t"}}
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump(base))
    with pytest.raises(ConfigError, match="floating_base"):
        load_config(str(p))
    base["robot"]["floating_base"] = True
    base["measurements"]["wrench_columns"] = ["fx", "fy"]
    p.write_text(yaml.safe_dump(base))
    with pytest.raises(ConfigError, match="wrench_columns"):
        load_config(str(p))
    base["measurements"].pop("wrench_columns")
    base["data"] = {"format": "csv_pair", "path": str(tmp_path), "positions": "q.csv",
                    "torques": "w.csv", "sample_time": 0.01}
    p.write_text(yaml.safe_dump(base))
    with pytest.raises(ConfigError, match="data.format"):
        load_config(str(p))


def _to_bag(tmp_path, joints, t, q, reading, events=None):
    """The recording as a rosbag2 bag: joint states at even samples, the plate's
    WrenchStamped at odd ones (two devices, two sets of stamps)."""
    from figaroh_ros.io.bags import typestore
    from figaroh_ros.io.segmented_bag import SegmentedBagWriter
    store = typestore()
    T = store.types
    w = SegmentedBagWriter(str(tmp_path / "bag"),
                           {"/joint_states": "sensor_msgs/msg/JointState",
                            "/force_plate/wrench": "geometry_msgs/msg/WrenchStamped"},
                           store, "mcap", 0.0)
    t0 = 10**18
    for k in range(len(t)):
        ns = t0 + int(round(t[k] * 1e9))
        hdr = T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](
            sec=ns // 10**9, nanosec=ns % 10**9), frame_id="force_plate")
        if k % 2 == 0:
            msg = T["sensor_msgs/msg/JointState"](header=hdr, name=joints, position=q[k],
                                                  velocity=np.zeros(0), effort=np.zeros(0))
            w.write("/joint_states", ns, store.serialize_cdr(msg, "sensor_msgs/msg/JointState"))
        else:
            V3 = T["geometry_msgs/msg/Vector3"]
            msg = T["geometry_msgs/msg/WrenchStamped"](header=hdr, wrench=T[
                "geometry_msgs/msg/Wrench"](force=V3(*reading[k, :3]), torque=V3(*reading[k, 3:])))
            w.write("/force_plate/wrench", ns,
                    store.serialize_cdr(msg, "geometry_msgs/msg/WrenchStamped"))
    w.close()
    return str(tmp_path / "bag")


def test_force_plate_identification_from_a_bag(tmp_path):
    """The UR10 on its plate recorded in a rosbag2 bag (joint states and the plate's
    WrenchStamped on their own stamps, 200 Hz each, interleaved): ``identify --bag``
    predicts the held-out wrench at the noise floor of the same bag, as from the CSV."""
    urdf = example_robot_urdf("ur_description/urdf/ur10_robot.urdf")
    global RATE
    rate, RATE = RATE, 400.0                     # two devices at 200 Hz each
    try:
        path, full, robot, layout, phi = _record(
            tmp_path, "ur10_plate", urdf, UR10_JOINTS, None, [0.3, -0.2, -0.05],
            [0.0, 0.0, 0.8], 60.0, 51)
    finally:
        RATE = rate
    csv = read_recording(full, robot)
    floor_csv = _floor(identify_config(full), phi)
    rec = np.loadtxt(tmp_path / "log.csv", delimiter=",", skiprows=1)
    bag = _to_bag(tmp_path, UR10_JOINTS, rec[:, 0], rec[:, 1:7], rec[:, 7:])
    cfg = yaml.safe_load(path.read_text())
    cfg["data"] = {"format": "bag", "path": bag, "events_topic": ""}
    cfg["processing"]["decimation"] = 2
    path.write_text(yaml.safe_dump(cfg))
    full = load_config(str(path))
    assert full.data.wrench_topic == "/force_plate/wrench"
    rec_bag = read_recording(full, robot)
    assert rec_bag.tau.shape[1] == 6 and abs(len(rec_bag.t) - len(csv.t) / 2) < 3
    # the wrench in the world frame, interpolated half a sample: close to the CSV's
    k = np.searchsorted(csv.t, rec_bag.t[100])
    assert np.allclose(rec_bag.tau[100], csv.tau[k], atol=4 * NOISE.max())
    _, res = cli_identify(path, tmp_path / "out", in_process=True)
    result = identify_config(full)
    floor = _floor(result, phi)
    val = np.array([res["validation_rmse"][c] for c in COMPONENTS])
    assert np.all(val <= 1.1 * floor), val / floor
    # the bag holds half the CSV's joint samples (sqrt 2 more noise once decimated to the
    # same rate), and the wrench is interpolated between its own stamps: at most 5 % more
    assert np.all(floor <= 1.05 * np.sqrt(2) * floor_csv), floor / floor_csv
    nom = np.array([res["nominal_validation_rmse"][c] for c in COMPONENTS])
    assert np.all(nom > 3 * val)

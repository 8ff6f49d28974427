"""Identification through the robot's driver profile: a bag whose
``/joint_states`` effort holds motor currents, as ur_robot_driver publishes them.

Ground truth: a simulated two-joint arm with hidden parameters and torque noise of known
std; the bag's efforts are the currents ``tau_j / (gear_j * kt_j)`` with constants hidden
in the profile (``driver.joint_states.torque_per_effort``, signed, listed in the order of
the profile's controllers, which is not the order of ``robot.joints``).  Through the
profile the identification recovers the base parameters at the noise floor; without it
the result is in the recorded units and says so; a profile that cannot be read into
torques, or contradicted by the config, is refused naming the fields."""
import os

import numpy as np
import pytest
import yaml
from conftest import ROOT

from figaroh_ros.config.identification import load_config, load_identification
from figaroh_ros.errors import ConfigError
from figaroh_ros.excitation.fourier import fourier_trajectory
from figaroh_ros.identification.parameters import DriveOptions, parameter_layout
from figaroh_ros.io.bags import typestore
from figaroh_ros.io.bag_backend import open_bag_writer
from figaroh_ros.model.robot import load_urdf_model
from figaroh_ros.sim.dynamics import measured_torques, perturbed_parameters
from figaroh_ros.tasks import identify

URDF = os.path.join(ROOT, "test", "data", "two_dof.urdf")
JOINTS = ["joint1", "joint2"]
DRIVE = DriveOptions(viscous_friction=True, coulomb_friction=True, rotor_inertia=False,
                     torque_offset=True)
NOISE = 0.05                       # N.m, std of the torque noise: the floor of any fit
RATE = 200.0
GEAR = np.array([101.0, -121.0])   # hidden: joint1, joint2 (joint2 reports reversed)
KT = np.array([0.127, 0.0834])     # N.m/A
K = GEAR * KT                      # joint torque per ampere
T0 = 1.7e9


def write_bag(folder, traj, currents):
    """ur_robot_driver's contract: positions and currents (A) in one JointState."""
    store = typestore()
    T, JS = store.types, "sensor_msgs/msg/JointState"
    w = open_bag_writer(str(folder), {"/joint_states": JS}, store, "mcap", 0.0,
                        backend="rosbags")
    for k in range(len(traj.t)):
        ns = int(round((T0 + traj.t[k]) * 1e9))
        hdr = T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](
            sec=ns // 10**9, nanosec=ns % 10**9), frame_id="")
        msg = T[JS](header=hdr, name=JOINTS, position=traj.q[k], velocity=np.zeros(0),
                    effort=currents[k])
        w.write("/joint_states", ns, store.serialize_cdr(msg, JS))
    w.close()
    return str(folder)


def profile(folder, gains=None, effort="current_a", name="profile_arm.yaml"):
    """A robot config whose controllers list joint2 first: its gains follow that order."""
    gains = [float(K[1]), float(K[0])] if gains is None else gains
    js = {"topic": "joint_states", "rate_hz": RATE, "effort": effort}
    if gains != "none":
        js["torque_per_effort"] = gains
    path = folder / name
    path.write_text(yaml.safe_dump({
        "robot": {"name": "two_dof", "urdf": URDF},
        "controllers": {"arm_controller": ["joint2", "joint1"]},
        "driver": {"profile": "generic", "joint_states": js}}))
    return name


def config(folder, bag, name, driver=None, drive=None, **data):
    robot = {"name": "two_dof", "urdf": URDF, "joints": JOINTS}
    if driver is not None:
        robot["driver"] = driver
    raw = {"robot": robot,
           "model": {"viscous_friction": True, "coulomb_friction": True,
                     "rotor_inertia": False, "torque_offset": True},
           "data": {"format": "bag", "path": bag, "events_topic": "", **data},
           "processing": {"position_cutoff_hz": 10.0, "decimation": 1, "min_velocity": 0.1},
           "estimation": {"method": "wls", "validation_fraction": 0.25,
                          "cross_validation_folds": 0},
           "output": {"plots": False}}
    if drive is not None:
        raw["drive"] = drive
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(raw))
    return str(path)


@pytest.fixture(scope="module")
def truth(tmp_path_factory):
    root = tmp_path_factory.mktemp("driver_profile")
    robot = load_urdf_model(URDF, JOINTS)
    layout = parameter_layout(robot, DRIVE)
    phi = perturbed_parameters(robot, layout, seed=4)
    traj = fourier_trajectory(robot, 36.0, RATE, harmonics=5, base_freq_hz=0.1,
                              amplitude=0.8, seed=12)
    tau = measured_torques(robot, layout, DRIVE, phi, traj, NOISE, seed=5)
    bag = write_bag(root / "currents", traj, tau / K)
    return {"root": root, "bag": bag, "phi": phi, "layout": layout}


def test_currents_through_the_profile_identify_at_the_noise_floor(truth):
    root = truth["root"]
    cfg = load_config(config(root, truth["bag"], "through", profile(root)))
    assert cfg.data.joint_topic == cfg.data.torque_topic == "/joint_states"
    assert cfg.drive.effort_gains == pytest.approx(K, rel=1e-12)   # by joint name
    res = identify.identify_config(cfg)
    held = float(np.max(res.validation_rmse))
    # the hidden true parameters through the same processing of the same held-out part
    obs = res.held_out
    err = obs.Y - obs.Wb @ res.base.from_standard(truth["phi"])
    floor = float(np.max([np.sqrt(np.mean(err[obs.row_joint == j] ** 2)) for j in range(2)]))
    true_base = res.base.from_standard(truth["phi"])
    rel = np.abs(res.estimate.phi - true_base) / np.maximum(np.abs(true_base), 1e-3)
    print(f"held-out RMSE {held:.4f} N.m (truth's {floor:.4f}, noise {NOISE}); base "
          f"parameters: median relative error {np.median(rel):.2e}")
    assert held <= 1.1 * NOISE
    assert held <= 1.05 * floor
    assert np.median(rel) < 0.05


def test_result_records_the_profile_and_the_bag_backends(truth, tmp_path):
    root = truth["root"]
    out = identify.run(config(root, truth["bag"], "recorded", profile(root)),
                       out=str(tmp_path / "out"))
    with open(out.paths["result"]) as f:
        summary = yaml.safe_load(f)
    eff = summary["effort"]
    assert eff["unit"] == "N.m" and eff["gains_from"] == "robot.driver"
    assert eff["topic"] == "/joint_states"
    assert eff["driver"]["config"] == str(root / "profile_arm.yaml")
    assert eff["driver"]["effort"] == "current_a" and eff["driver"]["profile"] == "generic"
    assert eff["gains"] == pytest.approx(dict(zip(JOINTS, K)))
    assert summary["bag"] == {"path": truth["bag"], "read_with": "rosbags",
                              "written_by": "rosbags"}


def test_without_the_profile_the_result_is_in_recorded_units_and_says_so(truth, tmp_path):
    """The same bag, no driver named: the efforts are fitted as recorded (amperes here),
    the result says so, and its errors are no torques (nor is its model the robot's)."""
    root = truth["root"]
    path = config(root, truth["bag"], "as_recorded", None, torque_topic="/joint_states")
    out = identify.run(path, out=str(tmp_path / "out"))
    with open(out.paths["result"]) as f:
        summary = yaml.safe_load(f)
    assert summary["effort"] == {"driver": None, "topic": "/joint_states",
                                 "gains_from": None, "gains": None, "unit": "as recorded"}
    res = identify.identify_config(load_config(path))
    true_base = res.base.from_standard(truth["phi"])
    assert np.median(np.abs(res.estimate.phi - true_base)
                     / np.maximum(np.abs(true_base), 1e-3)) > 0.5


def test_drive_effort_gains_may_repeat_the_profile_not_contradict_it(truth):
    root = truth["root"]
    same = config(root, truth["bag"], "same", profile(root),
                  drive={"effort_gains": [float(K[0]), float(K[1])]})
    assert load_identification(same).effort["gains_from"] == "robot.driver"
    other = config(root, truth["bag"], "other", profile(root),
                   drive={"effort_gains": [float(K[1]), float(K[0])]})
    with pytest.raises(ConfigError, match=r"drive\.effort_gains.*robot\.driver.*disagree"
                       r".*torque_per_effort"):
        load_config(other)


def test_a_profile_with_the_wrong_number_of_gains_is_refused(truth):
    root = truth["root"]
    bad = profile(root, gains=[1.0, 2.0, 3.0], name="profile_three.yaml")
    with pytest.raises(ConfigError, match=r"robot\.driver.*driver\.joint_states\."
                       r"torque_per_effort.*2 gains"):
        load_config(config(root, truth["bag"], "three", bad))


def test_currents_without_gains_are_refused_unless_the_config_gives_them(truth):
    root = truth["root"]
    bare = profile(root, gains="none", name="profile_bare.yaml")
    with pytest.raises(ConfigError, match=r"robot\.driver.*motor currents \(A\), not joint "
                       r"torques.*drive\.effort_gains"):
        load_config(config(root, truth["bag"], "bare", bare))
    given = load_identification(config(root, truth["bag"], "given", bare,
                               drive={"effort_gains": [float(K[0]), float(K[1])]}))
    assert given.effort["gains_from"] == "drive.effort_gains"
    assert given.effort["unit"] == "N.m"


def test_a_torque_topic_other_than_the_profiles_is_refused(truth):
    root = truth["root"]
    with pytest.raises(ConfigError, match=r"data\.torque_topic.*robot\.driver.*"
                       r"/motor_currents.*/joint_states"):
        load_config(config(root, truth["bag"], "topic", profile(root),
                           torque_topic="/motor_currents"))
    # the profile's own topic written out is accepted
    ok = load_config(config(root, truth["bag"], "topic_ok", profile(root),
                            torque_topic="/joint_states"))
    assert ok.data.torque_topic == "/joint_states"


def test_a_torque_valued_profile_contradicted_by_gains_is_refused(truth):
    root = truth["root"]
    torques = profile(root, gains="none", effort="torque_nm", name="profile_torques.yaml")
    assert load_config(config(root, truth["bag"], "tq", torques)).drive.effort_gains is None
    with pytest.raises(ConfigError, match=r"drive\.effort_gains.*robot\.driver"):
        load_config(config(root, truth["bag"], "tq_bad", torques,
                           drive={"effort_gains": [2.0, 1.0]}))


def test_the_shipped_simulated_ur10_config_reads_currents_through_its_profile():
    loaded = load_identification(os.path.join(ROOT, "config", "ur10_sim_identification.yaml"))
    assert loaded.file == os.path.join(ROOT, "config", "ur10_sim_identification.yaml")
    cfg = loaded.config
    assert cfg.data.torque_topic == "/joint_states"
    assert loaded.effort["driver"]["profile"] == "ur_robot_driver"
    assert loaded.effort["driver"]["effort"] == "current_a"
    assert cfg.drive.effort_gains == [13.26, 13.26, 9.31, 4.60, 4.60, 4.60]

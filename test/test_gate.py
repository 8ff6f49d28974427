"""The publication gate and the residual sanity,
on a simulated UR10 whose joint placements carry hidden errors (2 mm / 2 mrad per axis;
pose measurements with 0.1 mm / 0.5 mrad noise, the measurement frame a metre away):

* the honest calibration passes every check with its numbers;
* corrupted inputs (a 1e200 marker, NaN) are refused before solving, nothing written;
* a nominal model already equal to the truth gives no significant improvement: refused;
* implausibly large changes (25 mm per axis), a posture beyond the joint limits and an
  acceptance threshold below the noise floor are refused, each by its named check;
* the wrong orientation convention (rotation vectors read as roll-pitch-yaw) leaves
  residuals far above the noise: DataError naming the likely causes, or with
  ``accept_poor_fit`` a warning and a refused model kept on disk;
* a bag written with rosbags through the task API: the honest one passes, one with a
  1e200 mocap value is not publishable.
"""
import math
import os
import zlib

import numpy as np
import pinocchio as pin
import pytest
import yaml

from figaroh_ros.calibration.kinematic_model import KinematicModel, Measurement
from figaroh_ros.calibration.solve import PostureSet
from figaroh_ros.cli.main import main
from figaroh_ros.config.acceptance import Acceptance
from figaroh_ros.errors import DataError
from figaroh_ros.io.bags import typestore
from figaroh_ros.io.segmented_bag import SegmentedBagWriter
from figaroh_ros.model.robot import example_robot_urdf
from figaroh_ros.sim.kinematics import hidden_errors, measure, random_postures
from figaroh_ros.tasks import calibrate
from figaroh_ros.tasks.calibration_gate import input_checks
from figaroh_ros.tasks.gate import Check, acceptance_of, failed_lines, publication_decision
from figaroh_ros.tasks.improvement import improvement_checks, paired_p_value, sign_test_p_value

URDF = "ur_description/urdf/ur10_joint_limited_robot.urdf"
NOISE = (0.1, 0.5)                      # mm, mrad


def truth_model(seed: int, position_mm=2.0, rotation_mrad=2.0):
    """The hidden truth: UR10 with joint placement errors, a far measurement frame and an
    unknown body frame on the tool."""
    meas = Measurement("pose", 1, sigma_position=NOISE[0] * 1e-3,
                       sigma_orientation=NOISE[1] * 1e-3)
    km = KinematicModel(pin.buildModelFromUrdf(example_robot_urdf(URDF)), "tool0",
                        level="full", measurement=meas)
    km.base0 = pin.SE3(pin.rpy.rpyToMatrix(0.3, -0.2, 2.0), np.array([1.5, -0.7, 0.4]))
    km.tool0 = pin.SE3(pin.rpy.rpyToMatrix(0.1, 0.2, -0.3), np.array([0.0, 0.05, 0.1]))
    rng = np.random.default_rng(seed)
    return km, hidden_errors(km, rng, position_mm, rotation_mrad), rng


def write_csv(path, km, data, orientation="rpy"):
    """Postures table: the chain joints, then x1 y1 z1 and the orientation columns."""
    rot = [pin.rpy.matrixToRpy(pin.exp3(r)) if orientation == "rpy" else r
           for r in data.Y[:, 3:]]
    rows = np.column_stack([data.Q, data.Y[:, :3], rot])
    header = km.chain + ["x1", "y1", "z1", "phix1", "phiy1", "phiz1"]
    with open(path, "w") as f:
        f.write(",".join(header) + "\n")
        for r in rows:
            f.write(",".join(repr(float(v)) for v in r) + "\n")


def write_config(folder, acceptance=None, bag=None, **data):
    cfg = {"robot": {"name": "ur10", "urdf": f"example-robot-data:{URDF}"},
           "calibration": {"level": "full", "tool_frame": "tool0"},
           "measurement": {"type": "pose", "orientation": "rpy",
                           "noise_position_mm": NOISE[0], "noise_orientation_mrad": NOISE[1]},
           "output": {"plots": False}}
    if data:
        cfg["data"] = data
    if acceptance:
        cfg["acceptance"] = acceptance
    if bag:
        cfg["bag"] = bag
    path = os.path.join(folder, "cal.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(cfg, f)
    return path


def experiment(tmp_path, seed=1, position_mm=2.0, rotation_mrad=2.0, acceptance=None,
               orientation="rpy", edit=None, edit_q=None):
    """Training (40) and validation (30) posture files of the hidden truth; the config.
    ``edit_q`` changes the training postures before they are measured, ``edit`` the
    measured set."""
    km, x, rng = truth_model(seed, position_mm, rotation_mrad)
    Q = random_postures(km, 40, rng)
    if edit_q:
        edit_q(Q)
    train = measure(km, Q, x, rng)
    valid = measure(km, random_postures(km, 30, rng), x, rng)
    if edit:
        edit(train)
    write_csv(tmp_path / "train.csv", km, train, orientation)
    write_csv(tmp_path / "valid.csv", km, valid, orientation)
    return write_config(str(tmp_path), acceptance, path="train.csv", validation="valid.csv")


def checks_of(summary):
    return {c["name"]: c for c in summary["publication"]["checks"]}


def test_honest_calibration_passes_every_check(tmp_path):
    out = tmp_path / "out"
    s = calibrate.run(experiment(tmp_path), out=str(out)).summary
    c = checks_of(s)
    assert s["publication"]["passed"] and s["publication"]["verdict"] == "PASSED", c
    assert c["improvement_test"]["value"] < 1e-6               # measured ~1e-12
    assert c["improvement_margin"]["value"] > 0.8              # 5.6 mm -> 0.2 mm
    assert c["placement_translation"]["value"] < 20 and c["placement_rotation"]["value"] < 2
    assert c["urdf_round_trip"]["value"] <= 1e-9
    assert c["residual_vs_noise"]["value"] < 1.5               # as stated: about 1
    assert failed_lines(s["publication"]) == []
    on_disk = yaml.safe_load((out / "result.yaml").read_text())
    assert on_disk["publication"]["verdict"] == "PASSED"


@pytest.mark.parametrize("bad", [1e200, float("nan")])
def test_corrupted_inputs_are_refused_before_solving(tmp_path, bad):
    def corrupt(train):
        train.Y[7, 1] = bad                                     # posture 7, y1
    out = tmp_path / "out"
    with pytest.raises(DataError) as exc:
        calibrate.run(experiment(tmp_path, edit=corrupt), out=str(out))
    assert ("1e+200" in str(exc.value) and "y1" in str(exc.value)) or "nan" in \
        str(exc.value).lower()
    assert not out.exists()


def test_nominal_equal_to_truth_gives_no_significant_improvement(tmp_path):
    s = calibrate.run(experiment(tmp_path, seed=2, position_mm=0.0, rotation_mrad=0.0),
                      out=str(tmp_path / "out")).summary
    c = checks_of(s)
    assert not s["publication"]["passed"]
    assert not c["improvement_margin"]["passed"] and c["improvement_margin"]["value"] < 0.05
    assert c["residual_vs_noise"]["passed"] and c["urdf_round_trip"]["passed"]


def test_implausible_changes_are_refused_by_name(tmp_path):
    s = calibrate.run(experiment(tmp_path, seed=3, position_mm=25.0),
                      out=str(tmp_path / "out")).summary
    c = checks_of(s)
    assert c["improvement_test"]["passed"] and c["improvement_margin"]["passed"]
    assert not c["placement_translation"]["passed"], c["placement_translation"]
    assert c["placement_translation"]["value"] > 20
    assert any(line.startswith("placement_translation: largest joint placement translation")
               for line in failed_lines(s["publication"]))


def test_postures_beyond_the_joint_limits_fail_the_gate(tmp_path):
    def beyond(Q):
        Q[5, 0] = 3.5                                           # limit pi on the URDF
    s = calibrate.run(experiment(tmp_path, seed=4, edit_q=beyond),
                      out=str(tmp_path / "out")).summary
    c = checks_of(s)
    assert not c["joint_limits"]["passed"]
    assert c["joint_limits"]["value"] == pytest.approx(3.5 - np.pi, abs=1e-9)
    assert "shoulder_pan_joint = 3.5" in c["joint_limits"]["detail"]
    assert [n for n, k in c.items() if not k["passed"]] == ["joint_limits"]


def test_acceptance_threshold_from_the_config(tmp_path):
    s = calibrate.run(experiment(tmp_path, acceptance={"position_rmse_mm": 0.05}),
                      out=str(tmp_path / "out")).summary
    c = checks_of(s)["acceptance_position_rmse"]
    assert not s["publication"]["passed"] and not c["passed"]
    assert 0.1 < c["value"] < 0.4 and c["limit"] == 0.05       # the noise floor is ~0.17 mm
    assert [n for n, k in checks_of(s).items() if not k["passed"]] == [
        "acceptance_position_rmse"]
    assert publication_decision(s["publication"]).why == failed_lines(s["publication"])
    d = publication_decision(s["publication"], accept_failed_acceptance=True)  # the override
    assert d.acceptance == "FAILED" and "(beyond 0.05 mm)" in d.acceptance_detail
    assert d.why == [] and d.overridden == failed_lines(s["publication"])
    s = calibrate.run(experiment(tmp_path, acceptance={"position_rmse_mm": 1.0}),
                      out=str(tmp_path / "out2")).summary
    assert s["publication"]["passed"] and checks_of(s)["acceptance_position_rmse"]["passed"]
    d = publication_decision(s["publication"])
    assert d.why == [] and d.acceptance == "PASSED" and "(within 1 mm)" in d.acceptance_detail


def test_wrong_orientation_convention_is_refused_or_warned(tmp_path, capsys):
    cfg = experiment(tmp_path, orientation="rotvec")            # read as rpy
    out = tmp_path / "out"
    assert main(["calibrate", cfg, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "does not explain its data" in err and "orientation convention" in err
    assert "--accept-poor-fit" in err and not out.exists()
    assert main(["calibrate", cfg, "--out", str(out), "--accept-poor-fit"]) == 0
    printed = capsys.readouterr()
    assert "publication: FAILED" in printed.out and "WARNING: POOR FIT" in printed.err
    s = yaml.safe_load((out / "result.yaml").read_text())
    c = checks_of(s)["residual_vs_noise"]
    assert not c["passed"] and c["value"] > 50, c               # measured ~ 10^2 - 10^3
    assert s["warnings"] and (out / "ur10_calibrated.urdf").exists()   # kept to inspect


def test_paired_test_needs_a_consistent_improvement():
    rng = np.random.default_rng(0)
    e = rng.uniform(1, 2, 8)
    assert paired_p_value(e + 1.0, e) < 1e-6
    assert paired_p_value(e, e + 0.1 * np.resize([1.0, -1.0], 8)) > 0.4    # no change
    assert paired_p_value(e, e + 0.2) == 1.0                                 # worse
    assert paired_p_value(e, e) == 1.0 and paired_p_value(e[:1], e[:1] - 1) == 1.0



def test_sign_test_over_components_of_mixed_units():
    """Components in m and rad: only which error is smaller counts.  11 of 12 smaller (the
    2 postures of a 10-posture bag): p = 13/4096; half of them: no evidence."""
    nominal = np.r_[np.full(6, 1e-2), np.full(6, 1e-3)]           # m, then rad
    better = nominal * np.r_[np.full(11, 0.01), 2.0]
    assert abs(sign_test_p_value(nominal, better) - 13 / 4096) < 1e-12
    assert sign_test_p_value(nominal, nominal * np.resize([0.5, 2.0], 12)) > 0.5
    assert sign_test_p_value(nominal, np.r_[nominal[:11], np.nan]) == 1.0

# ------------------------------------------------------------------ bags through the task
def _stamp(store, ns):
    T = store.types
    return T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](
        sec=ns // 10**9, nanosec=ns % 10**9), frame_id="")


def write_bag(path, km, data, corrupt_at=None, occluded=()):
    """The executor's recording: per posture a hold window (HOLD_START .. HOLD_END) with
    joint states and mocap poses at 100 Hz (none for the ``occluded`` postures)."""
    store, T = typestore(), typestore().types
    topics = {"/joint_states": "sensor_msgs/msg/JointState",
              "/mocap/pose": "geometry_msgs/msg/PoseStamped",
              "/figaroh/posture_events": "figaroh_ros/msg/PostureEvent"}
    w = SegmentedBagWriter(str(path), topics, store, "mcap", 0.0)
    ns = 10**18
    for i, (q, y) in enumerate(zip(data.Q, data.Y)):
        quat = pin.Quaternion(pin.exp3(y[3:])).coeffs()
        pos = y[:3].copy()
        if i == corrupt_at:
            pos[0] = 1e200
        for k, ev in enumerate((1, None, None, None, None, None, 2)):
            ns += 10**7
            if ev is not None:
                Event = T["figaroh_ros/msg/PostureEvent"]
                extra = {"note": ""} if "note" in Event.__dataclass_fields__ else {}
                w.write("/figaroh/posture_events", ns, store.serialize_cdr(
                    Event(header=_stamp(store, ns), index=i, event=ev, joint_names=km.chain,
                          positions=q, **extra), topics["/figaroh/posture_events"]))
                continue
            w.write("/joint_states", ns, store.serialize_cdr(T["sensor_msgs/msg/JointState"](
                header=_stamp(store, ns), name=km.chain, position=q, velocity=np.zeros(0),
                effort=np.zeros(0)), topics["/joint_states"]))
            P = T["geometry_msgs/msg/Point"](x=pos[0], y=pos[1], z=pos[2])
            O = T["geometry_msgs/msg/Quaternion"](x=quat[0], y=quat[1], z=quat[2], w=quat[3])
            if i in occluded:
                continue
            w.write("/mocap/pose", ns, store.serialize_cdr(T["geometry_msgs/msg/PoseStamped"](
                header=_stamp(store, ns), pose=T["geometry_msgs/msg/Pose"](
                    position=P, orientation=O)), topics["/mocap/pose"]))
    w.close()


def test_calibrate_from_bags_passes_honest_and_refuses_corrupted(tmp_path):
    km, x, rng = truth_model(zlib.crc32(b"bag"))
    data = measure(km, random_postures(km, 40, rng), x, rng)
    cfg = write_config(str(tmp_path))
    write_bag(tmp_path / "good", km, data)
    s = calibrate.run(cfg, bags=[str(tmp_path / "good")], out=str(tmp_path / "o1")).summary
    assert s["postures_validation"] == 8 and s["publication"]["passed"], checks_of(s)
    write_bag(tmp_path / "bad", km, data, corrupt_at=11)
    with pytest.raises(DataError, match=r"1e\+200"):
        calibrate.run(cfg, bags=[str(tmp_path / "bad")], out=str(tmp_path / "o2"))
    assert not (tmp_path / "o2").exists()


def test_postures_the_cameras_lost_are_left_out_only_when_asked(tmp_path):
    """Two postures of 40 without a mocap pose in their hold (an occluded marker): the bag
    is refused, naming the first and the option, nothing written; with
    ``bag.skip_unmeasured`` the other 38 calibrate and pass the gate, the two named in
    result.yaml and its warnings."""
    km, x, rng = truth_model(zlib.crc32(b"occluded"))
    data = measure(km, random_postures(km, 40, rng), x, rng)
    write_bag(tmp_path / "bag", km, data, occluded=(6, 23))
    strict = write_config(str(tmp_path))
    with pytest.raises(DataError, match=r"posture 6 of bag .*0 poses .*bag.skip_unmeasured"):
        calibrate.run(strict, bags=[str(tmp_path / "bag")], out=str(tmp_path / "o1"))
    assert not (tmp_path / "o1").exists()
    os.makedirs(tmp_path / "lenient")
    lenient = write_config(str(tmp_path / "lenient"), bag={"skip_unmeasured": True})
    s = calibrate.run(lenient, bags=[str(tmp_path / "bag")], out=str(tmp_path / "o2")).summary
    assert s["publication"]["passed"], checks_of(s)
    with open(tmp_path / "o2" / "result.yaml") as f:
        result = yaml.safe_load(f)
    assert result["dropped_postures"] == [{"posture": 6, "joint_states": 5, "poses": 0},
                                          {"posture": 23, "joint_states": 5, "poses": 0}]
    assert result["postures_train"] + result["postures_validation"] == 38
    assert any("postures [6, 23]" in w for w in result["warnings"])


# ------------------------------------------------------------------ rules at their bounds
ACC = Acceptance(improvement_margin=0.05, p_value=0.01, joint_limit_tolerance_rad=0.02,
                 sensor_range_m=100.0)
MARGINS = {"p_value": ACC.p_value, "improvement_margin": ACC.improvement_margin}


def test_a_significant_improvement_below_the_margin_fails_it():
    """30 held-out postures whose error every one falls by 2-3 %: the paired test is
    significant, the RMSE 2.5 % lower; a 5 % margin refuses it, a 2 % one takes it."""
    rng = np.random.default_rng(3)
    e0 = rng.uniform(1e-3, 2e-3, 30)
    e1 = e0 * rng.uniform(0.97, 0.98, 30)
    gain = 1.0 - np.sqrt(np.mean(e1 ** 2) / np.mean(e0 ** 2))
    assert 0.02 < gain < 0.03
    test, margin = improvement_checks(e0, e1, **MARGINS)
    assert test.name == "improvement_test" and test.passed and test.value < 1e-12
    assert margin.name == "improvement_margin" and not margin.passed
    assert margin.value == pytest.approx(gain, rel=1e-12) and margin.limit == 0.05
    assert f"{100 * gain:.3g} % lower (required >= 5 %)" in margin.detail
    assert "held-out error lower than the nominal model's on 30 of 30 postures" in test.detail
    assert improvement_checks(e0, e1, **dict(MARGINS, improvement_margin=0.02))[1].passed
    # the same with the sign test over the components (as a bag's few postures are paired)
    test, margin = improvement_checks(e0, e1, **MARGINS, paired=(e0, e1))
    assert test.passed and test.value == pytest.approx(2.0 ** -30, rel=1e-9)
    assert not margin.passed and "measured components of 30 postures" in test.detail


def test_the_margin_is_reached_at_its_bound_and_the_p_value_is_strict():
    """An RMSE exactly a quarter lower passes a 25 % margin (>=), not a larger one; a p
    value equal to the required one fails (<)."""
    e0, e1 = np.full(8, 2.0), np.full(8, 1.5)
    assert improvement_checks(e0, e1, **dict(MARGINS, improvement_margin=0.25))[1].passed
    assert not improvement_checks(e0, e1,
                                  **dict(MARGINS, improvement_margin=0.2501))[1].passed
    nominal, better = np.ones(12), np.r_[np.full(11, 0.5), 2.0]      # 11 of 12: p = 13/4096
    p = sign_test_p_value(nominal, better)
    assert p == pytest.approx(13 / 4096, rel=1e-12)
    assert improvement_checks(nominal, better, **dict(MARGINS, p_value=p * (1 + 1e-9)),
                              paired=(nominal, better))[0].passed
    assert not improvement_checks(nominal, better, **dict(MARGINS, p_value=p),
                                  paired=(nominal, better))[0].passed


def test_no_held_out_error_or_a_perfect_nominal_model_never_passes():
    for c in improvement_checks([], [], **MARGINS, what="samples"):
        assert not c.passed and c.value is None and c.detail == \
            "no held-out samples to check the model on"
    test, margin = improvement_checks(np.zeros(5), np.zeros(5), **MARGINS)
    assert not test.passed and not margin.passed and margin.value == -np.inf


def test_paired_t_test_p_value_is_students():
    """The one-sided p of the per-posture differences against Student's t with n - 1
    degrees of freedom (scipy.stats), to the last digits."""
    from scipy import stats
    rng = np.random.default_rng(4)
    e0 = rng.uniform(1, 2, 9)
    e1 = e0 - 0.05 + rng.normal(0, 0.1, 9)
    d = e0 - e1
    t = d.mean() / (d.std(ddof=1) / 3.0)
    assert paired_p_value(e0, e1) == pytest.approx(stats.t.sf(t, 8), rel=1e-9)
    assert 1e-3 < paired_p_value(e0, e1) < 0.5
    assert paired_p_value(e0, e0 - 0.3) == 0.0                    # no scatter, better
    assert paired_p_value(e0, np.r_[e1[:8], np.inf]) == 1.0


PANDA = "panda_description/urdf/panda.urdf"


def panda_chain():
    meas = Measurement("points", 1, sigma_position=1e-4)
    return KinematicModel(pin.buildModelFromUrdf(example_robot_urdf(PANDA)), "panda_link8",
                          level="full", measurement=meas)


@pytest.mark.parametrize("k, lower", [(3, -3.0718), (5, -0.0175)])
def test_a_reading_below_a_panda_lower_limit_fails_the_calibration_gate(k, lower):
    """The Panda's joint 4 ([-3.0718, -0.0698]) and joint 6 ([-0.0175, 3.7525]): a
    reading 0.05 below the lower limit fails ``joint_limits`` with the tolerance 0.02; one
    0.01 below passes."""
    km = panda_chain()
    assert km.chain == [f"panda_joint{i}" for i in range(1, 8)]
    Q = np.tile([0.0, 0.0, 0.0, -1.5, 0.0, 1.5, 0.0], (4, 1))
    Y = np.tile([0.5, 0.0, 0.5], (4, 1))
    Q[2, k] = lower - 0.05
    c = input_checks(km, {"train": PostureSet(Q, Y)}, ACC)[-1]
    assert c.name == "joint_limits" and not c.passed
    assert c.value == pytest.approx(0.05, abs=1e-9)
    assert f"panda_joint{k + 1} = {lower - 0.05:.6g} at posture 2" in c.detail
    Q[2, k] = lower - 0.01
    c = input_checks(km, {"train": PostureSet(Q, Y)}, ACC)[-1]
    assert c.passed and c.value == pytest.approx(0.01, abs=1e-9)


def test_joint_offsets_are_bounded_in_degrees_and_prismatic_ones_in_mm():
    """TIAGo's torso (prismatic) and arm (revolute) at the offset level: the largest
    revolute offset against ``max_offset_deg``, the largest prismatic one against
    ``max_placement_mm``, each naming its joint; signs do not matter."""
    from types import SimpleNamespace

    from figaroh_ros.tasks.calibration_gate import plausibility_checks
    km = KinematicModel(pin.buildModelFromUrdf(example_robot_urdf(
        "tiago_description/robots/tiago.urdf")), "arm_7_link", level="offset",
        measurement=Measurement("points", 1, sigma_position=1e-4))
    x0 = km.nominal_parameters()
    x = x0.copy()
    x[km.groups["torso_lift_joint"]] = -0.004                       # 4 mm
    x[km.groups["arm_2_joint"]] = 0.01
    x[km.groups["arm_3_joint"]] = -np.radians(1.5)
    deg = float(np.degrees(np.radians(1.5)))              # 1.5 and its rounding: the bound
    acc = Acceptance(max_offset_deg=deg, max_placement_mm=4.0)
    rev, pri = plausibility_checks(SimpleNamespace(kinematic_model=km, x=x, x_nominal=x0), acc)
    assert (rev.name, rev.passed, rev.limit, rev.value) == ("joint_offsets", True, deg, deg)
    assert rev.detail == "largest joint offset (arm_3_joint) 1.5 deg (within 1.5 deg)"
    assert (pri.name, pri.passed, pri.limit) == ("prismatic_offsets", True, 4.0)
    assert pri.value == pytest.approx(4.0, abs=1e-12)
    assert pri.detail == "largest prismatic joint offset (torso_lift_joint) 4 mm (within 4 mm)"
    rev, pri = plausibility_checks(SimpleNamespace(kinematic_model=km, x=x, x_nominal=x0),
                                   Acceptance(max_offset_deg=1.4, max_placement_mm=3.9))
    assert not rev.passed and not pri.passed
    arm = KinematicModel(km.model, "arm_7_link", level="offset", start_frame="torso_lift_link",
                         measurement=km.measurement)
    assert [c.name for c in plausibility_checks(SimpleNamespace(
        kinematic_model=arm, x=arm.nominal_parameters(), x_nominal=arm.nominal_parameters()),
        acc)] == ["joint_offsets"]


def test_paired_p_value_with_two_postures_and_near_constant_differences():
    """Two postures make a test (Student's t with 1 degree of freedom); differences equal
    to 1e-9 of their size have no scatter: p 0 when better, 1 when worse; a scatter well
    below the differences' size is a t-test still."""
    from scipy import stats
    e0 = np.array([2.0, 3.0])
    e1 = np.array([1.0, 1.5])
    t = 1.25 / (np.std([1.0, 1.5], ddof=1) / np.sqrt(2))
    assert paired_p_value(e0, e1) == pytest.approx(stats.t.sf(t, 1), rel=1e-12)
    assert paired_p_value(np.full(4, 20.0), 20.0 - np.r_[10.0, 10.0, 10.0, 10 + 5e-9]) == 0.0
    assert paired_p_value(np.full(4, 20.0), 20.0 + np.r_[10.0, 10.0, 10.0, 10 + 5e-9]) == 1.0
    d = np.array([1.0, 1.1, 0.9, 1.05, 0.95])
    t = d.mean() / (d.std(ddof=1) / np.sqrt(5))
    assert paired_p_value(d + 1.0, np.ones(5)) == pytest.approx(stats.t.sf(t, 4), rel=1e-9)


def test_failed_lines_and_acceptance_of_every_case():
    assert failed_lines(None) == ["no publication verdict in the result"]
    assert failed_lines({"passed": False, "checks": []}) == ["no check was made"]
    assert failed_lines({"passed": True, "checks": []}) == []
    pub = {"passed": False, "checks": [
        {"name": "acceptance_a", "passed": False, "detail": "a 2 (beyond 1)"},
        {"name": "acceptance_b", "passed": True, "detail": "b 1 (within 2)"},
        {"name": "masses", "passed": True, "detail": "m"}]}
    assert acceptance_of(pub) == ("FAILED", "acceptance_a: a 2 (beyond 1)\n"
                                  "acceptance_b: b 1 (within 2)")
    assert acceptance_of({"passed": True, "checks": pub["checks"][1:]}) == (
        "PASSED", "acceptance_b: b 1 (within 2)")
    assert acceptance_of(None) == ("", "")


# ------------------------------------------------------------------ the calibration gate's parts
@pytest.fixture(scope="module")
def calibrated():
    """A UR10 with hidden placement errors calibrated from 40 poses, 12 held out."""
    from figaroh_ros.calibration import calibrate as calibrate_arrays
    km, x, rng = truth_model(22)
    train = measure(km, random_postures(km, 40, rng), x, rng)
    valid = measure(km, random_postures(km, 12, rng), x, rng)
    res = calibrate_arrays(example_robot_urdf(URDF), train.Q, train.Y, tool_frame="tool0",
                           measurement="pose", noise=(1e-4, 5e-4),
                           validation=(valid.Q, valid.Y))
    return res, valid


def test_held_out_errors_and_components_are_the_predictions_misses(calibrated):
    from figaroh_ros.tasks.calibration_gate import held_out_components, held_out_errors
    res, valid = calibrated
    for nominal in (True, False):
        miss = res.predict(valid.Q, nominal=nominal)[:, :3] - valid.Y[:, :3]
        assert held_out_errors(res, nominal) == pytest.approx(
            np.linalg.norm(miss, axis=1), rel=1e-9, abs=1e-15)
        c = held_out_components(res, nominal).reshape(12, 6)
        assert c[:, :3] == pytest.approx(np.abs(miss) / 1e-4, rel=1e-9, abs=1e-9)
        assert np.all(c >= 0)
    assert held_out_errors(res, False).mean() < 0.2 * held_out_errors(res, True).mean()
    from dataclasses import replace
    alone = replace(res, validation=None)
    assert held_out_errors(alone, True).shape == (0,)
    assert held_out_components(alone, False).shape == (0,)


def test_the_calibration_verdict_reports_each_check_with_its_numbers(calibrated):
    from dataclasses import replace
    from types import SimpleNamespace

    from figaroh_ros.tasks.calibration_gate import (
        acceptance_checks, calibration_verdict, held_out_components, held_out_errors,
        plausibility_checks, residual_ratio_check
    )
    from figaroh_ros.tasks.gate import round_trip_check
    res, valid = calibrated
    km, dx = res.kinematic_model, res.x - res.x_nominal
    move = {j: (np.linalg.norm(dx[km.groups[j]][:3]), np.linalg.norm(dx[km.groups[j]][3:6]))
            for j in km.joints}
    jt = max(move, key=lambda j: move[j][0])
    jr = max(move, key=lambda j: move[j][1])
    assert jt != jr and "wrist_3_joint" not in (jt, jr)      # the case tells them apart
    acc = Acceptance(max_placement_mm=20.0, max_placement_deg=2.0, residual_limit=10.0,
                     improvement_margin=0.05, p_value=0.01, position_rmse_mm=0.3)
    t, r = plausibility_checks(res, acc)
    assert t == Check("placement_translation", True, pytest.approx(1e3 * move[jt][0]), 20.0,
                      f"largest joint placement translation change ({jt}) "
                      f"{1e3 * move[jt][0]:.6g} mm (within 20 mm)")
    assert r == Check("placement_rotation", True, pytest.approx(np.degrees(move[jr][1])), 2.0,
                      f"largest joint placement rotation change ({jr}) "
                      f"{np.degrees(move[jr][1]):.6g} deg (within 2 deg)")
    s = res.estimate.sigma
    assert residual_ratio_check(res, acc) == Check(
        "residual_vs_noise", True, pytest.approx(s), 10.0,
        f"residual RMS {s:.3g} x the stated noise (0.1 mm, 0.5 mrad) (limit 10 x)")
    [a] = acceptance_checks(res, acc)
    assert a == Check("acceptance_position_rmse", True, pytest.approx(1e3 * res.validation_rmse),
                      0.3, f"held-out position RMSE {1e3 * res.validation_rmse:.6g} mm "
                      "(within 0.3 mm)")
    [a] = acceptance_checks(replace(res, validation_rmse=None),
                            acc.model_copy(update={"position_rmse_mm": 0.01}))
    assert a == Check("acceptance_position_rmse", False, pytest.approx(1e3 * res.rmse), 0.01,
                      f"training (no held-out postures) position RMSE {1e3 * res.rmse:.6g} mm "
                      "(beyond 0.01 mm)")
    assert acceptance_checks(res, acc.model_copy(update={"position_rmse_mm": None})) == []
    inputs = [Check("joint_limits", True, -1.0, 0.02, "inside")]
    v = calibration_verdict(replace(res, urdf_round_trip_gap=5e-10), acc, inputs,
                            Check("residual_vs_noise", True, 1.0, 10.0, "r"))
    assert [c.name for c in v.checks] == [
        "joint_limits", "improvement_test", "improvement_margin", "placement_translation",
        "placement_rotation", "urdf_round_trip", "acceptance_position_rmse",
        "residual_vs_noise"]
    test, margin = v.checks[1:3]
    e0, e1 = held_out_errors(res, True), held_out_errors(res, False)
    assert "measured components of 12 postures, one-sided sign test" in test.detail
    a, b = held_out_components(res, True), held_out_components(res, False)
    wins, n = int(np.sum(b < a)), int(np.sum(b != a))
    assert wins > 60 and n == 72 and f" on {wins} of 72 measured" in test.detail
    assert test.value == pytest.approx(2.0 ** -n * sum(math.comb(n, k)
                                                       for k in range(wins, n + 1)), rel=1e-9)
    assert v.checks[5] == round_trip_check(5e-10)
    assert margin.value == pytest.approx(1 - np.sqrt(np.mean(e1 ** 2) / np.mean(e0 ** 2)))
    assert margin.detail.startswith(f"held-out RMSE {1e3 * np.sqrt(np.mean(e0 ** 2)):.6g} -> ")
    points = SimpleNamespace(kinematic_model=SimpleNamespace(measurement=Measurement(
        "points", 1, sigma_position=1e-4)), estimate=res.estimate)
    noise = residual_ratio_check(points, acc).detail
    assert noise.endswith("x the stated noise (0.1 mm) (limit 10 x)")


def test_sign_test_leaves_ties_out_and_refuses_non_finite_errors():
    nominal = np.ones(4)
    assert sign_test_p_value(nominal, np.r_[0.5, 1.0, 1.0, 1.0]) == 0.5    # 1 of 1
    assert sign_test_p_value(nominal, np.r_[0.5, 0.5, 1.0, 2.0]) == 0.5    # 2 of 3
    assert sign_test_p_value(nominal, nominal) == 1.0                      # all ties
    assert sign_test_p_value(nominal, np.r_[0.5, 0.5, 0.5, np.nan]) == 1.0
    assert sign_test_p_value(np.r_[1.0, 1.0, 1.0, np.nan], np.full(4, 0.5)) == 1.0


def test_bound_check_at_its_bound_and_without_a_unit():
    from figaroh_ros.tasks.gate import bound_check
    assert bound_check("b", 2.5, 2.5, "the value", "mm") == Check(
        "b", True, 2.5, 2.5, "the value 2.5 mm (within 2.5 mm)")
    assert bound_check("b", 2.5, 2.4, "the value", "") == Check(
        "b", False, 2.5, 2.4, "the value 2.5 (beyond 2.4)")
    assert not bound_check("b", np.nan, 2.4, "v", "").passed


def test_the_calibration_inputs_every_field():
    """The Panda's readings and a point measurement: each input check with its numbers,
    and a non-finite orientation refused, naming the posture set and its row."""
    km = KinematicModel(pin.buildModelFromUrdf(example_robot_urdf(PANDA)), "panda_link8",
                        level="full", measurement=Measurement(
                            "pose", 1, sigma_position=1e-4, sigma_orientation=1e-3))
    Q = np.tile([0.0, 0.0, 0.0, -1.5, 0.0, 1.5, 0.0], (3, 1))
    Y = np.tile([0.5, -2.0, 0.5, 0.1, 0.2, -0.3], (3, 1))
    sets = {"train": PostureSet(Q[:2], Y[:2]), "valid": PostureSet(Q[2:], Y[2:])}
    checks = input_checks(km, sets, ACC)
    assert checks[:3] == [
        Check("joint_readings_finite", True, 1.5, np.inf,
              "21 values finite, largest |value| 1.5 rad (limit inf rad)"),
        Check("measurements_in_range", True, 2.0, 100.0,
              "9 values finite, largest |value| 2 m (limit 100 m)"),
        Check("orientations_finite", True, 0.3, np.inf,
              "9 values finite, largest |value| 0.3 (limit inf)")]
    Y[2, 3] = np.nan
    sets["valid"] = PostureSet(Q[2:], Y[2:])
    with pytest.raises(DataError, match=r"^postures: 1 values non-finite or beyond inf: "
                                        r"first at row valid 0, column 0: "):
        input_checks(km, sets, ACC)
    Q[2, 3] = np.nan
    sets["valid"] = PostureSet(Q[2:], Y[2:])
    with pytest.raises(DataError, match=r"^postures: 1 values non-finite or beyond inf rad: "
                                        r"first at row valid 0, column panda_joint4: "):
        input_checks(km, sets, ACC)
    Q[2, 3] = -1.5
    Y[2, 3], Y[1, 1] = 0.1, -150.0
    sets = {"train": PostureSet(Q[:2], Y[:2]), "valid": PostureSet(Q[2:], Y[2:])}
    with pytest.raises(DataError, match=r"^postures: 1 values non-finite or beyond 100 m: "
                                        r"first at row train 1, column y: "):
        input_checks(km, sets, ACC)


def test_the_gates_building_blocks_every_field():
    from figaroh_ros.tasks.gate import (
        Verdict, finite_check, require_sane_fit, residual_check, round_trip_check,
        successive_difference_noise
    )
    c = finite_check("v", [[1.0, -4.0], [2.0, 3.0]], bound=4.0, unit=" m")
    assert c == Check("v", True, 4.0, 4.0, "4 values finite, largest |value| 4 m (limit 4 m)")
    c = finite_check("v", [[1.0, -4.5], [np.nan, 5.0]], ids=["a", "b"], columns=["x", "y"],
                     bound=4.0)
    assert (c.name, c.passed, c.value, c.limit) == ("v", False, np.inf, 4.0)
    assert c.detail.startswith("3 values non-finite or beyond 4: first at row a, column y: ")
    c = finite_check("v", np.array([[1.0, 2.0], [3.0, -9.0]]), bound=5.0)
    assert c.value == 9.0 and c.detail.startswith("1 values non-finite or beyond 5: first at "
                                                  "row 1, column 1: ")
    assert round_trip_check(None) == Check("urdf_round_trip", False, None, 1e-9,
                                           "no URDF written")
    assert round_trip_check(1e-9) == Check("urdf_round_trip", True, 1e-9, 1e-9, "reloaded URDF "
                                           "reproduces the estimated model to 1e-09 "
                                           "(required <= 1e-09)")
    assert not round_trip_check(1.1e-9).passed
    r = residual_check(3.0, 3.0, "stated noise (1 mm)")
    assert r == Check("residual_vs_noise", True, 3.0, 3.0,
                      "residual RMS 3 x the stated noise (1 mm) (limit 3 x)")
    assert not residual_check(np.nan, 3.0, "n").passed
    assert require_sane_fit(r, False, "the fit") == []
    bad = residual_check(30.0, 3.0, "noise")
    with pytest.raises(DataError) as exc:
        require_sane_fit(bad, False, "the fit", causes=("a", "b"))
    assert str(exc.value) == (
        "the fit does not explain its data: residual RMS 30 x the noise (limit 3 x); likely "
        "causes: a; b. Pass --accept-poor-fit (accept_poor_fit: true) to keep the result "
        "with a warning (it is never published)")
    assert require_sane_fit(bad, True, "the fit", causes=("a",)) == [
        "POOR FIT ACCEPTED: the fit does not explain its data: residual RMS 30 x the noise "
        "(limit 3 x); likely causes: a"]
    y = np.column_stack([0.5 + 0.1 * np.resize([1.0, -1.0], 40), np.zeros(40)])
    assert successive_difference_noise(y) == pytest.approx([0.1 * np.sqrt(2), 0.0])
    y[20:, 0] += 100.0                                     # a jump between rows 19 and 20
    rows = np.r_[0:19, 20:40]                              # the pair (19, 20) left out
    assert successive_difference_noise(y, rows) == pytest.approx([0.1 * np.sqrt(2), 0.0])
    assert successive_difference_noise(y[:, 0], np.arange(11)) == pytest.approx(
        [0.1 * np.sqrt(2)])
    with pytest.raises(DataError, match="^only 9 pairs of consecutive samples to estimate "
                                        "the noise$"):
        successive_difference_noise(y, np.arange(10))
    v = Verdict([Check("a", True, 1.0, None, "x"), Check("b", False, None, 2, "y")])
    assert not v.passed and v.failed() == [v.checks[1]] and not Verdict([]).passed
    assert v.to_dict() == {"passed": False, "verdict": "FAILED", "checks": [
        {"name": "a", "passed": True, "value": 1.0, "limit": None, "detail": "x"},
        {"name": "b", "passed": False, "value": None, "limit": 2.0, "detail": "y"}]}
    assert Verdict(v.checks[:1]).to_dict()["verdict"] == "PASSED"
    assert v.checks[1].line() == "b: y"


def test_improvement_checks_every_field():
    """The checks' names, values, limits and details, in mm by default; a tie is not an
    improvement; the p value must be below the one required, not equal to it."""
    e0 = np.array([2.0, 3.0, 4.0, 5.0]) * 1e-3
    e1 = np.array([1.0, 3.0, 1.5, 2.0]) * 1e-3                   # posture 1: a tie
    p = paired_p_value(e0, e1)
    rms0, rms1 = np.sqrt(np.mean(e0 ** 2)), np.sqrt(np.mean(e1 ** 2))
    test, margin = improvement_checks(e0, e1, **dict(MARGINS, p_value=0.2))
    assert test == Check("improvement_test", p < 0.2, p, 0.2, "held-out error lower than "
                         f"the nominal model's on 3 of 4 postures, one-sided paired t-test "
                         f"p = {p:.3g} (required < 0.2)")
    assert margin == Check("improvement_margin", True, pytest.approx(1 - rms1 / rms0), 0.05,
                           f"held-out RMSE {1e3 * rms0:.6g} -> {1e3 * rms1:.6g} mm: "
                           f"{100 * (1 - rms1 / rms0):.3g} % lower (required >= 5 %)")
    assert not improvement_checks(e0, e1, **dict(MARGINS, p_value=p))[0].passed
    assert improvement_checks(e0, e1, **dict(MARGINS, p_value=p * (1 + 1e-9)))[0].passed
    why = "no held-out postures to check the model on"
    assert improvement_checks([], [], **MARGINS) == [
        Check("improvement_test", False, None, 0.01, why),
        Check("improvement_margin", False, None, 0.05, why)]


def test_placement_changes_are_the_calibrated_minus_the_nominal_parameters():
    """A full-level UR10 whose nominal joint parameters are not zero: each joint's
    translation and rotation change are the norms of the differences of its first three
    and last three parameters."""
    from types import SimpleNamespace

    from figaroh_ros.tasks.calibration_gate import plausibility_checks
    km = truth_model(1)[0]
    x0 = np.zeros(km.n_params)
    x0[km.groups["elbow_joint"]] = [0.01, 0.0, 0.0, 0.02, 0.0, 0.0]
    x = x0.copy()
    x[km.groups["elbow_joint"]] = [0.013, 0.0, 0.004, 0.02 + 0.006, 0.0, 0.008]  # 5 mm, 10 mrad
    x[km.groups["wrist_1_joint"]] = [0.0, 0.001, 0.0, 0.0, 0.0, 0.0]
    t, r = plausibility_checks(SimpleNamespace(kinematic_model=km, x=x, x_nominal=x0),
                               Acceptance(max_placement_mm=20.0, max_placement_deg=2.0))
    assert t.value == pytest.approx(5.0) and "(elbow_joint)" in t.detail
    assert r.value == pytest.approx(np.degrees(0.01)) and "(elbow_joint)" in r.detail


def test_the_largest_prismatic_offset_is_named_among_several():
    from types import SimpleNamespace

    from figaroh_ros.tasks.calibration_gate import plausibility_checks
    link = '<link name="{0}"><inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" ' \
        'izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>'
    joint = '<joint name="{0}" type="{1}"><parent link="{2}"/><child link="{3}"/>' \
        '<origin xyz="0 0 0.2"/><axis xyz="{4}"/><limit lower="-1" upper="1" effort="1" ' \
        'velocity="1"/></joint>'
    urdf = ('<robot name="r">' + "".join(link.format(n) for n in ("base", "a", "b", "tool"))
            + joint.format("lift", "prismatic", "base", "a", "0 0 1")
            + joint.format("slide", "prismatic", "a", "b", "1 0 0")
            + joint.format("turn", "revolute", "b", "tool", "0 0 1") + "</robot>")
    km = KinematicModel(pin.buildModelFromXML(urdf), "tool", level="offset",
                        measurement=Measurement("points", 1, sigma_position=1e-4))
    x0 = km.nominal_parameters()
    x = x0.copy()
    x[km.groups["lift"]], x[km.groups["slide"]], x[km.groups["turn"]] = 0.003, -0.002, 0.01
    rev, pri = plausibility_checks(SimpleNamespace(kinematic_model=km, x=x, x_nominal=x0),
                                   Acceptance(max_offset_deg=1.0, max_placement_mm=5.0))
    assert pri.value == pytest.approx(3.0) and "(lift)" in pri.detail
    assert rev.value == pytest.approx(np.degrees(0.01)) and "(turn)" in rev.detail

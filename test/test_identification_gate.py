"""The publication gate of a dynamic identification (``tasks.identification_gate``) on a
simulated UR10 whose inertias (+-20 %), friction, rotor inertias and offsets are hidden,
with 0.3 N.m of torque noise; the model published is the physically consistent (LMI)
estimate:

* the honest identification passes every check;
* a truth equal to the URDF's model (nothing to identify) gives no significant
  improvement on the held-out samples: refused;
* torques of one joint with the wrong sign leave residuals far above the torque noise
  estimated from successive samples: the residual check fails with the joint named;
* a recording with a NaN position is refused before any fit;
* an acceptance threshold below the noise floor is refused by its named check.
"""
from types import SimpleNamespace

import numpy as np
import pinocchio as pin
import pytest

from figaroh_ros import identify, load_model
from figaroh_ros.config.acceptance import Acceptance
from figaroh_ros.errors import DataError
from figaroh_ros.excitation.fourier import fourier_trajectory
from figaroh_ros.identification import DriveOptions, parameter_layout
from figaroh_ros.identification.parameters import standard_parameters
from figaroh_ros.model.robot import RobotModel
from figaroh_ros.sim.dynamics import measured_torques, perturbed_parameters
from figaroh_ros.tasks.gate import Check
from figaroh_ros.tasks.identification_gate import (
    identification_inputs, identification_residual, identification_verdict
)

UR10 = "example-robot-data:ur_description/urdf/ur10_joint_limited_robot.urdf"
JOINTS = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint",
          "wrist_2_joint", "wrist_3_joint"]
ACC = Acceptance(improvement_margin=0.05, p_value=0.01, joint_limit_tolerance_rad=0.02,
                 max_mass_change=0.5, torque_relative_error=None)
NOISE = 0.3


def _acc(**changes) -> Acceptance:
    """:data:`ACC` with ``changes``."""
    return ACC.model_copy(update=changes)


@pytest.fixture(scope="module")
def arm():
    return load_model(UR10, JOINTS)


def experiment(arm, phi, seed, sign=None):
    traj = fourier_trajectory(arm, 12.0, 100.0, harmonics=5, base_freq_hz=0.1, seed=seed)
    tau = measured_torques(arm, parameter_layout(arm, DriveOptions()), DriveOptions(), phi,
                           traj, NOISE, seed=seed + 100)
    if sign is not None:
        tau[:, sign] *= -1.0
    return traj.q, traj.dq, traj.ddq, tau


def identified(arm, phi, sign=None, physical="lmi"):
    """The identification of 12 s of excitation, checked on 12 s more; its gate's input
    and residual checks."""
    data, held = experiment(arm, phi, 1, sign), experiment(arm, phi, 2, sign)
    res = identify(arm, *data, validation=held, physical=physical)
    return res, identification_inputs(arm, data[0], data[3], ACC), \
        identification_residual(res, data[3], 10.0)


def _with_acc(parts, acc):
    res, inputs, residual = parts
    return res, acc, inputs, residual


@pytest.fixture(scope="module")
def honest(arm):
    return identified(arm, perturbed_parameters(arm, parameter_layout(arm, DriveOptions()),
                                                seed=7))


def named(verdict):
    return {c.name: c for c in verdict.checks}


def test_honest_identification_passes(honest):
    v = identification_verdict(*_with_acc(honest, ACC))
    c = named(v)
    assert v.passed, [x.line() for x in v.failed()]
    assert c["improvement_test"].value < 1e-6 and c["improvement_margin"].value > 0.5
    assert c["masses"].value < 0.5 and c["urdf_round_trip"].value <= 1e-9
    assert c["residual_vs_noise"].value < 2.0
    assert v.to_dict()["verdict"] == "PASSED"


def test_nothing_to_identify_is_not_an_improvement(arm):
    layout = parameter_layout(arm, DriveOptions())
    v = identification_verdict(*_with_acc(identified(arm, standard_parameters(arm, layout)),
                                          ACC))                  # the URDF is the truth
    c = named(v)
    assert not v.passed and not c["improvement_margin"].passed
    assert c["improvement_margin"].value < 0.05


def test_wrong_torque_sign_is_a_poor_fit(arm):
    phi = perturbed_parameters(arm, parameter_layout(arm, DriveOptions()), seed=7)
    v = identification_verdict(*_with_acc(identified(arm, phi, 1, physical=None), ACC))
    c = named(v)
    assert not c["physical_model"].passed            # no consistent estimate asked for
    assert not c["residual_vs_noise"].passed and c["residual_vs_noise"].value > 20
    assert "shoulder_lift_joint" in c["residual_vs_noise"].detail


def test_non_finite_recording_and_acceptance_threshold(arm, honest):
    phi = perturbed_parameters(arm, parameter_layout(arm, DriveOptions()), seed=7)
    q, _, _, tau = experiment(arm, phi, 1)
    q[10, 2] = np.nan
    with pytest.raises(DataError, match="elbow_joint"):
        identification_inputs(arm, q, tau, ACC)
    v = identification_verdict(*_with_acc(honest, _acc(torque_relative_error=0.001)))
    c = named(v)["acceptance_torque_relative_error"]
    assert not v.passed and not c.passed and c.value > 0.001


@pytest.mark.parametrize("k, lower", [(3, -3.0718), (5, -0.0175)])
def test_a_reading_below_a_panda_lower_limit_fails_the_gate(panda, k, lower):
    """The Panda's joint 4 ([-3.0718, -0.0698]) and joint 6 ([-0.0175, 3.7525]): a
    position 0.05 below the lower limit fails ``joint_limits`` (tolerance 0.02), one 0.01
    below passes; the torques are not judged against the limits."""
    q = np.tile([0.0, 0.0, 0.0, -1.5, 0.0, 1.5, 0.0], (50, 1))
    tau = np.zeros((50, 7))
    q[17, k] = lower - 0.05
    c = identification_inputs(panda, q, tau, ACC)[-1]
    assert c.name == "joint_limits" and not c.passed
    assert c.value == pytest.approx(0.05, abs=1e-9)
    assert f"panda_joint{k + 1} = {lower - 0.05:.6g} at posture 17" in c.detail
    q[17, k] = lower - 0.01
    checks = identification_inputs(panda, q, tau + 1e3, ACC)
    assert all(c.passed for c in checks) and checks[-1].value == pytest.approx(0.01, abs=1e-9)


def test_held_out_errors_are_each_samples_relative_rms_over_joints(arm, honest):
    """Per held-out sample, the RMS over joints of the torque error of the published
    parameters, each joint's divided by the RMS of its measured held-out torque: computed
    here from the inverse dynamics of those parameters on the held-out trajectory."""
    from figaroh_ros.identification.regressor import joint_torques_from_parameters
    from figaroh_ros.tasks.identification_gate import (
        held_out_sample_errors, published_parameters
    )
    res = honest[0]
    phi = perturbed_parameters(arm, parameter_layout(arm, DriveOptions()), seed=7)
    q, dq, ddq, tau = experiment(arm, phi, 2)
    for params in (published_parameters(res), standard_parameters(arm, res.layout)):
        predicted = joint_torques_from_parameters(arm, res.layout, DriveOptions(), params, q,
                                                  dq, ddq)
        relative = (tau - predicted) / np.sqrt(np.mean(tau ** 2, axis=0))
        expected = np.sqrt(np.mean(relative ** 2, axis=1))
        got = held_out_sample_errors(res, params)
        assert got.shape == (len(q),)
        assert got == pytest.approx(expected, rel=1e-6, abs=1e-9)


def test_mass_check_names_the_link_of_the_largest_relative_change(arm, honest):

    from figaroh_ros.tasks.identification_gate import mass_check
    res = honest[0]
    layout = res.layout
    nominal = standard_parameters(arm, layout)
    mass = {arm.model.names[j]: c[0] for j, c in layout.inertial_cols.items()}
    phi = nominal.copy()
    phi[mass["elbow_joint"]] *= 1.6
    phi[mass["wrist_3_joint"]] *= 1.1                   # 0.202 kg, the lightest
    c = mass_check(res, phi, ACC)
    assert c == Check("masses", False, pytest.approx(0.6), 0.5, c.detail)
    assert c.detail == "largest relative mass change (body of elbow_joint) 0.6 (beyond 0.5)"
    phi[mass["wrist_3_joint"]] = 0.202 * 0.3
    c = mass_check(res, phi, ACC.model_copy(update={"max_mass_change": 0.7}))
    assert c.passed and c.value == pytest.approx(0.7) and "(body of wrist_3_joint)" in c.detail
    # a body without mass in the URDF (a frame) has no relative change: left out
    urdf = """<robot name="r"><link name="base"/><link name="a"/>
      <link name="b"><inertial><mass value="2"/><origin xyz="0 0 0.1"/>
        <inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <joint name="j1" type="revolute"><parent link="base"/><child link="a"/>
        <axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
      <joint name="j2" type="revolute"><parent link="a"/><child link="b"/>
        <origin xyz="0 0 0.2"/><axis xyz="0 1 0"/>
        <limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>"""
    robot = RobotModel(pin.buildModelFromXML(urdf), ["j1", "j2"], "r.urdf")
    small = parameter_layout(robot, DriveOptions())
    phi = standard_parameters(robot, small)
    c = mass_check(SimpleNamespace(model=robot, layout=small), phi * 1.25, ACC)
    assert c.passed and c.value == pytest.approx(0.25) and "(body of j2)" in c.detail


def test_consistency_check_counts_and_names_the_first_inconsistent_link(honest):

    from figaroh_ros.identification.physical.inertia import LinkCheck
    from figaroh_ros.tasks.identification_gate import consistency_check
    assert consistency_check(honest[0]) == Check("inertias_consistent", True, 0.0, 0.0,
                                                 "every link physically consistent")
    links = [LinkCheck("a", 1.0, np.ones(3), 0.1, True),
             LinkCheck("b", -1.0, np.ones(3), -0.1, False, "mass -1 kg is not positive"),
             LinkCheck("c", 1.0, np.ones(3), -0.2, False, "triangle inequality")]
    bad = SimpleNamespace(physical=SimpleNamespace(checks=links))
    assert consistency_check(bad) == Check(
        "inertias_consistent", False, 2.0, 0.0,
        "2 links not physically consistent, first b: mass -1 kg is not positive")


def test_the_urdf_gap_is_relative_to_each_links_mass(honest):
    """A model a million times heavier (every inertial parameter scaled: still consistent)
    round-trips through its URDF to the same relative gap, far below the gate's 1e-9."""
    from figaroh_ros.tasks.identification_gate import published_parameters, urdf_gap
    res = honest[0]
    phi = published_parameters(res)
    assert urdf_gap(res, phi) <= 1e-12
    heavy = phi.copy()
    for c in res.layout.inertial_cols.values():
        heavy[c] *= 1e6
    assert urdf_gap(res, heavy) <= 1e-12


def test_the_verdict_lists_every_check_in_order_with_its_numbers(arm, honest):
    from figaroh_ros.tasks.identification_gate import (
        held_out_sample_errors, published_parameters
    )
    res, inputs, residual = honest
    v = identification_verdict(res, ACC, inputs, residual)
    assert [c.name for c in v.checks] == [
        "joint_positions_finite", "torques_finite", "joint_limits", "improvement_test",
        "improvement_margin", "masses", "inertias_consistent", "urdf_round_trip",
        "residual_vs_noise"]
    e0 = held_out_sample_errors(res, standard_parameters(arm, res.layout))
    e1 = held_out_sample_errors(res, published_parameters(res))
    rms0, rms1 = np.sqrt(np.mean(e0 ** 2)), np.sqrt(np.mean(e1 ** 2))
    margin = named(v)["improvement_margin"]
    assert margin.value == pytest.approx(1 - rms1 / rms0, rel=1e-12)
    assert margin.detail.startswith(f"held-out RMSE {rms0:.6g} -> {rms1:.6g} (relative): ")
    assert f"on {int(np.sum(e1 < e0))} of {len(e0)} samples" in named(v)["improvement_test"].detail


def test_without_a_physical_model_or_held_out_samples_nothing_is_published(arm):
    phi = perturbed_parameters(arm, parameter_layout(arm, DriveOptions()), seed=7)
    data = experiment(arm, phi, 1)
    res = identify(arm, *data, physical="lmi")                       # nothing held out
    inputs = identification_inputs(arm, data[0], data[3], ACC)
    residual = identification_residual(res, data[3], 10.0)
    v = identification_verdict(res, _acc(torque_relative_error=0.5), inputs, residual)
    c = named(v)
    assert not v.passed and "acceptance_torque_relative_error" not in c
    for name in ("improvement_test", "improvement_margin"):
        assert not c[name].passed and c[name].detail == \
            "no held-out samples to check the model on"
    res = identify(arm, *data)                                       # no physical model
    v = identification_verdict(res, ACC, inputs, residual)
    assert [c.name for c in v.checks] == ["joint_positions_finite", "torques_finite",
                                          "joint_limits", "physical_model",
                                          "residual_vs_noise"]
    assert v.checks[3] == Check("physical_model", False, None, None, "no physically "
                                "consistent estimate: base parameters are not a URDF (set "
                                "physical.method)")


def test_the_residual_is_each_joints_rmse_over_its_successive_sample_noise(arm, honest):
    res = honest[0]
    phi = perturbed_parameters(arm, parameter_layout(arm, DriveOptions()), seed=7)
    tau = experiment(arm, phi, 1)[3]
    noise = np.sqrt(np.mean(np.diff(tau, axis=0) ** 2, axis=0) / 2)
    ratio = np.asarray(res.rmse) / noise
    j = int(np.argmax(ratio))
    c = identification_residual(res, tau, 10.0)
    assert c.value == pytest.approx(ratio[j], rel=1e-12) and c.limit == 10.0
    assert c.detail.endswith(f"torque noise of {JOINTS[j]} ({res.rmse[j]:.4g} over "
                             f"{noise[j]:.4g} from successive samples) (limit 10 x)")
    c = identification_residual(res, tau * 1e-3, 10.0)              # noise 0.3 mN.m
    assert c.value == pytest.approx(1e3 * ratio[j], rel=1e-12) and not c.passed


def test_the_inputs_and_the_acceptance_threshold_every_field(arm, honest):
    q = np.zeros((4, 6))
    q[2, 1] = -1.5
    tau = np.arange(24.0).reshape(4, 6) - 30.0
    checks = identification_inputs(arm, q, tau, ACC)
    assert checks[:2] == [
        Check("joint_positions_finite", True, 1.5, np.inf,
              "24 values finite, largest |value| 1.5 rad (limit inf rad)"),
        Check("torques_finite", True, 30.0, np.inf,
              "24 values finite, largest |value| 30 N.m (limit inf N.m)")]
    tau[3, 4] = np.inf
    with pytest.raises(DataError) as exc:
        identification_inputs(arm, q, tau, ACC)
    assert str(exc.value).startswith("recording: 1 values non-finite or beyond inf N.m: "
                                     "first at row 3, column 4: ")
    assert str(exc.value).endswith("inf") or str(exc.value).endswith("inf)")
    res, inputs, residual = honest
    v = identification_verdict(res, _acc(torque_relative_error=0.001), inputs, residual)
    c = named(v)["acceptance_torque_relative_error"]
    e = float(res.validation_relative_error_stacked)
    assert c == Check("acceptance_torque_relative_error", False, e, 0.001,
                      f"held-out torque RMS over the measured torques' RMS {e:.6g} "
                      "(beyond 0.001)")


def test_the_publication_entry_is_the_verdict_of_the_recording(arm, honest):
    """``identification_publication``: the gate on the recording with the config's
    acceptance section, the residual on the fitted joints' torques."""
    from figaroh_ros.tasks.identification_gate import identification_publication
    res, inputs, residual = honest
    phi = perturbed_parameters(arm, parameter_layout(arm, DriveOptions()), seed=7)
    q, _, _, tau = experiment(arm, phi, 1)
    acc = ACC.model_copy(update={"residual_limit": 10.0})
    entry = identification_publication(SimpleNamespace(acceptance=acc), res, q, tau)
    assert entry == identification_verdict(res, acc, inputs, residual).to_dict()
    assert entry["passed"] and entry["checks"][-1]["name"] == "residual_vs_noise"
    tight = identification_publication(SimpleNamespace(acceptance=acc.model_copy(
        update={"residual_limit": 0.5})), res, q, tau)
    assert not tight["passed"] and [c["name"] for c in tight["checks"]
                                    if not c["passed"]] == ["residual_vs_noise"]


def test_the_urdf_gap_is_a_mass_change_over_the_links_mass_at_least_one_kg(honest,
                                                                         monkeypatch):
    """A URDF written with one link's mass off by ``delta`` (a writer's mistake) is a gap of
    ``delta`` in kg for a link below 1 kg (the UR10's wrist_3 link, 0.2 kg) and of
    ``delta`` over the mass for a heavy one (the upper arm, 13 kg)."""
    from figaroh_ros.identification.physical.urdf_inertia import identified_urdf_text
    from figaroh_ros.tasks import identification_gate as module
    res = honest[0]
    phi = module.published_parameters(res)
    for joint, delta, heavy in (("wrist_3_joint", 1e-3, False),
                                ("shoulder_lift_joint", 1e-2, True)):
        cols = res.layout.inertial_cols[res.model.model.getJointId(joint)]
        mass = phi[cols[0]]
        assert (mass > 5.0) if heavy else (mass < 1.0)
        written = phi.copy()
        written[cols[0]] += delta
        monkeypatch.setattr(module, "identified_urdf_text",
                            lambda robot, layout, _, w=written: identified_urdf_text(
                                robot, layout, w))
        expected = delta / mass if heavy else delta
        assert module.urdf_gap(res, phi) == pytest.approx(expected, rel=1e-6)
        assert not module.round_trip_check(module.urdf_gap(res, phi)).passed


def test_the_publication_residual_is_on_the_fitted_rows_of_the_recording(arm, honest):
    """The residual of the publication entry compares each fitted row group with the noise
    of its own column of the recording: fitted joints in another order than the model's or
    a part of them pick their columns; a wrench fit's six components are the recording's
    columns as they are (on a six-joint arm too)."""
    from dataclasses import replace

    from figaroh_ros.identification.wrench import COMPONENTS
    from figaroh_ros.tasks.identification_gate import identification_publication
    res = honest[0]
    phi = perturbed_parameters(arm, parameter_layout(arm, DriveOptions()), seed=7)
    q, _, _, tau = experiment(arm, phi, 1)
    cfg = SimpleNamespace(acceptance=ACC.model_copy(update={"residual_limit": 10.0}))
    rmse = np.asarray(res.rmse)
    noise = np.sqrt(np.mean(np.diff(tau, axis=0) ** 2, axis=0) / 2)
    for picked in ([5, 4, 3, 2, 1, 0], [3, 4, 5], [5, 0]):
        fit = replace(res, joints=[JOINTS[k] for k in picked], rmse=rmse[picked])
        residual = identification_publication(cfg, fit, q, tau)["checks"][-1]
        ratio = rmse[picked] / noise[picked]
        assert residual["name"] == "residual_vs_noise"
        assert residual["value"] == pytest.approx(ratio.max(), rel=1e-12), picked
        assert f"torque noise of {fit.joints[int(np.argmax(ratio))]} " in residual["detail"]
    wrench = replace(res, joints=list(COMPONENTS))
    residual = identification_publication(cfg, wrench, q, tau)["checks"][-1]
    ratio = rmse / noise
    assert residual["value"] == pytest.approx(ratio.max(), rel=1e-12)
    assert f"torque noise of {COMPONENTS[int(np.argmax(ratio))]} " in residual["detail"]

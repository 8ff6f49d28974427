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
import numpy as np
import pytest

from figaroh_ros import identify, load_model
from figaroh_ros.errors import DataError
from figaroh_ros.excitation.fourier import fourier_trajectory
from figaroh_ros.identification import DriveOptions, parameter_layout
from figaroh_ros.identification.parameters import standard_parameters
from figaroh_ros.sim.dynamics import measured_torques, perturbed_parameters
from figaroh_ros.tasks.identification_gate import (
    identification_inputs, identification_residual, identification_verdict
)

UR10 = "example-robot-data:ur_description/urdf/ur10_joint_limited_robot.urdf"
JOINTS = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint",
          "wrist_2_joint", "wrist_3_joint"]
ACC = {"improvement_margin": 0.05, "p_value": 0.01, "joint_limit_tolerance_rad": 0.02,
       "max_mass_change": 0.5, "torque_relative_error": None}
NOISE = 0.3


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
    v = identification_verdict(*_with_acc(honest, dict(ACC, torque_relative_error=0.001)))
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

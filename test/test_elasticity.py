"""Joint elasticity in the geometric model (Nguyen et al. 2023 Table I, last row): a UR10 whose
shoulder and elbow deflect under their gravity torques, with hidden placement errors; the
compliances are identified with the kinematic parameters."""
import numpy as np
import pinocchio as pin
import pytest

from figaroh_ros.calibration.kinematic_model import KinematicModel, Measurement
from figaroh_ros.calibration.solve import (
    accuracy, estimate, identifiable_parameters, initial_frames
)
from figaroh_ros.errors import ModelError
from figaroh_ros.model.robot import example_robot_urdf
from figaroh_ros.sim.kinematics import hidden_errors, measure, random_postures

ELASTIC = ["shoulder_lift_joint", "elbow_joint"]
COMPLIANCE = {"shoulder_lift_joint": 4e-5, "elbow_joint": 6e-5}    # rad per N.m


def _model(elastic):
    m = pin.buildModelFromUrdf(example_robot_urdf("ur_description/urdf/ur10_robot.urdf"))
    meas = Measurement("points", 1, sigma_position=1e-4)
    return KinematicModel(m, "tool0", level="full", measurement=meas,
                          elastic_joints=elastic)


@pytest.fixture(scope="module")
def experiment():
    rng = np.random.default_rng(81)
    km_true = _model(ELASTIC)
    km_true.base0 = pin.SE3(pin.rpy.rpyToMatrix(0.1, -0.2, 1.0), np.array([1.2, -0.4, 0.3]))
    x_true = hidden_errors(km_true, rng, tool_points=[[0.03, 0.0, 0.08]])
    for j, c in COMPLIANCE.items():
        x_true[km_true.groups[f"compliance_{j}"]] = c
    train = measure(km_true, random_postures(km_true, 120, rng), x_true, rng)
    valid = measure(km_true, random_postures(km_true, 150, rng), x_true, rng)
    return km_true, x_true, train, valid


def _fit(elastic, train):
    km = _model(elastic)
    x0 = initial_frames(km, train, km.nominal_parameters([[0.0, 0.0, 0.0]]))
    return km, estimate(km, train, x0, bp=identifiable_parameters(km, train, x0))


def test_compliance_regressor_is_the_jacobian(experiment):
    km_true, x_true, train, _ = experiment
    data = train.subset(range(4))
    F, J = km_true.residuals(data.Q, data.Y, x_true, True)
    for j in ELASTIC:
        k = km_true.groups[f"compliance_{j}"].start
        e = np.zeros(km_true.n_params)
        e[k] = 1e-7
        fd = (km_true.residuals(data.Q, data.Y, x_true + e)[0]
              - km_true.residuals(data.Q, data.Y, x_true - e)[0]) / 2e-7
        assert np.allclose(J[:, :, k], fd, atol=1e-6 * np.abs(fd).max())


def test_compliances_identified_and_needed(experiment):
    km_true, x_true, train, valid = experiment
    km, res = _fit(ELASTIC, train)
    for j, c in COMPLIANCE.items():
        got = res.x[km.groups[f"compliance_{j}"]][0]
        assert got == pytest.approx(c, rel=0.1), (j, got, c)
    rmse = accuracy(km, valid, res.x).rmse
    floor = accuracy(km_true, valid, x_true).rmse           # the noise itself
    assert rmse < 1.1 * floor
    # the rigid model cannot absorb the deflections
    km_r, res_r = _fit(None, train)
    assert accuracy(km_r, valid, res_r.x).rmse > 3 * rmse


def test_elastic_joint_off_the_chain_is_refused():

    with pytest.raises(ModelError, match="elastic joint 'nope'"):
        _model(["nope"])

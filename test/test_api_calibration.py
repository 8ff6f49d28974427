"""Calibrating a 7-joint arm with the public API only, from arrays made in memory.

A Panda whose joint placements are off by a few millimetres and milliradians (hidden from
the calibration), its flange pose measured by motion capture with Gaussian noise at 60
training and 100 held-out postures.  The calibrated model must predict the held-out
measurements as well as the true robot itself does (the noise floor)."""
import numpy as np
import pinocchio as pin

from figaroh_ros.calibration import calibrate
from figaroh_ros.model import example_robot_urdf

URDF = example_robot_urdf("panda_description/urdf/panda.urdf")
TOOL = "panda_link8"
ARM = [f"panda_joint{i}" for i in range(1, 8)]
NOISE = (0.2e-3, 1e-3)            # mocap noise: m per coordinate, rad per axis


def with_hidden_errors(model, rng, mm=2.0, mrad=2.0):
    """A copy of ``model`` whose arm joint placements are off by random errors."""
    true = model.copy()
    for name in ARM:
        j = true.getJointId(name)
        error = pin.SE3(pin.exp3(rng.normal(0, mrad * 1e-3, 3)), rng.normal(0, mm * 1e-3, 3))
        true.jointPlacements[j] = true.jointPlacements[j] * error
    return true


def flange_poses(model, Q):
    """Pose of the flange at each posture: position (m), rotation vector (rad)."""
    data, fid = model.createData(), model.getFrameId(TOOL)
    out = []
    for q_arm in Q:
        q = pin.neutral(model)
        q[:7] = q_arm
        pin.framesForwardKinematics(model, data, q)
        T = data.oMf[fid]
        out.append(np.r_[T.translation, pin.log3(T.rotation)])
    return np.array(out)


def mocap(poses, rng):
    """Noisy measurements of the poses (orientation noise as a small random rotation)."""
    noisy = poses.copy()
    noisy[:, :3] += rng.normal(0, NOISE[0], (len(poses), 3))
    for row in noisy:
        row[3:] = pin.log3(pin.exp3(row[3:]) @ pin.exp3(rng.normal(0, NOISE[1], 3)))
    return noisy


def test_calibrated_panda_reaches_the_noise_floor():
    rng = np.random.default_rng(7)
    nominal = pin.buildModelFromUrdf(URDF)
    true = with_hidden_errors(nominal, rng)
    lo, hi = nominal.lowerPositionLimit[:7] + 0.1, nominal.upperPositionLimit[:7] - 0.1
    Q_train, Q_test = rng.uniform(lo, hi, (60, 7)), rng.uniform(lo, hi, (100, 7))
    Y_train = mocap(flange_poses(true, Q_train), rng)
    exact_test = flange_poses(true, Q_test)
    Y_test = mocap(exact_test, rng)

    result = calibrate(URDF, Q_train, Y_train, tool_frame=TOOL, measurement="pose",
                       noise=NOISE, validation=(Q_test, Y_test))

    # the true robot's own error on the held-out measurements: the noise itself
    floor = np.sqrt(np.mean(np.sum((Y_test[:, :3] - exact_test[:, :3]) ** 2, axis=1)))
    assert result.validation_rmse <= 1.15 * floor
    assert result.nominal_validation_rmse > 3 * result.validation_rmse
    assert result.predict(Q_test).shape == (100, 6)
    for name, value, std, unit in zip(result.parameters.names, result.parameters.values,
                                      result.parameters.std, result.parameters.units):
        assert np.isfinite(value) and std > 0 and unit in ("m", "rad")
    calibrated = pin.buildModelFromXML(result.to_urdf())      # joint origins rewritten
    assert result.urdf_round_trip_gap < 1e-9 and calibrated.nq == nominal.nq
    assert result.to_dict()["better_than_nominal"]

"""Using the library from Python: identify a 7-joint arm from arrays in memory.

A simulated Franka Panda arm whose true parameters are hidden (URDF inertias perturbed,
random friction, rotor inertias and torque offsets) follows two Fourier excitations; its
torques carry Gaussian noise.  Identified on the first, the model predicts the second to
within 10 % of the noise floor: the error of the true model on the same noisy torques.
"""
import numpy as np

from figaroh_ros.excitation.fourier import fourier_trajectory
from figaroh_ros.identification import DriveOptions, identify, parameter_layout
from figaroh_ros.model import load_model
from figaroh_ros.sim.dynamics import measured_torques, perturbed_parameters

NOISE = 0.5      # N.m, standard deviation of the torque noise


def rmse(a, b):
    """Root mean square error per joint (column)."""
    return np.sqrt(np.mean((np.asarray(a) - np.asarray(b)) ** 2, axis=0))


def test_identify_a_panda_arm_from_arrays():
    arm = load_model("example-robot-data:panda_description/urdf/panda.urdf",
                     [f"panda_joint{i}" for i in range(1, 8)])
    # the hidden true robot, with the drive-chain terms identify() uses by default
    drive = DriveOptions()
    layout = parameter_layout(arm, drive)
    phi_true = perturbed_parameters(arm, layout, seed=7)

    def experiment(seed, noise=NOISE):
        """q, dq, ddq and measured torques (N x 7 each) along a Fourier excitation."""
        traj = fourier_trajectory(arm, 30.0, 100.0, harmonics=5, base_freq_hz=0.1, seed=seed)
        tau = measured_torques(arm, layout, drive, phi_true, traj, noise, seed=seed + 100)
        return traj.q, traj.dq, traj.ddq, tau

    q, dq, ddq, tau = experiment(1)
    held_out = experiment(2)
    result = identify(arm, q, dq, ddq, tau, validation=held_out)
    print(result)
    print(f"{len(result.base_parameters)} base parameters, e.g.",
          result.base_parameters.names[0], "=", result.base_parameters.values[0])

    # the noise floor: the true model's error on the same noisy held-out torques
    exact = experiment(2, noise=0.0)[3]
    floor = rmse(held_out[3], exact)
    predicted = result.predict(*held_out[:3])
    print("held-out RMSE / noise floor:", np.round(rmse(held_out[3], predicted) / floor, 3))
    assert np.all(rmse(held_out[3], predicted) <= 1.10 * floor)
    assert np.allclose(result.validation_rmse, rmse(held_out[3], predicted))
    assert np.all(result.nominal_validation_rmse > 3 * result.validation_rmse)

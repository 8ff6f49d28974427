"""Signed drive gains from the nominal model (``drive.gains_from_nominal``,
``identification/drive_gains.py`` ``nominal_gains``) against a simulated truth:
a UR5 whose links are its URDF's, with hidden friction and offsets, reports on its first
three joints an effort ``e_j = tau_j / K_j`` with hidden signed gains ``K = (18, -7, -9)``
(TIAGo's scales) and on the wrist its torque; effort noise of known std.  ``identify``
must recover each gain's sign and value.

The tolerance, from the noise: ``nominal_gains`` regresses the URDF torque ``t_j = K_j s_j``
(``s_j`` the noise-free effort) on the measured effort ``y_j = s_j + n_j`` and the joint's
own friction and offset columns.  With ``s`` and ``n`` the parts orthogonal to those
columns, ``K_hat / K - 1 = -(s.n + n.n) / (s.s + 2 s.n + n.n)``: a bias of about
``-(sigma / rms(s))^2`` (noise in the regressor attenuates the slope) and a spread of
``sigma / (rms(s) sqrt(N))``.  In torque units ``sigma / rms(s) = sigma_tau / rms(tau)``.
The bound is that bias plus 4 standard deviations, with ``N`` halved for the rows the fit
leaves out (filter edges, joints at rest); filtering and decimation only lower the noise."""
import numpy as np
import yaml

from figaroh_ros.config.identification import load_config
from figaroh_ros.excitation.fourier import fourier_trajectory
from figaroh_ros.identification.parameters import DriveOptions, parameter_layout
from figaroh_ros.identification.regressor import joint_torques_from_parameters
from figaroh_ros.model.loading import load_model
from figaroh_ros.sim.dynamics import perturbed_parameters
from figaroh_ros.tasks.identify import identify_config

UR5 = "example-robot-data:ur_description/urdf/ur5_robot.urdf"
JOINTS = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint",
          "wrist_2_joint", "wrist_3_joint"]
TRUE_K = np.array([18.0, -7.0, -9.0, 1.0, 1.0, 1.0])
SIGMA_TAU = 0.1          # N.m: effort noise, in joint torque units
RATE = 100.0
DRIVE = DriveOptions(rotor_inertia=False)


def tolerance(tau: np.ndarray, dq: np.ndarray, n_rows: int) -> float:
    """Bias + 4 std of ``K_hat / K - 1`` for a joint's noise-free torque ``tau``."""
    own = np.column_stack([dq, np.sign(dq), np.ones_like(dq)])
    s = tau - own @ np.linalg.lstsq(own, tau, rcond=None)[0]
    r = SIGMA_TAU / np.sqrt(np.mean(s ** 2))
    return r ** 2 + 4 * r / np.sqrt(n_rows)


def test_signed_gains_recovered_from_the_nominal_model(tmp_path):
    arm = load_model(UR5, JOINTS)
    layout = parameter_layout(arm, DRIVE)
    phi = perturbed_parameters(arm, layout, seed=3, inertial_scale=0.0)   # URDF links
    traj = fourier_trajectory(arm, 30.0, RATE, harmonics=5, base_freq_hz=0.1, seed=4)
    tau = joint_torques_from_parameters(arm, layout, DRIVE, phi, traj.q, traj.dq, traj.ddq)
    noisy = tau + np.random.default_rng(5).normal(0, SIGMA_TAU, tau.shape)
    effort = noisy / TRUE_K
    header = ["t"] + [f"{j}_position" for j in JOINTS] + [f"{j}_effort" for j in JOINTS]
    np.savetxt(tmp_path / "rec.csv", np.column_stack([traj.t, traj.q, effort]),
               delimiter=",", header=",".join(header), comments="")
    (tmp_path / "id.yaml").write_text(yaml.safe_dump({
        "robot": {"name": "ur5", "urdf": UR5, "joints": JOINTS},
        "model": {"rotor_inertia": False},
        "drive": {"gains_from_nominal": JOINTS[:3]},
        "data": {"format": "csv_table", "path": ".", "table": "rec.csv",
                 "sample_time": 1.0 / RATE},
        "processing": {"position_cutoff_hz": 10.0, "decimation": 1},
        "estimation": {"validation_fraction": 0.3, "cross_validation_folds": 0},
        "output": {"plots": False}}))
    res = identify_config(load_config(str(tmp_path / "id.yaml")))
    K = np.asarray(res.gain_factors)          # K = g K0, K0 = 1 (no drive.effort_gains)
    tol = np.array([tolerance(tau[:, j], traj.dq[:, j], len(traj.t) // 2)
                    for j in range(3)])
    err = K[:3] / TRUE_K[:3] - 1
    print("gains", K[:3], "relative error", err, "tolerance", tol)
    assert np.all(np.sign(K[:3]) == np.sign(TRUE_K[:3]))
    assert np.all(np.abs(err) <= tol), (K[:3], err, tol)
    np.testing.assert_array_equal(K[3:], 1.0)    # the wrist keeps its configured gain
    assert np.all(tol < 0.02)                    # the bound says something at this noise

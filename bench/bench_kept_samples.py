"""Can the regressor be computed only at the samples the decimation keeps? Measured: no.

Parallel decimation (Gautier 1997) filters every column of the full-rate regressor W and
the torques with the same low-pass, then keeps one sample in ``d``: the filtered system
keeps the parameters because the filter is linear.  The cheaper alternative computes W
only at the kept samples of the (already 10 Hz low-passed) motion and low-passes the
torques alone (zero-phase Butterworth at the position cut-off, or 0.8 times the decimated
Nyquist frequency if lower).  W is not linear in the motion: the Coulomb column sign(dq)
jumps at every reversal, where the filtered torque is smooth (without Coulomb friction,
last case, the two estimates agree within 0.3 std, but the alternative's std come from
residuals low-passed below the new Nyquist frequency, correlated: half as large, and the
truth 4.7 of them away).  On simulated 7-joint arms
(Panda without its hand, 12 s at 1 kHz, hidden true parameters, 0.3 N.m noise) this prints,
for each case, how far the alternative's WLS estimate is from today's and from the truth,
in units of the estimates' standard deviations, and the ratio of their std.
"""
import numpy as np

from figaroh_ros.excitation.fourier import fourier_trajectory
from figaroh_ros.identification.base_parameters import base_parameters
from figaroh_ros.identification.estimation import weighted_least_squares
from figaroh_ros.identification.observation import Processing, joint_motion, observe
from figaroh_ros.identification.parameters import DriveOptions, parameter_layout
from figaroh_ros.identification.regressor import standard_regressor
from figaroh_ros.identification.signals import lowpass_zero_phase
from figaroh_ros.model.loading import load_model
from figaroh_ros.model.robot import configured_urdf
from figaroh_ros.sim.dynamics import measured_torques, perturbed_parameters
from figaroh_ros.threads import limited_threads

RATE = 1000.0
URDF = "example-robot-data:panda_description/urdf/panda.urdf"


def both_ways(robot, layout, drive, seed, cutoff, d, base_hz):
    """(today's estimate, the alternative's, the true base parameters)."""
    phi = perturbed_parameters(robot, layout, seed=seed)
    traj = fourier_trajectory(robot, 12.0, RATE, harmonics=5, base_freq_hz=base_hz,
                              seed=seed + 1)
    tau = measured_torques(robot, layout, drive, phi, traj, 0.3, seed=seed + 2)
    q = traj.q + np.random.default_rng(seed + 3).normal(scale=2e-5, size=traj.q.shape)
    p = Processing(cutoff, 4, d, 0.02)
    m = joint_motion(traj.t, q, p)
    k, n = m.keep, robot.n_joints
    W = standard_regressor(robot, layout, drive, m.q[k], m.dq[k], m.ddq[k])
    base = base_parameters(W, layout.names)
    today = observe(base, W, tau[k].T.ravel(), m.dq[k], p)
    tau_f = lowpass_zero_phase(tau, min(cutoff, 0.8 * RATE / (2 * d)), RATE, 4)[k][::d]
    kept = tuple(x[k][::d] for x in (m.q, m.dq, m.ddq))
    other = observe(base, standard_regressor(robot, layout, drive, *kept), tau_f.T.ravel(),
                    kept[1], Processing(cutoff, 4, 1, 0.02))
    return (weighted_least_squares(today.Wb, today.Y, today.row_joint, n),
            weighted_least_squares(other.Wb, other.Y, other.row_joint, n),
            base.from_standard(phi))


def main():
    joints = [f"panda_joint{i}" for i in range(1, 8)]
    robot = load_model(configured_urdf(URDF, ["panda_hand"]), joints)
    print("case: |alternative - today| / std (max, median); |x - truth| / std, max for "
          "today / alternative; std alternative / today (median)")
    with limited_threads():
        for seed, cutoff, d, base_hz, coulomb in (
                (41, 10.0, 10, 0.25, True), (51, 10.0, 10, 0.25, True),
                (71, 10.0, 10, 0.5, True), (81, 20.0, 10, 0.5, True),
                (91, 5.0, 50, 0.25, True), (41, 10.0, 10, 0.25, False)):
            drive = DriveOptions(coulomb_friction=coulomb, rotor_inertia=False)
            layout = parameter_layout(robot, drive)
            e0, e1, truth = both_ways(robot, layout, drive, seed, cutoff, d, base_hz)
            dz = np.abs(e1.phi - e0.phi) / e0.std
            print(f"seed {seed}, cut-off {cutoff:g} Hz, decimation {d}, {base_hz} Hz "
                  f"excitation{'' if coulomb else ', no Coulomb friction'}: {dz.max():.1f}, {np.median(dz):.1f}; "
                  f"{np.max(np.abs(e0.phi - truth) / e0.std):.1f} / "
                  f"{np.max(np.abs(e1.phi - truth) / e1.std):.1f}; "
                  f"{np.median(e1.std / e0.std):.1f}", flush=True)


if __name__ == "__main__":
    main()

"""Identify a 7-joint arm (Panda without its hand) from 12 s recorded at 1 kHz in a CSV table.

The recording is simulated in a temporary folder: a 5-harmonic Fourier excitation, the
torques of a hidden true robot (perturbed inertias, friction, offsets) with 0.3 N.m noise
and 2e-5 rad encoder noise.  The config asks a 10 Hz position filter, parallel decimation
by 10 and WLS (hold-out and cross-validation as by default).

Each run is a whole command in a fresh process, imports included: ours is
``figaroh-ros identify``; FIGAROH 1.0.2 has no command reading such a table, so its side is
this file run with ``--figaroh``: the same reading, filter, differentiation, edges, its
``build_regressor_basic``, ``eliminate_non_dynaffect``, ``get_baseParams`` and
``build_baseRegressor``, the same decimation and one least-squares solve (OLS, no hold-out,
no cross-validation, no essential parameters, no result written: less work than ours).
Five runs of each, interleaved, after one warm-up of each; prints the median and spread
of the wall time of each side, of our CPU time (the command and its forked workers: on a
quiet machine the command's wall time is about its CPU time, less what the workers ran
beside it) and of the ratio, and our estimate against the hidden truth.
"""
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np
import yaml
from results import record, row

RUNS = 5
RATE = 1000.0
CUTOFF, DECIMATION, EDGE = 10.0, 10, 302    # EDGE: figaroh_ros' edge_samples(4, 10, 1000)
JOINTS = [f"panda_joint{i}" for i in range(1, 8)]
URDF = "example-robot-data:panda_description/urdf/panda.urdf"


def config(folder: str) -> str:
    cfg = {"robot": {"name": "panda_1khz", "urdf": URDF, "joints": JOINTS,
                     "remove_links": ["panda_hand"]},
           "model": {"rotor_inertia": False},
           "data": {"format": "csv_table", "path": folder, "table": "log.csv",
                    "time_column": "t"},
           "processing": {"position_cutoff_hz": CUTOFF, "decimation": DECIMATION,
                          "min_velocity": 0.02},
           "estimation": {"method": "wls"},
           "output": {"plots": False}}
    path = os.path.join(folder, "panda_1khz.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(cfg, f)
    return path


def recording(folder: str) -> dict:
    """Write the simulated table ``log.csv`` and the arm's URDF; return the true base
    parameters by the standard parameter that names each (its first term)."""
    from figaroh_ros.config.identification import load_config
    from figaroh_ros.excitation.fourier import fourier_trajectory
    from figaroh_ros.identification.base_parameters import base_parameters
    from figaroh_ros.identification.parameters import parameter_layout
    from figaroh_ros.identification.regressor import standard_regressor
    from figaroh_ros.model.robot import configured_urdf
    from figaroh_ros.sim.dynamics import measured_torques, perturbed_parameters
    from figaroh_ros.tasks.identify import drive_options, robot_from_config
    cfg = load_config(config(folder))
    robot, drive = robot_from_config(cfg), drive_options(cfg)
    layout = parameter_layout(robot, drive)
    phi = perturbed_parameters(robot, layout, seed=41)
    traj = fourier_trajectory(robot, 12.0, RATE, harmonics=5, base_freq_hz=0.25, seed=42)
    tau = measured_torques(robot, layout, drive, phi, traj, 0.3, seed=43)
    q = traj.q + np.random.default_rng(44).normal(scale=2e-5, size=traj.q.shape)
    header = ["t"] + [f"{j}_position" for j in JOINTS] + [f"{j}_effort" for j in JOINTS]
    np.savetxt(os.path.join(folder, "log.csv"), np.column_stack([traj.t, q, tau]),
               delimiter=",", header=",".join(header), comments="")
    with open(os.path.join(folder, "panda_arm.urdf"), "w") as f:
        f.write(configured_urdf(URDF, ["panda_hand"]))
    bp = base_parameters(standard_regressor(robot, layout, drive, traj.q, traj.dq, traj.ddq),
                         layout.names)
    return {name.split()[0]: v for name, v in zip(bp.names, bp.from_standard(phi))}


def figaroh_side(folder: str) -> None:
    """FIGAROH 1.0.2's functions on the same table (run in a fresh process)."""
    import pinocchio as pin
    from figaroh.identification.parameter import get_standard_parameters
    from figaroh.tools.qrdecomposition import build_baseRegressor, get_baseParams
    from figaroh.tools.regressor import build_regressor_basic, eliminate_non_dynaffect
    from scipy import signal
    robot = pin.RobotWrapper(pin.buildModelFromUrdf(os.path.join(folder, "panda_arm.urdf")))
    d = np.loadtxt(os.path.join(folder, "log.csv"), delimiter=",", skiprows=1)
    q, tau = d[:, 1:8], d[:, 8:15]
    q = signal.sosfiltfilt(signal.butter(4, CUTOFF, fs=RATE, output="sos"), q, axis=0)
    dq = np.gradient(q, 1 / RATE, axis=0)
    ddq = np.gradient(dq, 1 / RATE, axis=0)
    q, dq, ddq, tau = (x[EDGE:-EDGE] for x in (q, dq, ddq, tau))
    N = q.shape[0]
    cfg = {"has_friction": True, "has_actuator_inertia": False, "has_joint_offset": True,
           "is_joint_torques": True, "is_external_wrench": False, "force_torque": None,
           "act_idxv": list(range(7))}
    W = build_regressor_basic(robot, q, dq, ddq, cfg)
    params_std = get_standard_parameters(robot.model, cfg)
    W_e, params_r = eliminate_non_dynaffect(W, params_std, tol_e=1e-6)
    _, _, idx_base = get_baseParams(W_e, params_r, params_std)
    Wb, Y = build_baseRegressor(W_e, idx_base), tau.T.ravel()
    Wd, Yd = [], []
    for j in range(7):
        rows = slice(j * N, (j + 1) * N)
        blk = signal.decimate(np.column_stack([Wb[rows], Y[rows]]), DECIMATION, ftype="iir",
                              axis=0, zero_phase=True)
        Wd.append(blk[:, :-1]); Yd.append(blk[:, -1])
    np.linalg.lstsq(np.vstack(Wd), np.concatenate(Yd), rcond=None)


def timed(cmd: list[str]) -> tuple[float, float]:
    """(wall s, CPU s of the process and its descendants) of ``cmd``."""
    r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    r1, t1 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    return t1 - t0, r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime


def spread(x) -> str:
    x = np.asarray(x)
    return f"median {np.median(x):.2f} (min {x.min():.2f}, max {x.max():.2f})"


def main():
    with tempfile.TemporaryDirectory() as folder:
        truth = recording(folder)
        out = os.path.join(folder, "out")
        ours = [sys.executable, "-m", "figaroh_ros.cli", "identify", config(folder), "--out"]
        fig = [sys.executable, os.path.abspath(__file__), "--figaroh", folder]
        timed(ours + [out + "0"]), timed(fig)                    # warm-up
        runs = [(timed(ours + [f"{out}{k + 1}"]), timed(fig)) for k in range(RUNS)]
        with open(os.path.join(folder, "out1", "result.yaml")) as f:
            rows = yaml.safe_load(f)["base_parameters"]
    wall, cpu = np.array([r[0][0] for r in runs]), np.array([r[0][1] for r in runs])
    t_fig = np.array([r[1][0] for r in runs])
    z = np.array([(r["value"] - truth[r["name"].split()[0]]) / r["std"] for r in rows])
    print(f"identify, 12 s at 1 kHz, 7 joints, decimation 10, WLS ({RUNS} runs, whole "
          f"command): wall {spread(wall)} s, CPU {spread(cpu)} s (goal <= 2 s wall on a "
          f"quiet machine)")
    print(f"FIGAROH 1.0.2 functions on the same table (OLS only, whole process): wall "
          f"{spread(t_fig)} s; ratio FIGAROH / ours {spread(t_fig / wall)}x")
    print(f"our {len(z)} base parameters against the hidden truth: |z| < 3 for "
          f"{np.mean(np.abs(z) < 3):.0%}, max {np.abs(z).max():.1f}")
    record("identify_1khz", "Identification of a 1 kHz recording (whole command)",
           "FIGAROH 1.0.2 functions on the same table (OLS only), whole process",
           [row("identify, 12 s at 1 kHz, 7 joints, decimation 10, WLS: wall", "s", wall,
                t_fig, RUNS),
            row("identify, the same: CPU", "s", cpu, None, RUNS),
            row("base parameters within 3 std of the hidden truth", "%",
                100 * np.mean(np.abs(z) < 3))])


if __name__ == "__main__":
    figaroh_side(sys.argv[2]) if sys.argv[1:2] == ["--figaroh"] else main()

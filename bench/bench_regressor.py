"""Regressor + base parameters for 100 000 samples of a 7-joint arm (Panda).

Goal: <= 0.5 s and <= 1 GB on a quiet 2-core machine. Baseline in the same
process: FIGAROH 1.0.2's build_regressor_basic on the same samples (make bench installs
`figaroh==1.0.2`). One warm-up run of each (not counted), then five runs of each,
interleaved; prints the thread settings, the median and spread of both times, of our CPU
time (this process and its forked workers: the wall time of a quiet machine is close to
the larger of the two shares) and of the ratio, and the peak memory of one run of ours in
a fresh process (``--memory``, Linux).  Also interleaved: ours with pinocchio's regressor
called sample by sample (``regressor.BATCH_MIN`` raised) instead of the batched
Newton-Euler one, and the ratio of the two.
"""
import os
import resource
import subprocess
import sys
import time

import numpy as np
from results import record, row

from figaroh_ros.identification import regressor
from figaroh_ros.identification.base_parameters import base_parameters
from figaroh_ros.identification.parameters import DriveOptions, parameter_layout
from figaroh_ros.identification.regressor import standard_regressor
from figaroh_ros.identification.sample_split import worker_count
from figaroh_ros.model.robot import example_robot_urdf, load_urdf_model
from figaroh_ros.threads import limited_threads, thread_settings

N = 100_000
RUNS = 5
JOINTS = [f"panda_joint{i}" for i in range(1, 8)]


def samples():
    rng = np.random.default_rng(0)
    return tuple(rng.uniform(-1, 1, (N, 7)) for _ in range(3))


def cpu() -> float:
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def ours(robot, q, dq, ddq):
    """(wall s, CPU s, regressor s, base parameters s, base size, W shape)."""
    drive = DriveOptions()
    layout = parameter_layout(robot, drive)
    c0, t0 = cpu(), time.perf_counter()
    W = standard_regressor(robot, layout, drive, q, dq, ddq)
    t1 = time.perf_counter()
    bp = base_parameters(W, layout.names)
    t2 = time.perf_counter()
    return t2 - t0, cpu() - c0, t1 - t0, t2 - t1, bp.size, W.shape


def ours_per_sample(robot, q, dq, ddq):
    """Wall time of :func:`ours` with pinocchio's regressor called sample by sample."""
    batch_min, regressor.BATCH_MIN = regressor.BATCH_MIN, 10**12
    try:
        return ours(robot, q, dq, ddq)[0]
    finally:
        regressor.BATCH_MIN = batch_min


def figaroh_baseline(urdf, q, dq, ddq):
    try:
        import pinocchio as pin
        from figaroh.tools.regressor import build_regressor_basic
    except ImportError:
        return None
    robot = pin.RobotWrapper(pin.buildModelFromUrdf(urdf))
    model = robot.model
    jids = [model.getJointId(j) for j in JOINTS]
    cfg = {"has_friction": True, "has_actuator_inertia": True, "has_joint_offset": True,
           "is_joint_torques": True, "is_external_wrench": False, "force_torque": None,
           "act_idxv": [model.joints[i].idx_v for i in jids]}
    Q = np.tile(pin.neutral(model), (q.shape[0], 1)); Q[:, :7] = q
    V = np.zeros((q.shape[0], model.nv)); V[:, :7] = dq
    A = np.zeros((q.shape[0], model.nv)); A[:, :7] = ddq
    t0 = time.perf_counter()
    build_regressor_basic(robot, Q, V, A, cfg)
    return time.perf_counter() - t0


def spread(x) -> str:
    x = np.asarray(x)
    return f"median {np.median(x):.2f} (min {x.min():.2f}, max {x.max():.2f})"


def memory():
    """One run of ours in this (fresh) process: its peak resident memory, MB (VmHWM: the
    rusage maximum would also count the parent's, the process having been forked from
    it before its exec)."""
    urdf = example_robot_urdf("panda_description/urdf/panda.urdf")
    robot = load_urdf_model(urdf, JOINTS)
    with limited_threads():
        ours(robot, *samples())
    with open("/proc/self/status") as f:
        peak = next(line.split()[1] for line in f if line.startswith("VmHWM:"))
    print(f"{int(peak) / 1024:.0f}")


def main():
    urdf = example_robot_urdf("panda_description/urdf/panda.urdf")
    robot = load_urdf_model(urdf, JOINTS)
    q, dq, ddq = samples()
    rows, t_fig, t_pin = [], [], []
    with limited_threads():
        print(f"threads: {thread_settings()}; regressor workers: {worker_count(N)}")
        ours(robot, q, dq, ddq), figaroh_baseline(urdf, q, dq, ddq)      # warm-up
        ours_per_sample(robot, q, dq, ddq)
        for _ in range(RUNS):
            rows.append(ours(robot, q, dq, ddq))
            t_fig.append(figaroh_baseline(urdf, q, dq, ddq))
            t_pin.append(ours_per_sample(robot, q, dq, ddq))
    wall, cpu_s, t_reg, t_base, nb, shape = (np.array([r[k] for r in rows]) for k in range(6))
    print(f"figaroh_ros: regressor {shape[0][0]}x{shape[0][1]} + {nb[0]} base parameters, "
          f"{RUNS} runs: wall {spread(wall)} s (regressor {np.median(t_reg):.2f}, base "
          f"parameters {np.median(t_base):.2f}); CPU {spread(cpu_s)} s (goal: wall <= 0.5 s)")
    t_pin = np.array(t_pin)
    print(f"the same with pinocchio's regressor sample by sample: {spread(t_pin)} s; ratio "
          f"batched / per sample {spread(wall / t_pin)}")
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--memory"],
                         capture_output=True, text=True, check=True).stdout.split()
    print(f"peak memory of one run: {out[0]} MB (goal <= 1 GB; the pages of the matrix's "
          "zero blocks are never allocated; those the worker writes are shared, counted once)")
    case = f"regressor + base parameters, {N} samples, Panda (7 joints)"
    measured = [row(case + "; baseline: pinocchio's regressor sample by sample", "s", wall,
                    t_pin, RUNS),
                row("peak memory of one run", "MB", float(out[0]))]
    if t_fig[0] is None:
        print("FIGAROH not installed: no baseline (run `make bench`)")
        record("regressor", "Regressor and base parameters", "", measured)
        return
    t_fig = np.array(t_fig)
    print(f"FIGAROH 1.0.2 build_regressor_basic alone: {spread(t_fig)} s; ratio FIGAROH / "
          f"ours (regressor + base parameters) {spread(t_fig / wall)}x")
    record("regressor", "Regressor and base parameters", "FIGAROH 1.0.2 "
           "build_regressor_basic (unless the case names another)",
           [row(case, "s", wall, t_fig, RUNS)] + measured)


if __name__ == "__main__":
    memory() if sys.argv[1:] == ["--memory"] else main()

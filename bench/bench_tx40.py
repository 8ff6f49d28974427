"""Staubli TX40 identification: figaroh_ros against FIGAROH 1.0.2 on the same data, one run.

Both sides do the same job on ../shared/data/staubli_tx40: motor-to-joint conversion,
25 Hz zero-phase filtering, differentiation, the 86-column standard regressor with the
coupled wrist, base parameters by QR, decimation by 100, removal of non-moving samples and
least squares. FIGAROH's side uses its library functions (build_regressor_basic,
eliminate_non_dynaffect, get_baseParams); the glue between them is the same numpy/scipy
code as its TX40 example. Five runs of each, interleaved, in one process with the thread
settings printed, after one warm-up run of each (printed, not counted): median and spread
of both times and of the ratio (goal >= 5x in every run) and the base parameter counts. Needs `pip install figaroh==1.0.2` (make bench does it).
"""
import importlib.util
import os
import sys
import time

import numpy as np
from scipy import signal

from results import record, row

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.normpath(os.path.join(ROOT, "..", "shared", "data", "staubli_tx40"))
os.environ.setdefault("FIGAROH_DATA", os.path.dirname(DATA))   # the config names ${FIGAROH_DATA}


def ours():
    from figaroh_ros.config.identification import load_config
    from figaroh_ros.tasks.identify import identify_config
    cfg = load_config(os.path.join(ROOT, "config", "staubli_tx40.yaml"))
    cfg["estimation"]["validation_fraction"] = 0.0
    t0 = time.perf_counter()
    res = identify_config(cfg)
    return time.perf_counter() - t0, res.base.size


def figaroh_side():
    import pinocchio as pin
    from figaroh.identification.parameter import get_standard_parameters
    from figaroh.tools.qrdecomposition import build_baseRegressor, get_baseParams
    from figaroh.tools.regressor import build_regressor_basic, eliminate_non_dynaffect
    t0 = time.perf_counter()
    robot = pin.RobotWrapper(pin.buildModelFromUrdf(os.path.join(DATA, "tx40_mdh_modified.urdf")))
    model = robot.model
    th = np.loadtxt(os.path.join(DATA, "pos_read_data.csv"), delimiter=",", skiprows=1)
    tm = np.loadtxt(os.path.join(DATA, "curr_data.csv"), delimiter=",", skiprows=1)
    r = np.array([32, 32, 45, -48, 45, 32.0])
    Rq = np.diag(r); Rq[5, 4] = r[5]
    q = np.linalg.solve(Rq, th.T).T
    q[:, 1] -= np.pi / 2; q[:, 2] += np.pi / 2
    Rt = np.diag(r); Rt[4, 5] = r[5]
    tau = (Rt @ tm.T).T
    ts = 2e-4
    sos = signal.butter(4, 25.0, fs=1 / ts, output="sos")
    q = signal.sosfiltfilt(sos, q, axis=0)
    dq = np.gradient(q, ts, axis=0); ddq = np.gradient(dq, ts, axis=0)
    e = 602
    q, dq, ddq, tau = q[e:-e], dq[e:-e], ddq[e:-e], tau[e:-e]
    N = q.shape[0]
    cfg = {"has_friction": True, "has_actuator_inertia": True, "has_joint_offset": True,
           "is_joint_torques": True, "is_external_wrench": False, "force_torque": None,
           "act_idxv": list(range(6))}
    W = build_regressor_basic(robot, q, dq, ddq, cfg)
    W = np.c_[W, np.zeros((W.shape[0], 3))]
    W[4 * N:5 * N, -3] = ddq[:, 5]; W[4 * N:5 * N, -2] = dq[:, 5]
    W[5 * N:6 * N, -3] = ddq[:, 4]; W[5 * N:6 * N, -2] = dq[:, 4]
    W[4 * N:6 * N, -1] = np.tile(np.sign(dq[:, 4] + dq[:, 5]), 2)
    names = list(get_standard_parameters(model, cfg)) + [
        f"{p}{j}" for p in ("Ia", "fv", "fs", "off") for j in range(1, 7)] + ["Iam6", "fvm6", "fsm6"]
    params_std = dict(zip(names, np.zeros(len(names))))
    W_e, params_r = eliminate_non_dynaffect(W, params_std, tol_e=1e-6)
    _, params_base, idx_base = get_baseParams(W_e, params_r, params_std)
    Wb = build_baseRegressor(W_e, idx_base)
    Y = tau.T.ravel()
    Wd, Yd = [], []
    for j in range(6):
        rows = slice(j * N, (j + 1) * N)
        blk = np.column_stack([Wb[rows], Y[rows]])
        for s in (10, 10):
            blk = signal.decimate(blk, s, ftype="iir", axis=0, zero_phase=True)
        Wd.append(blk[:, :-1]); Yd.append(blk[:, -1])
    Wd, Yd = np.vstack(Wd), np.concatenate(Yd)
    phi = np.linalg.lstsq(Wd, Yd, rcond=None)[0]
    return time.perf_counter() - t0, len(phi)


RUNS = 5


def spread(times) -> str:
    t = np.asarray(times)
    return f"median {np.median(t):.2f} s (min {t.min():.2f}, max {t.max():.2f})"


def main():
    """Five runs of each side, interleaved (a change of load hits both), in one process,
    both with the thread limits the command line uses (figaroh_ros.threads), after one
    untimed warm-up of each (whichever ran first would pay scipy's lazy imports)."""
    from figaroh_ros.threads import limited_threads, stage_threads, thread_settings
    if importlib.util.find_spec("figaroh") is None:
        print("FIGAROH not installed: run `make bench`")
        return 1
    ours_t, fig_t = [], []
    with limited_threads():
        print(f"threads: FIGAROH_THREADS={os.environ.get('FIGAROH_THREADS', '(unset)')} -> "
              f"{stage_threads()}; {thread_settings()}")
        w_ours, w_fig = ours()[0], figaroh_side()[0]
        print(f"warm-up, not counted (imports, scipy's lazily loaded filters, first-call "
              f"caches of both): figaroh_ros {w_ours:.2f} s, FIGAROH 1.0.2 {w_fig:.2f} s")
        for k in range(RUNS):
            t, nb_ours = ours()
            ours_t.append(t)
            t, nb_fig = figaroh_side()
            fig_t.append(t)
            print(f"run {k + 1}: figaroh_ros {ours_t[-1]:.2f} s, FIGAROH 1.0.2 {fig_t[-1]:.2f} "
                  f"s, ratio {fig_t[-1] / ours_t[-1]:.1f}x", flush=True)
    ratios = np.array(fig_t) / np.array(ours_t)
    print(f"figaroh_ros identify (TX40, WLS + essential parameters, {nb_ours} base "
          f"parameters): {spread(ours_t)}")
    print(f"FIGAROH 1.0.2 pipeline (OLS only, {nb_fig} base parameters): {spread(fig_t)}")
    print(f"speed ratio FIGAROH / figaroh_ros: median {np.median(ratios):.1f}x (min "
          f"{ratios.min():.1f}, max {ratios.max():.1f}; goal >= 5x in every run)")
    record("tx40", "Staubli TX40 identification on the published recording",
           "FIGAROH 1.0.2's TX40 pipeline (OLS only), same process",
           [row(f"identify TX40: WLS + essential parameters ({nb_ours} base parameters; "
                f"FIGAROH: {nb_fig})", "s", ours_t, fig_t, RUNS)])
    return 0


if __name__ == "__main__":
    sys.exit(main())

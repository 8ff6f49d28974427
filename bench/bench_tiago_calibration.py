"""TIAGo geometric calibration: figaroh_ros against FIGAROH 1.0.2 on the same data.

Data: $FIGAROH_DATA/tiago/mocap, the TRAINING file only (37 postures; the validation and
confirmation files are not read unless ``--validation``), marker point 1, unknown mocap
base and marker frames, as in FIGAROH's TIAGo example.  Every number is taken with one
BLAS/OpenMP thread for both tools (``figaroh_ros.threads``), in one process, ours and
FIGAROH's runs interleaved; each row gives the median of ``--runs`` runs (default 7), the
spread (min-max) and the median of the paired ratios FIGAROH / ours, in wall time and in
process CPU time (on a loaded machine the wall time mostly measures the wait for a core).
Three timings:

* ``core``: the calibration call, the robot model and the postures already in memory.
  Ours: ``figaroh_ros.calibration.calibrate(model, Q, Y, ...)`` (frame registration,
  base parameters by QR, the least-squares fits, standard deviations, training RMSE).
  FIGAROH: ``create_param_list()`` + ``solve()`` after ``load_data_set()``.
* ``job``: config and CSV in, result out: ours ``calibrate_config`` (YAML, URDF and CSV
  read and checked); FIGAROH ``buildModelFromUrdf`` + ``BaseCalibration(...)`` +
  ``initialize()`` + ``solve()``.
* ``CLI``: ``figaroh-ros calibrate CONFIG --out DIR`` as a new process (imports, writing
  the URDF, result.yaml and plots), ours only, wall time.

The training RMSEs (point 1, mm) are printed side by side; ``--validation`` also scores
both tools, untimed, on the validation file (docs/validation.md's accuracy table).  Needs
``pip install figaroh==1.0.2`` (make bench does it).  Run:
``FIGAROH_DATA=/path/to/data python bench/bench_tiago_calibration.py [--runs N]``.
"""
import argparse
import contextlib
import io
import logging
import os
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
from results import record, row

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.environ.setdefault(
    "FIGAROH_DATA", os.path.normpath(os.path.join(ROOT, "..", "shared", "data")))
TRAIN = os.path.join(DATA, "tiago", "mocap", "qualisys_2021-11-30_static_postures.csv")
URDF = os.path.join(DATA, "tiago", "urdf", "tiago_48_schunk.urdf")
JOINTS = ["torso_lift_joint"] + [f"arm_{i}_joint" for i in range(1, 8)]
LEVELS = (("offset", "tiago_calibration_offset.yaml", "joint_offset"),
          ("full", "tiago_calibration_full.yaml", "full_params"))


def training_config(name: str, folder: str) -> str:
    """The shipped config without its validation file, URDF path made absolute."""
    with open(os.path.join(ROOT, "config", name)) as f:
        lines = [ln for ln in f if not ln.strip().startswith("validation:")]
    text = "".join(lines).replace("urdf: urdf/", f"urdf: {os.path.join(ROOT, 'config', 'urdf')}/")
    path = os.path.join(folder, name)
    with open(path, "w") as f:
        f.write(text)
    return path


# ------------------------------------------------------------------ ours
def ours_inputs(config: str):
    """(run, job): the core call on loaded model and postures, and the whole job."""
    import pinocchio as pin

    from figaroh_ros.calibration import calibrate
    from figaroh_ros.calibration.procedure import kinematic_model
    from figaroh_ros.config.calibration import load_calibration_config
    from figaroh_ros.tasks.calibrate import (
        calibrate_config, model_arguments, read_data, solver_arguments
    )
    cfg = load_calibration_config(config)
    args, solver = model_arguments(cfg), solver_arguments(cfg)
    model = pin.buildModelFromUrdf(cfg.robot.urdf)
    train, val, _ = read_data(cfg, kinematic_model(model, **args)[0])
    assert val is None, "the bench reads the training file only"

    def core():
        with Clock() as c:
            r = calibrate(model, train.Q, train.Y, **args, **solver)
        return c.wall, c.cpu, 1e3 * r.rmse

    def job():
        with Clock() as c:
            r = calibrate_config(load_calibration_config(config))
        return c.wall, c.cpu, 1e3 * r.rmse
    return core, job


# ------------------------------------------------------------------ FIGAROH 1.0.2
FIGAROH_CONFIG = """
_metadata: {{schema_version: "2.0", config_type: "robot_configuration"}}
robot:
  name: tiago
  properties:
    joints: {{active_joints: {joints}}}
tasks:
  calibration:
    enabled: true
    parameters: {{calibration_level: {level}, include_non_geometric: false}}
    kinematics: {{base_frame: universe, tool_frame: wrist_ft_tool_link}}
    measurements:
      markers:
        - {{name: wrist_marker, reference_joint: arm_7_joint,
            measurable_dof: [true, true, true, false, false, false]}}
      poses:
        base_pose: [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
        tool_pose: [0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    data: {{source_file: "{train}", number_of_samples: 37{extra}}}
"""
VALID = os.path.join(DATA, "tiago", "mocap", "qualisys_2021-11-26_static_postures.csv")


def figaroh_calibration(path: str, model=None):
    """FIGAROH's BaseCalibration with its default cost (marker position residuals) and
    the two flags its TIAGo example sets itself."""
    import pinocchio as pin
    from figaroh.calibration import BaseCalibration

    class TiagoCalibration(BaseCalibration):
        """FIGAROH's default cost."""

    robot = pin.RobotWrapper(model if model is not None else pin.buildModelFromUrdf(URDF))
    cal = TiagoCalibration(robot, path)
    cal.calib_config["known_baseframe"] = False
    cal.calib_config["known_tipframe"] = False
    return cal


def figaroh_inputs(level: str, folder: str):
    import pinocchio as pin
    path = os.path.join(folder, f"figaroh_{level}.yaml")
    with open(path, "w") as f:
        f.write(FIGAROH_CONFIG.format(joints=JOINTS, level=level, train=TRAIN, extra=""))
    model = pin.buildModelFromUrdf(URDF)

    def core():
        with contextlib.redirect_stdout(io.StringIO()):
            cal = figaroh_calibration(path, model)
            cal.load_data_set()
            with Clock() as c:
                cal.create_param_list()
                cal.solve(enable_logging=False)
        return c.wall, c.cpu, 1e3 * cal.evaluation_metrics["rmse"]

    def job():
        with contextlib.redirect_stdout(io.StringIO()), Clock() as c:
            cal = figaroh_calibration(path)
            cal.initialize()
            cal.solve(enable_logging=False)
        return c.wall, c.cpu, 1e3 * cal.evaluation_metrics["rmse"]
    return core, job


def held_out(folder: str):
    """Untimed: validation RMSE of point 1, ours (the shipped configs) and FIGAROH's."""
    import pinocchio as pin

    from figaroh_ros.config.calibration import load_calibration_config
    from figaroh_ros.tasks.calibrate import calibrate_config
    print("validation file (62 postures, scored only), RMSE of point 1, ours / FIGAROH:")
    for level, config, fig_level in LEVELS:
        d = calibrate_config(load_calibration_config(os.path.join(ROOT, "config", config)))
        path = os.path.join(folder, f"figaroh_{fig_level}_validation.yaml")
        with open(path, "w") as f:
            f.write(FIGAROH_CONFIG.format(joints=JOINTS, level=fig_level, train=TRAIN,
                                          extra=f', validation_data_file: "{VALID}"'))
        with contextlib.redirect_stdout(io.StringIO()):
            cal = figaroh_calibration(path, pin.buildModelFromUrdf(URDF))
            cal.initialize()
            cal.solve(enable_logging=False)
            val = cal._compute_validation_metrics()
        print(f"{level:6s} {1e3 * d.validation_rmse:.3f} / {val['pos_rmse_calibrated_mm']:.3f} mm")


# ------------------------------------------------------------------ timing
class Clock:
    """Wall and process CPU time of a block (CPU: what a loaded machine does not inflate)."""

    def __enter__(self):
        self.t0, self.c0 = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.t0
        self.cpu = time.process_time() - self.c0


def paired(ours, theirs, runs: int):
    """Interleaved runs after one warm-up each: (wall, cpu, rmse) rows of each tool."""
    ours(), theirs()
    a, b = [], []
    for _ in range(runs):
        a.append(ours())
        b.append(theirs())
    return np.array(a), np.array(b)


def cli_times(config: str, out: str, runs: int) -> np.ndarray:
    """Wall time of the command in a new process, a fresh output folder each run."""
    exe = os.path.join(os.path.dirname(sys.executable), "figaroh-ros")
    env = dict(os.environ, FIGAROH_THREADS="1", OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1")
    times = []
    for i in range(runs):
        t0 = time.perf_counter()
        subprocess.run([exe, "calibrate", config, "--out", f"{out}_{i}"], check=True, env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
    return np.array(times)


# what each timing covers (the module's docstring), as the recorded rows name it
TIMED = {"core": "the calibration call, data in memory",
         "job": "config and CSV in, result out"}


def spread(t: np.ndarray) -> str:
    return f"{np.median(t):8.4f} ({t.min():.4f}-{t.max():.4f})"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--no-cli", action="store_true", help="skip the CLI timing")
    parser.add_argument("--validation", action="store_true",
                        help="also score both tools (untimed) on the validation file")
    opts = parser.parse_args()
    logging.disable(logging.WARNING)
    warnings.filterwarnings("ignore")
    # every numerical library loaded before the thread limit is set (it applies to the
    # loaded ones): FIGAROH's and ours
    import figaroh.calibration  # noqa: F401
    import figaroh_ros.tasks.calibrate  # noqa: F401
    from figaroh_ros.threads import limited_threads, thread_settings
    print(f"TIAGo mocap calibration, training file only (37 postures, point 1); median "
          f"(min-max) of {opts.runs} runs, seconds")
    rows = []
    with tempfile.TemporaryDirectory() as folder, limited_threads(1):
        for level, config, fig_level in LEVELS:
            cfg = training_config(config, folder)
            o_core, o_job = ours_inputs(cfg)
            f_core, f_job = figaroh_inputs(fig_level, folder)
            for what, o, f in (("core", o_core, f_core), ("job", o_job, f_job)):
                a, b = paired(o, f, opts.runs)
                print(f"{level:6s} {what:4s} wall: ours {spread(a[:, 0])}  FIGAROH "
                      f"{spread(b[:, 0])}  ratio {np.median(b[:, 0] / a[:, 0]):5.1f}x")
                print(f"{'':11s} CPU:  ours {spread(a[:, 1])}  FIGAROH {spread(b[:, 1])}  "
                      f"ratio {np.median(b[:, 1] / a[:, 1]):5.1f}x  train RMSE ours / "
                      f"FIGAROH {a[0, 2]:.3f} / {b[0, 2]:.3f} mm")
                case = f"{level}, {what} ({TIMED[what]})"
                rows += [row(f"{case}: wall", "s", a[:, 0], b[:, 0], opts.runs),
                         row(f"{case}: CPU", "s", a[:, 1], b[:, 1], opts.runs),
                         row(f"{level}: training RMSE of point 1", "mm", a[0, 2], b[0, 2])
                         ] if what == "core" else [
                         row(f"{case}: wall", "s", a[:, 0], b[:, 0], opts.runs),
                         row(f"{case}: CPU", "s", a[:, 1], b[:, 1], opts.runs)]
            if not opts.no_cli:
                t = cli_times(cfg, os.path.join(folder, f"out_{level}"), max(3, opts.runs // 2))
                print(f"{level:6s} CLI  ours {spread(t)}  (new process: imports, export)")
                rows.append(row(f"{level}, `figaroh-ros calibrate` (new process, ours only)",
                                "s", t, None, len(t)))
        six_core, _ = ours_inputs(training_config("tiago_calibration_6d.yaml", folder))
        six_core()
        six = np.array([six_core() for _ in range(opts.runs)])
        print(f"6D (4 points, ours only) core wall {spread(six[:, 0])}, CPU "
              f"{spread(six[:, 1])}, train RMSE {six[0, 2]:.3f} mm")
        print("threads:", thread_settings())
        rows.append(row("6D (4 points), core, ours only: wall", "s", six[:, 0], None,
                        opts.runs))
        record("tiago_calibration", "TIAGo mocap calibration (37 training postures)",
               "FIGAROH 1.0.2 calibration on the same postures", rows)
        if opts.validation:
            held_out(folder)


if __name__ == "__main__":
    main()

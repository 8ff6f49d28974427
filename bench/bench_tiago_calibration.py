"""TIAGo geometric calibration: figaroh_ros against FIGAROH 1.0.2 on the same data, one run.

Data: ../shared/data/tiago/mocap, training file for the fit, validation file for scoring
(marker point 1, unknown mocap base and marker frames, as in FIGAROH's TIAGo example).
Both sides do the whole job: read the CSV, build the model, find the identifiable
parameters by QR, fit by Levenberg-Marquardt, score the validation postures.  Prints the
time of each side (best of 3), their ratio and the RMSEs side by side, for the offset and
the full level, plus our 6D (four points) variant which FIGAROH does not offer.
Needs `pip install figaroh==1.0.2` (make bench does it).
"""
import contextlib
import io
import logging
import os
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.normpath(os.path.join(ROOT, "..", "shared", "data", "tiago"))
TRAIN = os.path.join(DATA, "mocap", "qualisys_2021-11-30_static_postures.csv")
VALID = os.path.join(DATA, "mocap", "qualisys_2021-11-26_static_postures.csv")
URDF = os.path.join(DATA, "urdf", "tiago_48_schunk.urdf")
JOINTS = ["torso_lift_joint"] + [f"arm_{i}_joint" for i in range(1, 8)]


def ours(config):
    from figaroh_ros.config.calibration import load_calibration_config
    from figaroh_ros.tasks.calibrate import calibrate_config
    cfg = load_calibration_config(os.path.join(ROOT, "config", config))
    t0 = time.perf_counter()
    s = calibrate_config(cfg).to_dict()
    dt = time.perf_counter() - t0
    return dt, s["rmse_train_mm"], s.get("rmse_validation_point1_mm", s["rmse_validation_mm"])


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
    data: {{source_file: "{train}", validation_data_file: "{valid}", number_of_samples: 37}}
"""


def figaroh_side(level):
    import pinocchio as pin
    from figaroh.calibration import BaseCalibration

    class TiagoCalibration(BaseCalibration):
        """FIGAROH's default cost (marker position residuals)."""

    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "tiago.yaml")
        with open(path, "w") as f:
            f.write(FIGAROH_CONFIG.format(joints=JOINTS, level=level, train=TRAIN,
                                          valid=VALID))
        sink = io.StringIO()
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(sink):
            robot = pin.RobotWrapper(pin.buildModelFromUrdf(URDF))
            cal = TiagoCalibration(robot, path)
            # FIGAROH's example scripts set these two flags themselves
            cal.calib_config["known_baseframe"] = False
            cal.calib_config["known_tipframe"] = False
            cal.initialize()
            cal.solve(enable_logging=False)
            val = cal._compute_validation_metrics()
        dt = time.perf_counter() - t0
    return dt, 1e3 * cal.evaluation_metrics["rmse"], val["pos_rmse_calibrated_mm"]


def best_of(fn, *args, n=3):
    runs = [fn(*args) for _ in range(n)]
    return min(runs, key=lambda r: r[0])


def main():
    logging.disable(logging.WARNING)
    rows = []
    for level, ours_cfg, fig_level in (("offset", "tiago_calibration_offset.yaml", "joint_offset"),
                                       ("full", "tiago_calibration_full.yaml", "full_params")):
        o = best_of(ours, ours_cfg)
        f = best_of(figaroh_side, fig_level)
        rows.append((level, o, f))
    six = best_of(ours, "tiago_calibration_6d.yaml")
    print("TIAGo mocap calibration, 37 training / 62 validation postures (RMSE of point 1)")
    print(f"{'level':8s} {'ours [s]':>9s} {'FIGAROH [s]':>12s} {'speed-up':>9s} "
          f"{'train ours/FIG [mm]':>22s} {'validation ours/FIG [mm]':>26s}")
    for level, o, f in rows:
        print(f"{level:8s} {o[0]:9.3f} {f[0]:12.3f} {f[0] / o[0]:8.1f}x "
              f"{o[1]:10.3f} / {f[1]:<9.3f} {o[2]:12.3f} / {f[2]:<9.3f}")
    print(f"{'6D (4 points, ours only)':26s} {six[0]:.3f} s, validation point 1 "
          f"{six[2]:.3f} mm")


if __name__ == "__main__":
    main()

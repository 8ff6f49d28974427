"""Regressor + base parameters for 100 000 samples of a 7-joint arm (Panda).

Goal (issue 2): <= 2 s. Baseline in the same run: FIGAROH 1.0.2's build_regressor_basic on
the same samples, when the `figaroh` package is installed (make bench installs it).
Prints the time of each and the ratio.
"""
import time

import numpy as np

from figaroh_ros.identification.base_parameters import base_parameters
from figaroh_ros.identification.parameters import DriveOptions, parameter_layout
from figaroh_ros.identification.regressor import standard_regressor
from figaroh_ros.model.robot import example_robot_urdf, load_urdf_model

N = 100_000


def ours(robot, q, dq, ddq):
    drive = DriveOptions()
    layout = parameter_layout(robot, drive)
    t0 = time.perf_counter()
    W = standard_regressor(robot, layout, drive, q, dq, ddq)
    t1 = time.perf_counter()
    bp = base_parameters(W, layout.names)
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1, bp.size, W.shape


def figaroh_baseline(urdf, q, dq, ddq):
    try:
        import pinocchio as pin
        from figaroh.tools.regressor import build_regressor_basic
    except ImportError:
        return None
    robot = pin.RobotWrapper(pin.buildModelFromUrdf(urdf))
    model = robot.model
    joints = [f"panda_joint{i}" for i in range(1, 8)]
    jids = [model.getJointId(j) for j in joints]
    cfg = {"has_friction": True, "has_actuator_inertia": True, "has_joint_offset": True,
           "is_joint_torques": True, "is_external_wrench": False, "force_torque": None,
           "act_idxv": [model.joints[i].idx_v for i in jids]}
    Q = np.tile(pin.neutral(model), (q.shape[0], 1)); Q[:, :7] = q
    V = np.zeros((q.shape[0], model.nv)); V[:, :7] = dq
    A = np.zeros((q.shape[0], model.nv)); A[:, :7] = ddq
    t0 = time.perf_counter()
    build_regressor_basic(robot, Q, V, A, cfg)
    return time.perf_counter() - t0


def main():
    urdf = example_robot_urdf("panda_description/urdf/panda.urdf")
    robot = load_urdf_model(urdf, [f"panda_joint{i}" for i in range(1, 8)])
    rng = np.random.default_rng(0)
    q, dq, ddq = (rng.uniform(-1, 1, (N, 7)) for _ in range(3))
    t_reg, t_base, nb, shape = ours(robot, q, dq, ddq)
    print(f"figaroh_ros: regressor {shape[0]}x{shape[1]} in {t_reg:.2f} s, "
          f"{nb} base parameters in {t_base:.2f} s, total {t_reg + t_base:.2f} s (goal <= 2 s)")
    t_fig = figaroh_baseline(urdf, q, dq, ddq)
    if t_fig is None:
        print("FIGAROH not installed: no baseline (run `make bench`)")
    else:
        print(f"FIGAROH 1.0.2 build_regressor_basic: {t_fig:.2f} s; "
              f"ratio FIGAROH / ours (regressor) = {t_fig / t_reg:.1f}x")


if __name__ == "__main__":
    main()

"""Optimal exciting trajectories: figaroh_ros against FIGAROH 1.0.2, same robots, same run.

For the UR10 (joint-limited URDF) and the Franka Panda: joint position limits with a 0.05
margin, the URDF velocity and effort limits, inertial parameters plus viscous and Coulomb
friction.  FIGAROH: its library optimiser (BaseOptimalTrajectory: cubic splines through 5
waypoints, 2 s per interval, two stacked segments, IPOPT with finite differences over the
whole problem, 100 iterations).  Ours: finite Fourier series at rest at both ends (10 s, 5
harmonics), IPOPT with exact derivatives, condition-number criterion.  Both trajectories
are scored by the same function: the condition number of the base regressor (our base
columns) at 100 Hz.  Prints times, condition numbers and the time ratio (goal: <= 1/10 of
FIGAROH's time at an equal or better condition number; Panda <= 43, Tröbinger et al.).
First, every shipped `config/*_trajectory.yaml` as shipped (workspace box, self-collision):
wall and CPU time, IPOPT iterations against the cap (starts x max_iterations), condition
number (goal: <= 60 s on a loaded machine, the cap obeyed).  `--shipped` stops there.
Needs `pip install figaroh==1.0.2` (make bench does it).  Takes several minutes.
"""
import contextlib
import glob
import io
import logging
import os
import sys
import tempfile
import time

import numpy as np
from results import record, row

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

ROBOTS = {
    "ur10": ("ur_description/urdf/ur10_joint_limited_robot.urdf",
             ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint",
              "wrist_2_joint", "wrist_3_joint"], "ur10_trajectory.yaml"),
    "panda": ("panda_description/urdf/panda.urdf",
              [f"panda_joint{i}" for i in range(1, 8)], "panda_trajectory.yaml"),
}

FIGAROH_CONFIG = """
_metadata: {{schema_version: "2.0", config_type: "robot_configuration"}}
robot:
  name: {name}
  properties:
    joints: {{active_joints: {joints}}}
tasks:
  identification:
    enabled: true
    problem:
      use_joint_torques: true
      model_components: {{friction: true, joint_offset: false, actuator_inertia: false}}
    signal_processing: {{sampling_frequency: 100.0, cutoff_frequency: 10.0}}
  optimal_trajectory:
    enabled: true
    problem: {{soft_lim: 0.05, max_attempts: 500, max_iterations: 100}}
    trajectory: {{waypoints: 5, frequency: 100, segment_duration: 2.0}}
"""


def score(urdf, joints, Q, V, A):
    """Condition number of the base regressor (inertial + viscous + Coulomb friction)."""
    from figaroh_ros.excitation.planner import structural_base
    from figaroh_ros.identification.base_parameters import condition_number
    from figaroh_ros.identification.parameters import DriveOptions, parameter_layout
    from figaroh_ros.identification.regressor import standard_regressor
    from figaroh_ros.model.robot import load_urdf_model
    robot = load_urdf_model(urdf, joints)
    drive = DriveOptions(rotor_inertia=False, torque_offset=False)
    layout = parameter_layout(robot, drive)
    bp = structural_base(robot, layout, drive, np.random.default_rng(0))
    W = standard_regressor(robot, layout, drive, Q, V, A)[:, bp.base_index]
    return condition_number(W)


def ours(name):
    from figaroh_ros.config.trajectory import load_trajectory_config
    from figaroh_ros.tasks.plan_trajectory import plan_from_config
    cfg = load_trajectory_config(os.path.join(ROOT, "config", ROBOTS[name][2]))
    cfg = cfg.with_trajectory(self_collision=False, tool_frame=None, workspace_min=None,
                              workspace_max=None)
    t0 = time.perf_counter()
    res = plan_from_config(cfg)
    dt = time.perf_counter() - t0
    return dt, res.q, res.dq, res.ddq


def figaroh_side(name):
    import pinocchio as pin
    from figaroh.optimal.base_optimal_trajectory import (
        BaseOptimalTrajectory, BaseTrajectoryIPOPTProblem
    )

    from figaroh_ros.model.robot import example_robot_urdf
    urdf_rel, joints, _ = ROBOTS[name]

    class Optimiser(BaseOptimalTrajectory):
        def create_ipopt_problem(self, *args):
            return BaseTrajectoryIPOPTProblem(self, *args)

    robot = pin.RobotWrapper(pin.buildModelFromUrdf(example_robot_urdf(urdf_rel)))
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "cfg.yaml")
        with open(path, "w") as f:
            f.write(FIGAROH_CONFIG.format(name=name, joints=joints))
        np.random.seed(0)
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            opt = Optimiser(robot, joints, path)
            ps = opt.identif_config
            ps["active_joints"] = joints
            ps["act_Jid"] = [opt.model.getJointId(j) for j in joints]
            ps["act_J"] = [opt.model.joints[i] for i in ps["act_Jid"]]
            ps["act_idxq"] = [j.idx_q for j in ps["act_J"]]
            ps["act_idxv"] = [j.idx_v for j in ps["act_J"]]
            opt.initialize()
            res = opt.solve(stack_reps=2)
        dt = time.perf_counter() - t0
    if not res["P_F"]:
        return dt, None
    Q, V, A = (np.vstack(res[k]) for k in ("P_F", "V_F", "A_F"))
    return dt, (Q[:, :len(joints)], V[:, :len(joints)], A[:, :len(joints)])


def shipped():
    """Every config/*_trajectory.yaml as shipped: one row each."""
    from figaroh_ros.config.trajectory import load_trajectory_config
    from figaroh_ros.tasks.plan_trajectory import plan_from_config
    from figaroh_ros.threads import thread_settings
    print(f"threads: {thread_settings()} (the planner itself runs 1 BLAS thread)")
    print("config                   wall [s]  CPU [s]  iterations / cap  cond")
    rows = []
    for path in sorted(glob.glob(os.path.join(ROOT, "config", "*_trajectory.yaml"))):
        cfg = load_trajectory_config(path)
        t = cfg.trajectory
        w0, c0 = time.perf_counter(), time.process_time()
        res = plan_from_config(cfg)
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
        cap = t.starts * t.max_iterations
        print(f"{os.path.basename(path):24s} {wall:8.1f} {cpu:8.1f}  {res.iterations:6d} / "
              f"{cap:<6d}  {res.condition_number:6.1f}", flush=True)
        rows.append(row(f"plan-trajectory {os.path.basename(path)}: wall", "s", wall))
    return rows


def main():
    logging.disable(logging.WARNING)
    from figaroh_ros.model.robot import example_robot_urdf
    title = "Exciting trajectories (IPOPT)"
    shipped_rows = shipped()
    if "--shipped" in sys.argv:
        record("trajectory", title, "", shipped_rows)
        return
    print()
    names = [a for a in sys.argv[1:] if not a.startswith("--")] or list(ROBOTS)
    rows = []
    for name in names:
        urdf = example_robot_urdf(ROBOTS[name][0])
        joints = ROBOTS[name][1]
        t_o, Q, V, A = ours(name)
        c_o = score(urdf, joints, Q, V, A)
        t_f, fig = figaroh_side(name)
        c_f = score(urdf, joints, *fig) if fig is not None else float("nan")
        rows.append((name, t_o, c_o, t_f, c_f))
        print(f"{name}: ours {t_o:.1f} s, cond {c_o:.1f} | FIGAROH 1.0.2 {t_f:.1f} s, cond "
              f"{c_f:.1f} | time ratio {t_o / t_f:.3f}", flush=True)
    print("\nrobot   ours [s]  cond   FIGAROH [s]  cond   ours/FIGAROH time")
    for name, t_o, c_o, t_f, c_f in rows:
        print(f"{name:7s} {t_o:8.1f} {c_o:6.1f} {t_f:12.1f} {c_f:6.1f}   {t_o / t_f:.3f}")
    record("trajectory", title, "FIGAROH 1.0.2's trajectory optimisation on the same robot "
           "(unless the case has none)", shipped_rows + [
               r for name, t_o, c_o, t_f, c_f in rows for r in (
                   row(f"{name}: plan an exciting trajectory", "s", t_o, t_f),
                   row(f"{name}: condition number of the trajectory", "", c_o, c_f))])


if __name__ == "__main__":
    main()

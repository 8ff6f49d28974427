"""``figaroh-ros demo`` / ``make demo``: the whole on-robot loop on a simulated UR10.

Plans D-optimal postures, starts the simulated robot and every node (the same
``launch/sim_ur10.launch.yaml`` that ``ros2 launch`` runs on a ROS machine), plays the
postures through the executor while the recorder writes the bag, calls the Calibrate
action on the bag, takes the URDF the calibration node publishes on /robot_description,
and scores it against the simulator's hidden truth on fresh postures.
"""
from __future__ import annotations

import os
import random
import shutil
import sys
import time

import numpy as np
import rclpy
import yaml
from rclpy.action import ActionClient
from std_msgs.msg import String

from figaroh_ros.action import Calibrate, RunExperiment
from figaroh_ros.calibration.kinematic_model import chain_limits
from figaroh_ros.cli.launch_runner import LaunchedGraph
from figaroh_ros.config.calibration import load_calibration_config
from figaroh_ros.excitation.fourier import fourier_trajectory, windowed
from figaroh_ros.io.experiment_files import write_trajectory_csv
from figaroh_ros.model.robot import load_urdf_model
from figaroh_ros.ros.common import LATCHED
from figaroh_ros.sim.truth import TrueRobot, load_sim_config
from figaroh_ros.tasks.calibrate import model_from_result
from figaroh_ros.tasks.plan_postures import plan_from_config

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROBOTS = ("ur10", "tiago")


def files(robot: str) -> tuple[str, str, str]:
    """Simulation config, calibration config and launch file of a demo robot."""
    return (os.path.join(ROOT, "config", f"sim_{robot}.yaml"),
            os.path.join(ROOT, "config", f"{robot}_sim_calibration.yaml"),
            os.path.join(ROOT, "launch", f"sim_{robot}.launch.yaml"))


def log(msg):
    print(f"[demo] {msg}", flush=True)


def end_effector_rmse(summary: dict, published_urdf: str, nominal_urdf: str,
                      n: int = 200, seed: int = 99, robot: str = "ur10") -> tuple[float, float]:
    """RMSE (m) of the mocap-body position on fresh random postures: nominal model (frames
    fitted) and published model, each against the simulator's hidden truth."""
    truth = TrueRobot(load_sim_config(files(robot)[0]))
    lo, hi = chain_limits(truth.km, 0.2)
    Q = np.random.default_rng(seed).uniform(lo, hi, size=(n, len(lo)))
    P_true = np.array([T.translation for T in truth.marker_poses(Q)])
    out = []
    for text, nominal in ((nominal_urdf, True), (published_urdf, False)):
        km, x = model_from_result(text, summary, truth.km.tool_frame, nominal=nominal)
        P = np.array([T.translation for T in km.predict(Q, x)])
        out.append(float(np.sqrt(np.mean(np.sum((P - P_true) ** 2, axis=1)))))
    return out[0], out[1]


def exciting_trajectory(path: str, sim_config: str, duration: float = 30.0,
                        rate_hz: float = 100.0, seed: int = 5) -> float:
    """A windowed Fourier trajectory (starts and ends at rest) inside the joint limits and
    under 60 % of the velocity limits; written as the executor's trajectory CSV.  Returns
    its peak speed.  (The IPOPT-optimised trajectories of issue 5 will replace it.)"""
    cfg = load_sim_config(sim_config)
    robot = load_urdf_model(cfg.urdf, cfg.joints)
    traj = windowed(fourier_trajectory(robot, duration, rate_hz, harmonics=4,
                                       base_freq_hz=1.0 / 10.0, amplitude=0.5, seed=seed))
    vlim = robot.velocity_limits()
    scale = min(1.0, float(np.min(0.6 * vlim / np.abs(traj.dq).max(axis=0))))
    mid = traj.q.mean(axis=0)
    traj.q = mid + scale * (traj.q - mid)
    traj.dq = scale * traj.dq
    write_trajectory_csv(path, cfg.joints, traj)
    return float(np.abs(traj.dq).max())


def run_dynamic(node, workdir: str, robot: str = "ur10") -> dict:
    """Exciting trajectory -> recorded currents -> identification through the action."""
    SIM = files(robot)[0]
    ident = os.path.join(ROOT, "config", f"{robot}_sim_identification.yaml")
    path = os.path.join(workdir, "exciting_trajectory.csv")
    vpeak = exciting_trajectory(path, SIM)
    log(f"exciting trajectory: 30 s, peak joint speed {vpeak:.2f} rad/s")
    run_ac = ActionClient(node, RunExperiment, "/figaroh/run_experiment")
    cal_ac = ActionClient(node, Calibrate, "/figaroh/calibrate")
    for ac in (run_ac, cal_ac):
        if not ac.wait_for_server(timeout_sec=60.0):
            raise RuntimeError("executor or calibration node not available")
    bag = os.path.join(workdir, "bags", f"{robot}_dynamics")
    t0 = time.monotonic()
    res = _call(node, run_ac, RunExperiment.Goal(trajectory_file=path, bag_path=bag),
                lambda fb: None, timeout=600)
    if not res.success:
        raise RuntimeError(f"trajectory failed: {res.message}")
    log(f"executor: {res.message} ({time.monotonic() - t0:.1f} s)")
    t0 = time.monotonic()
    res = _call(node, cal_ac, Calibrate.Goal(bags=[bag], config=ident, kind="dynamic",
                                             publish=True),
                lambda fb: None, timeout=600)
    if not res.success:
        raise RuntimeError(f"identification failed: {res.message}")
    log(f"identification: {res.message} ({time.monotonic() - t0:.1f} s)")
    noise = float(load_sim_config(SIM).noise["current_a"])
    return {"torque_rms": res.validation_rmse, "nominal_torque_rms": res.nominal_validation_rmse,
            "noise": noise, "result": res}


def run(workdir: str, robot: str = "ur10", n_postures: int | None = None,
        domain: int | None = None, dynamic: bool = False) -> dict:
    """The demo; returns the numbers (raises RuntimeError on failure)."""


    SIM, CAL, LAUNCH = files(robot)
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain if domain is not None
                                             else random.randint(1, 200)),
               ROS_AUTOMATIC_DISCOVERY_RANGE="LOCALHOST")
    os.environ.update({k: env[k] for k in ("ROS_DOMAIN_ID", "ROS_AUTOMATIC_DISCOVERY_RANGE")})
    cfg = load_calibration_config(CAL)
    if n_postures is not None:
        cfg["postures"]["max_postures"] = n_postures
    postures = os.path.join(workdir, "postures.csv")
    t0 = time.monotonic()
    plan = plan_from_config(cfg, postures)
    log(f"planned {len(plan.selected)} D-optimal postures from {plan.n_candidates} "
        f"collision-free candidates ({time.monotonic() - t0:.1f} s)")
    graph = LaunchedGraph(LAUNCH, {"bag_dir": os.path.join(workdir, "bags"),
                                   "output_dir": os.path.join(workdir, "calibration")},
                          env=env, cwd=workdir, quiet=True)
    rclpy.init()
    node = rclpy.create_node("figaroh_demo")
    described = []
    node.create_subscription(String, "/robot_description",
                             lambda m: described.append(m.data), LATCHED)
    try:
        run_ac = ActionClient(node, RunExperiment, "/figaroh/run_experiment")
        cal_ac = ActionClient(node, Calibrate, "/figaroh/calibrate")
        for ac, name in ((run_ac, "executor"), (cal_ac, "calibration node")):
            if not ac.wait_for_server(timeout_sec=60.0):
                raise RuntimeError(f"{name} did not come up: {graph.failed()}")
        bag = os.path.join(workdir, "bags", f"{robot}_calibration")
        goal = RunExperiment.Goal(postures_file=postures, bag_path=bag)
        t0 = time.monotonic()
        res = _call(node, run_ac, goal, lambda fb: None, timeout=900)
        if not res.success:
            raise RuntimeError(f"experiment failed: {res.message}")
        log(f"executor: {res.message}, recorded {bag} ({time.monotonic() - t0:.1f} s)")
        goal = Calibrate.Goal(bags=[bag], config=CAL, kind="geometric", publish=True)
        t0 = time.monotonic()
        res = _call(node, cal_ac, goal, lambda fb: None, timeout=600)
        if not res.success:
            raise RuntimeError(f"calibration failed: {res.message}")
        log(f"calibration: {res.message} ({time.monotonic() - t0:.1f} s)")
        if not res.published:
            raise RuntimeError("the calibrated model was not published")
        t0 = time.monotonic()
        while time.monotonic() - t0 < 20.0:
            rclpy.spin_once(node, timeout_sec=0.1)
            if any("calibrated by figaroh_ros" in d for d in described):
                break
        published = [d for d in described if "calibrated by figaroh_ros" in d]
        if not published:
            raise RuntimeError("no calibrated robot_description received")
        with open(os.path.join(os.path.dirname(res.urdf_path), "result.yaml")) as f:
            summary = yaml.safe_load(f)
        with open(cfg["robot"]["urdf"]) as f:
            nominal_urdf = f.read()
        nom, cal = end_effector_rmse(summary, published[-1], nominal_urdf, robot=robot)
        out = {"nominal_mm": 1e3 * nom, "calibrated_mm": 1e3 * cal,
               "postures": len(plan.selected), "result": res, "summary": summary}
        if dynamic:
            out["dynamic"] = run_dynamic(node, workdir, robot)
        return out
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
        graph.stop()


def _call(node, client, goal, on_feedback, timeout: float):
    fut = client.send_goal_async(goal, feedback_callback=lambda m: on_feedback(m.feedback))
    rclpy.spin_until_future_complete(node, fut, timeout_sec=30.0)
    handle = fut.result()
    if handle is None or not handle.accepted:
        raise RuntimeError(f"goal rejected by {client._action_name}")
    res_fut = handle.get_result_async()
    rclpy.spin_until_future_complete(node, res_fut, timeout_sec=timeout)
    if not res_fut.done():
        raise RuntimeError(f"{client._action_name} did not finish in {timeout:.0f} s")
    return res_fut.result().result


def main(argv: list[str]) -> int:
    robot = argv[0] if argv else "ur10"
    if robot not in ROBOTS:
        print(f"error: demo robots are {ROBOTS}, got {robot!r}", file=sys.stderr)
        return 2
    workdir = os.path.join(ROOT, "demo_out", f"{robot}_sim")
    log(f"simulated {robot}: plan, execute, record, calibrate, publish")
    try:
        out = run(workdir, robot, dynamic=robot == "ur10")
    except RuntimeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    red = 100.0 * (1.0 - out["calibrated_mm"] / out["nominal_mm"])
    dyn = out.get("dynamic")
    if dyn:
        print(f"predicted-torque RMS on held-out data: nominal {dyn['nominal_torque_rms']:.3f}"
              f" N.m -> identified {dyn['torque_rms']:.3f} N.m (simulated noise "
              f"{dyn['noise']:.3f} N.m)")
    log(f"fresh postures, mocap body position against the hidden truth: {red:.1f} % lower")
    print(f"end-effector RMSE: nominal {out['nominal_mm']:.2f} mm -> calibrated "
          f"{out['calibrated_mm']:.2f} mm")
    return 0 if red >= 80.0 else 1

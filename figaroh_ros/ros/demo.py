"""``figaroh-ros demo`` / ``make demo``: the whole on-robot loop on a simulated UR10.

Plans D-optimal postures, starts the simulated robot and every node (the same
``launch/sim_ur10.launch.yaml`` that ``ros2 launch`` runs on a ROS machine), plays the
postures through the executor while the recorder writes the bag, calls the Calibrate
action on the bag (both goals sent by the :class:`Commander`), takes the URDF the
calibration node publishes on /robot_description, and scores it against the simulator's
hidden truth on fresh postures.
"""
from __future__ import annotations

import os
import shutil
import sys
import time

import numpy as np
import yaml
from std_msgs.msg import String

from figaroh_ros.action import Calibrate
from figaroh_ros.calibration.kinematic_model import chain_limits
from figaroh_ros.cli.launch_runner import LaunchedGraph
from figaroh_ros.config.calibration import CalibrationConfig, load_calibration_config
from figaroh_ros.errors import FigarohError, ModelError, RosError
from figaroh_ros.excitation.fourier import fourier_trajectory, windowed
from figaroh_ros.io.experiment_files import write_trajectory_csv
from figaroh_ros.model.robot import load_urdf_model
from figaroh_ros.ros.commander import Commander
from figaroh_ros.ros.common import LATCHED
from figaroh_ros.ros.transport import random_domain, without_shared_memory
from figaroh_ros.sim.truth import TrueRobot, load_sim_config
from figaroh_ros.tasks.calibrate import model_from_result
from figaroh_ros.tasks.plan_postures import plan_from_config

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROBOTS = ("ur10", "tiago")
CALLERS_TRANSPORT = ("ROS_AUTOMATIC_DISCOVERY_RANGE", "FASTDDS_DEFAULT_PROFILES_FILE",
                     "FASTRTPS_DEFAULT_PROFILES_FILE")


def files(robot: str) -> tuple[str, str, str]:
    """Simulation config, calibration config and launch file of a demo robot."""
    return (os.path.join(ROOT, "config", f"sim_{robot}.yaml"),
            os.path.join(ROOT, "config", f"{robot}_sim_calibration.yaml"),
            os.path.join(ROOT, "launch", f"sim_{robot}.launch.yaml"))


def log(msg):
    print(f"[demo] {msg}", flush=True)


def end_effector_rmse(summary: dict, published_urdf: str, nominal_urdf: str,
                      n: int = 200, seed: int = 99, robot: str = "ur10",
                      sim_config: str | None = None) -> tuple[float, float]:
    """RMSE (m) of the mocap-body position on fresh random postures: nominal model (frames
    fitted) and published model, each against the hidden truth of the simulator
    (``sim_config``, else the shipped one of ``robot``)."""
    truth = TrueRobot(load_sim_config(sim_config or files(robot)[0]))
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
    its peak speed."""
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


def run_dynamic(robot_client: Commander, workdir: str, robot: str = "ur10",
                duration: float = 30.0) -> dict:
    """Exciting trajectory (``duration`` s) -> recorded currents -> identification through
    the action."""
    SIM = files(robot)[0]
    ident = os.path.join(ROOT, "config", f"{robot}_sim_identification.yaml")
    path = os.path.join(workdir, "exciting_trajectory.csv")
    vpeak = exciting_trajectory(path, SIM, duration)
    log(f"exciting trajectory: {duration:g} s, peak joint speed {vpeak:.2f} rad/s")
    bag = os.path.join(workdir, "bags", f"{robot}_dynamics")
    t0 = time.monotonic()
    res = robot_client.run_experiment(trajectory_file=path, bag_path=bag).check(600.0)
    log(f"executor: {res.message} ({time.monotonic() - t0:.1f} s)")
    t0 = time.monotonic()
    res = robot_client.calibrate([bag], ident, Calibrate.Goal.DYNAMIC).check(600.0)
    log(f"identification: {res.message} ({time.monotonic() - t0:.1f} s)")
    noise = float(load_sim_config(SIM).noise.current_a)
    return {"torque_rms": res.torque_rmse_nm, "nominal_torque_rms": res.nominal_torque_rmse_nm,
            "noise": noise, "result": res}


def demo_transport(environ) -> dict[str, str]:
    """The variables the demo adds to ``environ`` for its graph: this computer only, without
    shared memory (ros/transport.py); none when the caller set a discovery range or a Fast
    DDS profiles file, whose transports are kept."""
    return {} if any(v in environ for v in CALLERS_TRANSPORT) else without_shared_memory()


def run(workdir: str, robot: str = "ur10", n_postures: int | None = None,
        domain: int | None = None, dynamic: bool = False) -> dict:
    """The demo; returns the numbers (raises a FigarohError on failure)."""
    SIM, CAL, LAUNCH = files(robot)
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    transport = demo_transport(os.environ)
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain if domain is not None
                                             else random_domain()), **transport)
    os.environ.update({k: env[k] for k in ("ROS_DOMAIN_ID", *transport)})
    cfg = load_calibration_config(CAL)
    if n_postures is not None:
        cfg = cfg.with_postures(max_postures=n_postures)
    postures = os.path.join(workdir, "postures.csv")
    # the graph's nodes start while the postures are planned
    graph = LaunchedGraph(LAUNCH, {"bag_dir": os.path.join(workdir, "bags"),
                                   "output_dir": os.path.join(workdir, "calibration"),
                                   "data_roots": workdir},       # the planned postures
                          env=env, cwd=workdir, quiet=True)
    try:
        t0 = time.monotonic()
        plan = plan_from_config(cfg, postures)
        log(f"planned {len(plan.selected)} D-optimal postures from {plan.n_candidates} "
            f"collision-free candidates ({time.monotonic() - t0:.1f} s)")
        with Commander(node_name="figaroh_demo") as robot_client:
            out = _session(robot_client, graph, workdir, robot, cfg, postures)
            out["postures"] = len(plan.selected)
            if dynamic:
                out["dynamic"] = run_dynamic(robot_client, workdir, robot)
            return out
    finally:
        graph.stop()


def _session(robot_client: Commander, graph: LaunchedGraph, workdir: str, robot: str,
             cfg: CalibrationConfig, postures: str) -> dict:
    """Play and record the postures, calibrate on the bag, score the published model."""
    described = []
    robot_client.node.create_subscription(String, "/robot_description",
                                          lambda m: described.append(m.data), LATCHED)
    try:
        robot_client.wait_until_ready(60.0, ("run_experiment", "calibrate"))
    except RosError as exc:
        raise RosError(f"{exc}; failed nodes: {graph.failed() or 'none'}") from None
    bag = os.path.join(workdir, "bags", f"{robot}_calibration")
    t0 = time.monotonic()
    res = robot_client.run_experiment(postures_file=postures, bag_path=bag).check(900.0)
    log(f"executor: {res.message}, recorded {bag} ({time.monotonic() - t0:.1f} s)")
    t0 = time.monotonic()
    res = robot_client.calibrate([bag], files(robot)[1], Calibrate.Goal.GEOMETRIC).check(600.0)
    log(f"calibration: {res.message} ({time.monotonic() - t0:.1f} s)")
    if not res.published:
        raise ModelError(f"the calibrated model was not published: "
                         f"{res.not_published_because}")
    published = _wait_for(lambda: [d for d in described if "calibrated by figaroh_ros" in d])
    if not published:
        raise RosError("no calibrated robot_description received")
    with open(res.result_path) as f:
        summary = yaml.safe_load(f)
    with open(cfg.robot.urdf) as f:
        nominal_urdf = f.read()
    nom, cal = end_effector_rmse(summary, published[-1], nominal_urdf, robot=robot)
    return {"nominal_mm": 1e3 * nom, "calibrated_mm": 1e3 * cal, "result": res,
            "summary": summary}


def _wait_for(found, timeout: float = 20.0):
    """``found()`` once it is not empty (the Commander's thread fills it), or empty."""
    t0 = time.monotonic()
    while not found() and time.monotonic() - t0 < timeout:
        time.sleep(0.1)
    return found()


def main(argv: list[str]) -> int:
    robot = argv[0] if argv else "ur10"
    if robot not in ROBOTS:
        print(f"error: demo robots are {ROBOTS}, got {robot!r}", file=sys.stderr)
        return 2
    workdir = os.path.join(ROOT, "demo_out", f"{robot}_sim")
    log(f"simulated {robot}: plan, execute, record, calibrate, publish")
    try:
        out = run(workdir, robot, dynamic=robot == "ur10")
    except FigarohError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
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

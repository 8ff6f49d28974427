"""The ROS 2 layer as a real graph: the simulated UR10 and every node in their own processes
(started from launch/sim_ur10.launch.yaml by our runner), talking over DDS.

End to end: planned postures -> executor -> recorder bag -> Calibrate action -> published
robot_description, whose end-effector error against the simulator's hidden truth on fresh
postures must drop by at least 80 %.  Bad input: goals with unknown joints or outside the
limits, bags without the needed topic, bad calibrate goals - clear errors, nothing
published, every node still alive."""
import os
import time

import numpy as np
import pytest
import yaml
from conftest import ROOT, ros_graph_environment

rclpy = pytest.importorskip("rclpy")


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    from figaroh_ros.cli.launch_runner import LaunchedGraph
    work = tmp_path_factory.mktemp("graph")
    ros_graph_environment()
    g = LaunchedGraph(os.path.join(ROOT, "launch", "sim_ur10.launch.yaml"),
                      {"bag_dir": str(work / "bags"), "output_dir": str(work / "cal")},
                      env=dict(os.environ), cwd=str(work), quiet=True)
    rclpy.init()
    node = rclpy.create_node("figaroh_test_client")
    yield {"graph": g, "node": node, "work": work}
    node.destroy_node()
    rclpy.try_shutdown()
    g.stop()


def _call(node, client, goal, timeout=300.0):
    fut = client.send_goal_async(goal)
    rclpy.spin_until_future_complete(node, fut, timeout_sec=30.0)
    handle = fut.result()
    if not handle.accepted:
        return None
    res = handle.get_result_async()
    rclpy.spin_until_future_complete(node, res, timeout_sec=timeout)
    assert res.done(), "action did not finish"
    return res.result().result


def _client(g, action_type, name):
    from rclpy.action import ActionClient
    ac = ActionClient(g["node"], action_type, name)
    assert ac.wait_for_server(timeout_sec=60.0), (name, g["graph"].failed())
    return ac


@pytest.fixture(scope="module")
def experiment(graph):
    """12 planned postures played and recorded (the demo does 24)."""
    from figaroh_ros.action import RunExperiment
    from figaroh_ros.config.calibration import load_calibration_config
    from figaroh_ros.tasks.plan_postures import plan_from_config
    cfg = load_calibration_config(os.path.join(ROOT, "config", "ur10_sim_calibration.yaml"))
    cfg["postures"]["max_postures"] = 12
    cfg["postures"]["plateau"] = 1e-6
    cfg["postures"]["candidates"] = 400
    postures = str(graph["work"] / "postures.csv")
    plan = plan_from_config(cfg, postures)
    ac = _client(graph, RunExperiment, "/figaroh/run_experiment")
    bag = str(graph["work"] / "bags" / "exp")
    res = _call(graph["node"], ac, RunExperiment.Goal(postures_file=postures, bag_path=bag))
    assert res.success, res.message
    assert res.postures_done == len(plan.selected)
    return {"bag": bag, "postures": postures, "n": len(plan.selected)}


def test_bag_is_self_contained_and_marks_every_posture(experiment):
    from figaroh_ros.io.bags import read_bag_postures
    from figaroh_ros.sim.truth import load_sim_config
    cfg = load_sim_config(os.path.join(ROOT, "config", "sim_ur10.yaml"))
    bp = read_bag_postures([experiment["bag"]], cfg.joints, "/joint_states", "/mocap/pose",
                           "/figaroh/posture_events")
    assert len(bp.indices) == experiment["n"]
    assert bp.robot_description and "<robot" in bp.robot_description
    assert min(bp.samples) >= 10            # 100 Hz mocap over a 0.3 s hold
    # the averaged joint readings are the commanded postures (noise 1e-5 rad)
    planned = np.loadtxt(experiment["postures"], delimiter=",", skiprows=1)[:, :6]
    assert np.abs(bp.Q - planned).max() < 1e-4


@pytest.fixture(scope="module")
def calibrated(graph, experiment):
    """The geometric Calibrate goal on the recorded postures, published; the result and
    every /robot_description received."""
    from std_msgs.msg import String

    from figaroh_ros.action import Calibrate
    from figaroh_ros.ros.common import LATCHED
    received = []
    graph["node"].create_subscription(String, "/robot_description",
                                      lambda m: received.append(m.data), LATCHED)
    ac = _client(graph, Calibrate, "/figaroh/calibrate")
    cfg = os.path.join(ROOT, "config", "ur10_sim_calibration.yaml")
    res = _call(graph["node"], ac, Calibrate.Goal(bags=[experiment["bag"]], config=cfg,
                                                  kind="geometric", publish=True))
    t0 = time.monotonic()
    while time.monotonic() - t0 < 20 and not any("calibrated by figaroh_ros" in d
                                                 for d in received):
        rclpy.spin_once(graph["node"], timeout_sec=0.1)
    return {"result": res, "received": received, "config": cfg}


def test_calibrate_publishes_a_model_80_percent_better(calibrated):
    from figaroh_ros.ros.demo import end_effector_rmse
    res, received, cfg = calibrated["result"], calibrated["received"], calibrated["config"]
    assert res.success and res.published, res.message
    assert res.validation_rmse < 0.2 * res.nominal_validation_rmse
    assert len(res.parameter_names) == len(res.parameter_values) == len(res.parameter_std) > 0
    published = [d for d in received if "calibrated by figaroh_ros" in d]
    assert published, "no calibrated robot_description received"
    with open(os.path.join(os.path.dirname(res.urdf_path), "result.yaml")) as f:
        summary = yaml.safe_load(f)
    from figaroh_ros.config.calibration import load_calibration_config
    with open(load_calibration_config(cfg)["robot"]["urdf"]) as f:
        nominal = f.read()
    nom, cal = end_effector_rmse(summary, published[-1], nominal)
    assert cal <= 0.2 * nom, (nom, cal)


def test_goals_outside_limits_or_with_unknown_joints_are_rejected(graph, experiment):
    from control_msgs.action import FollowJointTrajectory
    from trajectory_msgs.msg import JointTrajectoryPoint

    from figaroh_ros.action import RunExperiment
    ac = _client(graph, FollowJointTrajectory, "/arm_controller/follow_joint_trajectory")
    for names, pos, vel in ((["head_1_joint"], [0.0], [0.0]),             # unknown joint
                            (["elbow_joint"], [7.0], [0.0]),              # beyond the limit
                            (["elbow_joint"], [0.5], [0.3])):             # moving at the end
        goal = FollowJointTrajectory.Goal()
        goal.trajectory.joint_names = names
        pt = JointTrajectoryPoint(positions=pos, velocities=vel)
        pt.time_from_start.sec = 1
        goal.trajectory.points = [pt]
        assert _call(graph["node"], ac, goal) is None        # rejected at acceptance
    # the executor refuses a postures file with a posture beyond the limits, before moving
    bad = graph["work"] / "bad_postures.csv"
    lines = open(experiment["postures"]).read().splitlines()
    row = lines[2].split(",")
    row[2] = "9.0"                                          # elbow_joint
    bad.write_text("\n".join([lines[0], lines[1], ",".join(row)]) + "\n")
    run = _client(graph, RunExperiment, "/figaroh/run_experiment")
    res = _call(graph["node"], run, RunExperiment.Goal(
        postures_file=str(bad), bag_path=str(graph["work"] / "bags" / "never")))
    assert not res.success and "elbow_joint" in res.message and "limits" in res.message
    assert res.postures_done == 0
    assert not os.path.exists(graph["work"] / "bags" / "never")


def test_bad_calibrate_goals_fail_clearly_and_publish_nothing(graph, experiment):
    from figaroh_ros.action import Calibrate
    ac = _client(graph, Calibrate, "/figaroh/calibrate")
    cfg = os.path.join(ROOT, "config", "ur10_sim_calibration.yaml")
    node = graph["node"]
    res = _call(node, ac, Calibrate.Goal(bags=["/nonexistent"], config=cfg,
                                         kind="geometric", publish=True))
    assert not res.success and not res.published and "not a rosbag2 bag" in res.message
    res = _call(node, ac, Calibrate.Goal(bags=[experiment["bag"]], config="/no/such.yaml",
                                         kind="geometric", publish=True))
    assert not res.success and "config not found" in res.message
    # a config that reads another measurement topic than the bag holds
    raw = yaml.safe_load(open(cfg))
    raw["bag"]["measurement"] = "/vicon/pose"
    raw["robot"]["urdf"] = "example-robot-data:ur_description/urdf/ur10_joint_limited_robot.urdf"
    other = graph["work"] / "other.yaml"
    other.write_text(yaml.safe_dump(raw))
    res = _call(node, ac, Calibrate.Goal(bags=[experiment["bag"]], config=str(other),
                                         kind="geometric", publish=True))
    assert not res.success and not res.published
    assert "no topic '/vicon/pose'" in res.message
    assert not graph["graph"].failed()                      # every node still runs


def test_dynamic_session_predicts_torques_at_the_noise_floor(graph, calibrated):
    """Exciting trajectory -> currents in the bag -> identification through the action:
    held-out torques predicted to within 1.1 x the noise floor of the decimated signal
    (the simulated current noise divided by sqrt(decimation)), far better than the URDF.
    The calibration node had published the geometric calibration: the identification
    starts from it, and the published description carries both."""
    from figaroh_ros.config.identification import load_config
    from figaroh_ros.identification.parameters import parameter_layout
    from figaroh_ros.identification.pipeline import (
        _split, drive_options, identify, load_recording, observe, process, robot_from_config
    )
    from figaroh_ros.ros import demo
    from figaroh_ros.sim.truth import TrueRobot, load_sim_config
    out = demo.run_dynamic(graph["node"], str(graph["work"]), "ur10")
    bag = os.path.join(str(graph["work"]), "bags", "ur10_dynamics")
    cfg = load_config(os.path.join(ROOT, "config", "ur10_sim_identification.yaml"), bag=bag)
    dec = cfg["processing"]["decimation"]
    # the floor: the hidden true model through the same processing of the same held-out
    # part of the bag (current noise / sqrt(decimation), plus what the recording adds)
    robot, drive = robot_from_config(cfg), drive_options(cfg)
    layout = parameter_layout(robot, drive)
    truth = TrueRobot(load_sim_config(demo.files("ur10")[0]))
    assert truth.layout.names == layout.names
    base = identify(cfg).base
    _, test = _split(load_recording(cfg, robot), cfg["estimation"]["validation_fraction"])
    obs = observe(cfg, base, *process(cfg, robot, layout, drive, test))
    err = obs.Y - obs.Wb @ base.from_standard(truth.phi)
    floor = float(np.sqrt(np.mean([np.mean(err[obs.row_joint == j] ** 2)
                                   for j in range(robot.n_joints)])))
    assert floor < 1.3 * out["noise"] / np.sqrt(dec), floor
    assert out["torque_rms"] <= 1.1 * floor, (out["torque_rms"], floor)
    assert out["torque_rms"] < 0.2 * out["nominal_torque_rms"]
    assert len(out["result"].parameter_names) > 30
    # physically consistent inertias published as the robot description
    assert out["result"].published, out["result"].message
    assert "started from the published" in out["result"].message, out["result"].message
    text = open(out["result"].urdf_path).read()
    assert "inertial parameters identified by figaroh_ros" in text
    assert "calibrated by figaroh_ros" in text
    # the joint origins are the calibrated ones, the inertias the identified ones
    from figaroh_ros.model.robot import load_urdf_model
    geo = load_urdf_model(calibrated["result"].urdf_path, robot.active_joints).model
    both = load_urdf_model(out["result"].urdf_path, robot.active_joints).model
    nominal = robot.model
    for j in range(1, geo.njoints):
        assert np.allclose(both.jointPlacements[j].homogeneous,
                           geo.jointPlacements[j].homogeneous, atol=1e-12)
    assert any(not np.allclose(geo.jointPlacements[j].homogeneous,
                               nominal.jointPlacements[j].homogeneous, atol=1e-6)
               for j in range(1, geo.njoints))
    assert any(abs(both.inertias[j].mass - geo.inertias[j].mass) > 1e-3
               for j in range(1, geo.njoints))


def test_trajectory_planner_is_reachable_from_ros(graph):
    """The PlanTrajectory service plans (a short run) and writes a file the executor plays;
    a bad config fails with a message."""
    from figaroh_ros.srv import PlanTrajectory
    raw = yaml.safe_load(open(os.path.join(ROOT, "config", "ur10_trajectory.yaml")))
    raw["trajectory"].update(max_iterations=20, self_collision=False)
    cfg = graph["work"] / "traj.yaml"
    cfg.write_text(yaml.safe_dump(raw))
    node = graph["node"]
    cli = node.create_client(PlanTrajectory, "/figaroh/plan_trajectory")
    assert cli.wait_for_service(timeout_sec=30.0)
    out = str(graph["work"] / "planned.csv")
    fut = cli.call_async(PlanTrajectory.Request(config=str(cfg), out=out))
    rclpy.spin_until_future_complete(node, fut, timeout_sec=300.0)
    res = fut.result()
    assert res.success, res.message
    assert os.path.isfile(res.path) and np.isfinite(res.condition_number)
    fut = cli.call_async(PlanTrajectory.Request(config="/no/such.yaml", out=out))
    rclpy.spin_until_future_complete(node, fut, timeout_sec=30.0)
    assert not fut.result().success and "config not found" in fut.result().message


def test_tiago_torso_and_arm_on_two_controllers(tmp_path, graph):
    """The demo loop on the simulated TIAGo: every posture is split between the torso and
    the arm controllers; the published model beats the nominal one by >= 80 %."""
    from figaroh_ros.ros import demo
    rclpy.try_shutdown()                  # demo.run owns its rclpy context
    try:
        out = demo.run(str(tmp_path / "tiago"), "tiago", n_postures=14,
                       domain=int(os.environ["ROS_DOMAIN_ID"]) + 1)
    finally:
        rclpy.init()
    assert out["result"].published
    assert out["calibrated_mm"] <= 0.2 * out["nominal_mm"], out

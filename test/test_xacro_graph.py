"""A UR10 whose only model is ur_description's xacro, end to end over DDS.

The simulated robot's nominal model is ur_description's ``ur.urdf.xacro`` expanded with
``ur_type:=ur10 name:=ur`` (the unmodified fixture in ``test/data/ur_description``, found
through ``$(find ur_description)`` on AMENT_PREFIX_PATH), as a real UR's
robot_state_publisher has it; no URDF file of the robot exists anywhere.  The executor,
configured as on the robot (``robot.source: topic``), takes the model from
``/robot_description`` (the launch file's ``robot_config``) and plays planned postures, the recorder writes the bag with the robot_description it heard, and the
Calibrate goal's config says ``robot.source: bag``: the calibration starts from the model
recorded in the bag, records that model's hash, and the published model is scored against
the simulator's hidden truth on fresh postures.
"""
import os
import re

import numpy as np
import pytest
import yaml
from conftest import (
    ROOT, UR10_XACRO, accepted_goal, config_with_robot, goal_result, sim_ur10_graph,
    ur_description_prefix
)

from figaroh_ros.errors import SUCCESSFUL

rclpy = pytest.importorskip("rclpy")
pytestmark = pytest.mark.xdist_group("ros_graph_2")   # the second worker's graphs

JOINTS = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint",
          "wrist_2_joint", "wrist_3_joint"]
XACRO = UR10_XACRO


@pytest.fixture(scope="module")
def xacro_graph(tmp_path_factory):
    work = tmp_path_factory.mktemp("xacro_graph")
    prefix = ur_description_prefix(work / "ament")
    old = os.environ.get("AMENT_PREFIX_PATH")
    os.environ["AMENT_PREFIX_PATH"] = ":".join(filter(None, [prefix, old]))
    sim = config_with_robot(os.path.join(ROOT, "config", "sim_ur10.yaml"), work / "sim.yaml", XACRO)
    # the executor as on the robot: controllers and driver, the model from /robot_description
    robot_cfg = work / "robot.yaml"
    raw = yaml.safe_load(open(sim))
    robot_cfg.write_text(yaml.safe_dump({
        "robot": {"name": "ur10", "source": "topic"}, "controllers": raw["controllers"],
        "driver": raw["driver"]}, sort_keys=False))
    plan_cfg = config_with_robot(os.path.join(ROOT, "config", "ur10_sim_calibration.yaml"),
                           work / "plan.yaml", XACRO)
    cal_cfg = config_with_robot(os.path.join(ROOT, "config", "ur10_sim_calibration.yaml"),
                          work / "calibration.yaml", {"source": "bag"})
    ident_cfg = config_with_robot(os.path.join(ROOT, "config", "ur10_sim_identification.yaml"),
                            work / "identification.yaml", {"source": "bag", "joints": JOINTS},
                            # ur_robot_driver: motor currents (A) in joint_states effort
                            data={"torque_topic": "/joint_states"},
                            drive={"effort_gains": [13.26, 13.26, 9.31, 4.60, 4.60, 4.60]})
    # joint states at 125 Hz, half the simulator's CPU (test_ros_graph.JOINT_STATES_HZ)
    with sim_ur10_graph(work, "figaroh_xacro_test", joint_states_hz=125, sim_config=sim,
                        robot_config=str(robot_cfg), preflight_config=plan_cfg) as (g, node):
        yield {"graph": g, "node": node, "work": work, "sim": sim, "plan": plan_cfg,
               "calibration": cal_cfg, "identification": ident_cfg}
    if old is None:
        del os.environ["AMENT_PREFIX_PATH"]
    else:
        os.environ["AMENT_PREFIX_PATH"] = old


def _call(node, action_type, name, goal, timeout=300.0):
    from rclpy.action import ActionClient
    ac = ActionClient(node, action_type, name)
    assert ac.wait_for_server(timeout_sec=60.0), name
    handle = accepted_goal(node, ac, goal)
    assert handle is not None, f"{name} rejected the goal"
    return goal_result(node, handle, timeout)


def test_a_xacro_only_ur10_is_recorded_and_calibrated_from_the_bags_model(xacro_graph):
    from figaroh_ros.action import Calibrate, RunExperiment
    from figaroh_ros.config.calibration import load_calibration_config
    from figaroh_ros.model.sources import model_sha256, resolve_model_source
    from figaroh_ros.ros.demo import end_effector_rmse
    from figaroh_ros.tasks.plan_postures import plan_from_config
    g, node = xacro_graph, xacro_graph["node"]
    expanded, _ = resolve_model_source(XACRO, ROOT)
    assert "base_link_inertia" in expanded        # ur_description's chain, not ERD's

    cfg = load_calibration_config(g["plan"])
    # 10 postures: 0.07 mm against 10.7 mm nominal; 8 leave none held out
    cfg = cfg.with_postures(max_postures=10, plateau=1e-6, candidates=400)
    postures = str(g["work"] / "postures.csv")
    plan_from_config(cfg, postures)
    bag = str(g["work"] / "bags" / "exp")
    run = _call(node, RunExperiment, "/figaroh/run_experiment",
                RunExperiment.Goal(postures_file=postures, bag_path=bag))
    assert run.error_code == SUCCESSFUL and run.postures_done == 10, run.message
    # the executor's model: the xacro's expansion, heard on /robot_description
    log = (g["work"] / "launch_logs" / "executor.log").read_text()
    assert re.search(rf"model from topic /?robot_description \(sha256 "
                     rf"{model_sha256(expanded)[:12]}\)", log), log[-2000:]

    res = _call(node, Calibrate, "/figaroh/calibrate", Calibrate.Goal(
        bags=[bag], config=g["calibration"], kind=Calibrate.Goal.GEOMETRIC, publish=True))
    assert res.error_code == SUCCESSFUL and res.published, res.message
    with open(res.result_path) as f:
        summary = yaml.safe_load(f)
    model = summary["nominal_model"]
    assert model["source"] == "bag" and model["sha256"] == model_sha256(expanded), model
    assert res.position_rmse_m < 0.2 * res.nominal_position_rmse_m
    with open(res.urdf_path) as f:
        published = f.read()
    nom, cal = end_effector_rmse(summary, published, expanded, sim_config=g["sim"])
    print(f"xacro UR10: nominal {nom * 1e3:.2f} mm -> calibrated {cal * 1e3:.3f} mm")
    assert cal <= 0.2 * nom and cal < 1e-3, (nom, cal)
    assert np.isfinite([nom, cal]).all()


def test_the_xacro_ur10s_currents_identify_its_dynamics(xacro_graph):
    """An exciting trajectory played, the motor currents (A, in joint_states effort, like
    ur_robot_driver) recorded, the dynamics identified through the action from the
    geometric calibration just published on the xacro's model (config source: bag, the
    node building on its published model): held-out torques far better than the xacro's
    own inertias, a consistent model published, the starting model's hash recorded."""
    from figaroh_ros.action import Calibrate, RunExperiment
    from figaroh_ros.model.sources import model_sha256, resolve_model_source
    from figaroh_ros.ros.demo import exciting_trajectory
    g, node = xacro_graph, xacro_graph["node"]
    expanded, _ = resolve_model_source(XACRO, ROOT)
    path = str(g["work"] / "exciting.csv")
    # 12 s: 0.13 N.m vs 3.1 nominal at 250 Hz, 0.165 at 125 Hz
    exciting_trajectory(path, g["sim"], duration=12.0)
    bag = str(g["work"] / "bags" / "dynamics")
    run = _call(node, RunExperiment, "/figaroh/run_experiment",
                RunExperiment.Goal(trajectory_file=path, bag_path=bag))
    assert run.error_code == SUCCESSFUL, run.message
    res = _call(node, Calibrate, "/figaroh/calibrate", Calibrate.Goal(
        bags=[bag], config=g["identification"], kind=Calibrate.Goal.DYNAMIC, publish=True))
    assert res.error_code == SUCCESSFUL and res.published, res.message
    print(f"xacro UR10 dynamics: held-out torque RMS {res.nominal_torque_rmse_nm:.3f} -> "
          f"{res.torque_rmse_nm:.3f} N.m")
    assert res.torque_rmse_nm < 0.2 * res.nominal_torque_rmse_nm
    # it starts from the published geometric calibration of the same xacro model
    assert "started from the published" in res.message, res.message
    with open(res.result_path) as f:
        model = yaml.safe_load(f)["nominal_model"]
    with open(model["location"]) as f:
        start = f.read()
    assert model["sha256"] == model_sha256(start) != model_sha256(expanded)
    assert "calibrated by figaroh_ros" in start and "base_link_inertia" in start

"""The dynamic identification's publication gate on the Calibrate action, over DDS: a
simulated UR10 (hidden inertias, friction, rotor inertias, offsets; current noise) plays a
20 s exciting trajectory, recorded; then three DYNAMIC goals on that bag, each asking to
publish:

* torques of shoulder_lift_joint with the wrong sign (``drive.effort_gains``): the fit
  leaves a residual far above the torque noise estimated from successive samples: not
  published, ``residual_vs_noise`` named with its number, the result.yaml verdict FAILED;
* a config asking the held-out error to fall by 99 % of the nominal model's
  (``acceptance.improvement_margin``): the identification improves by less (the paired
  test passes, the margin does not): not published, only ``improvement_margin`` named;
* the honest identification: every check passes, published.

(A held-out error that the paired test cannot tell from the nominal model's is refused in
test_identification_gate.py, where the truth is the URDF's model: the simulator's hidden
robot always has friction, rotor inertias and offsets, which a URDF does not carry, so any
identification on its recordings improves on the URDF.)
"""
import os

import pytest
import yaml
from conftest import ROOT, accepted_goal, goal_result, sim_ur10_graph

from figaroh_ros.errors import SUCCESSFUL

rclpy = pytest.importorskip("rclpy")
pytestmark = pytest.mark.xdist_group("ros_graph_2")

IDENT = os.path.join(ROOT, "config", "ur10_sim_identification.yaml")


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    work = tmp_path_factory.mktemp("gate")
    with sim_ur10_graph(work, "figaroh_gate_test", joint_states_hz=125,
                        preflight_config="") as (g, node):
        yield {"graph": g, "node": node, "work": work}


def _action(g, action_type, name, goal, timeout=600.0):
    from rclpy.action import ActionClient
    ac = ActionClient(g["node"], action_type, name)
    assert ac.wait_for_server(timeout_sec=60.0), (name, g["graph"].tails())
    handle = accepted_goal(g["node"], ac, goal)
    assert handle is not None, name
    return goal_result(g["node"], handle, timeout)


def _identify(g, bag, config):
    from figaroh_ros.action import Calibrate
    return _action(g, Calibrate, "/figaroh/calibrate", Calibrate.Goal(
        bags=[bag], config=str(config), kind=Calibrate.Goal.DYNAMIC, publish=True))


def _checks(res) -> dict:
    with open(res.result_path) as f:
        pub = yaml.safe_load(f)["publication"]
    return pub["verdict"], {c["name"]: c for c in pub["checks"]}


def _description(g) -> str:
    from rcl_interfaces.srv import GetParameters
    node = g["node"]
    cli = node.create_client(GetParameters, "/sim_robot/get_parameters")
    assert cli.wait_for_service(timeout_sec=30.0)
    fut = cli.call_async(GetParameters.Request(names=["robot_description"]))
    rclpy.spin_until_future_complete(node, fut, timeout_sec=30.0)
    node.destroy_client(cli)
    return fut.result().values[0].string_value


@pytest.fixture(scope="module")
def bag(graph):
    from figaroh_ros.action import RunExperiment
    from figaroh_ros.ros import demo
    work = graph["work"]
    traj = str(work / "exciting_trajectory.csv")
    demo.exciting_trajectory(traj, demo.files("ur10")[0], 20.0)
    path = str(work / "bags" / "dynamics")
    ran = _action(graph, RunExperiment, "/figaroh/run_experiment",
                  RunExperiment.Goal(trajectory_file=traj, bag_path=path))
    assert ran.error_code == SUCCESSFUL, ran.message
    return path


def test_the_gate_decides_what_the_action_publishes(graph, bag):
    work = graph["work"]
    raw = yaml.safe_load(open(IDENT))
    raw["robot"]["driver"] = os.path.join(ROOT, "config", raw["robot"]["driver"])
    strict = work / "strict_margin.yaml"                # 99 % better required
    strict.write_text(yaml.safe_dump(dict(raw, acceptance={"improvement_margin": 0.99})))
    del raw["robot"]["driver"]                       # its gains, one with the wrong sign
    raw["drive"] = {"effort_gains": [13.26, -13.26, 9.31, 4.6, 4.6, 4.6]}
    flipped = work / "flipped_sign.yaml"
    flipped.write_text(yaml.safe_dump(raw))
    nominal = _description(graph)

    res = _identify(graph, bag, flipped)
    assert res.error_code == SUCCESSFUL and not res.published, res.message
    verdict, c = _checks(res)
    assert verdict == "FAILED" and not c["residual_vs_noise"]["passed"]
    assert c["residual_vs_noise"]["value"] > 10.0, c["residual_vs_noise"]
    assert "shoulder_lift_joint" in c["residual_vs_noise"]["detail"]
    assert "residual_vs_noise" in res.not_published_because, res.not_published_because
    print(f"wrong sign: residual {c['residual_vs_noise']['value']:.3g} x the noise")
    assert _description(graph) == nominal

    res = _identify(graph, bag, strict)
    assert res.error_code == SUCCESSFUL and not res.published, res.message
    verdict, c = _checks(res)
    assert verdict == "FAILED" and c["improvement_test"]["passed"]
    assert not c["improvement_margin"]["passed"] and c["improvement_margin"]["limit"] == 0.99
    assert 0.5 < c["improvement_margin"]["value"] < 0.99
    print(f"held-out improvement {c['improvement_margin']['value']:.3f} (0.99 required)")
    assert [w.split(":")[0] for w in res.not_published_because.splitlines()] == \
        ["improvement_margin"], res.not_published_because
    assert _description(graph) == nominal

    honest = _identify(graph, bag, IDENT)
    assert honest.error_code == SUCCESSFUL and honest.published, honest.message
    verdict, c = _checks(honest)
    assert verdict == "PASSED" and c["residual_vs_noise"]["value"] < 3.0
    assert c["improvement_margin"]["value"] > 0.5 and c["improvement_test"]["passed"]
    assert all(c[k]["passed"] for k in ("masses", "inertias_consistent", "urdf_round_trip"))
    print(f"honest: residual {c['residual_vs_noise']['value']:.3g} x the noise, p = "
          f"{c['improvement_test']['value']:.3g}, improvement "
          f"{c['improvement_margin']['value']:.3f}")
    with open(honest.urdf_path) as f:
        assert _description(graph) == f.read()

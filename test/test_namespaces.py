"""Two robots on one graph: the simulated UR10 and its nodes launched twice, under the
namespaces robot1 and robot2, in one ROS domain.

Every name our nodes use is relative, so ``namespace:=robotN`` moves the topics, the
controllers' actions and our own actions under ``/robotN``.  Both robots play different
postures at the same time; each bag holds its own robot's topics only, and the joint
positions averaged over each hold window are the ones that robot was sent.
"""
import os
import threading

import numpy as np
import pytest
from conftest import ROOT, ros_graph_environment

pytest.importorskip("rclpy")
pytestmark = pytest.mark.xdist_group("ros_graph_2")   # the second worker's graphs

JOINTS = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint",
          "wrist_2_joint", "wrist_3_joint"]
PAN = {"robot1": [0.3, 0.6, 0.9], "robot2": [-0.3, -0.6, -0.9]}


def _postures(path, pans) -> np.ndarray:
    Q = np.zeros((len(pans), len(JOINTS)))
    Q[:, 0], Q[:, 1], Q[:, 2] = pans, -1.2, 1.0
    with open(path, "w") as f:
        f.write(",".join(JOINTS) + "\n")
        for q in Q:
            f.write(",".join(f"{v:.6f}" for v in q) + "\n")
    return Q


def _light_sim(tmp_path) -> str:
    """The simulated UR10 at 100 Hz joint states and 50 Hz mocap (two graphs on 2 cores),
    its executor reading the model from its own robot's ``robot_description``."""
    import yaml
    with open(os.path.join(ROOT, "config", "sim_ur10.yaml")) as f:
        cfg = yaml.safe_load(f)
    cfg["rates"] = {"joint_states_hz": 100, "mocap_hz": 50}
    cfg["driver"]["joint_states"]["rate_hz"] = 100      # what the executors' pre-flight expects
    cfg["robot"]["source"] = "topic"     # the executors take the model their robot publishes
    cfg["robot"]["urdf"] = os.path.join(ROOT, "config", cfg["robot"]["urdf"]) \
        if not cfg["robot"]["urdf"].startswith("example-robot-data:") else cfg["robot"]["urdf"]
    path = tmp_path / "sim_ur10_light.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def _serving(commander, ns: str, timeout: float = 60.0) -> None:
    """Wait until the robot ``ns``'s graph has started: its recorder's service answers and
    its simulator publishes what the executor's pre-flight checks.  A goal sent while
    the ten processes of two graphs still start is refused, rightly (on a loaded machine
    the recorder's service may not be there within the executor's 10 s, the mocap silent
    in the pre-flight's 1 s)."""
    import time

    from geometry_msgs.msg import PoseStamped
    from rclpy.qos import qos_profile_sensor_data
    from sensor_msgs.msg import JointState

    from figaroh_ros.srv import RecorderControl
    node, heard = commander.node, set()
    topics = {f"/{ns}/joint_states": JointState, f"/{ns}/motor_currents": JointState,
              f"/{ns}/mocap/pose": PoseStamped}
    subs = [node.create_subscription(kind, topic, lambda _m, t=topic: heard.add(t),
                                     qos_profile_sensor_data) for topic, kind in topics.items()]
    client = node.create_client(RecorderControl, f"/{ns}/figaroh/recorder/control")
    try:
        assert client.wait_for_service(timeout_sec=timeout), f"{ns}: no recorder service"
        end = time.monotonic() + timeout
        while set(topics) - heard and time.monotonic() < end:
            time.sleep(0.05)
        assert not set(topics) - heard, f"{ns}: silent {sorted(set(topics) - heard)}"
    finally:
        for sub in subs:
            node.destroy_subscription(sub)
        node.destroy_client(client)


def _folder(path) -> str:
    """A graph's own working folder: its nodes' logs (``launch_logs``) apart from the
    other robot's nodes of the same names."""
    path.mkdir(parents=True, exist_ok=True)
    return str(path)


def _state(task) -> str:
    """What the commander knows of a goal that did not end: its latest feedback, whether
    its acceptance was heard, how often its result was asked."""
    fb = task.feedback
    seen = "none" if fb is None else f"posture {fb.posture} stage {fb.stage}"
    return (f"feedback {seen}, accepted {task._answered.is_set()}, adopted {task.adopted}, "
            f"result requests {task.result_requests}")


def test_two_robots_in_two_namespaces_share_one_graph(tmp_path):
    from figaroh_ros.cli.launch_runner import LaunchedGraph
    from figaroh_ros.io.bags import read_bag_postures
    from figaroh_ros.ros.commander import Commander
    ros_graph_environment()
    sim = _light_sim(tmp_path)
    graphs = {ns: LaunchedGraph(os.path.join(ROOT, "launch", "sim_ur10.launch.yaml"),
                                {"namespace": ns, "preflight_config": "", "sim_config": sim,
                                 "bag_dir": str(tmp_path / ns),
                                 "data_roots": str(tmp_path),
                                 "output_dir": str(tmp_path / ns / "cal")},
                                env=dict(os.environ), cwd=_folder(tmp_path / ns), quiet=True)
              for ns in PAN}
    try:
        commanders = {ns: Commander(ns, node_name=f"commander_{ns}") for ns in PAN}
        sent, results = {}, {}
        for ns, c in commanders.items():
            c.wait_until_ready(60.0, actions=["run_experiment"])
            _serving(c, ns)
            sent[ns] = _postures(tmp_path / f"{ns}.csv", PAN[ns])
        tasks = {ns: c.run_experiment(postures_file=str(tmp_path / f"{ns}.csv"),
                                      bag_path=str(tmp_path / ns / "exp"))
                 for ns, c in commanders.items()}
        threads = [threading.Thread(target=lambda ns=ns: results.__setitem__(
            ns, tasks[ns].check(300.0))) for ns in PAN]
        for t in threads:
            t.start()
        for t in threads:
            t.join(320.0)
        assert set(results) == set(PAN), "an experiment did not end:\n" + "\n".join(
            f"{ns}: {_state(tasks[ns])}\n" + "\n".join(graphs[ns].tails(40))
            for ns in sorted(set(PAN) - set(results)))
        for ns in PAN:
            bag = str(tmp_path / ns / "exp")
            other = "robot2" if ns == "robot1" else "robot1"
            with open(os.path.join(bag, "metadata.yaml")) as f:
                meta = f.read()
            assert f"/{ns}/joint_states" in meta and f"/{other}/" not in meta
            bp = read_bag_postures([bag], JOINTS, f"/{ns}/joint_states", f"/{ns}/mocap/pose",
                                   f"/{ns}/figaroh/posture_events")
            assert bp.indices == [0, 1, 2]
            np.testing.assert_allclose(bp.Q, sent[ns], atol=2e-3)
    finally:
        for c in locals().get("commanders", {}).values():
            c.destroy()
        for g in graphs.values():
            g.stop()


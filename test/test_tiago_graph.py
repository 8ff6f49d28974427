"""The simulated TIAGo as a real graph (launch/sim_tiago.launch.yaml, every node in its own
process over DDS): torso and arm on two controllers, as on the robot.  A module of its own:
the UR10 graph of test_ros_graph.py is not running beside it."""
import pytest
from conftest import ros_graph_environment

pytest.importorskip("rclpy")
pytestmark = pytest.mark.xdist_group("ros_graph")   # one worker runs every graph test


def test_tiago_torso_and_arm_on_two_controllers(tmp_path):
    """The demo loop on the simulated TIAGo: every posture is split between the torso and
    the arm controllers; the published model beats the nominal one by >= 80 %."""
    from figaroh_ros.ros import demo
    out = demo.run(str(tmp_path / "tiago"), "tiago", n_postures=14,
                   domain=ros_graph_environment())
    assert out["result"].published
    assert out["calibrated_mm"] <= 0.2 * out["nominal_mm"], out

import os
import subprocess
import sys

import numpy as np
import pytest
import yaml

from figaroh_ros.model.robot import example_robot_urdf, load_urdf_model

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.normpath(os.path.join(ROOT, "..", "shared"))
TX40_DIR = os.path.join(SHARED, "data", "staubli_tx40")

UR10_JOINTS = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint",
               "wrist_1_joint", "wrist_2_joint", "wrist_3_joint"]
PANDA_JOINTS = [f"panda_joint{i}" for i in range(1, 8)]


_DOMAINS = iter(np.random.default_rng().permutation(np.arange(1, 200, 2)).tolist())


def ros_graph_environment() -> int:
    """Point this process (and the graphs it launches) at a ROS domain no other graph of
    this test run has used, discovery kept on this machine; returns the domain id.  Odd
    ids only, so that ``id + 1`` is free for a second graph of the same test."""
    domain = next(_DOMAINS)
    os.environ["ROS_DOMAIN_ID"] = str(domain)
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    return domain


@pytest.fixture(scope="session")
def ur10():
    return load_urdf_model(example_robot_urdf("ur_description/urdf/ur10_robot.urdf"),
                           UR10_JOINTS)


@pytest.fixture(scope="session")
def panda():
    return load_urdf_model(example_robot_urdf("panda_description/urdf/panda.urdf"),
                           PANDA_JOINTS)


@pytest.fixture()
def rng():
    return np.random.default_rng(1234)


def cli_identify(config, out):
    """``figaroh-ros identify CONFIG --out OUT`` in a child process: (process, the
    result.yaml it wrote); fails the test with its stderr if it did not succeed."""
    proc = subprocess.run([sys.executable, "-m", "figaroh_ros.cli", "identify", str(config),
                           "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return proc, yaml.safe_load((out / "result.yaml").read_text())

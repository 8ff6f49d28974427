"""``example-robot-data:<relative>`` found where a ROS install provides it:
``<prefix>/share/example-robot-data/robots/<relative>`` of every ``AMENT_PREFIX_PATH``
prefix, after the pip wheel's cmeel prefix."""
import os
import shutil

import pytest
from conftest import ROOT

from figaroh_ros.errors import ConfigError, ModelError
from figaroh_ros.model.robot import (
    example_robot_package_dirs, example_robot_urdf, resolve_urdf
)
from figaroh_ros.model.sources import read_urdf

TWO_DOF = os.path.join(ROOT, "test", "data", "two_dof.urdf")
RELATIVE = "figaroh_fake_description/urdf/fake_arm.urdf"      # in no pip wheel


def _ros_install(root) -> str:
    """A ROS install prefix whose example-robot-data holds ``RELATIVE``."""
    robots = root / "share" / "example-robot-data" / "robots"
    (robots / os.path.dirname(RELATIVE)).mkdir(parents=True)
    shutil.copy(TWO_DOF, robots / RELATIVE)
    return str(root)


def test_not_found_without_the_ros_install_names_where_it_looked(monkeypatch):
    monkeypatch.delenv("AMENT_PREFIX_PATH", raising=False)
    with pytest.raises(ModelError, match="example-robot-data URDF not found.*cmeel.prefix"):
        example_robot_urdf(RELATIVE)
    with pytest.raises(ConfigError, match="robot.urdf.*not found"):
        resolve_urdf("example-robot-data:" + RELATIVE)


def test_found_under_the_ament_prefix(tmp_path, monkeypatch):
    empty = tmp_path / "empty_prefix"
    empty.mkdir()
    prefix = _ros_install(tmp_path / "opt_ros")
    monkeypatch.setenv("AMENT_PREFIX_PATH", os.pathsep.join([str(empty), prefix]))
    want = os.path.join(prefix, "share", "example-robot-data", "robots", RELATIVE)
    assert example_robot_urdf(RELATIVE) == want
    assert resolve_urdf("example-robot-data:" + RELATIVE) == want
    text, path = read_urdf("example-robot-data:" + RELATIVE, str(tmp_path))
    assert path == want and "<robot" in text
    dirs = example_robot_package_dirs()
    assert os.path.join(prefix, "share") in dirs
    assert os.path.join(prefix, "share", "example-robot-data", "robots") in dirs
    assert os.path.join(str(empty), "share") not in dirs


def test_a_config_resolves_it_through_the_ament_prefix(tmp_path, monkeypatch):
    from figaroh_ros.config.identification import nominal_urdf
    prefix = _ros_install(tmp_path / "opt_ros")
    monkeypatch.setenv("AMENT_PREFIX_PATH", prefix)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"robot: {{name: fake, urdf: 'example-robot-data:{RELATIVE}'}}\n")
    assert nominal_urdf(str(cfg)) == os.path.join(prefix, "share", "example-robot-data",
                                                  "robots", RELATIVE)


def test_the_pip_wheel_comes_first(tmp_path, monkeypatch):
    """A URDF both provide: the pip wheel's, as before a ROS install was looked at."""
    relative = "ur_description/urdf/ur10_robot.urdf"
    monkeypatch.delenv("AMENT_PREFIX_PATH", raising=False)
    pip = example_robot_urdf(relative)
    prefix = tmp_path / "opt_ros"
    robots = prefix / "share" / "example-robot-data" / "robots" / "ur_description" / "urdf"
    robots.mkdir(parents=True)
    shutil.copy(TWO_DOF, robots / "ur10_robot.urdf")
    monkeypatch.setenv("AMENT_PREFIX_PATH", str(prefix))
    assert example_robot_urdf(relative) == pip

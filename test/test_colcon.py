"""The repository builds as a ROS 2 package with colcon (from PyPI) in a workspace that
holds this checkout in src/, and the install space imports as one coherent package."""
import os
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT

VENV = os.path.dirname(os.path.dirname(sys.executable))


@pytest.mark.skipif(shutil.which("colcon", path=os.path.dirname(sys.executable)) is None,
                    reason="colcon not installed")
def test_colcon_builds_the_package(tmp_path):
    src = tmp_path / "ws" / "src" / "figaroh_ros"
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.split()
    for f in files:
        os.makedirs(src / os.path.dirname(f), exist_ok=True)
        shutil.copy2(os.path.join(ROOT, f), src / f)
    env = dict(os.environ, AMENT_PREFIX_PATH=VENV, CMAKE_PREFIX_PATH=VENV,
               PATH=os.path.dirname(sys.executable) + ":" + os.environ["PATH"])
    r = subprocess.run([os.path.join(os.path.dirname(sys.executable), "colcon"), "build",
                        "--cmake-args", f"-DPython3_EXECUTABLE={sys.executable}",
                        "-DBUILD_TESTING=OFF"], cwd=tmp_path / "ws", env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    inst = tmp_path / "ws" / "install" / "figaroh_ros"
    site = inst / "lib" / "python3.11" / "site-packages"
    for exe in ("sim_robot", "recorder", "executor", "calibration_node", "figaroh-ros"):
        assert os.access(inst / "lib" / "figaroh_ros" / exe, os.X_OK)
    for f in ("launch/sim_ur10.launch.yaml", "config/sim_ur10.yaml", "msg/PostureEvent.msg",
              "action/Calibrate.action"):
        assert (inst / "share" / "figaroh_ros" / f).is_file()
    code = ("import figaroh_ros.calibration.solve as s, figaroh_ros.action._calibrate as c;"
            "from figaroh_ros.action import Calibrate; from figaroh_ros.srv import "
            "RecorderControl; print(s.__file__); print(c.__file__)")
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path,
                       env=dict(os.environ, PYTHONPATH=str(site)), capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert all(line.startswith(str(site)) for line in r.stdout.split())

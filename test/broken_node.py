"""A node with a bug injected: ``python broken_node.py MODE --ros-args ...``.
``check``: the executor's goal check raises a RuntimeError (an unforeseen failure inside a
goal, which must still end it with a reason); ``execute``: the executor's whole execute
callback raises, so rclpy aborts the goal with a default (empty) result; ``calibrate``: the
calibration node's calibrate goal raises."""
import sys

from figaroh_ros.ros import calibration_node, executor

BROKEN = {"check": (executor, executor.Executor, "check"),
          "execute": (executor, executor.Executor, "_execute"),
          "calibrate": (calibration_node, calibration_node.CalibrationNode, "_calibrate_goal")}


def _bug(*args, **kwargs):
    raise RuntimeError("injected bug")


if __name__ == "__main__":
    module, node, method = BROKEN[sys.argv.pop(1)]
    setattr(node, method, _bug)
    sys.exit(module.main())

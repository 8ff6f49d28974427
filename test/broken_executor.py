"""The executor node with a bug injected: ``python broken_executor.py check|execute
--ros-args ...``.  ``check``: its goal check raises a RuntimeError (an unforeseen failure
inside a goal, which must still end it with a reason); ``execute``: the whole execute
callback raises, so rclpy aborts the goal with a default (empty) result."""
import sys

from figaroh_ros.ros import executor


def _bug(*args, **kwargs):
    raise RuntimeError("injected bug")


if __name__ == "__main__":
    mode = sys.argv.pop(1)
    setattr(executor.Executor, {"check": "check", "execute": "_execute"}[mode], _bug)
    sys.exit(executor.main())

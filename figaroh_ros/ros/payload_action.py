"""The IdentifyPayload action of the calibration node.

``figaroh/identify_payload`` (figaroh_ros/action/IdentifyPayload): the payload fixed to
the tool from a recorded short exciting motion (``figaroh-ros identify-payload``'s task,
``figaroh_ros.tasks.payload.run``), run in a worker process like Calibrate; the result
carries mass, centre of mass and inertia with their std and the paths of the files the
drivers take (``ur_payload.yaml``: ur_robot_driver ``set_payload``; ``franka_load.yaml``:
Franka ``setLoad``).  The goal is checked at acceptance: the config and the bag are inside
the node's read roots (``ros/goal_paths.py``), the bag is a rosbag2 folder.
"""
from __future__ import annotations

import os
import threading

import numpy as np
from rclpy.action import ActionServer, CancelResponse

from figaroh_ros.action import IdentifyPayload
from figaroh_ros.errors import SUCCESSFUL
from figaroh_ros.ros.goal_paths import RESULT_TIMEOUT
from figaroh_ros.ros.worker import PAYLOAD, Failure, Job

UPPER = (0, 1, 2, 0, 0, 1)      # Ixx Iyy Izz Ixy Ixz Iyz as (row, column) of the matrix
LOWER = (0, 1, 2, 1, 2, 2)


def check_payload_goal(g, paths) -> tuple[str, str]:
    """The goal's config and bag (absolute), confined by ``paths`` (a GoalPaths)."""
    return paths.file("config", g.config), paths.bags("bag", [g.bag])[0]


def six(matrix) -> list[float]:
    """Ixx Iyy Izz Ixy Ixz Iyz of a 3 x 3 matrix."""
    M = np.asarray(matrix, float)
    return [float(M[i, j]) for i, j in zip(UPPER, LOWER)]


def fill_result(result, outcome) -> str:
    s = outcome.summary
    result.mass_kg, result.mass_std_kg = float(s["mass"]), float(s["mass_std"])
    result.com_m, result.com_std_m = list(map(float, s["com"])), list(map(float, s["com_std"]))
    result.inertia_kgm2, result.inertia_std_kgm2 = six(s["inertia"]), six(s["inertia_std"])
    result.physically_consistent = bool(np.all(np.linalg.eigvalsh(
        np.asarray(s["inertia"], float)) >= 0))
    result.result_path = os.path.abspath(outcome.paths["result"])
    result.ur_payload_path = os.path.abspath(outcome.paths["ur_payload"])
    result.franka_load_path = os.path.abspath(outcome.paths["franka_load"])
    return (f"payload {result.mass_kg:.4g} +- {result.mass_std_kg:.2g} kg, centre of mass "
            f"{np.round(result.com_m, 4).tolist()} m")


def serve_payload(node) -> ActionServer:
    """The action server on ``node`` (a CalibrationNode: its ``runner``,
    ``ros/goal_runner.py``)."""
    node.runner.busy["identify_payload"] = threading.Lock()

    def goal(handle, result):
        g = handle.request
        config, bag = check_payload_goal(g, node.paths)
        job = Job(PAYLOAD, config, node.runner.run_folder(), (bag,))
        ended = node.runner.work(handle, job, IdentifyPayload.Feedback)
        if isinstance(ended, Failure):
            return node.runner.end(handle, result, ended.code, ended.message)
        return node.runner.end(handle, result, SUCCESSFUL, fill_result(result, ended))

    def execute(handle):
        result = IdentifyPayload.Result()
        return node.runner.exclusive("identify_payload", handle, result,
                                     lambda: goal(handle, result))
    return ActionServer(node, IdentifyPayload, "figaroh/identify_payload", execute,
                        cancel_callback=lambda h: CancelResponse.ACCEPT,
                        callback_group=node.group, result_timeout=RESULT_TIMEOUT)

"""The payload's share of the simulated robot's joint torques, its models built once
(ROS-free): a simulator asks for one sample at every tick.  The robot's own torques are
``identification.regressor.ParameterTorques``.
"""
from __future__ import annotations

import threading

import numpy as np
import pinocchio as pin

from figaroh_ros.model.robot import RobotModel


class PayloadTorques:
    """The payload's share of the joint torques on ``robot``'s (nominal) model: RNEA with
    the payload ``inertia`` at ``frame`` minus RNEA without."""

    def __init__(self, robot: RobotModel, frame: str, inertia: pin.Inertia):
        loaded = robot.model.copy()
        f = loaded.frames[loaded.getFrameId(frame)]
        loaded.inertias[f.parentJoint] = loaded.inertias[f.parentJoint] + \
            f.placement.act(inertia)
        self.robot, self.loaded = robot, loaded
        self.d0, self.d1 = robot.model.createData(), loaded.createData()
        self.lock = threading.Lock()

    def __call__(self, Q: np.ndarray, dQ: np.ndarray, ddQ: np.ndarray) -> np.ndarray:
        r = self.robot
        X = zip(r.full_configuration(Q), r.full_velocity(dQ), r.full_velocity(ddQ))
        with self.lock:
            rows = [pin.rnea(self.loaded, self.d1, *x) - pin.rnea(r.model, self.d0, *x)
                    for x in X]
        return np.array(rows)[:, r.idx_v]

"""``dynamics_monitor``: the identified dynamics running beside the robot.

Subscribes ``joint_states`` (relative name: remap or namespace it), and for every message
publishes, as ``sensor_msgs/JointState`` with the values in ``effort`` and the stamp of
the sample they describe (one sample back: see :mod:`figaroh_ros.identification.monitor`):

* ``~/predicted``: the model's predicted torques ``tau_hat``, and its parts
  ``~/gravity`` (``g(q)``), ``~/friction`` (``fv dq + fs c(dq) + off``) and
  ``~/inertial`` (``M(q) ddq + C(q, dq) dq + Ia ddq``), which add up to it;
* ``~/residual``: filtered measured - predicted;

and ``~/contact`` (``std_msgs/Bool``): the residual left its band.  All numerics are in
the ROS-free core; this node maps messages.
"""
from __future__ import annotations

import sys

import numpy as np
import yaml
from pydantic import Field
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool

from figaroh_ros.errors import DataError
from figaroh_ros.identification.monitor import DynamicsModel, ResidualBand, TorqueMonitor
from figaroh_ros.ros.common import run_node
from figaroh_ros.ros.parameters import ExistingFile, Parameters, declare
from figaroh_ros.ros.sane import Refusals, joint_state_problem

DEPTH = 500     # reliable queues: every sample reaches the filter, every result its reader
TORQUE_TOPICS = ("predicted", "gravity", "friction", "inertial", "residual")


class DynamicsMonitorParameters(Parameters):
    result: ExistingFile = Field(
        "", description="result.yaml of a dynamic identification (figaroh-ros identify)")
    urdf: str = Field(
        "", min_length=1, description="URDF the identification ran on (path or "
        "example-robot-data:<relative path>)")
    band: str = Field(
        "", description="residual band YAML (identification.monitor.learn_band(...).save); "
        "'' = the identification's validation_rmse per joint")
    k_sigma: float = Field(5.0, ge=0.5, le=100.0, description="band half-width in sigmas")
    persistence: int = Field(3, ge=1, le=1000,
                             description="samples outside (inside) the band to set (clear) "
                             "the contact flag")
    rate_hz: float = Field(250.0, gt=0.0, le=10000.0,
                           description="joint_states rate the filter is designed for, Hz")
    cutoff_hz: float = Field(10.0, gt=0.0, le=5000.0,
                             description="low-pass of positions and torques, Hz")
    coulomb_model: str = Field("sign", pattern="^(sign|tanh)$",
                               description="Coulomb shape of the identification: sign, tanh")


def band_of(p: DynamicsMonitorParameters, joints: list[str]) -> ResidualBand:
    """The band file's sigmas, or the identification's held-out RMSE per joint."""
    if p.band:
        band = ResidualBand.load(p.band, joints)
    else:
        with open(p.result) as f:
            rmse = (yaml.safe_load(f) or {}).get("validation_rmse")
        if not isinstance(rmse, dict) or set(joints) - set(rmse):
            raise DataError(f"{p.result} has no validation_rmse per joint: give a band "
                            "file (parameter band)")
        band = ResidualBand(joints, np.array([float(rmse[j]) for j in joints]))
    band.k, band.persistence = p.k_sigma, p.persistence
    return band


class DynamicsMonitor(Node):
    def __init__(self, **node_options):
        super().__init__("dynamics_monitor", **node_options)
        p = declare(self, DynamicsMonitorParameters)
        model = DynamicsModel.from_files(p.result, p.urdf, p.coulomb_model)
        self.joints = model.joints
        self.monitor = TorqueMonitor(model, band_of(p, self.joints), p.rate_hz, p.cutoff_hz)
        self.max_gap = 5.0 / p.rate_hz
        self.previous = None            # stamp (s, msg) of the previous sample
        self.pub_torques = {name: self.create_publisher(JointState, f"~/{name}", DEPTH)
                            for name in TORQUE_TOPICS}
        # one message per topic, refilled: publish() serializes it at once (saves building
        # the joint names' strings five times a sample)
        self.out = {name: JointState(name=list(self.joints)) for name in TORQUE_TOPICS}
        self.pub_contact = self.create_publisher(Bool, "~/contact", DEPTH)
        self.create_subscription(JointState, "joint_states", self.on_joint_states, DEPTH)
        self.topic, self.refusals = self.resolve_topic_name("joint_states"), \
            Refusals(self.get_logger())
        self.get_logger().info(f"monitoring {self.joints}: band "
                               f"{np.round(self.monitor.band.threshold, 4).tolist()} N.m")

    def _columns(self, msg: JointState):
        index = {n: i for i, n in enumerate(msg.name)}
        if any(j not in index for j in self.joints):
            return None
        cols = [index[j] for j in self.joints]
        if max(cols) >= min(len(msg.position), len(msg.effort)):
            return None
        return cols

    def on_joint_states(self, msg: JointState) -> None:
        # NaN or a mismatched array would stay in the filter's state for good (ros/sane.py)
        if why := joint_state_problem(msg):
            return self.refusals.refuse(self.topic, why)
        cols = self._columns(msg)
        if cols is None:
            return self.refusals.refuse(self.topic, f"no position and effort of {self.joints}")
        t = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
        if self.previous is not None and t == self.previous[0] and t:
            # the same instant again: a second sample would bend the fixed-rate filter
            return self.refusals.refuse(self.topic, f"stamp {t:.9f} s repeated")
        if self.previous is not None and t < self.previous[0]:
            self.refusals.refuse(self.topic, f"stamp {t:.9f} s before the previous "
                                 f"{self.previous[0]:.9f} s", "the filter starts again")
        if self.previous is not None and not 0 <= t - self.previous[0] <= self.max_gap:
            self.monitor.reset()        # a gap or a jump back: start the filter again
        previous, self.previous = self.previous, (t, msg.header.stamp)
        s = self.monitor.step(np.array(msg.position)[cols], np.array(msg.effort)[cols])
        if s is None:
            return
        values = {"predicted": s.predicted, "gravity": s.parts.gravity,
                  "friction": s.parts.friction, "inertial": s.parts.inertial,
                  "residual": s.residual}
        for name, pub in self.pub_torques.items():
            out = self.out[name]
            out.effort = values[name].tolist()
            out.header.stamp, out.header.frame_id = previous[1], msg.header.frame_id
            pub.publish(out)
        self.pub_contact.publish(Bool(data=bool(s.contact)))


def main(args=None):
    return run_node(DynamicsMonitor, "dynamics_monitor", None, args)


if __name__ == "__main__":
    sys.exit(main())

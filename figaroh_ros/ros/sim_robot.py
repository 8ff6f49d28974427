"""Simulated robot: FollowJointTrajectory controllers, joint states, motor currents, a force
plate, a mocap body and /tf, all measured on a hidden "true" robot with noise.

Parameters (``ros/parameters.py``, SimRobotParameters): ``config`` (``config/sim_<robot>.yaml``,
see ``figaroh_ros.sim.truth``), ``lock_memory`` (mlockall: ``ros/memory_lock.py``),
``impersonate`` (``ur10``, ``tiago``, ``talos``: the controllers' names and the joint states'
rate of that robot's driver section, ``config/robot_<robot>.yaml``, so that the real-robot
launch files run beside it unchanged; started as ``-r __node:=robot_state_publisher`` it
also holds the model where they look for it).
Each controller ``<name>`` of the config serves ``<name>/follow_joint_trajectory`` like
ros2_control's joint_trajectory_controller; faults set at run time (a stuck joint, aborted
goals, a slow acceptance, results withheld, the robot's clock offset, the mocap body
occluded) test the executor
(``ros/sim_controllers.py``).  Like robot_state_publisher, it holds the model as its
``robot_description`` parameter and republishes it (latched) on ``robot_description``
whenever the parameter is set (a value that is not a URDF is refused).

The sensors are published by two loops on their own threads (joint states, currents and
wrench at ``rates.joint_states_hz``; mocap and /tf at ``rates.mocap_hz``), not by executor
timers: rclpy's multi-threaded executor costs more per timer wake-up than the 250 Hz
tick's own work (~0.5 ms then, 0.15 ms now).  With sim_ur10 the node took 51-62 % of a
core on executor timers, 25-27 % with these loops, 11-13 % once the tick stopped
rebuilding the true robot's dynamic model (``sim.torques``) and its messages, and stopped
recomputing what the posture of a robot at rest gives (``TrueRobot._last``).  The
executor serves the action goals and parameters.
The joint-rate loop samples on its own clock, like a driver's hardware: after a stall of
the process of up to ``CATCH_UP`` s it publishes the samples it missed at once, each with the
state and stamp of its period (rclpy's ``publish`` holds the GIL, and FastDDS can wait in it
333 ms to 1 s when a reader's process died: every thread of the node stopped, and the
simulated TIAGo's recorded joint states fell to 37.6 Hz in a test run).  The mocap loop
skips the frames it missed, as a mocap system drops them.  The loops stop before the node's
publishers are destroyed, and when rclpy shuts down (Ctrl-C).
"""
from __future__ import annotations

import array
import math
import os
import sys
import threading
import time
import traceback
import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin
import rclpy
from geometry_msgs.msg import PoseStamped, TransformStamped, WrenchStamped
from rcl_interfaces.msg import SetParametersResult
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from tf2_msgs.msg import TFMessage

from figaroh_ros.config.driver import Driver, Measured
from figaroh_ros.config.robot import load_robot_config
from figaroh_ros.io.share import share_directory
from figaroh_ros.errors import ConfigError
from figaroh_ros.ros.common import LATCHED, now_ns, run_node, se3_to_pose
from figaroh_ros.ros.frames import StaticBroadcaster
from figaroh_ros.ros.memory_lock import lock_node_memory
from figaroh_ros.ros.parameters import SimRobotParameters, declare
from figaroh_ros.ros.sim_controllers import FAULTS, SimControllers
from figaroh_ros.sim.motion import CATCH_UP, Motion, frame_time, next_due
from figaroh_ros.sim.truth import TrueRobot, load_sim_config, noisy_pose


# s: the widest bracket of monotonic readings around a reading of the ROS clock accepted
PAIR_S = 2e-4


def publisher_qos(reliability: str, depth: int = 100) -> QoSProfile:
    """A sensor publisher's profile: best effort when the driver publishes so (mocap and
    many sensor drivers), else reliable; the last ``depth`` messages kept."""
    return QoSProfile(depth=depth, reliability=ReliabilityPolicy.BEST_EFFORT
                      if reliability == "best_effort" else ReliabilityPolicy.RELIABLE)


def doubles(x: np.ndarray) -> array.array:
    """A float array as a message's sequence of doubles (the same values as ``tolist``,
    without a Python float per element)."""
    return array.array("d", np.ascontiguousarray(x, float).tobytes())


def stamp(header, nanoseconds: int) -> None:
    """``header.stamp`` set to a clock reading in ns (as ``Time.to_msg``)."""
    header.stamp.sec, header.stamp.nanosec = divmod(nanoseconds, 1_000_000_000)


def effort_gains(driver: Driver, n: int) -> np.ndarray | None:
    """Joint torque per unit of the published effort (None: effort is the torque)."""
    js = driver.joint_states
    if js.effort == "torque_nm":
        return None
    if js.torque_per_effort is None:
        raise ConfigError(f"driver.joint_states.torque_per_effort: a simulator publishing "
                          f"{js.effort} needs the {n} gains it divides the torques by")
    return np.asarray(js.torque_per_effort, float)


def impersonate(cfg, robot: str) -> None:
    """``cfg`` (a simulation config) made to publish as ``robot``'s real driver does, as
    ``config/robot_<robot>.yaml`` describes it: its controllers' names (e.g. UR's
    scaled_joint_trajectory_controller), its joint states' rate when the driver profile
    states one.  The simulated joints and the driver's topics must be the real ones (a
    simulation of another robot, or of other topics, is refused naming what differs)."""
    path = os.path.join(share_directory() or ".", "config", f"robot_{robot}.yaml")
    real = load_robot_config(path)
    if real.name != cfg.name or real.joints != cfg.joints:
        raise ConfigError(f"impersonate: {robot}: {path} drives {real.name} joints "
                          f"{real.joints}, the simulation {cfg.name} joints {cfg.joints}")
    for what in ("joint_states", "wrench", "pose"):
        mine, theirs = getattr(cfg.driver, what), getattr(real.driver, what)
        if (mine and mine.topic) != (theirs and theirs.topic):
            raise ConfigError(f"impersonate: {robot}: driver.{what} topic "
                              f"{mine and mine.topic!r} is {theirs and theirs.topic!r} in "
                              f"{path}")
    cfg.controllers = {name: list(joints) for name, joints in real.controllers.items()}
    js = real.driver.joint_states
    if "rate_hz" in js.model_fields_set:
        cfg.rates = cfg.rates.model_copy(update={"joint_states_hz": js.rate_hz})
        cfg.driver.joint_states.rate_hz = js.rate_hz


class SimRobot(SimControllers, Node):
    def __init__(self):
        super().__init__("sim_robot")
        # the sensor loops (started last); rclpy.try_shutdown destroys a half-built node too
        self.stopping, self.loops = threading.Event(), []
        params = declare(self, SimRobotParameters)
        lock_node_memory(self, params.lock_memory)           # before the model is built
        self.cfg = load_sim_config(params.config)
        if params.impersonate:
            impersonate(self.cfg, params.impersonate)
        self.truth = TrueRobot(self.cfg)
        m = self.truth.model
        self.joints = self.cfg.joints
        self.jid = [m.getJointId(j) for j in self.joints]
        self.lower = np.array([m.lowerPositionLimit[m.joints[i].idx_q] for i in self.jid])
        self.upper = np.array([m.upperPositionLimit[m.joints[i].idx_q] for i in self.jid])
        self.q = np.clip(np.zeros(len(self.joints)), self.lower, self.upper)
        self.v = np.zeros(len(self.joints))
        self.a = np.zeros(len(self.joints))
        self.lock = threading.Lock()
        self.motions: dict[str, Motion] = {}
        self.rng = np.random.default_rng(int(self.cfg.truth.seed) + 1)
        self.data = m.createData()
        group = ReentrantCallbackGroup()
        drv = self.cfg.driver
        # the joint-rate topics keep a catch-up burst (CATCH_UP s of samples) besides
        kept = 100 + math.ceil(CATCH_UP * float(self.cfg.rates.joint_states_hz))
        self.pub_js = self.create_publisher(JointState, drv.joint_states.topic,
                                            publisher_qos(drv.joint_states.reliability, kept))
        self.effort_gain = effort_gains(drv, len(self.joints))
        self.pub_cur = self.create_publisher(JointState, "motor_currents", kept)
        pose = drv.pose or Measured(topic="mocap/pose", type="geometry_msgs/msg/PoseStamped")
        self.pub_mocap = self.create_publisher(PoseStamped, pose.topic,
                                               publisher_qos(pose.reliability))
        # a mocap body on the base (truth.suspension): the base's pose in the mocap frame
        self.pub_base = (self.create_publisher(PoseStamped, "mocap/base_pose", 100)
                         if self.truth.suspension is not None else None)
        wrench = drv.wrench or Measured(topic="force_plate/wrench", frame="force_plate",
                                        type="geometry_msgs/msg/WrenchStamped")
        self.wrench_frame = wrench.frame or "force_plate"
        self.pub_plate = self.create_publisher(WrenchStamped, wrench.topic,
                                               publisher_qos(wrench.reliability, kept))
        self.pub_tf = self.create_publisher(TFMessage, "/tf", 100)
        self.static = StaticBroadcaster(self)
        if self.wrench_frame != "force_plate" and not self.truth.model.existFrame(
                self.wrench_frame):    # a driver's sensor frame (tool0_controller): on TF
            at = self.truth.payload[0] if self.truth.payload else self.cfg.truth.tool_frame
            self.static.send([(at, self.wrench_frame, pin.SE3.Identity())])
        self.pub_desc = self.create_publisher(String, "robot_description", LATCHED)
        # joints with play (truth.joint_play): the readings above are the motors'; a
        # link-side encoder per such joint publishes on /link_encoders
        self.tracker = self.truth.play_tracker(self.joints, self.q)
        if self.tracker is not None:
            self.pub_link = self.create_publisher(JointState, "link_encoders", kept)
        self.q_link = self.q.copy()
        self.q_link_ns = 0                    # the stamp of q_link's sample (ns; 0: none yet)
        self.mocap_ns = 0                     # the last mocap frame's stamp
        # like robot_state_publisher: the model as the robot_description parameter,
        # republished (latched) whenever it is set
        with open(self.cfg.urdf) as f:
            self.declare_parameter("robot_description", f.read())
        self._serve_controllers(group)      # with the faults (ros/sim_controllers.py)
        self.add_on_set_parameters_callback(self._parameters_set)
        self.pub_desc.publish(String(data=self.get_parameter("robot_description").value))
        self._messages()
        r = self.cfg.rates
        self.joint_dt = 1.0 / float(r.joint_states_hz)
        self.loops = [threading.Thread(target=self._every, args=(1.0 / float(hz), step, late),
                                       name=f"sim_robot{step.__name__}", daemon=True)
                      for hz, step, late in ((r.joint_states_hz, self._tick, CATCH_UP),
                                             (r.mocap_hz, self._mocap, 0.0))]
        for t in self.loops:
            t.start()
        self.get_logger().info(f"simulated {self.cfg.name}: controllers "
                               f"{list(self.cfg.controllers)}, joint states at "
                               f"{float(r.joint_states_hz):g} Hz" + (
                                   f", as {params.impersonate}'s driver publishes"
                                   if params.impersonate else ""))

    def _messages(self):
        """The sensor messages, built once and filled at every tick (``publish``
        serializes a message before it returns), and the noise's standard deviations."""
        n, names = self.cfg.noise, list(self.joints)
        self.sd_q, self.sd_cur = float(n.joint_position_rad), float(n.current_a)
        # normal(0, sd) of a vector sd: standard normal draws times sd (the same numbers,
        # without numpy's 15 us check that every sd is >= 0)
        self.sd_wrench = np.repeat([float(n.plate_force_n), float(n.plate_moment_nm)], 3)
        self.clock = self.get_clock()
        self.msg_js, self.msg_cur = JointState(name=names), JointState(name=names)
        self.msg_plate = WrenchStamped()
        self.msg_plate.header.frame_id = self.wrench_frame
        if self.tracker is not None:
            self.msg_link = JointState(name=list(self.truth.play_names))
        self.msg_pose, self.msg_base = PoseStamped(), PoseStamped()
        self.msg_tf = TFMessage(transforms=[TransformStamped(child_frame_id="mocap_body")])

    def _parameters_set(self, params):
        """robot_description: accepted when it parses as a URDF, then republished; the
        faults (``sim_controllers.FAULTS``): checked, then set.  A refusal answers why and
        logs it."""
        for p in params:
            done = self._parameter_set(p)
            if not done.successful:
                self.get_logger().warning(f"parameter {p.name} refused: {done.reason}")
                return done
        return SetParametersResult(successful=True)

    def _parameter_set(self, p) -> SetParametersResult:
        if p.name in FAULTS:
            return self._fault_set(p.name, p.value)
        if p.name == "robot_description":
            try:
                root = ET.fromstring(p.value) if isinstance(p.value, str) else None
            except ET.ParseError as exc:
                return SetParametersResult(successful=False,
                                           reason=f"robot_description: not XML: {exc}")
            if root is None or root.tag != "robot":
                return SetParametersResult(successful=False,
                                           reason="robot_description: not a URDF <robot>")
            self.pub_desc.publish(String(data=p.value))
        return SetParametersResult(successful=True)

    # ---------------------------------------------------------------- sensors
    def _every(self, dt: float, step, catch_up: float):
        """Call ``step(t)`` for ``t`` every ``dt`` s (monotonic deadlines, ``next_due``)
        until the node is destroyed or rclpy shut down."""
        due = time.monotonic()
        while True:
            now = time.monotonic()
            due = next_due(due, now, dt, catch_up)
            if self.stopping.wait(max(due - now, 0.0)) or not self.context.ok():
                return
            try:
                step(due)
            except Exception:
                if not self.context.ok():
                    return  # rclpy shut down during the step (Ctrl-C): its publishers fail
                # a simulator without its sensors must not look alive: it dies, like a
                # crashed driver, with the reason
                self.get_logger().fatal(f"{step.__name__} failed:\n{traceback.format_exc()}")
                os._exit(1)

    def destroy_node(self):
        """Stop the sensor loops, then destroy the publishers they use."""
        self.stopping.set()
        for t in self.loops:
            t.join()
        super().destroy_node()

    def _advance(self, now: float):
        """The joints moved to ``now`` along their motions (finished ones dropped; the
        stuck joint held); copies of their positions, velocities and accelerations."""
        with self.lock:
            moving = np.zeros(len(self.joints), bool)
            for name, mo in list(self.motions.items()):
                q, v, a, end = mo.at(now)
                self.q[mo.idx], self.v[mo.idx], self.a[mo.idx] = q, v, a
                moving[mo.idx] = True
                if end:
                    mo.done = True
                    self.v[mo.idx] = 0.0
                    self.a[mo.idx] = 0.0
                    del self.motions[name]
            self.a[~moving] = 0.0
            if self.stuck is not None:
                k, qk = self.stuck
                self.q[k], self.v[k], self.a[k] = qk, 0.0, 0.0
            return self.q.copy(), self.v.copy(), self.a.copy()

    def _tick(self, at: float):
        """The joint-rate sensors' sample of the period due at ``at`` (monotonic).  The
        state is the one at the stamp, as a driver stamps the hardware's reading."""
        ns = self._stamp(at)
        q, v, a = self._advance(at)
        js, cur = self.msg_js, self.msg_cur
        robot_ns = ns + self.clock_offset_ns          # the robot's clock (clock_offset)
        stamp(js.header, robot_ns)
        js.position = doubles(q + self.rng.normal(0, self.sd_q, len(q)))
        js.velocity = doubles(v)
        tau_j = self.truth.joint_torques(q, v, a)[0]
        js.effort = doubles(tau_j if self.effort_gain is None else (tau_j + self.rng.normal(
            0, self.sd_cur, len(q))) / self.effort_gain)
        self.pub_js.publish(js)
        stamp(cur.header, robot_ns)
        cur.effort = doubles(tau_j + self.rng.normal(0, self.sd_cur, len(q)))
        self.pub_cur.publish(cur)
        q_link = self._link_side(q, robot_ns) if self.tracker is not None else q
        with self.lock:
            self.q_link, self.q_link_ns = q_link, ns
        self._wrench(q, v, a, q_link, robot_ns)

    def _wrench(self, q, v, a, q_link, ns: int):
        """Force plate under the robot (frame: the suspension frame at rest), or a wrist
        sensor: the payload's wrench (truth.payload; none: its noise alone)."""
        R = (self.truth.plate_reading(self.joints, q_link, self.rng, self.cfg.noise)
             if self.wrench_frame == "force_plate" else self.truth.payload_wrench(q, v, a)
             + self.rng.standard_normal(6) * self.sd_wrench)
        w = self.msg_plate
        stamp(w.header, ns)
        (w.wrench.force.x, w.wrench.force.y, w.wrench.force.z,
         w.wrench.torque.x, w.wrench.torque.y, w.wrench.torque.z) = R.tolist()
        self.pub_plate.publish(w)

    def _link_side(self, q: np.ndarray, ns: int):
        """Link angles (joints with play: deadband, eccentric encoder, sag under the
        gravity torque), the play joints' published on /link_encoders."""
        q_link = self.truth.link_positions(self.tracker, self.joints, q)
        link = q_link[self.truth.play_idx]
        msg = self.msg_link
        stamp(msg.header, ns)
        msg.position = doubles(link + self.rng.normal(
            0, float(self.cfg.noise.link_encoder_rad), len(link)))
        self.pub_link.publish(msg)
        return q_link

    def _stamp(self, at: float) -> int:
        """The ROS time, ns, of the monotonic time ``at``: the ROS clock read between two
        monotonic readings, again while they are more than ``PAIR_S`` apart (the thread
        preempted between them on a loaded machine: a stamp 2.3 ms off in a CI run)."""
        for _ in range(10):
            before, ns, after = time.monotonic(), now_ns(self.clock), time.monotonic()
            if after - before <= PAIR_S:
                break
        return ns - round(((before + after) / 2 - at) * 1e9)

    def _mocap(self, _at: float):
        """A mocap frame of the links' latest positions (a late one is not caught up:
        ``_every`` is asked to drop it), stamped when its content is read, or with the
        content's own stamp while the joint-rate loop catches up after a stall
        (``frame_time``); none while the body is occluded (``occlude_mocap``)."""
        if self.occluded:
            return
        with self.lock:     # the links, where the mocap body is, and their sample's stamp
            q, sampled = self.q_link.copy(), self.q_link_ns
        # the frame's time, read with its content and before the age check: a stop of the
        # process after these readings delays the frame, not its stamp (stamped after the
        # pose was computed, a frame can be late for its content: 0.8 s on a loaded machine)
        ns = frame_time(sampled, now_ns(self.clock), self.joint_dt, self.mocap_ns)
        if ns is None:
            return
        self.mocap_ns = ns
        qc = self.truth.chain_positions(self.joints, q)
        T = self.truth.marker_pose(qc)
        noisy = noisy_pose(T, self.rng, self.cfg.noise)
        msg = self.msg_pose
        msg.header.frame_id = "mocap"
        stamp(msg.header, ns)
        se3_to_pose(noisy, msg.pose)
        self.pub_mocap.publish(msg)
        if self.pub_base is not None:
            B = self.truth.base_marker_pose(qc)
            base = self.msg_base
            base.header = msg.header
            se3_to_pose(noisy_pose(B, self.rng, self.cfg.noise), base.pose)
            self.pub_base.publish(base)
        tf = self.msg_tf.transforms[0]
        tf.header = msg.header
        p, t = msg.pose.position, tf.transform.translation
        t.x, t.y, t.z = p.x, p.y, p.z
        tf.transform.rotation = msg.pose.orientation
        self.pub_tf.publish(self.msg_tf)

def main(args=None):
    return run_node(SimRobot, "sim_robot", 4, args)


if __name__ == "__main__":
    sys.exit(main())

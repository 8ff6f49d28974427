"""Calibration node: the Calibrate action over recorded bags, and the updated
robot_description.

Action ``/figaroh/calibrate`` (figaroh_ros/action/Calibrate); service
``/figaroh/plan_trajectory`` (figaroh_ros/srv/PlanTrajectory) runs the exciting-trajectory
planner.  The core runs as the offline
command (``figaroh-ros calibrate CONFIG --bag ...``) in a child process: the node stays
responsive, a cancel ends the child at once, and what runs on the robot is exactly what
runs offline.  Its progress lines become the feedback.  Safety gate: the model is published
only when the child succeeded, the held-out postures are predicted better than by the
nominal model, the exported URDF reproduced the calibrated kinematics, and the goal asked
for it.  Publishing: ``/robot_description`` (std_msgs/String, transient local, as
robot_state_publisher) and, if the parameter ``robot_state_publisher`` names a node, its
``robot_description`` parameter.  Parameters: ``output_dir`` (default ``calibration``),
``build_on_published`` (default true).

Calibrations accumulate: once this node has published a model, a later goal whose config
names the same nominal URDF starts from the published model (``--urdf``), so identified
inertias are written into the geometrically calibrated URDF and a geometric calibration
rewrites the joint origins of a URDF with identified inertias; the nominal model of that
goal's gate is then the published one.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time

import numpy as np
import yaml
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters
from rclpy.action import ActionServer, CancelResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from std_msgs.msg import String

from figaroh_ros.action import Calibrate
from figaroh_ros.config.identification import nominal_urdf
from figaroh_ros.errors import ConfigError
from figaroh_ros.ros.common import LATCHED, run_node
from figaroh_ros.srv import PlanTrajectory

STAGES = [("training postures", "reading the bags", 10.0),
          ("data:", "reading the bag", 10.0),
          ("regressor:", "regressor", 30.0),
          ("base parameters:", "base parameters", 45.0),
          ("estimation", "estimation", 70.0),
          ("hold-out", "validation", 90.0),
          ("identifiable parameters", "identifiability", 25.0),
          ("weakly excited", "identifiability", 35.0),
          ("solver", "solving", 70.0),
          ("leave-one-out", "cross-validation", 80.0),
          ("wrote", "exporting", 95.0)]


class CalibrationNode(Node):
    def __init__(self):
        super().__init__("calibration")
        self.Calibrate = Calibrate
        self.out_root = self.declare_parameter("output_dir", "calibration").value
        self.rsp = self.declare_parameter("robot_state_publisher", "").value
        self.build_on = bool(self.declare_parameter("build_on_published", True).value)
        self.published: tuple[str, str] | None = None     # (nominal URDF, published URDF)
        self.pub = self.create_publisher(String, "/robot_description", LATCHED)
        self.group = ReentrantCallbackGroup()
        ActionServer(self, Calibrate, "/figaroh/calibrate", self._execute,
                     cancel_callback=lambda h: CancelResponse.ACCEPT,
                     callback_group=self.group)
        self.create_service(PlanTrajectory, "/figaroh/plan_trajectory", self._plan,
                            callback_group=self.group)
        self.runs = 0

    def _plan(self, req, res):
        """The exciting-trajectory planner (``figaroh-ros plan-trajectory``) in a child
        process; other callbacks keep running meanwhile."""
        if not os.path.isfile(req.config):
            res.success, res.message = False, f"config not found: {req.config!r}"
            return res
        out = os.path.abspath(req.out or os.path.join(self.out_root, "trajectory.csv"))
        os.makedirs(os.path.dirname(out), exist_ok=True)
        proc = subprocess.run([sys.executable, "-m", "figaroh_ros.cli", "plan-trajectory",
                               req.config, "--out", out], capture_output=True, text=True)
        if proc.returncode != 0:
            errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]
            res.success = False
            res.message = errors[-1][len("error: "):] if errors else proc.stderr[-500:]
            return res
        res.success, res.path = True, out
        res.message = proc.stdout.strip().splitlines()[0] if proc.stdout.strip() else "planned"
        m = re.search(r"condition number ([0-9.eE+-]+)", proc.stdout)
        res.condition_number = float(m.group(1)) if m else float("nan")
        return res

    def _fail(self, handle, result, message):
        result.success, result.message, result.published = False, message, False
        self.get_logger().warn(f"calibration: {message}")
        if handle.is_cancel_requested:
            handle.canceled()
        else:
            handle.abort()
        return result

    def _execute(self, handle):
        g = handle.request
        result = self.Calibrate.Result()
        kind = g.kind or "geometric"
        if kind not in ("geometric", "dynamic"):
            return self._fail(handle, result, f"kind must be geometric or dynamic, got {kind!r}")
        if not os.path.isfile(g.config):
            return self._fail(handle, result, f"config not found: {g.config!r}")
        if not g.bags:
            return self._fail(handle, result, "no bag given")
        if kind == "dynamic" and len(g.bags) != 1:
            return self._fail(handle, result, "dynamic identification takes one bag")
        for b in g.bags:
            if not os.path.isfile(os.path.join(b, "metadata.yaml")):
                return self._fail(handle, result, f"not a rosbag2 bag: {b!r}")
        self.runs += 1
        out = os.path.abspath(os.path.join(self.out_root, time.strftime("%Y%m%d_%H%M%S")
                                           + f"_{self.runs}"))
        try:
            nominal = nominal_urdf(g.config)
        except ConfigError as exc:
            return self._fail(handle, result, str(exc))
        if kind == "geometric":
            cmd = [sys.executable, "-m", "figaroh_ros.cli", "calibrate", g.config, "--out", out]
            for b in g.bags:
                cmd += ["--bag", b]
        else:
            cmd = [sys.executable, "-m", "figaroh_ros.cli", "identify", g.config, "--out", out,
                   "--bag", g.bags[0]]
        start = None
        if self.build_on and self.published and self.published[0] == nominal \
                and os.path.isfile(self.published[1]):
            start = self.published[1]
            cmd += ["--urdf", start]
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        lines: list[str] = []
        outs: list[str] = []
        reader = threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True)
        reader.start()
        out_reader = threading.Thread(target=lambda: outs.extend(proc.stdout), daemon=True)
        out_reader.start()
        fb = self.Calibrate.Feedback(stage="starting", percent=0.0)
        seen = 0
        while proc.poll() is None:
            if handle.is_cancel_requested:
                proc.kill()
                proc.wait()
                return self._fail(handle, result, "cancelled")
            while seen < len(lines):
                line = lines[seen]
                seen += 1
                for key, stage, pct in STAGES:
                    if key in line:
                        fb.stage, fb.percent = stage, pct
                        handle.publish_feedback(fb)
            time.sleep(0.05)
        reader.join(timeout=2.0)
        out_reader.join(timeout=2.0)
        stdout = "".join(outs)
        if proc.returncode != 0:
            errors = [ln.strip() for ln in lines if ln.startswith("error:")]
            msg = errors[-1][len("error: "):] if errors else (lines[-1].strip() if lines
                                                               else "calibration failed")
            return self._fail(handle, result, msg)
        with open(os.path.join(out, "result.yaml")) as f:
            summary = yaml.safe_load(f)
        if kind == "dynamic":
            self._dynamic_result(result, summary, out, g.publish)
        else:
            self._geometric_result(result, summary, g.publish)
        if result.published:
            self.published = (nominal, result.urdf_path)
        if start is not None:
            result.message += f" (started from the published {os.path.basename(start)})"
        self.get_logger().info(result.message + "\n" + stdout)
        handle.succeed()
        return result

    def _publish(self, result, path: str):
        with open(path) as f:
            text = f.read()
        self.pub.publish(String(data=text))
        self._set_rsp(text)
        result.published = True

    def _geometric_result(self, result, summary, publish):
        """Calibrated parameters, held-out RMSE (m) and the gate: the held-out postures
        better than by the nominal model and the exported URDF reproducing the model."""
        for p in summary["parameters"]:
            result.parameter_names.append(p["name"])
            result.parameter_values.append(float(p["value"]))
            result.parameter_std.append(float(p["std"]))
        result.urdf_path = summary["urdf"]
        result.validation_rmse = 1e-3 * float(summary.get("rmse_validation_mm", float("nan")))
        result.nominal_validation_rmse = 1e-3 * float(
            summary.get("nominal_rmse_validation_mm", float("nan")))
        gate = []
        if "rmse_validation_mm" not in summary:
            gate.append("no held-out postures to check the model on")
        elif not summary.get("better_than_nominal", False):
            gate.append(f"held-out RMSE {summary['rmse_validation_mm']:.3f} mm is not better "
                        f"than the nominal model's {summary['nominal_rmse_validation_mm']:.3f} mm")
        if not summary.get("urdf_round_trip_gap", 1.0) <= 1e-9:
            gate.append("the exported URDF does not reproduce the calibrated model")
        result.success = True
        if gate:
            result.message = "calibrated but NOT published: " + "; ".join(gate)
        elif publish:
            self._publish(result, result.urdf_path)
            result.message = (f"published: held-out RMSE {summary['nominal_rmse_validation_mm']:.3f}"
                              f" -> {summary['rmse_validation_mm']:.3f} mm")
        else:
            result.message = "calibrated (publish not requested)"

    def _dynamic_result(self, result, summary, out, publish):
        """Identified base parameters and the held-out torque RMS (N.m, over joints).  With
        ``physical.method`` in the config the CLI also wrote a URDF of physically consistent
        inertias when every link passed and the hold-out beat the nominal model: that file
        is what gets published (base parameters alone are not a URDF)."""
        for p in summary["base_parameters"]:
            result.parameter_names.append(p["name"])
            result.parameter_values.append(float(p["value"]))
            result.parameter_std.append(float(p["std"]))
        result.success = True
        if "validation_rmse" not in summary:
            msg = "identified; no held-out part to check it on"
        else:
            v = np.array(list(summary["validation_rmse"].values()))
            n = np.array(list(summary["nominal_validation_rmse"].values()))
            result.validation_rmse = float(np.sqrt(np.mean(v ** 2)))
            result.nominal_validation_rmse = float(np.sqrt(np.mean(n ** 2)))
            verdict = "better" if summary.get("better_than_nominal") else "NOT better"
            msg = (f"identified {len(result.parameter_names)} base parameters; held-out torque "
                   f"RMS {result.validation_rmse:.4g} N.m, {verdict} than the nominal model's "
                   f"{result.nominal_validation_rmse:.4g} N.m")
        ph = summary.get("physical")
        urdf = os.path.join(out, f"{summary['robot']}_identified.urdf")
        result.published = False
        if ph is None:
            msg += "; base parameters are not a URDF (set physical.method to publish one)"
        elif not ph["publishable"] or not os.path.isfile(urdf):
            msg += "; NOT published: " + ph.get("not_published_because", "no URDF written")
        else:
            result.urdf_path = urdf
            if publish:
                self._publish(result, urdf)
                msg += f"; published physically consistent inertias ({ph['method']})"
            else:
                msg += "; consistent URDF written (publish not requested)"
        result.message = msg

    def _set_rsp(self, text: str):
        if not self.rsp:
            return
        cli = self.create_client(SetParameters, f"/{self.rsp}/set_parameters",
                                 callback_group=self.group)
        if not cli.wait_for_service(timeout_sec=2.0):
            self.get_logger().warn(f"{self.rsp}: no set_parameters service")
            return
        p = Parameter(name="robot_description",
                      value=ParameterValue(type=ParameterType.PARAMETER_STRING,
                                           string_value=text))
        cli.call_async(SetParameters.Request(parameters=[p]))


def main(args=None):
    return run_node(CalibrationNode, "calibration", 3, args)


if __name__ == "__main__":
    sys.exit(main())

"""``figaroh-ros call run-experiment | calibrate | plan-trajectory``: send one goal to the
robot-side nodes through the :class:`~figaroh_ros.ros.commander.Commander`, print its
feedback live (stderr) and its result (stdout).

Exit code 0 when the goal succeeded, 2 with ``error: <message>`` for every other
``error_code`` (and when a server is missing or the goal times out), 130 on Ctrl-C after
the goal was cancelled.  The flags are the goal's fields; local paths are made absolute,
since the nodes do not share the caller's working directory.
"""
from __future__ import annotations

import os
import sys

from figaroh_ros.cli.output import say
from figaroh_ros.errors import SUCCESSFUL, RosError

SERVER_WAIT_S = 30.0


def _local(path: str) -> str:
    return os.path.abspath(path) if path else ""


def send(robot, args, on_feedback):
    """The goal of ``args.action`` sent through ``robot``: its Task."""
    if args.action == "run-experiment":
        return robot.run_experiment(
            _local(args.postures_file), _local(args.trajectory_file), _local(args.bag_path),
            args.max_velocity, args.settle_time, args.dwell_time, on_feedback=on_feedback)
    if args.action == "calibrate":
        return robot.calibrate([_local(b) for b in args.bags], _local(args.config), args.kind,
                               args.publish, _local(args.start_urdf), on_feedback=on_feedback,
                               accept_failed_acceptance=args.accept_failed_acceptance)
    return robot.plan_trajectory(_local(args.config), args.out, on_feedback=on_feedback)


def feedback_line(fb, stages: dict[int, str]) -> str:
    """``STAGE  fraction %  message`` of one feedback message of any of our actions."""
    text = getattr(fb, "message", "") or getattr(fb, "check", "")
    if not text and hasattr(fb, "postures_total") and stages.get(fb.stage) != "TRAJECTORY":
        text = f"posture {fb.posture + 1}/{fb.postures_total}"
    return f"{stages.get(fb.stage, str(fb.stage)):<15} {100.0 * fb.fraction:3.0f} %  {text}"


def cmd_call(args) -> int:
    from figaroh_ros.ros import commander  # rclpy only for this verb: the others stay ROS-free
    name = args.action.replace("-", "_")
    stages = commander.stage_names(commander.ACTIONS[name][0].Feedback)
    task = None
    with commander.Commander(args.namespace,
                             server_timeout=min(SERVER_WAIT_S, args.timeout)) as robot:
        try:
            task = send(robot, args, lambda fb: say(feedback_line(fb, stages)))
            result = task.result(args.timeout)
        except KeyboardInterrupt:
            canceled = task is not None and task.cancel()
            say("goal canceled" if canceled else "interrupted")
            return 130
        except RosError:
            if task is not None:
                task.cancel()
            raise
    if result.error_code != SUCCESSFUL:
        print(f"error: {result.message}", file=sys.stderr)
        return 2
    PRINTERS[name](result, args)
    return 0


def print_run_experiment(result, args) -> None:
    print(result.message)
    print(f"postures done: {result.postures_done}")
    if result.bag_path:
        print(f"bag: {result.bag_path}")


def print_plan_trajectory(result, args) -> None:
    print(f"{result.duration_s:.1f} s trajectory: condition number "
          f"{result.condition_number:.4g}"
          + (f" ({result.base_size} base parameters)" if getattr(result, "base_size", 0)
             else "") + f", {result.iterations} IPOPT iterations")
    print(f"trajectory: {result.path}")
    if getattr(result, "result_path", ""):
        print(f"result: {result.result_path}")


def print_calibrate(result, args) -> None:
    print(result.message)
    width = max((len(n) for n in result.parameter_names), default=10)
    units = list(result.parameter_units) or [""] * len(result.parameter_names)
    for n, v, s, u in zip(result.parameter_names, result.parameter_values,
                          result.parameter_std, units):
        print(f"  {n:<{width}} {v:>14.6g} +- {s:<10.2g} {u}")
    print(rmse_line(result, args.kind))
    print(acceptance_line(result))
    print(f"result: {result.result_path}")
    if result.urdf_path:
        print(f"model: {result.urdf_path}")
    if result.published:
        print("published: robot_description updated")
    else:
        print(f"not published: {result.not_published_because or 'not requested'}")


def rmse_line(result, kind: str) -> str:
    """The held-out error of the nominal and the new model, with units."""
    if not result.has_validation:
        return "no held-out data: no validation RMSE"
    if kind == "geometric":
        return (f"held-out position RMSE: nominal {1e3 * result.nominal_position_rmse_m:.2f} "
                f"mm -> calibrated {1e3 * result.position_rmse_m:.2f} mm")
    return (f"held-out torque RMS: nominal {result.nominal_torque_rmse_nm:.3f} N.m -> "
            f"identified {result.torque_rmse_nm:.3f} N.m")


def acceptance_line(result) -> str:
    """The verdict of the config's acceptance thresholds, each with its measured number."""
    verdict = getattr(result, "acceptance", "")
    if not verdict:
        return "acceptance: no threshold in the config"
    detail = getattr(result, "acceptance_detail", "").replace("\n", "; ")
    return f"acceptance: {verdict}" + (f" ({detail})" if detail else "")


PRINTERS = {"run_experiment": print_run_experiment, "calibrate": print_calibrate,
            "plan_trajectory": print_plan_trajectory}

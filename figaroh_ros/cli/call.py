"""``figaroh-ros call``: one goal or request to the robot-side nodes through the
:class:`~figaroh_ros.ros.commander.Commander`.

Actions (feedback live on stderr, the result on stdout): ``run-experiment``,
``preflight``, ``calibrate``, ``plan-trajectory``, ``identify-payload``.  Services (the
response on stdout): ``restore`` (RestoreDescription), ``recorder`` (RecorderControl),
``start-calibration`` (StartCalibration: the goal id, at once).

Exit code 0 when the goal or request succeeded, 2 with ``error: <message>`` for every
other ``error_code``, a failed pre-flight (its checks printed first), a request the node
refused, a missing server or no answer in time; 130 on Ctrl-C after the goal was cancelled.
The flags are the goal's fields; local paths are made absolute, since the nodes do not
share the caller's working directory.
"""
from __future__ import annotations

import json
import os
import re
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
    if args.action == "identify-payload":
        return robot.identify_payload(_local(args.bag), _local(args.config),
                                      on_feedback=on_feedback)
    if args.action == "preflight":
        return robot.preflight(_local(args.config), _local(args.postures),
                               _local(args.trajectory), args.topic_window,
                               on_feedback=on_feedback)
    return robot.plan_trajectory(_local(args.config), args.out, on_feedback=on_feedback)


def feedback_line(fb, stages: dict[int, str]) -> str:
    """``STAGE  fraction %  message`` of one feedback message of any of our actions (a
    pre-flight's: ``pass|FAIL  fraction %  check``)."""
    if not hasattr(fb, "stage"):
        return f"{'pass' if fb.check_passed else 'FAIL':<15} {100.0 * fb.fraction:3.0f} %  " \
               f"{fb.check_name}"
    text = getattr(fb, "message", "") or getattr(fb, "check", "")
    if not text and hasattr(fb, "postures_total") and stages.get(fb.stage) != "TRAJECTORY":
        text = f"posture {fb.posture + 1}/{fb.postures_total}"
    return f"{stages.get(fb.stage, str(fb.stage)):<15} {100.0 * fb.fraction:3.0f} %  {text}"


def cmd_call(args) -> int:
    from figaroh_ros.ros import commander  # rclpy only for this verb: the others stay ROS-free
    if args.action in ("restore", "recorder", "start-calibration"):
        return call_service(commander, args)
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
        if name == "preflight":
            print_preflight(result, args)
        print(f"error: {result.message}", file=sys.stderr)
        return 2
    PRINTERS[name](result, args)
    return 0


def call_service(commander, args) -> int:
    """``restore`` / ``recorder``: the request sent, the response printed; 2 when the node
    did not do it."""
    with commander.Commander(args.namespace,
                             server_timeout=min(SERVER_WAIT_S, args.timeout)) as robot:
        if args.action == "restore":
            response = robot.restore_description(args.which, args.timeout)
        elif args.action == "start-calibration":
            response = robot.start_calibration(
                [_local(b) for b in args.bags], _local(args.config), args.kind, args.publish,
                _local(args.start_urdf), args.accept_failed_acceptance, args.timeout)
            print(f"accepted: {str(response.accepted).lower()}")
            print(f"goal_id: {response.goal_id or '~'}")
            if not response.accepted:
                print(f"error: {response.reason}", file=sys.stderr)
                return 2
            return 0
        else:
            response = robot.recorder_control(args.command, _local(args.bag_path),
                                              args.storage, args.timeout)
    (print_restore if args.action == "restore" else print_recorder)(response)
    if not response.success:
        print(f"error: {response.message}", file=sys.stderr)
        return 2
    return 0


def _text(value: str) -> str:
    """A string as a YAML scalar: as is when YAML reads it back as that string, else
    quoted (a message with ``: `` or ``#``)."""
    if value and re.fullmatch(r"[\w/.][\w/. ,()'+=<>-]*", value) and \
            value.lower() not in ("true", "false", "null", "yes", "no", "on", "off", "~"):
        return value
    return json.dumps(value)


def print_restore(response) -> None:
    print(f"success: {str(response.success).lower()}")
    print(f"message: {_text(response.message)}")
    print(f"model_hash: {response.model_hash or '~'}")
    print("history:" + ("" if response.history_hashes else " []"))
    for h, r in zip(response.history_hashes, response.history_results):
        current = "   # published" if h == response.model_hash else ""
        print(f"  - {h}: {_text(r or 'nominal')}{current}")


def print_recorder(response) -> None:
    print(f"success: {str(response.success).lower()}")
    print(f"message: {_text(response.message)}")
    print(f"bag_path: {_text(response.bag_path) if response.bag_path else '~'}")
    if response.topics:
        print("counts:")
        for t, c in zip(response.topics, response.counts):
            print(f"  {_text(t)}: {c}")


def print_payload(result, args) -> None:
    print(result.message)
    print(f"mass_kg: {result.mass_kg:.4g}   # +- {result.mass_std_kg:.2g}")
    print(f"com_m: [{', '.join(f'{v:.4g}' for v in result.com_m)}]   # +- "
          f"[{', '.join(f'{v:.2g}' for v in result.com_std_m)}]")
    print(f"inertia_kgm2: [{', '.join(f'{v:.4g}' for v in result.inertia_kgm2)}]"
          f"   # Ixx Iyy Izz Ixy Ixz Iyz about the centre of mass")
    print(f"physically_consistent: {str(result.physically_consistent).lower()}")
    print(f"result: {result.result_path}")
    for label, path in (("ur_payload", result.ur_payload_path),
                        ("franka_load", result.franka_load_path)):
        if path:
            print(f"{label}: {path}")


def print_preflight(result, args) -> None:
    print(f"passed: {str(result.passed).lower()}")
    print("checks:")
    for n, ok, d in zip(result.check_names, result.check_passed, result.check_details):
        print(f"  - {'pass' if ok else 'FAIL'} {n}: {_text(d)}")
    if result.parameter_count:
        print(f"rank: {result.rank} of {result.parameter_count} parameters")
        print(f"condition_number: {result.condition_number:.4g}")


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
            "plan_trajectory": print_plan_trajectory, "identify_payload": print_payload,
            "preflight": print_preflight}

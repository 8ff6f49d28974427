"""Every verb's arguments, and nothing of its work: building the parser loads no task,
no scipy, pydantic or pinocchio, so ``figaroh-ros --help`` and ``figaroh-ros VERB --help``
answer at once.  Each verb names its handler as ``module:function`` (:class:`Handler`);
the handler's module, with the task it runs, is imported only when that verb runs."""
from __future__ import annotations

import argparse
from importlib import import_module

# the names the heavy modules define, kept here so that the parser does not load them;
# test_cli_startup checks them against figaroh_ros.config.kinds.KINDS and io.export.FORMATS
CONFIG_KINDS = ("identification", "calibration", "trajectory", "gains", "backlash",
                "suspension", "payload", "robot", "sim_camera", "sim")
EXPORT_FORMATS = ("ur-kinematics", "joint-offsets", "urdf-patch", "dynamics")


class Handler:
    """The function ``module:name`` of a verb, imported when the verb runs.  Only a
    ``figaroh_ros.cli`` module is imported by name: the imports that reach the lower layers
    stay plain statements in that module, which the layering test reads."""

    def __init__(self, target: str):
        module, _, self.name = target.partition(":")
        if not module.startswith("figaroh_ros.cli.") or not self.name:
            raise ValueError(f"handler {target!r}: expected figaroh_ros.cli.MODULE:FUNCTION")
        self.module = module

    def load(self):
        """The function itself, its module (and the task that module runs) imported."""
        return getattr(import_module(self.module), self.name)

    def __call__(self, *args):
        return self.load()(*args)


def resolve(func):
    """The function a parsed command runs: a :class:`Handler` loaded, a callable as is."""
    return func.load() if isinstance(func, Handler) else func


def _verb(sub, name: str, target: str, **kw) -> argparse.ArgumentParser:
    p = sub.add_parser(name, **kw)
    p.set_defaults(func=Handler(target))
    return p


def add_accept_poor_fit(p) -> None:
    """``--accept-poor-fit``: keep a fit whose residual is far above the noise (warned)."""
    p.add_argument("--accept-poor-fit", action="store_true", help="keep a fit whose "
                   "residual exceeds acceptance.residual_limit x the stated noise, with a "
                   "warning in the result (never publishable), instead of exit code 2")


def identify(sub) -> None:
    p = _verb(sub, "identify", "figaroh_ros.cli.identify:cmd_identify",
              help="dynamic identification from a recording")
    p.add_argument("config", help="identification YAML (see config/)")
    p.add_argument("--data", help="folder holding the recording (overrides data.path)")
    p.add_argument("--bag", help="rosbag2 folder recorded by the executor (data.format bag)")
    p.add_argument("--out", help="output folder (default results/<robot>)")
    p.add_argument("--urdf", help="start from this model instead of robot.urdf (e.g. a "
                   "geometrically calibrated URDF: the identified inertias are written into "
                   "it)")
    p.add_argument("--reference", help="published base-parameter CSV to compare with "
                   "(expression, OLS value, OLS %%std, WLS value, WLS %%std), or an "
                   "earlier result.yaml of the same base-parameter definition")
    p.add_argument("--validate", help="another recording to predict with the model fitted "
                   "on the whole of this one (folder of the config's CSV files, a CSV table "
                   "or a bag)")
    p.add_argument("--reference-model", metavar="URDF|CSV|YAML",
                   help="published standard-parameter model scored on the same held-out "
                   "data as ours: a URDF (same joints; robot.remove_links / lock_joints "
                   "applied) or a table of standard parameters (.csv/.yaml, our names)")
    p.add_argument("--reference-friction", metavar="YAML",
                   help="a published per-joint friction model (numbers, e.g. "
                   "config/reference/panda_gaz2019_friction.yaml: Gaz et al. 2019's "
                   "sigmoid) added to the --reference-model prediction")
    p = _verb(sub, "identify-gains", "figaroh_ros.cli.gains:cmd_identify_gains",
              help="drive / torque-sensor gains by TLS with a known payload (two "
              "experiments)")
    p.add_argument("config", help="identification YAML with a tls section")
    p.add_argument("--out", help="output folder (default results/<robot>_gains)")


def calibrate(sub) -> None:
    p = _verb(sub, "calibrate", "figaroh_ros.cli.calibrate:cmd_calibrate",
              help="geometric calibration from static postures")
    p.add_argument("config", help="calibration YAML (see config/)")
    p.add_argument("--data", help="training posture CSV (overrides data.path)")
    p.add_argument("--validate", help="validation posture CSV (overrides data.validation)")
    p.add_argument("--bag", action="append", help="rosbag2 folder recorded by the executor "
                   "(repeatable; replaces data.path)")
    p.add_argument("--out", help="output folder (default results/<robot>_calibration)")
    p.add_argument("--urdf", help="start from this model instead of robot.urdf (e.g. one "
                   "with identified inertias: only its joint origins are rewritten)")
    add_accept_poor_fit(p)


def phenomena(sub) -> None:
    for name, what in (
            ("backlash", "backlash / encoder discrepancy model per joint from a bag with "
             "motor and link encoders"),
            ("suspension", "base suspension from a bag with the force-plate wrench and "
             "the base pose")):
        p = _verb(sub, f"identify-{name}", f"figaroh_ros.cli.phenomena:cmd_identify_{name}",
                  help=what)
        p.add_argument("config", help=f"{name} YAML (robot, {name} sections)")
        p.add_argument("--bag", required=True, help="rosbag2 folder")
        p.add_argument("--out", help=f"output folder (default results/<robot>_{name})")
        add_accept_poor_fit(p)


def plan(sub) -> None:
    p = _verb(sub, "plan-postures", "figaroh_ros.cli.plan:cmd_plan_postures",
              help="optimal calibration postures (D-optimal)")
    p.add_argument("config", help="calibration YAML (see config/)")
    p.add_argument("--out", required=True, help="CSV of postures for the executor (or a "
                   "folder: FOLDER/postures.csv); result.yaml is written beside it")
    p = _verb(sub, "plan-trajectory", "figaroh_ros.cli.plan:cmd_plan_trajectory",
              help="optimal exciting trajectory (IPOPT)")
    p.add_argument("config", help="trajectory YAML (see config/*_trajectory.yaml)")
    p.add_argument("--out", required=True, help="trajectory CSV for the executor (or a "
                   "folder: FOLDER/trajectory.csv); result.yaml is written beside it")


def preflight(sub) -> None:
    p = _verb(sub, "preflight", "figaroh_ros.cli.preflight:cmd_preflight",
              help="identifiability of planned postures or of an exciting trajectory "
              "before the robot moves (rank, condition number, expected std)")
    p.add_argument("config", help="calibration YAML with --postures, identification YAML "
                   "with --trajectory (see config/)")
    plan = p.add_mutually_exclusive_group(required=True)
    plan.add_argument("--postures", help="postures CSV (plan-postures output)")
    plan.add_argument("--trajectory", help="trajectory CSV, t + joint columns "
                      "(plan-trajectory output)")
    p.add_argument("--out", help="folder for result.yaml (the checks with their numbers)")


CALL_EXIT_CODES = ("exit codes: 0 the goal or request succeeded; 2 it failed (its error, a "
                   "failed pre-flight check, a refused request), a server missing, no "
                   "answer in --timeout s; 130 Ctrl-C (a running goal cancelled)")


def call(sub) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--timeout", type=float, default=3600.0,
                        help="seconds to wait for the result (default 3600)")
    common.add_argument("--namespace", default="",
                        help="namespace of the figaroh nodes (actions <ns>/figaroh/...)")
    p = _verb(sub, "call", "figaroh_ros.cli.call:cmd_call",
              help="send a goal or a request to the figaroh nodes of a running robot",
              epilog=CALL_EXIT_CODES)
    goals = p.add_subparsers(dest="action", required=True)
    _run_experiment(_call_command(goals, "run-experiment", parents=[common],
                                  help="play postures or a trajectory, recording"))
    _call_calibrate(_call_command(goals, "calibrate", parents=[common],
                                  help="calibrate / identify on bags, then publish"))
    q = _call_command(goals, "plan-trajectory", parents=[common],
                      help="plan an optimal exciting trajectory on the robot's computer")
    q.add_argument("--config", required=True, help="trajectory YAML")
    q.add_argument("--out", default="", help="folder of the run, relative to the node's "
                   "output_dir (default: a new timestamped one)")
    _call_calibrate(_call_command(
        goals, "start-calibration", parents=[common], help="start a calibration through "
        "the StartCalibration service, which answers at once with the goal id (the "
        "progress and result stay on the calibrate action)"))
    q = _call_command(goals, "identify-payload", parents=[common], help="identify the "
                      "payload on the tool (mass, centre of mass, inertia) from a bag")
    q.add_argument("--bag", required=True, help="rosbag2 folder of the payload motion")
    q.add_argument("--config", required=True, help="payload YAML (config/*payload*.yaml)")
    q = _call_command(goals, "preflight", parents=[common], help="the executor's checks "
                      "before motion (controllers, topic rates, QoS, clocks, TF, model, "
                      "identifiability); nothing moves")
    q.add_argument("--config", default="", help="calibration YAML (--postures) or "
                   "identification YAML (--trajectory); default: the executor's")
    plan = q.add_mutually_exclusive_group()
    plan.add_argument("--postures", default="", help="postures CSV to check")
    plan.add_argument("--trajectory", default="", help="trajectory CSV to check")
    q.add_argument("--topic-window", type=float, default=0.0,
                   help="s to measure the topics' rates (default 0: 2 s)")
    q = _call_command(goals, "restore", parents=[common], help="republish an earlier "
                      "robot_description, or list the kept models (RestoreDescription)")
    q.add_argument("which", help="previous | nominal | history | a model's sha256 (or a "
                   "prefix of it, as history prints)")
    q = _call_command(goals, "recorder", parents=[common], help="start, stop or split the "
                      "recorder's bag, or read its status (RecorderControl)")
    q.add_argument("command", choices=("start", "stop", "split", "status"))
    q.add_argument("--bag-path", default="", help="start: the bag folder to create "
                   "(default: a timestamped one in the recorder's bag_dir)")
    q.add_argument("--storage", default="", choices=("", "mcap", "sqlite3"),
                   help="start: storage format (default mcap)")


def _call_command(goals, name: str, **kw) -> argparse.ArgumentParser:
    """A ``call`` sub-command, its help ending with the exit codes."""
    return goals.add_parser(name, epilog=CALL_EXIT_CODES, **kw)


def _run_experiment(p) -> None:
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--postures-file", default="", help="CSV of static postures")
    what.add_argument("--trajectory-file", default="", help="CSV trajectory (column t)")
    p.add_argument("--bag-path", default="", help="bag the recorder writes (default: none)")
    p.add_argument("--max-velocity", type=float, help="rad/s between postures")
    p.add_argument("--settle-time", type=float, help="s after reaching a posture")
    p.add_argument("--dwell-time", type=float, help="s of hold at each posture "
                   "(the three timing flags override the executor's parameters together)")


def _call_calibrate(p) -> None:
    p.add_argument("--bags", nargs="+", required=True, help="rosbag2 folders")
    p.add_argument("--config", required=True, help="calibration / identification YAML")
    p.add_argument("--kind", required=True, choices=("geometric", "dynamic"))
    p.add_argument("--no-publish", dest="publish", action="store_false",
                   help="do not republish robot_description")
    p.add_argument("--start-urdf", default="", help="model to start from (default: the "
                   "published one or the config's)")
    p.add_argument("--accept-failed-acceptance", action="store_true", help="publish a "
                   "model that failed only the config's acceptance thresholds (never one "
                   "that failed another check of the gate); the result says so")


def config_schema(sub) -> None:
    p = _verb(sub, "config-schema", "figaroh_ros.cli.config_schema:cmd_config_schema",
              help="print the JSON schema of a config kind: " + ", ".join(CONFIG_KINDS))
    p.add_argument("kind", choices=CONFIG_KINDS, help="config kind")


def export(sub) -> None:
    p = _verb(sub, "export", "figaroh_ros.cli.export:cmd_export",
              help="write a result as deploy files: " + ", ".join(EXPORT_FORMATS))
    p.add_argument("format", choices=EXPORT_FORMATS, help="what to write")
    p.add_argument("result", help="result folder (or its result.yaml)")
    p.add_argument("--out", required=True, help="file to write (companion files beside it)")
    p.add_argument("--hash", default=None,
                   help="ur-kinematics: the robot's calibration hash (from ur_calibration's "
                        "file), else one derived from the values")


def batch(sub) -> None:
    p = _verb(sub, "batch", "figaroh_ros.cli.batch:cmd_batch", help="many recordings "
              "(robots x days) in parallel: one table and a drift report")
    p.add_argument("kind", choices=["identify", "calibrate"], help="what each recording is "
                   "used for: dynamic identification or geometric calibration")
    p.add_argument("config", help="identification YAML (its data section: a bag) or "
                   "calibration YAML (its bag section)")
    p.add_argument("inputs", nargs="+", help="rosbag2 bags or folders of them (fleet "
                   "layout ROBOT/BAG: the robot is the folder holding the bag)")
    p.add_argument("--out", required=True, help="folder for batch.csv, drift.yaml and "
                   "the drift plots")
    p.add_argument("--scheduler", help="address of a dask.distributed scheduler (e.g. "
                   "tcp://host:8786); default: a local process pool")
    p.add_argument("--workers", type=int, help="local processes (default: one per core)")


def payload(sub) -> None:
    p = _verb(sub, "identify-payload", "figaroh_ros.cli.payload:cmd_identify_payload",
              help="payload mass, centre of mass and inertia from joint torques or a wrist "
              "force-torque sensor")
    p.add_argument("config", help="payload YAML (robot, payload sections)")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--data", help="CSV table (default: payload.data of the config)")
    src.add_argument("--bag", help="rosbag2 folder")
    p.add_argument("--out", help="output folder (default results/<robot>_payload)")
    p = _verb(sub, "plan-payload", "figaroh_ros.cli.payload:cmd_plan_payload",
              help="the payload excitation of the last joints to play and record for "
              "identify-payload (within the joint limits)")
    p.add_argument("config", help="payload YAML (robot, payload sections)")
    p.add_argument("--hold", type=float, nargs="+", required=True, metavar="Q",
                   help="the posture held (one position per robot.joints, rad or m); the "
                   "motion starts and ends there")
    p.add_argument("--out", required=True, help="trajectory CSV for the executor (or a "
                   "folder: FOLDER/payload_trajectory.csv); result.yaml is written beside it")
    p.add_argument("--duration", type=float, default=10.0, help="seconds (default 10)")
    p.add_argument("--joints", nargs="+", help="joints moved (default: the last three)")
    p.add_argument("--velocity-scale", type=float, default=0.5,
                   help="fraction of the URDF's velocity limits (default 0.5)")
    p.add_argument("--acceleration-limit", type=float, default=4.0,
                   help="rad/s^2 (default 4)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random series")


def bag(sub) -> None:
    p = _verb(sub, "bag", "figaroh_ros.cli.bag:cmd_bag", help="a rosbag2 bag as published "
              "(folder or .db3/.mcap file, with or without metadata.yaml): info, reindex")
    what = p.add_subparsers(dest="action", required=True)
    q = what.add_parser("info", help="topics, types, counts, rates, gaps, joint names, "
                        "and whether the efforts look like joint torques or currents")
    q.add_argument("path", help="bag folder or storage file")
    q.add_argument("--config", help="identification YAML: compare the efforts with its "
                   "model's gravity torques (through its data.joint_map)")
    q.add_argument("--json", action="store_true", help="JSON instead of YAML")
    q = what.add_parser("reindex", help="write the bag's metadata.yaml from its storage "
                        "files (the form Humble, Jazzy and Kilted read)")
    q.add_argument("path", help="bag folder or storage file (its folder gets the file)")
    q.add_argument("--force", action="store_true", help="replace an existing metadata.yaml")


def launch(sub) -> None:
    """Listed for the help only: ``main`` hands their ``name:=value`` arguments over
    before argparse sees them."""
    sub.add_parser("launch", help="run a launch/*.launch.yaml file: FILE [name:=value ...]")
    sub.add_parser("demo", help="simulated UR10: plan, execute, record, calibrate, publish")


VERBS = (identify, calibrate, phenomena, plan, preflight, call, config_schema, export,
         batch, payload, bag, launch)

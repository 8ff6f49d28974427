#!/usr/bin/env python3
"""Mutation testing of the rules that decide what is published, refused or moved
(``make mutants``; docs/mutation-testing.md).

Each group below is run by mutmut (3.x) in its own work folder under
``build/mutants/<group>``: the package, the tests and the files the package reads are
copied there, the group's modules mutated (or only its named functions), and each mutant
is run against the group's fast tests (no ROS graph), one process at a time.  Then the
score: the mutants killed over those not listed as equivalent in
docs/mutation-testing.md, and every mutant that survived with its diff.  The exit status
is 1 when the score is below ``TARGET`` or a listed equivalent no longer matches a mutant
(the table went stale), 0 otherwise.

    tools/mutants.py                 # every group
    tools/mutants.py limits monitor  # some groups
    tools/mutants.py --list          # the groups, their modules and tests
    tools/mutants.py --report        # the score of the last run, without running
    tools/mutants.py --again gates   # after new tests: only the survivors, run again
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORK = os.path.join(ROOT, "build", "mutants")
PAGE = os.path.join(ROOT, "docs", "mutation-testing.md")
TARGET = 0.90
SEP = "\u01c1"          # mutmut's separator of a class and its method in a mutant's name
# what the package reads from the checkout beside its code (share folder, profiles)
ALSO_COPY = ["config", "msg", "srv", "action", "package.xml", "resource"]


@dataclass
class Group:
    modules: list[str]                  # under figaroh_ros/
    tests: list[str]                    # pytest arguments (files or node ids)
    functions: list[str] = field(default_factory=list)   # only these: "module:Class.method"
    select: list[str] = field(default_factory=list)      # pytest options choosing tests
    about: str = ""


# the tests of test_gate.py that calibrate through the task (files, CLI, bags): the gates'
# own tests call the gate functions directly and run in a fraction of their time
TASK_RUNS = ("honest_calibration or corrupted_inputs or nominal_equal or implausible or "
             "postures_beyond or acceptance_threshold_from or wrong_orientation or "
             "calibrate_from_bags or cameras_lost")
UNIT = ["-k", f"not ({TASK_RUNS})"]

GROUPS = {
    "improvement": Group(
        ["tasks/improvement.py"], ["test/test_gate.py"], select=UNIT,
        about="the held-out improvement of the publication gates: paired tests, margin"),
    "gate": Group(
        ["tasks/gate.py"],
        ["test/test_gate.py", "test/test_acceptance_override.py", "test/test_joint_limits.py"],
        select=UNIT, about="the publication gate's checks and decision, the residual sanity"),
    "calibration_gate": Group(
        ["tasks/calibration_gate.py"], ["test/test_gate.py"], select=UNIT,
        about="the publication gate of a geometric calibration"),
    "identification_gate": Group(
        ["tasks/identification_gate.py"], ["test/test_identification_gate.py"],
        about="the publication gate of a dynamic identification"),
    "limits": Group(
        ["model/robot.py", "ros/goal_checks.py"],
        ["test/test_joint_limits.py", "test/test_goal_checks.py"],
        ["model/robot.py:" + f for f in (
            "angle_limits", "RobotModel.position_limits", "RobotModel.velocity_limits",
            "RobotModel.effort_limits", "random_states", "locked_model")]
        + ["ros/goal_checks.py:goal_timing"],
        about="the joint limits of the model and the timing a goal may override"),
    "preflight": Group(
        ["tasks/preflight_checks.py"], ["test/test_preflight_checks.py"],
        about="the pre-flight's live checks"),
    "monitor": Group(
        ["identification/monitor.py"],
        ["test/test_monitor.py::test_reset_after_a_gap",
         "test/test_monitor.py::test_bad_inputs",
         "test/test_monitor.py::test_contact_rule_at_its_bounds"],
        ["identification/monitor.py:" + f for f in (
            "TorqueMonitor._update", "ResidualBand.threshold", "ResidualBand.load")],
        about="the dynamics monitor's contact rule"),
    "recorder": Group(
        ["ros/recorder.py", "config/driver.py"], ["test/test_recorder_topics.py"],
        ["ros/recorder.py:recorded_topics", "config/driver.py:Driver.recorded"],
        about="which topics a recording holds and requires"),
    "confine": Group(
        ["io/confine.py"], ["test/test_confine.py", "test/test_confine_rules.py"],
        about="the confinement of the paths a goal or request names"),
}


def mangled(qualified: str) -> str:
    """mutmut's name of ``module:function`` (``f`` or ``Class.method``)."""
    module, function = qualified.split(":")
    dotted = "figaroh_ros." + module[:-3].replace("/", ".")
    if "." in function:
        cls, meth = function.split(".")
        return f"{dotted}.x{SEP}{cls}{SEP}{meth}"
    return f"{dotted}.x_{function}"


def readable(name: str) -> str:
    """``tasks.gate.finite_check`` / ``identification.monitor.TorqueMonitor._update`` of a
    mutant's name."""
    base = re.sub(r"__mutmut_\d+$", "", name).removeprefix("figaroh_ros.")
    module, _, func = base.rpartition(".")
    func = func.removeprefix("x_") if func.startswith("x_") else \
        ".".join(p for p in func.split(SEP)[1:])
    return f"{module}.{func}"


def setup_cfg(group: Group) -> str:
    lines = ["[mutmut]", "source_paths = figaroh_ros",
             "only_mutate =\n" + "\n".join(f"    figaroh_ros/{m}" for m in group.modules),
             "pytest_add_cli_args_test_selection =\n" + "\n".join(
                 f"    {t}" for t in group.tests),
             "pytest_add_cli_args =\n" + "\n".join(
                 f"    {a}" for a in ["-p", "no:cacheprovider"] + group.select),
             "also_copy =\n" + "\n".join(f"    {p}" for p in ALSO_COPY)]
    return "\n".join(lines) + "\n"


def prepare(name: str, group: Group) -> str:
    """A fresh work folder holding links to the checkout and the group's setup.cfg."""
    work = os.path.join(WORK, name)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    for entry in ["figaroh_ros", "test"] + ALSO_COPY:
        os.symlink(os.path.join(ROOT, entry), os.path.join(work, entry))
    # the tests find the real data beside the checkout (test/conftest.py: ../shared), and
    # run in <work>/mutants
    shared = os.path.join(os.path.dirname(ROOT), "shared")
    if os.path.isdir(shared):
        os.symlink(shared, os.path.join(work, "shared"))
    with open(os.path.join(work, "setup.cfg"), "w") as f:
        f.write(setup_cfg(group))
    return work


def mutmut(work: str, *args: str, check: bool = True) -> str:
    exe = os.path.join(os.path.dirname(sys.executable), "mutmut")
    p = subprocess.run([exe, *args], cwd=work, capture_output=True, text=True)
    if check and p.returncode != 0:
        sys.stdout.write(p.stdout[-4000:] + p.stderr[-4000:])
        raise SystemExit(f"mutmut {' '.join(args)} failed in {work} ({p.returncode})")
    return p.stdout


STATUS = {1: "killed", 3: "killed", 0: "survived", 5: "no tests", 33: "no tests",
          34: "skipped", 36: "timeout", -24: "timeout", 24: "timeout", 152: "timeout",
          255: "timeout", -11: "segfault", -9: "segfault", None: "not checked"}


def results(work: str, group: Group) -> dict[str, str]:
    """{mutant name: status} of the group's mutants (its functions only, when named)."""
    wanted = [mangled(f) for f in group.functions]
    out = {}
    for module in group.modules:
        meta = os.path.join(work, "mutants", "figaroh_ros", module + ".meta")
        with open(meta) as f:
            codes = json.load(f)["exit_code_by_key"]
        for key, code in codes.items():
            if not wanted or re.sub(r"__mutmut_\d+$", "", key) in wanted:
                out[key] = STATUS.get(code, "suspicious")
    return out


def mutated_line(diff: str) -> str:
    """The first added line of a mutant's diff, spaces collapsed."""
    for line in diff.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            return " ".join(line[1:].split())
    return ""


def equivalents() -> set[tuple[str, str]]:
    """(function, mutated line) of each equivalent mutant the page lists: the rows of its
    table (section "Equivalent mutants") whose first cell is a backquoted function and
    second a backquoted line."""
    rows = set()
    if not os.path.isfile(PAGE):
        return rows
    with open(PAGE, encoding="utf-8") as f:
        text = f.read()
    for line in text.split("\n## Equivalent mutants", 1)[-1].splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if len(cells) >= 3 and re.fullmatch(r"`[^`]+`", cells[0]) \
                and re.fullmatch(r"`.+`", cells[1]):
            rows.add((cells[0][1:-1], " ".join(cells[1][1:-1].replace("\\|", "|").split())))
    return rows


def run_group(name: str, group: Group, run: bool = True,
              again: bool = False) -> dict[str, tuple[str, str]]:
    """{mutant: (status, diff)} of one group, after running it (``run``), after running
    again the mutants its last run left alive (``again``), or as its last run left it."""
    print(f"== {name}: {group.about} ({', '.join(group.modules)})", flush=True)
    work = os.path.join(WORK, name)
    if run and not again:
        work = prepare(name, group)
        args = ["run", "--max-children", "1"]
        if group.functions:
            args += [mangled(f) + "__mutmut_*" for f in group.functions]
        mutmut(work, *args)
    elif not os.path.isdir(os.path.join(work, "mutants")):
        raise SystemExit(f"no run of {name} to report (build/mutants/{name})")
    elif again:
        # the tests as they are now, which tests call what collected anew, and only the
        # mutants the last run did not kill run again
        with open(os.path.join(work, "setup.cfg"), "w") as f:
            f.write(setup_cfg(group))
        shutil.copytree(os.path.join(ROOT, "test"), os.path.join(work, "mutants", "test"),
                        dirs_exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            os.remove(os.path.join(work, "mutants", "mutmut-stats.json"))
        names = [k for k, s in results(work, group).items() if s not in ("killed", "timeout")]
        if names:
            mutmut(work, "run", "--max-children", "1", *names)
    out = {}
    for key, status in sorted(results(work, group).items()):
        diff = mutmut(work, "show", key, check=False) if status != "killed" else ""
        out[key] = (status, diff)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("groups", nargs="*", help=f"of {', '.join(GROUPS)} (default: all)")
    ap.add_argument("--list", action="store_true", help="print the groups and exit")
    ap.add_argument("--report", action="store_true",
                    help="the score of the last run of the groups, without running them")
    ap.add_argument("--again", action="store_true",
                    help="run again, against the tests as they are now, only the mutants "
                    "the last run of the groups left alive")
    a = ap.parse_args(argv)
    unknown = [g for g in a.groups if g not in GROUPS]
    if unknown:
        ap.error(f"unknown groups {unknown}: expected some of {list(GROUPS)}")
    if a.list:
        for name, g in GROUPS.items():
            print(f"{name}: {g.about}\n  modules: {', '.join(g.modules)}"
                  + (f"\n  functions: {', '.join(g.functions)}" if g.functions else "")
                  + f"\n  tests: {' '.join(g.tests + g.select)}")
        return 0
    equivalent = equivalents()
    used: set[tuple[str, str]] = set()
    killed = total = listed = unchecked = 0
    alive = []
    for name in a.groups or list(GROUPS):
        group_killed = group_total = 0
        for key, (status, diff) in run_group(name, GROUPS[name], not a.report, a.again).items():
            if status == "not checked":         # a run stopped before it
                unchecked += 1
                continue
            total += 1
            if status in ("killed", "timeout"):
                killed += 1
                group_killed += 1
                group_total += 1
                continue
            mark = (readable(key), mutated_line(diff))
            if mark in equivalent:
                used.add(mark)
                listed += 1
                continue
            group_total += 1
            alive.append((key, status, diff))
        print(f"   {group_killed} of {group_total} non-equivalent mutants killed", flush=True)
    for key, status, diff in alive:
        print(f"\n--- {status}: {key} ({readable(key)})\n{diff.strip()}")
    scored = total - listed
    score = killed / scored if scored else 1.0
    print(f"\nmutants: {total}, equivalent (listed in docs/mutation-testing.md): {listed}, "
          f"killed: {killed} of {scored} = {100 * score:.1f} % (target "
          f"{100 * TARGET:.0f} %), survived: {len(alive)}"
          + (f", not checked (the run stopped): {unchecked}" if unchecked else ""))
    stale = sorted(equivalent - used) if not a.groups else []
    for function, line in stale:
        print(f"listed as equivalent but no such surviving mutant: {function}: {line}")
    return 0 if score >= TARGET and not stale and not unchecked else 1


if __name__ == "__main__":
    sys.exit(main())

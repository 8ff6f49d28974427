"""The command line's start-up: the parser is built from names alone, so ``--help`` and a
refused argument load no task, no numerical library; every verb's handler name points at
a real function; the names the parser keeps match the modules that define them."""
from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest

from figaroh_ros.cli import parsers
from figaroh_ros.cli.main import build_parser
from figaroh_ros.config.kinds import KINDS
from figaroh_ros.io.export import FORMATS

HEAVY = ("figaroh_ros.tasks", "figaroh_ros.model", "figaroh_ros.config.", "numpy", "scipy",
         "pydantic", "pinocchio", "matplotlib", "cvxpy", "dask", "cyipopt", "rosbags", "rclpy")
PROBE = """
import json, sys
from figaroh_ros.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(sys.modules)))
"""


def _verbs() -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in build_parser()._actions
               if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _loaded(*argv: str) -> list[str]:
    out = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True,
                         text=True, check=True).stdout.splitlines()[-1]
    return [m for m in json.loads(out) if m.startswith(HEAVY)]


@pytest.mark.parametrize("argv", [["--help"], ["identify", "--help"],
                                  ["calibrate", "--help"], ["call", "calibrate", "--help"],
                                  ["config-schema", "nope"], ["export", "--help"],
                                  ["batch", "identify"]])
def test_help_and_refused_arguments_load_nothing_heavy(argv):
    assert _loaded(*argv) == []


def test_every_verb_names_a_function_that_exists():
    verbs = _verbs()
    handlers = {name: p.get_default("func") for name, p in verbs.items()}
    assert set(verbs) - {"launch", "demo"} == {n for n, h in handlers.items() if h}
    for name, h in handlers.items():
        if h is not None:
            assert isinstance(h, parsers.Handler), name
            assert callable(h.load()), f"{name}: {h.module}:{h.name}"


def test_a_handler_outside_the_cli_is_refused():
    with pytest.raises(ValueError, match="figaroh_ros.tasks.calibrate:run"):
        parsers.Handler("figaroh_ros.tasks.calibrate:run")


def test_the_parser_names_match_their_modules():
    assert parsers.CONFIG_KINDS == tuple(KINDS)
    assert parsers.EXPORT_FORMATS == tuple(FORMATS)

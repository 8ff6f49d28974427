"""The command line's start-up: the parser is built from names alone, so ``--help`` and a
refused argument load no task, no numerical library; every verb's handler name points at
a real function; the names the parser keeps match the modules that define them."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT

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


# ------------------------------------------------------------------ what a task loads
# Each command imports what its task uses: the package __init__ files name their public
# objects lazily (PEP 562), the filters needing scipy.signal live in their own module,
# and the posture planner's IPOPT is not reached by a calibration.
RUN = """
import json, sys
from figaroh_ros.cli.main import main
code = main(sys.argv[1:])
print(json.dumps([code, sorted(sys.modules)]))
"""


def _run(*argv: str) -> tuple[int, set[str]]:
    r = subprocess.run([sys.executable, "-c", RUN, *argv], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    code, modules = json.loads(r.stdout.splitlines()[-1])
    return code, set(modules)


def _imported(module: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", f"import json, sys, {module}; "
                          "print(json.dumps(sorted(sys.modules)))"],
                         capture_output=True, text=True, check=True).stdout
    return set(json.loads(out.splitlines()[-1]))


@pytest.mark.parametrize("module, absent", [
    ("figaroh_ros.identification", ["figaroh_ros.identification.arrays", "numpy"]),
    ("figaroh_ros.calibration", ["figaroh_ros.calibration.procedure", "numpy"]),
    ("figaroh_ros.excitation", ["figaroh_ros.excitation.design", "numpy"]),
    ("figaroh_ros.phenomena", ["figaroh_ros.phenomena.backlash_identification", "numpy"]),
    ("figaroh_ros.model.sources", ["figaroh_ros.model.loading"]),
    ("figaroh_ros.identification.signals", ["scipy.signal", "scipy"]),
    ("figaroh_ros.identification.base_parameters", ["scipy.signal", "scipy.optimize",
                                                    "figaroh_ros.identification.fit"]),
    ("figaroh_ros.io.bags", ["scipy.signal", "figaroh_ros.identification.filters"]),
    ("figaroh_ros.io.reference", ["pinocchio", "figaroh_ros.identification.parameters"]),
    ("figaroh_ros.tasks.calibrate", ["scipy.signal", "cyipopt", "cvxpy", "matplotlib",
                                     "figaroh_ros.calibration.postures"]),
    ("figaroh_ros.tasks.identify", ["cvxpy", "matplotlib"]),
])
def test_a_module_loads_only_what_it_uses(module, absent):
    loaded = _imported(module)
    assert module in loaded
    assert sorted(loaded & set(absent)) == []


def test_the_lazy_names_are_the_objects_of_their_modules():
    import figaroh_ros.identification as ident
    from figaroh_ros.identification import arrays, filters, signals
    assert ident.identify is arrays.identify and "identify" in dir(ident)
    assert signals.decimate is filters.decimate
    with pytest.raises(AttributeError, match="no_such_name"):
        ident.no_such_name
    with pytest.raises(AttributeError, match="no_such_filter"):
        signals.no_such_filter


def test_calibrate_loads_neither_the_filters_nor_the_posture_planner(tmp_path):
    """TIAGo's full calibration (the published recording) runs to its end without
    scipy.signal, scipy.stats' filters, IPOPT or cvxpy; the solver and the plots (asked for
    by default) are loaded, so the probe sees what the run imports on the way."""
    out = tmp_path / "cal"
    code, loaded = _run("calibrate", os.path.join(ROOT, "config", "tiago_calibration_full.yaml"),
                        "--out", str(out))
    assert (out / "result.yaml").is_file()
    assert {"scipy.optimize", "matplotlib", "figaroh_ros.calibration.solve"} <= loaded
    assert sorted(loaded & {"scipy.signal", "cyipopt", "cvxpy", "figaroh_ros.identification.fit",
                            "figaroh_ros.identification.filters",
                            "figaroh_ros.calibration.postures"}) == [], code

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
# the posture planner's IPOPT is not reached by a calibration, the bag readers (rosbags,
# mcap) are loaded through figaroh_ros.io only for a bag, and the config sections several
# kinds share live apart from the identification config.
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
                                     "figaroh_ros.calibration.postures", "rosbags", "mcap",
                                     "figaroh_ros.io.bags"]),
    ("figaroh_ros.tasks.identify", ["cvxpy", "matplotlib", "rosbags", "mcap",
                                    "figaroh_ros.io.bags", "figaroh_ros.io.bag_backend"]),
    ("figaroh_ros.config.gains", ["scipy.optimize", "figaroh_ros.identification.tls"]),
    ("figaroh_ros.config.calibration", ["figaroh_ros.config.identification", "scipy"]),
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
    import figaroh_ros.io
    from figaroh_ros.io import bag_backend, bag_model, bags
    assert (figaroh_ros.io.bags, figaroh_ros.io.bag_model, figaroh_ros.io.bag_backend) == \
        (bags, bag_model, bag_backend) and "bags" in dir(figaroh_ros.io)


def test_calibrate_loads_neither_the_filters_nor_the_posture_planner(tmp_path):
    """TIAGo's full calibration (the published recording) runs to its end without
    scipy.signal, scipy.stats' filters, IPOPT, cvxpy or the bag readers (CSV postures);
    the solver and the plots (asked for by default) are loaded, so the probe sees what the
    run imports on the way."""
    out = tmp_path / "cal"
    code, loaded = _run("calibrate", os.path.join(ROOT, "config", "tiago_calibration_full.yaml"),
                        "--out", str(out))
    assert (out / "result.yaml").is_file()
    assert {"scipy.optimize", "matplotlib", "figaroh_ros.calibration.solve"} <= loaded
    assert sorted(loaded & {"scipy.signal", "cyipopt", "cvxpy", "figaroh_ros.identification.fit",
                            "figaroh_ros.identification.filters",
                            "figaroh_ros.calibration.postures", "rosbags", "mcap",
                            "figaroh_ros.io.bags", "figaroh_ros.io.bag_model"}) == [], code


# ------------------------------------------------------------------ a refused config
# The verbs validate their config before importing their task: a config refused at once
# (the fuzz and error suites start many) loads no task, no scipy (the gains config checks
# its payload box through identification.payload_feasibility, which names the TLS result
# as an annotation only), no plots and no bag reader.
REFUSED_LOADS = ("figaroh_ros.tasks.", "scipy", "matplotlib", "cvxpy", "cyipopt", "rosbags",
                 "figaroh_ros.identification.tls", "figaroh_ros.calibration.solve")


def _refused_config(tmp_path, shipped: str, change) -> str:
    """The shipped config ``shipped`` (its URDF made absolute) changed by ``change``."""
    import yaml
    cfg = yaml.safe_load(open(os.path.join(ROOT, "config", shipped)).read())
    cfg["robot"]["urdf"] = os.path.join(ROOT, "config", cfg["robot"]["urdf"])
    change(cfg)
    path = tmp_path / f"refused_{shipped}"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def _bad_payload_box(cfg):
    cfg["tls"] = {"unloaded": "u", "loaded": "l", "payload_mass": 1.0,
                  "payload_box": {"lower": [0.1, 0.0, 0.0], "upper": [0.0, 0.1, 0.1]}}


@pytest.mark.parametrize("verb, shipped, change", [
    ("identify-gains", "staubli_tx40.yaml", _bad_payload_box),
    ("identify", "staubli_tx40.yaml", lambda cfg: cfg["data"].update(no_such_field=1)),
    ("calibrate", "tiago_calibration_offset.yaml",
     lambda cfg: cfg["calibration"].update(no_such_field=1)),
])
def test_a_refused_config_loads_no_task(tmp_path, verb, shipped, change):
    config = _refused_config(tmp_path, shipped, change)
    code, loaded = _run(verb, config, "--out", str(tmp_path / "out"))
    assert code == 2 and not (tmp_path / "out").exists()
    assert sorted(m for m in loaded if m.startswith(REFUSED_LOADS)) == []


def test_the_config_schemas_load_no_solver():
    """``config-schema`` builds every kind's models (config.kinds): the gains config's
    payload box check reaches identification.payload_feasibility without scipy."""
    code, loaded = _run("config-schema", "gains")
    assert code == 0
    assert sorted(m for m in loaded if m.startswith(REFUSED_LOADS)) == []

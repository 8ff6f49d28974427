"""``figaroh-ros batch identify|calibrate CONFIG BAG_OR_DIR...``: a fleet's recordings
(several robots, many days), one identification or geometric calibration each, run in
parallel -- a local process pool, or a Dask distributed cluster when a scheduler address is
given -- and gathered into one table (robot, date, model hash, RMSE: N.m for dynamics, m
for geometry (held out when the config holds postures out), the base-parameter definition's
sha256 (``identification/base_definition.py``: the same names for every recording of one
model), every base parameter with its standard deviation; for geometry the joints' only,
see ``FRAME_TERM``) and a drift report.

Robot and date of a recording: the folder holding the bag (fleet layout
``ROBOT/BAG/metadata.yaml``) and the bag's first stamp.  Drift of a parameter of one
robot: its value ``p_k`` against the reference ``p_ref``, the inverse-variance weighted
mean of that robot's first third of recordings (at least one), in units of their joint
uncertainty ``z_k = |p_k - p_ref| / sqrt(s_k^2 + s_ref^2)``; a parameter *moved* when the
robot's last two recordings both have ``z > 3`` (one is chance among many parameters).
"""
from __future__ import annotations

import concurrent.futures
import csv
import datetime
import multiprocessing
import os
import re

import numpy as np
import yaml

from figaroh_ros.config.calibration import load_calibration_config
from figaroh_ros.config.identification import load_config
from figaroh_ros.errors import DataError, FigarohError
from figaroh_ros.identification.base_definition import check_same_definition
from figaroh_ros.io.bag_index import STORAGES, index_bag, locate
from figaroh_ros.io.output_dir import staged_output
from figaroh_ros.model.sources import model_sha256
from figaroh_ros.progress import Stage, reporter
from figaroh_ros.tasks import TaskOutcome
from figaroh_ros.tasks.calibrate import calibrate_config
from figaroh_ros.tasks.identify import identify_config, robot_from_config
from figaroh_ros.tasks.robot_model import resolved_robot
from figaroh_ros.threads import limited_threads

DRIFT_Z = 3.0
# the measurement and tool frames are registered anew in every calibration (and a mocap
# system is re-calibrated, a marker re-glued between days): their variations are not
# comparable across recordings, so a calibration's table and drift hold the joints' only
FRAME_TERM = re.compile(r"\b(base|tool)_")


def _is_bag_folder(folder: str, files: list[str]) -> bool:
    return "metadata.yaml" in files or any(f.endswith(tuple(STORAGES)) for f in files)


def recordings(paths: list[str]) -> list[str]:
    """Every rosbag2 bag named or found under ``paths``, each once, in order: a bag
    folder (with ``metadata.yaml``, or bare storage files as published), one storage file
    (``.db3``, ``.mcap``), or a folder of such bags."""
    found = []
    for p in paths:
        if os.path.isfile(p) or (os.path.isdir(p) and _is_bag_folder(p, os.listdir(p))):
            found.append(locate(p).given)
        elif os.path.isdir(p):
            bags = sorted(d for d, _, files in os.walk(p) if _is_bag_folder(d, files))
            if not bags:
                raise DataError(f"{p}: no rosbag2 bag (a folder with metadata.yaml or "
                                ".db3/.mcap files) in it")
            found += [os.path.abspath(b) for b in bags]
        else:
            raise DataError(f"{p}: neither a rosbag2 bag nor a folder of bags")
    return list(dict.fromkeys(found))


def bag_date(bag: str) -> str:
    """The bag's first stamp (its metadata.yaml, else its storage's own index), ISO 8601
    UTC."""
    where = os.path.join(bag, "metadata.yaml")
    try:
        if os.path.isfile(where):
            with open(where) as f:
                info = yaml.safe_load(f)["rosbag2_bagfile_information"]
        else:
            where, info = bag, index_bag(bag)
        ns = int(info["starting_time"]["nanoseconds_since_epoch"])
    except (OSError, KeyError, TypeError, ValueError, yaml.YAMLError) as exc:
        raise DataError(f"{where}: no starting time ({exc})") from None
    return datetime.datetime.fromtimestamp(ns / 1e9, datetime.timezone.utc).isoformat()


def identify_one(config: str, bag: str) -> dict:
    """One row of the table (or the recording's error): runs in a worker process."""
    row = {"robot": os.path.basename(os.path.dirname(bag)), "recording": bag}
    try:
        with limited_threads():
            row["date"] = bag_date(bag)
            cfg = load_config(config, bag=bag)
            result = identify_config(cfg)
            s = result.to_dict()
            row["model_sha256"] = model_sha256(robot_from_config(cfg).urdf_text())[:12]
    except FigarohError as exc:
        return dict(row, error=f"{type(exc).__name__}: {exc}")
    row["rmse"] = float(np.sqrt(np.mean(np.square(list(s["rmse"].values())))))
    row["base_definition"] = s["base_definition"]["sha256"]
    row["parameters"] = {r["name"]: (r["value"], r["std"]) for r in (s.get("wls") or s["ols"])}
    return row


def calibrate_one(config: str, bag: str) -> dict:
    """One row of a geometric calibration (or the recording's error): in a worker."""
    row = {"robot": os.path.basename(os.path.dirname(bag)), "recording": bag}
    try:
        with limited_threads():
            row["date"] = bag_date(bag)
            cfg, _ = resolved_robot(load_calibration_config(config, bags=[bag]), config,
                                         [bag])
            s = calibrate_config(cfg).to_dict()
            with open(cfg.robot.urdf, encoding="utf-8") as f:
                row["model_sha256"] = model_sha256(f.read())[:12]
    except FigarohError as exc:
        return dict(row, error=f"{type(exc).__name__}: {exc}")
    row["rmse"] = 1e-3 * s.get("rmse_validation_mm", s["rmse_train_mm"])
    row["parameters"] = {r["name"]: (r["value"], r["std"]) for r in s["parameters"]
                         if not FRAME_TERM.search(r["expression"])}
    return row


TASKS = {"identify": identify_one, "calibrate": calibrate_one}


def run_all(config: str, bags: list[str], scheduler: str | None = None,
            workers: int | None = None, kind: str = "identify") -> list[dict]:
    """Rows of every recording, in the order of ``bags``: on the Dask cluster at
    ``scheduler`` or on ``workers`` local processes (default: one per core)."""
    one = TASKS[kind]
    if scheduler is not None:
        from dask.distributed import Client  # heavy optional dependency: only with a cluster
        with Client(scheduler) as client:
            return client.gather(client.map(one, [config] * len(bags), bags, pure=False))
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(workers, mp_context=context) as pool:
        return list(pool.map(one, [config] * len(bags), bags))


def drift(rows: list[dict]) -> list[dict]:
    """Per robot and parameter: the reference, the last value and its ``z``, the dates
    with ``z > DRIFT_Z`` and whether it moved (see the module's docstring).  Parameters
    are lined up by name, which means one thing only within one base-parameter
    definition: rows of two definitions are refused (a :class:`DataError` naming both)."""
    check_same_definition({r["recording"]: r.get("base_definition") for r in rows},
                          "batch: drift report")
    out = []
    for robot in sorted({r["robot"] for r in rows}):
        mine = sorted((r for r in rows if r["robot"] == robot), key=lambda r: r["date"])
        ref = mine[:max(1, len(mine) // 3)]
        for name in mine[0]["parameters"]:
            out.append(_parameter_drift(robot, name, mine, ref))
    return out


def _parameter_drift(robot: str, name: str, mine: list[dict], ref: list[dict]) -> dict:
    v = np.array([r["parameters"][name][0] for r in mine])
    s = np.array([r["parameters"][name][1] for r in mine])
    w = 1.0 / np.maximum(np.array([r["parameters"][name][1] for r in ref]), 1e-300) ** 2
    p_ref = float(np.sum(w * v[:len(ref)]) / np.sum(w))
    s_ref = float(1.0 / np.sqrt(np.sum(w)))
    z = np.abs(v - p_ref) / np.sqrt(s ** 2 + s_ref ** 2)
    return {"robot": robot, "parameter": name, "reference": p_ref, "reference_std": s_ref,
            "last": float(v[-1]), "last_std": float(s[-1]), "z_last": float(z[-1]),
            "beyond": [mine[k]["date"] for k in np.flatnonzero(z > DRIFT_Z)],
            "moved": bool(len(mine) > len(ref) + 1 and np.all(z[-2:] > DRIFT_Z))}


def write_table(rows: list[dict], path: str) -> None:
    """One line per recording: robot, date, model hash, RMSE, base-parameter definition
    (sha256, identification only), each parameter and std; rows of two definitions are
    refused (their parameters do not line up)."""
    check_same_definition({r["recording"]: r.get("base_definition") for r in rows},
                          "batch: table")
    names = list(dict.fromkeys(n for r in rows for n in r["parameters"]))
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["robot", "date", "recording", "model_sha256", "rmse", "base_definition"]
                   + [c for n in names for c in (n, f"{n}_std")])
        for r in sorted(rows, key=lambda r: (r["robot"], r["date"])):
            p = r["parameters"]
            w.writerow([r["robot"], r["date"], r["recording"], r["model_sha256"],
                        f"{r['rmse']:.6g}", r.get("base_definition") or ""]
                       + [f"{x:.9g}" for n in names for x in p.get(n, (np.nan, np.nan))])


def plot_drift(rows: list[dict], report: list[dict], folder: str) -> list[str]:
    """Per robot, every moved parameter over time with its 3-sigma band (PNG)."""
    from matplotlib.figure import Figure  # heavy optional dependency: only for plots
    paths = []
    for robot in sorted({d["robot"] for d in report if d["moved"]}):
        moved = [d for d in report if d["robot"] == robot and d["moved"]]
        mine = sorted((r for r in rows if r["robot"] == robot), key=lambda r: r["date"])
        fig = Figure(figsize=(7, 2.2 * len(moved)))
        axes = fig.subplots(len(moved), 1, squeeze=False)
        for ax, d in zip(axes[:, 0], moved):
            v, s = (np.array([r["parameters"][d["parameter"]][k] for r in mine])
                    for k in (0, 1))
            x = np.arange(len(mine))
            ax.fill_between(x, v - DRIFT_Z * s, v + DRIFT_Z * s, alpha=0.3)
            ax.plot(x, v, "o-")
            ax.axhline(d["reference"], color="k", lw=0.8)
            ax.set_ylabel(d["parameter"])
        axes[-1, 0].set_xticks(np.arange(len(mine)), [r["date"][:10] for r in mine],
                               rotation=45, fontsize=7)
        fig.tight_layout()
        paths.append(os.path.join(folder, f"drift_{robot}.png"))
        fig.savefig(paths[-1], dpi=80)
    return paths


def run(config_path: str, inputs: list[str], *, out: str, scheduler: str | None = None,
        workers: int | None = None, progress=None, kind: str = "identify") -> TaskOutcome:
    """Identify (``kind`` identify) or calibrate (``calibrate``) every recording of
    ``inputs``; write ``out``/batch.csv, drift.yaml and the drift plots (all or nothing).
    A recording that fails is listed in drift.yaml's ``failed`` with its error; the batch
    fails only when none succeeds."""
    say = reporter(progress)
    if kind not in TASKS:
        raise DataError(f"batch: kind {kind!r} is none of {sorted(TASKS)}")
    bags = recordings(inputs)
    if kind == "identify":                     # the config's own errors, before any work
        load_config(config_path, bag=bags[0])
    else:
        load_calibration_config(config_path, bags=[bags[0]])
    where = f"the Dask cluster at {scheduler}" if scheduler else "local processes"
    say(Stage.ESTIMATION, 0.05, f"{len(bags)} recordings on {where}")
    rows = run_all(config_path, bags, scheduler, workers, kind)
    good = [r for r in rows if "error" not in r]
    failed = [{"recording": r["recording"], "error": r["error"]} for r in rows if "error" in r]
    if not good:
        raise DataError(f"no recording could be used ({kind}); first error: "
                        f"{failed[0]['error']}")
    report = drift(good)            # refuses rows of two base-parameter definitions
    with staged_output(out) as st:
        write_table(good, st.path("batch.csv"))
        with open(st.path("drift.yaml"), "w") as f:
            yaml.safe_dump({"z_threshold": DRIFT_Z, "parameters": report, "failed": failed},
                           f, sort_keys=False)
        plots = [st.final(os.path.basename(p)) for p in plot_drift(good, report, st.dir)]
    summary = {"recordings": len(bags), "identified": len(good), "failed": len(failed),
               "robots": sorted({r["robot"] for r in good}),
               "moved": [f"{d['robot']}: {d['parameter']}" for d in report if d["moved"]]}
    say(Stage.EXPORTING, 1.0, f"wrote {st.final('batch.csv')}")
    return TaskOutcome(summary, {"table": st.final("batch.csv"),
                                 "drift": st.final("drift.yaml"), "plots": plots})

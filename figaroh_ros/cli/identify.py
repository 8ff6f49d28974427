"""``figaroh-ros identify``: dynamic identification from a recording
(``figaroh_ros.tasks.identify`` does the work; this module prints).  The config is
validated before the task (the fit, scipy.signal, the plots) is imported, so that a
refused config costs little."""
from __future__ import annotations

import os

from figaroh_ros import tasks
from figaroh_ros.cli.output import print_publication, say
from figaroh_ros.config.identification import load_config
from figaroh_ros.io.reference import compare, markdown_table
from figaroh_ros.io.result_reference import read_any_reference
from figaroh_ros.io.report import format_cross_validation, format_table, physical_summary


def print_identification(d: dict) -> None:
    print(format_table(d))
    print(f"condition number: {d['condition_number']:.4g}")
    print("RMSE per joint [N.m]: " + ", ".join(f"{k} {v:.4g}" for k, v in d["rmse"].items()))
    if "validation_rmse" in d:
        print("hold-out RMSE [N.m]: " + ", ".join(
            f"{k} {v:.4g}" for k, v in d["validation_rmse"].items()))
    for key, what in (("validation_relative_error", "least-squares estimate"),
                      ("nominal_validation_relative_error", "nominal")):
        if key in d:
            print(f"hold-out relative error ({what}) [%]: " + ", ".join(
                f"{k} {100 * v:.2f}" for k, v in d[key].items()))
    if "friction_selection" in d and d["friction_selection"]["chosen"] == "per_joint":
        fs = d["friction_selection"]
        print(f"chosen by {fs['chosen_by']}: cut-off {fs['position_cutoff_hz']:g} Hz, "
              f"{fs['method'].upper()}, friction " + ", ".join(
                  f"{j} {v['model']}" for j, v in fs["joints"].items()))
        if "estimate" in fs:
            e = fs["estimate"]
            print(f"prediction by the {e['chosen'].replace('_', ' ')} estimate "
                  f"({e['chosen_by']}); hold-out relative error [%]: " + ", ".join(
                      f"{k} {100 * v:.2f}" for k, v in e["validation_relative_error"].items()))
    elif "friction_selection" in d:
        print(f"friction model chosen on the held-out data: {d['friction_selection']['chosen']}")
    if "cross_validation" in d:
        print(format_cross_validation(d))
    print(f"essential parameters ({len(d['essential_parameters'])}):")
    print(format_table(d, "essential_parameters"))
    if "physical" in d:
        print(physical_summary(d["physical"], d.get("nominal_validation_rmse")))


def print_reference(d: dict, path: str) -> None:
    """Ours beside the reference, and how many well-identified ones lie within 3 std."""
    ref = read_any_reference(path)[0]
    rows = {m: compare(d[m], ref, m) for m in ("ols", "wls") if m in d}
    if "wls" in rows:
        print("\nWell-identified reference parameters (std < 5 %), ours vs reference; "
              "z = difference in reference standard deviations:")
        print(markdown_table(rows["ols"], rows["wls"], only_well=5.0))
    for m in rows:
        c = d["reference"][m]
        print(f"{m.upper()}: {c['within_3_std']} of {c['well_identified']} well-identified "
              f"reference parameters within 3 std; {c['base_parameters']} base parameters "
              f"(reference {c['reference_parameters']})")


def cmd_identify(args) -> int:
    cfg = load_config(args.config, args.data, args.bag, args.urdf)   # refused before the task
    out = args.out or os.path.join("results", cfg.robot.name)
    outcome = tasks.identify.run(args.config, data=args.data, bag=args.bag, urdf=args.urdf,
                                 out=out, reference=args.reference, validate=args.validate,
                                 reference_model=args.reference_model,
                                 reference_friction=args.reference_friction, progress=say)
    print_identification(outcome.summary)
    if "reference_model" in outcome.summary:
        rel = outcome.summary["reference_model"]["validation_relative_error"]
        with_friction = (f" + {args.reference_friction}" if args.reference_friction
                         else "")
        print(f"hold-out relative error ({args.reference_model}{with_friction}) [%]: "
              + ", ".join(f"{k} {100 * v:.2f}" for k, v in rel.items()))
    if args.reference:
        print_reference(outcome.summary, args.reference)
    print_publication(outcome.summary)
    return 0

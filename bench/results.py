"""Where a benchmark of ``make bench`` leaves its numbers: ``bench/measured/<name>.json``,
one row per case (what was timed, ours, the baseline, the ratio baseline / ours, the
number of runs whose median each is).  ``tools/gen_docs.py`` renders them as
``docs/performance.md``; the files hold no date and no path, so that a run that measures
the same numbers changes nothing."""
from __future__ import annotations

import json
import math
import os
import sys

import numpy as np

FOLDER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "measured")


def _number(x, digits: int):
    if x is None:
        return None
    x = float(x)
    if not math.isfinite(x):
        return None
    return float(f"{x:.{digits}g}")


def row(case: str, unit: str, ours, baseline=None, runs: int = 1, digits: int = 3) -> dict:
    """One measured case: the medians of ``ours`` and ``baseline`` (lists of runs, or
    single numbers), and the median of their paired ratios baseline / ours."""
    o = np.atleast_1d(np.asarray(ours, dtype=float)) if ours is not None else None
    b = np.atleast_1d(np.asarray(baseline, dtype=float)) if baseline is not None else None
    ratio = None
    if o is not None and b is not None:
        ratio = np.median(b / o) if len(b) == len(o) else np.median(b) / np.median(o)
    return {"case": case, "unit": unit, "runs": int(runs),
            "ours": _number(np.median(o), digits) if o is not None else None,
            "baseline": _number(np.median(b), digits) if b is not None else None,
            "ratio": _number(ratio, digits)}


def record(name: str, title: str, baseline: str, rows: list[dict]) -> str:
    """Write ``bench/measured/<name>.json``; its path.  ``baseline``: what the baseline
    column is ("" when the benchmark has none)."""
    os.makedirs(FOLDER, exist_ok=True)
    path = os.path.join(FOLDER, f"{name}.json")
    data = {"name": name, "cores": os.cpu_count(), "title": title, "baseline": baseline,
            "command": " ".join(["python", f"bench/{os.path.basename(sys.argv[0])}"]
                                + sys.argv[1:]), "rows": rows}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, sort_keys=True, ensure_ascii=False)
        f.write("\n")
    return path

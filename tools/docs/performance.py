"""``docs/performance.md``: the table of the last ``make bench``, from the results each
benchmark writes (``bench/measured/*.json``, ``bench/results.py``)."""
from __future__ import annotations

import glob
import json
import os

from tools.docs.markdown import cell, note, table


def _n(x) -> str:
    if x is None:
        return ""
    return f"{x:g}"


def render(root: str) -> str:
    paths = sorted(glob.glob(os.path.join(root, "bench", "measured", "*.json")))
    out = [note("the results `make bench` writes (`bench/measured/*.json`)"),
           "# Performance", "",
           "What `make bench` measured on the machine that last ran it: each number is the median of the runs given, ours and the baseline "
           "interleaved in the same process or run back to back, so that the ratio "
           "baseline / ours is paired. The baseline is FIGAROH 1.0.2 (`pip install "
           "figaroh==1.0.2`, which `make bench` does) or the named alternative. Times "
           "depend on the machine; the ratios much less.", "",
           "Run them all with `make bench` (it ends by regenerating this page), or one "
           "with its command.", ""]
    if not paths:
        return "\n".join(out + ["(no results: run `make bench`)"]) + "\n"
    for path in paths:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        out += [f"## {data['title']}", "",
                f"`{data['command']}`, {data['cores']} cores"
                + (f"; baseline: {data['baseline']}." if data.get("baseline") else "."), ""]
        has_base = any(r.get("baseline") is not None for r in data["rows"])
        header = ["case", "unit", "figaroh_ros"] + \
            (["baseline", "baseline / ours"] if has_base else []) + ["runs"]
        rows = []
        for r in data["rows"]:
            rows.append([cell(r["case"]), r["unit"], _n(r["ours"])] +
                        ([_n(r.get("baseline")), _n(r.get("ratio"))] if has_base else []) +
                        [str(r["runs"])])
        out += table(header, rows, "ll" + "r" * (len(header) - 2)) + [""]
    return "\n".join(out).rstrip("\n") + "\n"

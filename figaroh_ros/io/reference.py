"""Side-by-side comparison of identified base parameters with a published reference.

The reference CSV has no header; each row is
``expression, OLS value, OLS std %, WLS value, WLS std %`` (FIGAROH's TX40 table).
Rows are matched by the *leading* parameter of each grouped expression (``Izz1`` for
``Izz1 + Ia1 + Iyy2 + ...``), which names the base parameter whatever order the other
terms are printed in.
"""
from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass

from figaroh_ros.errors import DataError
from figaroh_ros.io.csv_table import read_text


@dataclass
class Row:
    name: str
    ours: float
    ours_std_percent: float
    ref: float
    ref_std_percent: float

    @property
    def z(self) -> float:
        """Difference in reference standard deviations."""
        sd = abs(self.ref) * self.ref_std_percent / 100.0
        return (self.ours - self.ref) / sd if sd > 0 else float("inf")


def leading_name(expression: str) -> str:
    return expression.split()[0]


def read_reference(path: str) -> dict[str, dict]:
    """Leading parameter name -> {expression, ols: (value, std %), wls: (value, std %)};
    a :class:`DataError` names the file and row that cannot be read."""
    out = {}
    for i, row in enumerate(csv.reader(io.StringIO(read_text(path, "reference file"),
                                                   newline="")), 1):
        if not row:
            continue
        try:
            numbers = [float(v) for v in row[1:5]]
            if len(numbers) != 4 or not row[0].split():
                raise ValueError(f"{len(row)} fields")
            if not all(math.isfinite(v) for v in numbers) or min(numbers[1], numbers[3]) < 0:
                raise ValueError(f"values {row[1:5]} are not finite, or a std % is negative")
        except ValueError as exc:
            raise DataError(f"{path} row {i}: expected expression, OLS value, OLS std %, "
                            f"WLS value, WLS std % ({exc})") from None
        out[leading_name(row[0])] = {"expression": row[0], "ols": tuple(numbers[:2]),
                                     "wls": tuple(numbers[2:])}
    if not out:
        raise DataError(f"reference file {path} holds no parameter")
    return out


def compare(table: list[dict], reference: dict[str, dict], method: str) -> list[Row]:
    """Rows of ``table`` (result.yaml's list of {name, value, std_percent}) against the
    reference, in our order. Parameters missing from either side raise KeyError."""
    rows = []
    for r in table:
        key = leading_name(r["name"])
        ref_val, ref_sp = reference[key][method]
        rows.append(Row(key, r["value"], r["std_percent"], ref_val, ref_sp))
    missing = set(reference) - {r.name for r in rows}
    if missing:
        raise KeyError(f"reference parameters not identified: {sorted(missing)}")
    return rows


def markdown_table(ols_rows: list[Row], wls_rows: list[Row], only_well: float | None = None) -> str:
    lines = ["| base parameter | OLS ours | %σ | OLS ref | %σ | z | WLS ours | %σ | WLS ref | %σ | z |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for o, w in zip(ols_rows, wls_rows):
        if only_well is not None and min(o.ref_std_percent, w.ref_std_percent) >= only_well:
            continue
        lines.append(
            f"| {o.name} | {o.ours:.5g} | {o.ours_std_percent:.1f} | {o.ref:.5g} | "
            f"{o.ref_std_percent:.1f} | {o.z:+.2f} | {w.ours:.5g} | {w.ours_std_percent:.1f} | "
            f"{w.ref:.5g} | {w.ref_std_percent:.1f} | {w.z:+.2f} |")
    return "\n".join(lines)

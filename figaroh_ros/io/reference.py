"""Side-by-side comparison of identified base parameters with a published reference.

The reference CSV has no header; each row is
``expression, OLS value, OLS std %, WLS value, WLS std %`` (FIGAROH's TX40 table).
A base parameter is a linear combination of standard parameters (``Izz1 + 1.0*Ia1 +
0.05185*m3 ...``); ours and the reference's are matched by the whole combination: the same
standard parameters with the same coefficients (up to the published rounding,
:data:`COEF_ATOL` + :data:`COEF_RTOL`), whatever order the terms are printed in.  A
parameter of either side without its match is an error naming its expression and, when one
shares its leading parameter, the coefficient that differs.
"""
from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass

from figaroh_ros.errors import DataError
from figaroh_ros.io.csv_table import read_text
from figaroh_ros.io.expressions import linear_terms


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


COEF_ATOL = 1e-4        # published coefficients carry 4-6 decimals
COEF_RTOL = 1e-3


def leading_name(expression: str) -> str:
    return expression.split()[0]


def expression_terms(expression: str) -> dict[str, float]:
    """``{standard parameter: coefficient}`` of a grouped expression (the notations of
    :func:`figaroh_ros.io.reference_model.linear_terms`); a :class:`DataError` names what
    cannot be read."""
    return linear_terms(expression)


def expression_difference(a: dict[str, float], b: dict[str, float]) -> str:
    """"" when the two combinations are the same, else what differs (the first term)."""
    for name in sorted(set(a) | set(b)):
        if name not in a or name not in b:
            return f"{name} only in {'ours' if name in a else 'the reference'}"
        if abs(a[name] - b[name]) > COEF_ATOL + COEF_RTOL * max(abs(a[name]), abs(b[name])):
            return f"coefficient of {name}: {a[name]:g} vs {b[name]:g}"
    return ""


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
        try:
            terms = expression_terms(row[0])
        except DataError as exc:
            raise DataError(f"{path} row {i}: {exc}") from None
        out[leading_name(row[0])] = {"expression": row[0], "terms": terms,
                                     "ols": tuple(numbers[:2]), "wls": tuple(numbers[2:])}
    if not out:
        raise DataError(f"reference file {path} holds no parameter")
    return out


def _match(terms: dict[str, float], reference: dict[str, dict], free: set) -> str | None:
    """The reference key whose combination equals ``terms`` (None when none does)."""
    for key in sorted(free):
        if not expression_difference(terms, reference[key]["terms"]):
            return key
    return None


def compare(table: list[dict], reference: dict[str, dict], method: str) -> list[Row]:
    """Rows of ``table`` (result.yaml's list of {name, value, std_percent}) against the
    reference, in our order, each matched by its whole expression.  A :class:`DataError`
    lists every parameter of either side without its match (with what differs)."""
    rows, free, unmatched = [], set(reference), []
    for r in table:
        terms = expression_terms(r["name"])
        key = _match(terms, reference, free)
        if key is None:
            lead = leading_name(r["name"])
            why = (f" ({expression_difference(terms, reference[lead]['terms'])})"
                   if lead in reference else "")
            unmatched.append(f"ours {r['name']!r}{why}")
            continue
        free.discard(key)
        ref_val, ref_sp = reference[key][method]
        rows.append(Row(leading_name(r["name"]), r["value"], r["std_percent"], ref_val,
                        ref_sp))
    unmatched += [f"reference {reference[k]['expression']!r}" for k in sorted(free)]
    if unmatched:
        raise DataError(f"{len(unmatched)} base parameters without their match (same "
                        f"standard parameters, same coefficients): " + "; ".join(unmatched))
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

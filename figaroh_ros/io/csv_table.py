"""A numeric CSV table, read whole or refused with the line and column at fault.

One header line of names, then rows of numbers separated by commas (``#`` starts a
comment).  What reaches the estimators is finite and of a magnitude no measurement of a
robot has: a value such as 1e300 overflows once squared and makes the singular value
decomposition of the regressor fail far from its cause.
"""
from __future__ import annotations

import csv
import io
import os
import warnings

import numpy as np

from figaroh_ros.errors import DataError

MAX_BYTES = 2_000_000_000       # a recording, not a disk image
MAX_MAGNITUDE = 1e15            # |cell|: time stamps in s or us since 1970 pass


def read_text(path: str, what: str = "data file") -> str:
    """The UTF-8 text of ``path`` (a :class:`DataError` naming the line of a bad byte)."""
    if not os.path.isfile(path):
        raise DataError(f"{what} not found: {path}")
    if os.path.getsize(path) > MAX_BYTES:
        raise DataError(f"{what} {path}: larger than {MAX_BYTES} bytes")
    with open(path, "rb") as f:
        raw = f.read()
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise DataError(f"{what} {path} line {line}: not UTF-8 text (byte "
                        f"{raw[exc.start:exc.start + 1]!r})") from None


def read_csv_table(path: str) -> tuple[list[str], np.ndarray]:
    """Header names and numbers (rows x columns) of the CSV file ``path``."""
    text = read_text(path)
    first = text.split("\n", 1)[0]
    header = [h.strip() for h in first.strip().split(",")]
    try:
        with warnings.catch_warnings():       # "no data": refused below
            warnings.simplefilter("ignore", UserWarning)
            arr = np.loadtxt(io.StringIO(text), delimiter=",", skiprows=1, ndmin=2)
    except ValueError:
        _locate_bad_cell(path, text, header)
        raise DataError(f"{path}: not a numeric CSV after its header") from None
    if arr.size == 0:
        raise DataError(f"{path}: no row of numbers after its header")
    if arr.shape[1] != len(header):
        raise DataError(f"{path}: {len(header)} header names but {arr.shape[1]} columns")
    check_cells(path, header, arr)
    return header, arr


def column_name(cell: str) -> str:
    """A header cell's name: blanks, a byte-order mark, and a leading ``#`` (NumPy's
    ``savetxt``) or ``- `` dropped."""
    return cell.strip().lstrip("\ufeff#- ").strip()


def check_columns(path: str, header: list[str], expected: list[str], source: str) -> None:
    """A :class:`DataError` unless the columns of ``path`` (its ``header``) are, in order,
    ``expected`` (those of ``source``): it names the columns missing and unexpected."""
    got, want = [column_name(h) for h in header], [column_name(h) for h in expected]
    if got == want:
        return
    missing = [c for c in want if c not in got]
    unexpected = [c for c in got if c not in want]
    what = (f"columns {missing} missing and {unexpected} unexpected" if missing or unexpected
            else f"columns {got} in another order")
    raise DataError(f"{path}: {what} (expected the columns of {source}: {want})")


def check_cells(path: str, header: list[str], arr: np.ndarray, first_line: int = 2,
                limit: float = MAX_MAGNITUDE) -> None:
    """A :class:`DataError` naming the line, column and value of the first cell of ``arr``
    that is not finite or exceeds ``limit`` in magnitude (row 0 is line ``first_line``;
    exact for tables without blank or comment lines)."""
    with np.errstate(invalid="ignore"):
        bad = ~np.isfinite(arr) | (np.abs(arr) > limit)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        name = header[c] if c < len(header) else f"#{c + 1}"
        raise DataError(f"{path} line {r + first_line} (data row {r}, from 0), column "
                        f"'{name}': value {float(arr[r, c])!r} (expected a finite number, "
                        f"not NaN/inf, of magnitude <= {limit:g})")


def _locate_bad_cell(path: str, text: str, header: list[str]) -> None:
    """Raise the :class:`DataError` naming the first line with a wrong number of fields or
    a cell that is not a number."""
    for line, row in enumerate(csv.reader(io.StringIO(text)), start=1):
        if line == 1 or not row or row[0].lstrip().startswith("#"):
            continue
        if len(row) != len(header):
            raise DataError(f"{path} line {line}: {len(row)} fields, the header has "
                            f"{len(header)}")
        for name, cell in zip(header, row):
            try:
                float(cell)
            except ValueError:
                raise DataError(f"{path} line {line}, column '{name}': not a number: "
                                f"{cell[:40]!r}") from None

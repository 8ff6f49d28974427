"""An earlier identification's ``result.yaml`` as the ``--reference`` of a new one.

A published table (``io/reference.py``) is matched expression by expression, within its
printed rounding.  Our own results carry the sha256 of their base-parameter definition
(``identification/base_definition.py``): two results line up parameter by parameter only
when it is the same, and :func:`check_definitions` refuses them otherwise, naming both.
"""
from __future__ import annotations

import yaml

from figaroh_ros.errors import DataError
from figaroh_ros.identification.base_definition import check_same_definition
from figaroh_ros.io.reference import expression_terms, leading_name, read_reference

RESULT_SUFFIXES = (".yaml", ".yml")


def is_result(path: str) -> bool:
    return path.lower().endswith(RESULT_SUFFIXES)


def read_result_reference(path: str) -> tuple[dict[str, dict], str]:
    """The base parameters of the ``result.yaml`` at ``path`` in the form of
    :func:`figaroh_ros.io.reference.read_reference` (WLS values are the OLS ones when the
    result has none), and its definition's sha256; a :class:`DataError` naming the file
    and what is missing otherwise."""
    try:
        with open(path, encoding="utf-8") as f:
            summary = yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as exc:
        raise DataError(f"reference {path}: cannot read it ({exc})") from None
    sha = (summary or {}).get("base_definition", {}).get("sha256") \
        if isinstance(summary, dict) and isinstance(summary.get("base_definition"), dict) \
        else None
    if not isinstance(sha, str) or not isinstance(summary.get("ols"), list):
        raise DataError(f"reference {path}: not an identification result.yaml with a "
                        "base_definition (sha256) and ols parameters")
    wls = {r["name"]: r for r in summary.get("wls") or summary["ols"]}
    out = {}
    for r in summary["ols"]:
        try:
            name, w = r["name"], wls[r["name"]]
            out[leading_name(name)] = {
                "expression": name, "terms": expression_terms(name),
                "ols": (float(r["value"]), float(r["std_percent"])),
                "wls": (float(w["value"]), float(w["std_percent"]))}
        except (KeyError, TypeError, ValueError) as exc:
            raise DataError(f"reference {path}: parameter row {r!r} ({exc})") from None
    return out, sha


def read_any_reference(path: str) -> tuple[dict[str, dict], str | None]:
    """A published CSV table (no definition) or one of our ``result.yaml`` files."""
    if is_result(path):
        return read_result_reference(path)
    return read_reference(path), None


def check_definitions(reference: str, ref_sha: str | None, ours: str) -> None:
    """Refuse (naming both) a reference result of another base-parameter definition."""
    if ref_sha is not None:
        check_same_definition({f"--reference {reference}": ref_sha,
                               "this identification": ours}, "identify")

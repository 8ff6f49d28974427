"""Base-parameter expressions read into ``{standard name: coefficient}``: the text only,
no model (so that reading a published table loads no pinocchio).

A base parameter is a linear combination ``p . phi`` of the standard parameters, printed
as a grouped expression.  Notations read: ours (``Izz1 + Ia1 + Iyy2 + 0.05185*m3``), and
the ``J``/``c m`` one of Gaz et al. 2019 and many papers: ``J2yy`` (link 2's inertia
about its frame origin, our ``Iyy2``), ``c3z m3`` (first moment, our ``mz3``), ``fv,1`` /
``fc,1`` / ``fo,1`` (viscous, Coulomb, offset: our ``fv1``, ``fs1``, ``off1``),
coefficients before brackets (``0.1067 (m4 + m5)``).
"""
from __future__ import annotations

import re

from figaroh_ros.errors import DataError

NUMBER = r"\d*\.?\d+(?:[eE][+-]?\d+)?"
TERM = re.compile(rf"([+-]?)({NUMBER})?\*?([A-Za-z][A-Za-z0-9_]*)")
ADJACENT = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*\s+[A-Za-z_(]")
GROUP = re.compile(rf"([+-]?)({NUMBER})?\*?\(([^()]*)\)")
JCM = ((re.compile(r"c(\d+)([xyz])\s*m\1(?!\d)"), r"m\2\1"),          # c3z m3 -> mz3
       (re.compile(r"J(\d+)([xyz]{2})"), r"I\2\1"),                    # J2yy -> Iyy2
       (re.compile(r"J([xyz]{2})(\d+)"), r"I\1\2"),                    # Jxz4 -> Ixz4
       (re.compile(r"\bfv,\s*(\d+)"), r"fv\1"), (re.compile(r"\bfc,\s*(\d+)"), r"fs\1"),
       (re.compile(r"\bfo,\s*(\d+)"), r"off\1"))


def _terms(text: str) -> dict[str, float]:
    """``{name: coefficient}`` of a bracket-free expression without spaces."""
    out: dict[str, float] = {}
    pos = 0
    for m in TERM.finditer(text):
        if m.start() != pos or (pos > 0 and not m.group(1)):
            raise ValueError(f"cannot read {text[pos:m.end()]!r}")
        coef = float(m.group(2)) if m.group(2) else 1.0
        out[m.group(3)] = out.get(m.group(3), 0.0) + (-coef if m.group(1) == "-" else coef)
        pos = m.end()
    if pos != len(text) or not out:
        raise ValueError(f"cannot read {text[pos:]!r}")
    return out


def _expand(m: re.Match) -> str:
    """``k(a + b)`` written out as ``+k*a+k*b``."""
    k = (float(m.group(2)) if m.group(2) else 1.0) * (-1.0 if m.group(1) == "-" else 1.0)
    return "".join(f"{k * c:+.17g}*{n}" for n, c in _terms(m.group(3)).items())


def linear_terms(expression: str) -> dict[str, float]:
    """``{standard name: coefficient}`` of a grouped expression, in our notation or the
    ``J`` / ``c m`` one (module docstring)."""
    text = expression
    for pattern, repl in JCM:
        text = pattern.sub(repl, text)
    adjacent = ADJACENT.search(text)
    if adjacent:             # two names side by side: an operator is missing
        raise DataError(f"expression {expression!r}: no operator in {adjacent.group(0)!r}")
    text = re.sub(r"\s+", "", text)
    try:
        while "(" in text:
            new = GROUP.sub(_expand, text)
            if new == text:
                raise ValueError("unbalanced brackets")
            text = new
        return _terms(text)
    except ValueError as exc:
        raise DataError(f"expression {expression!r}: {exc}") from None

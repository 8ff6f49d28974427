"""A published base-parameter table is matched to ours by the whole grouped expression
(the same standard parameters with the same coefficients, any order, published rounding),
and every parameter without its match is named (io/reference.py)."""
import pytest
from hypothesis import given, settings, strategies as st

from figaroh_ros.errors import DataError
from figaroh_ros.io.reference import (
    compare, expression_difference, expression_terms, read_reference
)

NAMES = st.sampled_from(["Izz1", "Ia1", "Iyy2", "mz3", "m3", "m4", "fv1", "off2", "mx2"])


def _format(terms: list[tuple[str, float]], style: int) -> str:
    """An expression as FIGAROH (``1.0*Ia1``) or as we (``Ia1``, ``- 0.5*m3``) print it."""
    out = []
    for k, (name, c) in enumerate(terms):
        sign = "-" if c < 0 else "+"
        body = f"{abs(c):g}*{name}" if (style or abs(c) != 1.0) else name
        if style == 1 and abs(c) == 1.0:
            body = f"1.0*{name}"
        out.append((f"-{body}" if c < 0 else body) if k == 0 else f"{sign} {body}")
    return " ".join(out)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(NAMES, st.sampled_from([1.0, -1.0, 0.05185, -0.225, 0.007875,
                                                  2.5e-05])),
                min_size=1, max_size=6, unique_by=lambda t: t[0]),
       st.randoms(use_true_random=False))
def test_an_expression_matches_itself_in_any_order_and_style(terms, rnd):
    shuffled = list(terms)
    rnd.shuffle(shuffled)
    a = expression_terms(_format(terms, 0))
    b = expression_terms(_format(shuffled, 1))
    assert a == pytest.approx(dict(terms)) and not expression_difference(a, b)


def _reference(tmp_path, rows):
    path = tmp_path / "ref.csv"
    path.write_text("".join(f"{e},1.0,2.0,1.1,3.0\n" for e in rows))
    return read_reference(str(path))


def test_rows_match_by_the_whole_expression(tmp_path):
    ref = _reference(tmp_path, ["Izz1 + 1.0*Ia1 + 0.05185*m3", "fv1", "mx2 + 0.225*m3"])
    ours = [{"name": "fv1", "value": 1.2, "std_percent": 1.0},
            {"name": "mx2 + 0.225*m3", "value": 0.9, "std_percent": 2.0},
            {"name": "Izz1 + 0.051850*m3 + Ia1", "value": 1.05, "std_percent": 1.5}]
    rows = compare(ours, ref, "ols")
    assert [r.name for r in rows] == ["fv1", "mx2", "Izz1"]
    assert [r.ref for r in rows] == [1.0, 1.0, 1.0] and rows[2].ours == 1.05


def test_a_different_coefficient_or_term_is_named(tmp_path):
    ref = _reference(tmp_path, ["Izz1 + 1.0*Ia1 + 0.05185*m3", "fv1"])
    ours = [{"name": "Izz1 + Ia1 + 0.06*m3", "value": 1.0, "std_percent": 1.0},
            {"name": "fv1 + m4", "value": 1.0, "std_percent": 1.0}]
    with pytest.raises(DataError) as e:
        compare(ours, ref, "wls")
    msg = str(e.value)
    assert "coefficient of m3: 0.06 vs 0.05185" in msg and "m4 only in ours" in msg
    assert "reference 'fv1'" in msg and "reference 'Izz1 + 1.0*Ia1 + 0.05185*m3'" in msg


def test_an_extra_row_on_either_side_is_named(tmp_path):
    ref = _reference(tmp_path, ["fv1", "off2"])
    with pytest.raises(DataError, match="reference 'off2'"):
        compare([{"name": "fv1", "value": 1.0, "std_percent": 1.0}], ref, "ols")
    with pytest.raises(DataError, match="ours 'Iyy2'"):
        compare([{"name": "fv1", "value": 1.0, "std_percent": 1.0},
                 {"name": "off2", "value": 1.0, "std_percent": 1.0},
                 {"name": "Iyy2", "value": 1.0, "std_percent": 1.0}], ref, "ols")


@pytest.mark.parametrize("expression", ["Izz1 Ia1", "Izz1 + * 3", "Izz1 + 2*", "+", "1.5",
                                        "Izz1 + 0.5**m3", "Izz1 ++ m3"])
def test_an_unreadable_expression_is_refused_with_the_row(tmp_path, expression):
    path = tmp_path / "ref.csv"
    path.write_text(f"fv1,1,1,1,1\n{expression},1,1,1,1\n")
    with pytest.raises(DataError, match="row 2"):
        read_reference(str(path))

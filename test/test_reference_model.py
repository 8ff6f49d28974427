"""Reference tables matched by full expression: the same combination of
standard parameters whatever the term order, the leading parameter, the rounding of the
coefficients or the notation (ours, or the J / c m one of Gaz et al. 2019)."""
import numpy as np
import pytest

from figaroh_ros.errors import DataError
from figaroh_ros.io.reference_model import linear_terms, values_by_expression

OURS = [{"name": "Izz1 + Ia1 + Iyy2 + 0.05185*m3 + 0.07*mz3", "value": 1.25,
         "std_percent": 1.0},
        {"name": "my2 - 0.316*m3 - mz3", "value": -3.0, "std_percent": 0.5},
        {"name": "fv1", "value": 8.1, "std_percent": 2.0}]


def test_the_same_combination_matches_in_any_order_and_notation():
    ref = ["Iyy2 + 0.0519*m3 + Izz1 + 0.07*mz3 + Ia1",          # reordered, rounded
           "c2y m2 - c3z m3 - 0.316 m3",                         # J / c m notation
           "fv,1",
           "2*fv1 - 0.5 (my2 - 0.316 m3 - mz3)"]                 # a combination of two
    got = values_by_expression(ref, OURS)
    np.testing.assert_allclose([v for v, _ in got], [1.25, -3.0, 8.1, 2 * 8.1 + 1.5],
                               rtol=1e-4)           # 0.0519: the printed rounding
    np.testing.assert_allclose([s for _, s in got[:3]], [1.0, 0.5, 2.0], rtol=1e-4)
    assert np.isnan(got[3][1])                  # a combination needs the covariance
    cov = np.diag([0.0125, 0.015, 0.162]) ** 2
    got = values_by_expression(ref, OURS, cov)
    std = np.sqrt(4 * 0.162 ** 2 + 0.25 * 0.015 ** 2)
    assert got[3][1] == pytest.approx(100 * std / (2 * 8.1 + 1.5))


def test_unmatched_and_unreadable_rows_are_named():
    with pytest.raises(DataError, match=r"reference: 1 of 2 expressions .* row 2 'Izz1'"):
        values_by_expression(["fv1", "Izz1"], OURS)          # Izz1 alone is not a base
    with pytest.raises(DataError, match=r"expression 'Izz1 \+\+ m3'"):
        linear_terms("Izz1 ++ m3")
    with pytest.raises(DataError, match="unbalanced"):
        linear_terms("0.5 (m3 + m4")

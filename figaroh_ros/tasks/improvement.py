"""(b) of the publication gate (``gate.py``): is the estimate better than the nominal
model on what the fit did not see?  A one-sided test on the held-out errors (Student's
paired t-test, or the exact sign test when the components' units differ) and the relative
margin of the RMSE.  In its own module: scipy.special is loaded by the gates that test an
improvement, not by a node reading a publication decision."""
from __future__ import annotations

import math

import numpy as np
from scipy import special

from figaroh_ros.tasks.gate import Check


def improvement_checks(nominal, calibrated, *, p_value: float, improvement_margin: float,
                       unit: str = "mm", scale: float = 1e3, what: str = "postures",
                       paired: tuple | None = None) -> list[Check]:
    """Per-posture (per-sample) held-out errors of the nominal and the calibrated model:
    the paired one-sided test (passed below ``p_value``) and the relative margin of the
    RMSE (at least ``improvement_margin``; both as in the ``acceptance`` section).
    ``paired``: the (nominal, calibrated) values the test pairs instead (default: the
    errors), e.g. every measured component of the few postures a bag holds out."""
    e0, e1 = np.asarray(nominal, float), np.asarray(calibrated, float)
    if len(e0) == 0:
        why = f"no held-out {what} to check the model on"
        return [Check("improvement_test", False, None, p_value, why),
                Check("improvement_margin", False, None, improvement_margin, why)]
    rms0, rms1 = (float(np.sqrt(np.mean(e ** 2))) for e in (e0, e1))
    if paired is None:
        a, b, p, name = e0, e1, paired_p_value(e0, e1), "one-sided paired t-test"
        items = what
    else:
        a, b = np.abs(np.ravel(paired[0])), np.abs(np.ravel(paired[1]))
        p, name = sign_test_p_value(a, b), "one-sided sign test"
        items = f"measured components of {len(e0)} {what}"
    test = Check("improvement_test", p < p_value, p, p_value,
                 f"held-out error lower than the nominal model's on {int(np.sum(b < a))} of "
                 f"{len(a)} {items}, {name} p = {p:.3g} (required < {p_value:g})")
    gain = 1.0 - rms1 / rms0 if rms0 > 0 else -math.inf
    margin = Check("improvement_margin", gain >= improvement_margin, gain,
                   improvement_margin, f"held-out RMSE {scale * rms0:.6g} -> "
                   f"{scale * rms1:.6g} {unit}: {100 * gain:.3g} % lower (required >= "
                   f"{100 * improvement_margin:g} %)")
    return [test, margin]


def sign_test_p_value(nominal: np.ndarray, calibrated: np.ndarray) -> float:
    """One-sided exact sign test of "the calibrated errors are smaller", over components
    whose units differ (m and rad): only which of each pair is smaller counts (ties left
    out), so ``k`` wins of ``n`` give ``P(X >= k)``, ``X ~ Binomial(n, 1/2)``; 12 components
    of the 2 postures a bag of 10 holds out can reach 2.4e-4."""
    if not (np.all(np.isfinite(nominal)) and np.all(np.isfinite(calibrated))):
        return 1.0
    wins, losses = int(np.sum(calibrated < nominal)), int(np.sum(calibrated > nominal))
    n = wins + losses
    return float(special.bdtrc(wins - 1, n, 0.5)) if n else 1.0      # P(X > wins - 1)


def paired_p_value(nominal: np.ndarray, calibrated: np.ndarray) -> float:
    """One-sided paired t-test p-value of "the calibrated errors are smaller" (Student's
    t on the per-posture differences: it stays meaningful for the 6-10 postures a bag
    holds out, where a rank test cannot go below ``2^-n``)."""
    d = nominal - calibrated
    if len(d) < 2 or not np.all(np.isfinite(d)):
        return 1.0
    if np.ptp(d) <= 1e-9 * np.abs(d).max():          # no scatter: t is not defined
        return 0.0 if d[0] > 0 else 1.0
    t = d.mean() / (d.std(ddof=1) / np.sqrt(len(d)))
    return float(special.stdtr(len(d) - 1, -t))       # P(T > t), T ~ Student(n - 1)


# ------------------------------------------------------------------ (c)-(e)

"""Backlash and encoder discrepancy at a joint (Nguyen et al. 2024 Eq. 6-7).

With a motor-side encoder ``theta_M`` and a link-side encoder ``theta_L`` on the same joint,
their difference is modelled as two smooth surfaces in motor angle and joint torque ``tau``,
one for each direction of motion, blended by a sigmoid of the motor velocity (Eq. 6):

    d_LM = C_r(theta_M, tau) S(dtheta_M) + C_l(theta_M, tau) (1 - S(dtheta_M)),
    S(v) = 1 / (1 + exp(-rho v)),   C(theta, tau) = sum_{i<=m, j<=n} A_ij theta^i tau^j.

The sigmoid captures the jump of the gear play when the motion reverses; the polynomials
the drive-chain flexibility (``tau``), the encoder's eccentric mounting (``theta``) and, on
TIAGo's differential wrist, the configuration-dependent gap.  Nguyen et al. 2024 sums from
``i = j = 1``; we start both sums at 0, since a constant gap (the backlash itself) and a
torque-only compliance need the ``i = 0`` or ``j = 0`` terms.  Angles and torques are scaled
to [-1, 1] before the monomials are formed (conditioning).

Eq. 7 (``rho > 0``) is solved by variable projection: for a given ``rho`` the model is linear
in ``A, B`` (one least-squares solve); ``log rho`` is then a one-dimensional bounded search.
The polynomial degrees are chosen on validation data (``select_degrees``): the smallest
``m + n`` whose validation R^2 is within ``tol`` of the best.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.optimize as so

from figaroh_ros.errors import DataError


def sigmoid(v: np.ndarray, rho: float) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * rho * np.asarray(v, float)))   # overflow-free


def r_squared(y: np.ndarray, y_hat: np.ndarray) -> float:
    y = np.asarray(y, float)
    return 1.0 - float(np.sum((y - y_hat) ** 2) / np.sum((y - y.mean()) ** 2))


@dataclass
class BacklashModel:
    m: int
    n: int
    rho: float
    A: np.ndarray                 # (m+1) x (n+1), direction dtheta > 0
    B: np.ndarray                 # direction dtheta < 0
    theta_range: tuple[float, float]
    tau_range: tuple[float, float]
    info: dict = field(default_factory=dict)

    def monomials(self, theta, tau) -> np.ndarray:
        return _monomials(theta, tau, self.m, self.n, self.theta_range, self.tau_range)

    def predict(self, theta, dtheta, tau) -> np.ndarray:
        """Predicted ``theta_L - theta_M``.  Angles and torques outside the identified
        ranges are held at the range's edge: a polynomial must not extrapolate."""
        theta = np.clip(np.asarray(theta, float), *self.theta_range)
        tau = np.clip(np.asarray(tau, float), *self.tau_range)
        Phi = self.monomials(theta, tau)
        S = sigmoid(dtheta, self.rho)
        return S * (Phi @ self.A.ravel()) + (1 - S) * (Phi @ self.B.ravel())

    def gap(self, theta, tau) -> float:
        """The play: the median jump between the two direction surfaces at the angles and
        torques ``theta, tau``."""
        jump = self.monomials(theta, tau) @ (self.A - self.B).ravel()
        return float(np.median(np.abs(jump)))

    def link_angle(self, theta, dtheta, tau) -> np.ndarray:
        """The link-side angle from motor-side readings (what model 3 of Nguyen et al. 2024 uses)."""
        return np.asarray(theta, float) + self.predict(theta, dtheta, tau)


def _scale(x, rng):
    lo, hi = rng
    return (2.0 * (np.asarray(x, float) - lo) / max(hi - lo, 1e-12)) - 1.0


def _monomials(theta, tau, m, n, theta_range, tau_range):
    a = _scale(theta, theta_range)
    b = _scale(tau, tau_range)
    Pa = np.vander(a, m + 1, increasing=True)
    Pb = np.vander(b, n + 1, increasing=True)
    return (Pa[:, :, None] * Pb[:, None, :]).reshape(len(a), -1)


def _projection(Phi, dtheta, d_lm):
    """Variable projection of Eq. 7: for a given ``log rho`` the model is linear in
    ``A, B``; returns ``solve(log_rho) -> (squared residual, [A; B])``."""
    def solve(log_rho):
        S = sigmoid(dtheta, np.exp(log_rho))[:, None]
        X = np.hstack([Phi * S, Phi * (1 - S)])
        coef, *_ = np.linalg.lstsq(X, d_lm, rcond=None)
        r = d_lm - X @ coef
        return float(r @ r), coef
    return solve


def _search_log_rho(solve, rho_bounds) -> float:
    """``log rho`` in bounds: the best of a coarse grid, refined by a bounded scalar search
    between its neighbours."""
    grid = np.linspace(np.log(rho_bounds[0]), np.log(rho_bounds[1]), 13)
    k = int(np.argmin([solve(g)[0] for g in grid]))
    a, b = grid[max(k - 1, 0)], grid[min(k + 1, len(grid) - 1)]
    return so.minimize_scalar(lambda g: solve(g)[0], bounds=(a, b), method="bounded",
                              options={"xatol": 1e-3}).x


def fit_backlash(theta, dtheta, tau, d_lm, m: int = 3, n: int = 3,
                 rho_bounds: tuple[float, float] = (1.0, 1e4),
                 rho: float | None = None) -> BacklashModel:
    """Eq. 7 for one joint: degrees ``m`` (angle) and ``n`` (torque), ``rho`` in bounds
    (or fixed at ``rho``)."""
    theta, dtheta, tau, d_lm = (np.asarray(x, float) for x in (theta, dtheta, tau, d_lm))
    if len(theta) < 3 * (m + 1) * (n + 1):
        raise DataError(f"{len(theta)} samples for {2 * (m + 1) * (n + 1)} polynomial "
                        "coefficients: record more")
    tr = (float(theta.min()), float(theta.max()))
    qr = (float(tau.min()), float(tau.max()))
    solve = _projection(_monomials(theta, tau, m, n, tr, qr), dtheta, d_lm)
    log_rho = np.log(rho) if rho is not None else _search_log_rho(solve, rho_bounds)
    _, coef = solve(log_rho)
    p = (m + 1) * (n + 1)
    model = BacklashModel(m, n, float(np.exp(log_rho)), coef[:p].reshape(m + 1, n + 1),
                          coef[p:].reshape(m + 1, n + 1), tr, qr)
    model.info["train_r2"] = r_squared(d_lm, model.predict(theta, dtheta, tau))
    return model


def select_degrees(train: tuple, valid: tuple, degrees=range(1, 6), tol: float = 0.005):
    """Fit every ``(m, n)`` in ``degrees x degrees`` on ``train`` = (theta, dtheta, tau,
    d_lm), score R^2 on ``valid``; return the chosen model and the table
    ``{(m, n): validation R^2}``."""
    degrees = list(degrees)
    mid = degrees[len(degrees) // 2]
    # the switching gain hardly depends on the degrees: search it once, at middle degrees
    rho = fit_backlash(*train, m=mid, n=mid).rho
    table = {}
    for m in degrees:
        for n in degrees:
            try:
                mod = fit_backlash(*train, m=m, n=n, rho=rho)
            except DataError:
                continue
            table[m, n] = r_squared(valid[3], mod.predict(*valid[:3]))
    if not table:
        raise DataError("no polynomial degree could be fitted: too few samples")
    best = max(table.values())
    ok = [k for k, v in table.items() if v >= best - tol]
    choice = min(ok, key=lambda k: (k[0] + k[1], -table[k]))
    chosen = fit_backlash(*train, m=choice[0], n=choice[1])       # rho free again
    chosen.info["validation_r2"] = r_squared(valid[3], chosen.predict(*valid[:3]))
    return chosen, table


"""Backlash and encoder discrepancy (seed 002 Eq. 6-7) on a simulated joint whose hidden
truth is *not* the model: a gear play (deadband operator), an eccentric encoder and a
compliant shaft, measured by a motor and a link encoder with noise."""
import numpy as np
import pytest

from figaroh_ros.backlash import fit_backlash, r_squared, select_degrees

GAP = 0.012          # rad of play
ECC = 0.004          # rad, eccentric link encoder
COMPLIANCE = 2e-4    # rad per N.m
NOISE = 3e-4         # rad, encoder noise


def sweep(speeds, rate=100.0, lo=-1.8, hi=1.8):
    """Back-and-forth sweeps across the range at each speed (the seed's protocol)."""
    theta = []
    x = lo
    for v in speeds:
        for target in (hi, lo):
            n = int(abs(target - x) / v * rate)
            theta.append(np.linspace(x, target, n, endpoint=False))
            x = target
    th = np.concatenate(theta)
    dth = np.gradient(th, 1.0 / rate)
    return th, dth


def truth(theta, dtheta, seed):
    rng = np.random.default_rng(seed)
    tau = 25.0 * np.cos(theta + 0.3) + 4.0 * np.tanh(dtheta / 0.05)   # gravity + friction
    link = np.empty_like(theta)
    x = theta[0] - GAP / 2
    for k, th in enumerate(theta):                # play operator: the link lags
        x = min(max(x, th - GAP / 2), th + GAP / 2)
        link[k] = x
    d = (link - theta) + ECC * np.sin(theta + 0.7) - COMPLIANCE * tau     # the link sags
    return tau, d + NOISE * rng.normal(size=theta.shape)


@pytest.fixture(scope="module")
def data():
    tr = sweep([0.1, 0.3, 0.6, 1.0])
    va = sweep([0.2, 0.5, 0.8], lo=-1.7, hi=1.75)
    tau_t, d_t = truth(*tr, 1)
    tau_v, d_v = truth(*va, 2)
    return (tr[0], tr[1], tau_t, d_t), (va[0], va[1], tau_v, d_v)


def test_backlash_model_predicts_validation_data(data):
    train, valid = data
    model, table = select_degrees(train, valid, degrees=range(1, 6))
    r2 = r_squared(valid[3], model.predict(*valid[:3]))
    assert r2 >= 0.9, (r2, table)
    assert model.rho > 0
    # the chosen degrees are the smallest within 0.005 of the best validation R^2
    assert r2 >= max(table.values()) - 0.005
    assert (model.m, model.n) != (5, 5) or max(table.values()) - table[1, 1] > 0.005
    # the gap itself: the two direction surfaces differ by about the play
    Phi = model.monomials(np.zeros(1), np.zeros(1))
    assert abs((Phi @ model.A.ravel() - Phi @ model.B.ravel())[0]) == pytest.approx(GAP, rel=0.2)


def test_the_direction_carries_most_of_the_signal(data):
    """A polynomial in the angle alone with no direction switch (S = 1/2, no torque)
    leaves the play unexplained: R^2 well below the model's."""
    train, valid = data
    one = fit_backlash(*train, m=5, n=0, rho=1e-6)
    blind = r_squared(valid[3], one.predict(*valid[:3]))
    model, _ = select_degrees(train, valid, degrees=range(1, 4))
    full = r_squared(valid[3], model.predict(*valid[:3]))
    assert blind < full - 0.15, (blind, full)


def test_too_few_samples_is_refused():
    with pytest.raises(ValueError, match="record more"):
        fit_backlash(np.zeros(10), np.zeros(10), np.zeros(10), np.zeros(10), m=5, n=5)

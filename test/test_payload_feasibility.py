"""The TLS payload made realisable (Wensing, Kim & Slotine 2017): the
verdict against objects built from point masses, the projection against the same
problem written in all the unknowns, bad boxes and payloads refused by name."""
import os
import re

import numpy as np
import pytest
import yaml
from conftest import ROOT
from hypothesis import given, settings, strategies as st

from figaroh_ros.config.base import parse_file
from figaroh_ros.config.gains import load_gains_config
from figaroh_ros.config.kinds import KINDS
from figaroh_ros.errors import ConfigError, SolverError
from figaroh_ros.identification.payload_feasibility import (
    ConstrainedPayload, PayloadBounds, PayloadStructure, constrain_payload,
    identified_payload, payload_verdict
)
from figaroh_ros.identification.physical.inertia import pseudo_inertia_basis
from figaroh_ros.identification.tls import TLSResult
from figaroh_ros.tasks.gains_payload import _warnings

BOX = PayloadBounds([-0.05, -0.08, 0.0], [0.07, 0.04, 0.15])


def _object(rng, bounds, n=6, mass=4.0):
    """The standard vector of ``n`` point masses inside ``bounds``: an object."""
    lo, hi = np.array(bounds.lower), np.array(bounds.upper)
    x = lo + (hi - lo) * rng.uniform(0.0, 1.0, (n, 3))
    w = rng.dirichlet(np.ones(n)) * mass
    J = sum(wi * np.outer(np.r_[xi, 1.0], np.r_[xi, 1.0]) for wi, xi in zip(w, x))
    E = pseudo_inertia_basis().reshape(10, 16).T
    return np.linalg.lstsq(E, J.ravel(), rcond=None)[0]


finite = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300, max_value=1e300)
anything = st.one_of(finite, st.sampled_from([float("nan"), float("inf"), -float("inf")]))


@settings(max_examples=200, deadline=None)
@given(lo=st.lists(anything, min_size=3, max_size=3), hi=st.lists(anything, min_size=3,
                                                                   max_size=3))
def test_a_box_is_two_ordered_finite_corners_or_an_error_naming_it(lo, hi):
    ordered = np.all(np.isfinite(lo + hi)) and all(h > l for l, h in zip(lo, hi))
    try:
        b = PayloadBounds(lo, hi)
    except ConfigError as exc:
        assert "tls.payload_box" in str(exc)
        assert not ordered or "cannot be represented" in str(exc), exc
        return
    assert ordered and b.lower == tuple(lo) and np.all(np.isfinite(b.ellipsoid_q()))


@pytest.mark.parametrize("lo,hi", [([0, 0], [1, 1]), ("abc", [1, 1, 1]), ([0, 0, 0], None)])
def test_a_box_of_other_shapes_is_refused(lo, hi):
    with pytest.raises(ConfigError, match="tls.payload_box"):
        PayloadBounds(lo, hi)


@settings(max_examples=200, deadline=None)
@given(pi=st.lists(anything, min_size=10, max_size=10))
def test_any_payload_gets_a_verdict_or_a_clear_error(pi):
    if not np.all(np.isfinite(pi)):
        with pytest.raises(SolverError, match="10 finite standard parameters"):
            payload_verdict(pi, BOX)
        return
    v = payload_verdict(pi, BOX)
    values = [v.pseudo_inertia_min_eigenvalue, v.com_outside_box, v.ellipsoid_margin]
    assert not np.any(np.isnan(values)), v
    if pi[0] <= 0:
        assert not v.realisable()
    assert v.com_outside_box >= 0


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 12),
       mass=st.floats(1e-3, 1e3))
def test_objects_inside_the_box_are_realisable_and_outside_are_not(seed, n, mass):
    rng = np.random.default_rng(seed)
    pi = _object(rng, BOX, n, mass)
    assert payload_verdict(pi, BOX).realisable(1e-7), payload_verdict(pi, BOX)
    assert payload_verdict(pi).realisable(1e-7)
    # the same object beyond the box's upper x face: its centre of mass is out
    far = PayloadBounds([0.2, -0.08, 0.0], [0.3, 0.04, 0.15])
    v = payload_verdict(_object(rng, far, n, mass), BOX)
    assert v.com_outside_box > 0.12 and not v.realisable()
    # a negative principal moment about the centre of mass: no object
    bad = pi.copy()
    bad[4] -= 2 * np.abs(pi[4:]).max() + 1e-3 * mass
    assert not payload_verdict(bad).realisable()


def _fake_result(rng, payload, n_other=8, n_joints=3):
    """A refined TLS result with a random information matrix (its payload ``payload``:
    the nine unknowns after the mass)."""
    n = n_other + len(payload) + 2 * n_joints
    A = rng.normal(size=(3 * n, n)) * rng.uniform(0.1, 10.0, n)
    return TLSResult(rng.normal(size=n_other), rng.uniform(5, 15, n_joints),
                     rng.uniform(0.9, 1.1, n_joints), np.array(payload, float),
                     [f"p{i}" for i in range(len(payload))], np.ones(2),
                     drive_gains_std=np.ones(n_joints), sensor_gains_std=np.ones(n_joints),
                     payload_std=np.ones(len(payload)), information=A.T @ A)


def _x(res):
    return np.r_[res.phi_b, res.payload, 1 / res.drive_gains, 1 / res.sensor_gains]


def _full_projection(res, bounds, m):
    """The same projection written in all the unknowns: ``min (x' - x)^T H (x' - x)``
    with the payload of ``x'`` realisable (an independent formulation)."""
    import cvxpy as cp
    x0, H = _x(res), res.information
    pb = len(res.phi_b)
    x = cp.Variable(len(x0))
    P = cp.hstack([np.array([m]), x[pb:pb + 9]])
    J = sum(P[k] * pseudo_inertia_basis()[k] for k in range(10))
    cons = [J >> 0, P[1:4] >= m * np.array(bounds.lower), P[1:4] <= m * np.array(bounds.upper),
            cp.trace(J @ bounds.ellipsoid_q()) >= 0]
    L = np.linalg.cholesky(H)
    cp.Problem(cp.Minimize(cp.sum_squares(L.T @ (x - x0))), cons).solve(solver=cp.CLARABEL)
    return x.value


@pytest.mark.parametrize("seed", range(4))
def test_projection_is_the_closest_realisable_solution_in_the_information_metric(seed):
    rng = np.random.default_rng(seed)
    truth = _object(rng, BOX)
    noisy = truth[1:] + rng.normal(0.0, 0.02, 9) * np.r_[0.1, 0.1, 0.1, np.ones(6) * 0.05]
    noisy[2] -= 0.8                                 # the centre of mass 20 cm lower
    res = _fake_result(rng, noisy)
    c = constrain_payload(res, PayloadStructure({0: 4.0}, list(range(1, 10))), BOX)
    assert not c.identified_verdict.realisable() and c.active
    assert c.verdict.realisable(1e-7) and c.verdict.com_outside_box < 1e-7, c.verdict
    ref = _full_projection(res, BOX, 4.0)
    H = res.information
    d = _x(c.result) - ref
    print("distance to the full-space solution", np.sqrt(d @ H @ d), "shift", c.shift)
    assert np.sqrt(d @ H @ d) < 1e-3 * c.shift
    # the truth is realisable: the projection cannot move the estimate away from it
    t = np.r_[res.phi_b, truth[1:], 1 / res.drive_gains, 1 / res.sensor_gains]
    before, after = _x(res) - t, _x(c.result) - t
    assert after @ H @ after <= before @ H @ before
    assert np.isclose(c.shift ** 2, (_x(c.result) - _x(res)) @ H @ (_x(c.result) - _x(res)),
                      rtol=1e-6)


def test_a_realisable_payload_is_left_unchanged_bit_for_bit():
    rng = np.random.default_rng(5)
    truth = _object(rng, BOX)
    res = _fake_result(rng, truth[1:])
    before = {k: np.copy(getattr(res, k)) for k in ("phi_b", "payload", "drive_gains")}
    c = constrain_payload(res, PayloadStructure({0: 4.0}, list(range(1, 10))), BOX)
    assert c.result is res and not c.active and c.shift == 0.0
    for k, v in before.items():
        assert np.array_equal(getattr(c.result, k), v)
    assert c.payload[0] == 4.0 and np.array_equal(c.payload[1:], truth[1:])


def test_parameters_the_data_do_not_separate_are_completed_realisably():
    """Only ``Ixx + Iyy`` identified (an experiment turning about z alone): the payload
    is realisable when *some* split of the sum is."""
    rng = np.random.default_rng(6)
    truth = _object(rng, BOX)
    unknown = [1, 2, 3, 4, 5, 6, 8, 9]
    deps = {0: [], 4: [(7, 1.0)], **{k: [] for k in unknown if k != 4}}
    s = PayloadStructure({0: 4.0}, unknown, deps)
    values = truth[unknown] + np.r_[0, 0, 0, truth[7], 0, 0, 0, 0]
    c = constrain_payload(_fake_result(rng, values, n_joints=3), s, BOX)
    assert not c.active and c.identified_verdict.realisable(1e-7)
    assert np.isclose(c.identified[4] + c.identified[7], values[3])
    # a sum no split makes realisable (negative): projected, the sum constraint kept
    values[3] = -0.05
    c = constrain_payload(_fake_result(rng, values, n_joints=3), s, BOX)
    assert c.active and c.verdict.realisable(1e-7)
    assert np.isclose(c.payload[4] + c.payload[7], c.result.payload[3], atol=1e-9)


def test_a_known_centre_of_mass_outside_the_box_is_an_error_naming_the_box():
    rng = np.random.default_rng(7)
    truth = _object(rng, BOX)
    known = {0: 4.0, 1: 4.0 * 0.5, 2: 0.0, 3: 0.0}         # 0.5 m off, the box ends at 0.07
    res = _fake_result(rng, truth[4:] - 1.0)               # the inertia not realisable
    with pytest.raises(SolverError, match="tls.payload_box"):
        constrain_payload(res, PayloadStructure(known, list(range(4, 10))), BOX)


def test_a_payload_kept_unrealisable_or_moved_far_is_never_silent():
    rng = np.random.default_rng(8)
    truth = _object(rng, BOX)
    bad = truth[1:].copy()
    bad[2] += 1.0                                           # 25 cm higher
    s = PayloadStructure({0: 4.0}, list(range(1, 10)))
    c = constrain_payload(_fake_result(rng, bad), s, BOX)
    assert c.shift > 10 and "standard deviations" in _warnings(c, 9)[0]
    pi, v = identified_payload(_fake_result(rng, bad), s, BOX)
    kept = ConstrainedPayload(pi, v, pi, v, None, False)
    assert "PAYLOAD NOT REALISABLE" in _warnings(kept, 9)[0]


def _gains_config(folder, **tls):
    """A valid ``identify-gains`` config in ``folder`` (the shipped TX40 identification
    config plus a ``tls`` section), its ``tls`` updated with ``tls``."""
    raw = parse_file(KINDS["identification"].model,
                     os.path.join(ROOT, "config", "staubli_tx40.yaml")).model_dump()
    for d in ("unloaded", "loaded"):
        os.makedirs(os.path.join(folder, d), exist_ok=True)
    raw["data"].update(format="csv_table", table="log.csv", time_column="t", path=str(folder))
    raw["tls"] = {"unloaded": "unloaded", "loaded": "loaded", "payload_mass": 4.0,
                  "current_column": "{joint}_current", **tls}
    path = os.path.join(folder, "gains.yaml")
    with open(path, "w", encoding="utf-8") as f:
        yaml.safe_dump(raw, f)
    return path


@pytest.mark.parametrize("tls,field", [
    ({"payload_box": {"lower": [0, 0, 0], "upper": [0.1, -0.1, 0.1]}}, "tls.payload_box.upper"),
    ({"payload_box": {"lower": [0, 0, 0], "upper": [0.1, 0.1, float("nan")]}},
     "tls.payload_box.upper"),
    ({"payload_box": {"lower": [0, 0, 0]}}, "tls.payload_box"),
    ({"payload_box": {"lower": [0, 0, 0], "upper": [1e-200, 1, 1]}},     # unrepresentable
     "tls.payload_box.upper"),
    ({"payload_box": {"lower": [0, 0, 0], "upper": [0.1, 0.1, 0.1]},
      "payload_com": [0.0, 0.0, 0.2]}, "tls.payload_com"),
    ({"payload_com": [0.0, 0.0, 0.1], "payload_inertia": [0.01, 0, 0, 0.01, 0, 0.03]},
     "tls.payload_inertia"),
    ({"physical_payload": "yes"}, "tls.physical_payload")])
def test_config_refuses_bad_boxes_and_impossible_payloads_by_name(tmp_path, tls, field):
    with pytest.raises(ConfigError, match=re.escape(f"field '{field}")):
        load_gains_config(_gains_config(tmp_path, **tls))


def test_config_default_keeps_the_physical_switch_on_and_no_box(tmp_path):
    t = load_gains_config(_gains_config(tmp_path)).tls
    assert t.physical_payload is True and t.payload_box is None
    box = {"lower": [-0.1, -0.1, 0.0], "upper": [0.1, 0.1, 0.2]}
    t = load_gains_config(_gains_config(tmp_path, payload_box=box,
                                        payload_com=[0.0, 0.0, 0.05])).tls
    assert t.payload_box.model_dump() == box

"""The postures file in a short-travel order (``calibration/travel.py``): the executor's
moves last in proportion to the largest joint travel between postures divided by the
joint's speed, so an order that shortens it shortens the experiment."""
import os

import numpy as np
import pytest
import yaml
from conftest import ROOT, UR10_XACRO, config_with_robot, ur_description_prefix
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from figaroh_ros.calibration.travel import (
    TURN, joint_travel, path_travel, travel_order, turnable_joints, unwound
)
from figaroh_ros.model.speeds import joint_speeds

POSTURES = arrays(np.float64, st.tuples(st.integers(1, 14), st.integers(1, 7)),
                  elements=st.floats(-7.0, 7.0, allow_nan=False))


@settings(max_examples=60, deadline=None)
@given(POSTURES)
def test_the_order_is_a_permutation_never_longer_than_the_given_one(Q):
    o = travel_order(Q)
    assert sorted(o.tolist()) == list(range(len(Q)))
    assert path_travel(Q, o) <= path_travel(Q, np.arange(len(Q))) + 1e-9
    assert np.array_equal(o, travel_order(Q))          # the same order on every run


def test_postures_on_a_line_are_played_end_to_end():
    rng = np.random.default_rng(3)
    x = rng.permutation(np.linspace(-2.0, 3.0, 11))
    Q = np.column_stack([x, 0.1 * x])
    o = travel_order(Q)
    assert np.all(np.diff(x[o]) > 0) or np.all(np.diff(x[o]) < 0)
    assert np.isclose(path_travel(Q, o), 5.0)


def test_the_travel_is_the_largest_joint_move():
    Q = np.array([[0.0, 0.0], [1.0, -3.0], [0.5, 0.5]])
    assert np.allclose(joint_travel(Q), [[0, 3, 0.5], [3, 0, 3.5], [0.5, 3.5, 0]])


def test_the_planned_ur10_postures_take_a_third_less_time(tmp_path):
    """The 12 postures the ROS graph test plays: the file in travel order (the default)
    holds the postures of the weight order, whose moves take a third less time at the
    joints' velocity limits (measured: 17.8 -> 11.9 s; joint travel 45.1 -> 37.0 rad)."""
    from figaroh_ros.config.calibration import load_calibration_config
    from figaroh_ros.tasks.plan_postures import plan_from_config
    plans = {}
    for order in ("weight", "travel"):
        cfg = load_calibration_config(os.path.join(ROOT, "config", "ur10_sim_calibration.yaml"))
        cfg = cfg.with_postures(max_postures=12, plateau=1e-6, candidates=400, order=order)
        path = str(tmp_path / f"{order}.csv")
        plans[order] = (plan_from_config(cfg, path), np.loadtxt(path, delimiter=",",
                                                               skiprows=1))
    (by_weight, f_weight), (by_travel, f_travel) = plans["weight"], plans["travel"]
    assert np.all(np.diff(by_weight.weights) <= 0) and by_travel.order == "travel"
    assert np.array_equal(f_travel[:, :6], by_travel.postures)
    assert sorted(map(tuple, f_travel)) == sorted(map(tuple, f_weight))
    assert np.allclose(by_travel.speeds, [2.16, 2.16, 3.15, 3.2, 3.2, 3.2])   # the URDF's
    time, weight = (path_travel(p.postures, np.arange(12), p.speeds)
                    for p in (by_travel, by_weight))
    assert time < 0.75 * weight, (time, weight)
    assert by_travel.to_dict()["joint_travel"] == path_travel(by_travel.postures,
                                                              np.arange(12))


def test_plan_postures_writes_the_order_into_its_result(tmp_path):
    from figaroh_ros import tasks
    cfg = yaml.safe_load(open(os.path.join(ROOT, "config", "ur10_sim_calibration.yaml")))
    cfg["postures"].update(max_postures=6, plateau=1e-6, candidates=200)
    path = tmp_path / "cal.yaml"
    path.write_text(yaml.safe_dump(cfg))
    out = tasks.plan_postures.run(str(path), out=str(tmp_path / "plan"))
    assert out.summary["order"] == "travel" and out.summary["joint_travel"] > 0
    with open(out.paths["postures"]) as f:
        assert f.readline().strip().split(",")[-1] == "weight"


def test_a_joints_speed_is_its_limit_at_most_the_executors():
    assert np.allclose(joint_speeds([0.07, 1.95, 2.35], 1.5), [0.07, 1.5, 1.5])
    # a limit the URDF leaves out: the executor's speed, else the fastest limit given
    assert np.allclose(joint_speeds([0.0, np.inf, np.nan, 2.0], 1.5), [1.5, 1.5, 1.5, 1.5])
    assert np.allclose(joint_speeds([0.0, 0.5, 2.0]), [2.0, 0.5, 2.0])
    assert np.allclose(joint_speeds([0.0, np.nan]), [1.0, 1.0])


@settings(max_examples=60, deadline=None)
@given(POSTURES, st.data())
def test_with_speeds_the_order_is_never_slower_than_the_given_one(Q, data):
    speeds = np.array(data.draw(st.lists(st.floats(0.01, 10.0), min_size=Q.shape[1],
                                         max_size=Q.shape[1])))
    o = travel_order(Q, speeds)
    assert sorted(o.tolist()) == list(range(len(Q)))
    assert path_travel(Q, o, speeds) <= path_travel(Q, np.arange(len(Q)), speeds) + 1e-9
    # the time at unit speeds is the travel
    assert np.allclose(joint_travel(Q, np.ones(Q.shape[1])), joint_travel(Q))


def test_a_slow_joint_moves_once():
    """TIAGo's torso (0.07 m/s) beside its arm (1.5 rad/s): postures at two torso heights
    are played all of one height first, whatever the arm does; by joint travel alone the
    order goes up and down."""
    rng = np.random.default_rng(1)
    torso = np.tile([0.05, 0.30], 6)
    Q = np.column_stack([torso, rng.uniform(-2.0, 2.0, (12, 7))])
    speeds = joint_speeds([0.07] + [1.95] * 7, 1.5)
    height = Q[travel_order(Q, speeds), 0]
    assert np.count_nonzero(np.diff(height)) == 1, height
    assert np.count_nonzero(np.diff(Q[travel_order(Q), 0])) > 1


def test_the_planned_tiago_postures_carry_the_joints_speeds(tmp_path):
    from figaroh_ros.config.calibration import load_calibration_config
    from figaroh_ros.tasks.plan_postures import plan_from_config
    cfg = load_calibration_config(os.path.join(ROOT, "config", "tiago_sim_calibration.yaml"))
    cfg = cfg.with_postures(max_postures=10, plateau=1e-6, candidates=300)
    plan = plan_from_config(cfg, str(tmp_path / "p.csv"))
    assert plan.joints[0] == "torso_lift_joint" and np.isclose(plan.speeds[0], 0.07)
    summary = plan.to_dict()
    k = len(plan.postures)
    assert summary["move_time_at_limits_s"] == 1.5 * path_travel(plan.postures, np.arange(k),
                                                                plan.speeds)
    shuffled = plan.postures[np.random.default_rng(0).permutation(k)]
    assert path_travel(plan.postures, np.arange(k), plan.speeds) <= path_travel(
        shuffled, np.arange(k), plan.speeds)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=9),
       st.one_of(st.just(np.inf), st.floats(1e-3, 1e3)))
def test_every_speed_is_finite_positive_and_within_the_cap(limits, cap):
    v = joint_speeds(limits, cap)
    assert v.shape == (len(limits),)
    assert np.all(np.isfinite(v)) and np.all(v > 0) and np.all(v <= cap)
    usable = [x for x in limits if np.isfinite(x) and x > 0]
    assert all(s == min(x, cap) for s, x in zip(v, limits) if x in usable)


def test_a_move_lasts_its_slowest_joints_time_and_an_endless_one_is_refused():
    from figaroh_ros.errors import ModelError
    from figaroh_ros.model.speeds import move_duration
    assert move_duration([0.14, 1.0], [0.07, 1.5], ["torso", "arm"]) == pytest.approx(3.0)
    assert move_duration([0.0, 0.0], [0.07, 1.5], ["torso", "arm"]) == 0.5
    for tiny in (1e-300, 5e-324):
        with pytest.raises(ModelError, match="moving torso by 0.1 .*over 600 s"):
            move_duration([0.1, 1.0], joint_speeds([tiny, 2.0], 1.5), ["torso", "arm"])
    with pytest.raises(ModelError, match="moving arm by nan"):
        move_duration([0.1, np.nan], [1.0, 1.0], ["torso", "arm"])


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(allow_nan=True, allow_infinity=True),
                          st.floats(allow_nan=True, allow_infinity=True)), max_size=9),
       st.one_of(st.just(np.inf), st.floats(1e-3, 1e3)))
def test_a_move_is_between_half_a_second_and_the_cap_or_refused(joints, cap):
    """Any travel (NaN, infinite, 1e300) at any URDF limits: a duration in [0.5, 600] s
    that lets every joint keep its speed, or a ModelError naming a joint; never another
    error, never a warning."""
    import warnings

    from figaroh_ros.errors import ModelError
    from figaroh_ros.model.speeds import MAX_MOVE_S, move_duration
    travel = np.array([t for t, _ in joints], float)
    speeds = joint_speeds([v for _, v in joints], cap)
    names = [f"j{k}" for k in range(len(joints))]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            d = move_duration(travel, speeds, names)
        except ModelError as exc:
            assert any(f"moving {n} by" in str(exc) for n in names), exc
            return
    assert 0.5 <= d <= MAX_MOVE_S
    assert np.all(1.5 * np.abs(travel) / speeds <= d * (1 + 1e-12))


# ------------------------------------------------------------------ whole turns
def test_a_turnable_joint_is_played_at_its_reading_nearest_the_previous_one():
    """A UR wrist (+-2 pi) from 5.5 to -5.5 rad: to 0.78 rad (-5.5 + 2 pi), not 11 rad
    away, then to -0.28 (6.0 - 2 pi); a joint of +-pi and a prismatic one keep their
    readings; a reading whose nearer turn leaves the limits keeps the one inside them."""
    lo, hi = np.array([-TURN, -np.pi, -TURN]), np.array([TURN, np.pi, TURN])
    turnable = turnable_joints([True, True, False], lo, hi)
    assert turnable.tolist() == [True, False, False]       # +-pi: no; prismatic: no
    Q = np.array([[5.5, 3.0, 5.5], [-5.5, -3.0, -5.5], [6.0, 3.0, 6.0]])
    U = unwound(Q, lo, hi, turnable)
    assert np.allclose(U[:, 0], [5.5, -5.5 + TURN, 6.0 - TURN]) and np.array_equal(U[:, 1:], Q[:, 1:])
    edge = unwound(np.array([[6.2], [-6.2]]), [-TURN], [TURN], [True])   # 6.36 is outside
    assert np.allclose(edge[:, 0], [6.2, -6.2 + TURN])
    near_edge = unwound(np.array([[-6.0], [0.3]]), [-TURN], [TURN], [True])
    assert np.allclose(near_edge[:, 0], [-6.0, 0.3 - TURN])       # -5.98, not 0.3
    # the order's measure: the short way round, 2 pi - 11 rad
    assert np.isclose(joint_travel(Q[:, :1], turnable=[True])[0, 1], 2 * TURN - 11.0)
    assert np.isclose(joint_travel(Q[:, :1])[0, 1], 11.0)


TURN_BOUNDS = st.tuples(st.floats(-20.0, 0.0), st.floats(0.0, 20.0))


@settings(max_examples=150, deadline=None)
@given(st.lists(TURN_BOUNDS, min_size=1, max_size=4), st.data())
def test_unwound_postures_are_the_same_angles_each_nearest_the_previous(bounds, data):
    """Any limits and readings inside them: each turnable reading moves by whole turns,
    stays inside its limits, and is the nearest to the previous row's of every reading
    of its angle inside them (brute force over the turns); other joints unchanged."""
    lo, hi = (np.array(b) for b in zip(*bounds))
    n = len(bounds)
    k = data.draw(st.integers(1, 8))
    Q = np.array([[data.draw(st.floats(lo[j], hi[j])) for j in range(n)] for _ in range(k)])
    flags = np.array(data.draw(st.lists(st.booleans(), min_size=n, max_size=n)))
    turnable = turnable_joints(flags, lo, hi)
    U = unwound(Q, lo, hi, turnable)
    turns = (U - Q) / TURN
    assert np.allclose(turns, np.round(turns), atol=1e-9)
    assert np.array_equal(U[:, ~turnable], Q[:, ~turnable]) and np.array_equal(U[0], Q[0])
    assert np.all((U >= lo - 1e-9) & (U <= hi + 1e-9))
    for j in np.flatnonzero(turnable):
        for i in range(1, k):
            every = Q[i, j] + TURN * np.arange(-8, 9)
            inside = every[(every >= lo[j]) & (every <= hi[j])]
            assert abs(U[i, j] - U[i - 1, j]) <= np.abs(inside - U[i - 1, j]).min() + 1e-9


@settings(max_examples=200, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(0, 6), st.integers(1, 3)),
              elements=st.floats(allow_nan=True, allow_infinity=True)),
       st.lists(st.tuples(st.floats(allow_nan=True, allow_infinity=True),
                          st.floats(allow_nan=True, allow_infinity=True)),
                min_size=3, max_size=3),
       st.lists(st.booleans(), min_size=3, max_size=3))
def test_unwinding_any_readings_and_limits_never_fails_nor_leaves_them(Q, bounds, flags):
    """NaN, infinite, 1e300 readings or limits, no rows: the unwinding and the short-way
    travel never raise nor warn; a reading moves only by whole turns, only when it and
    its new value are finite and inside its limits; anything else stays as given."""
    import warnings
    n = Q.shape[1]
    lo, hi = (np.array(b[:n]) for b in zip(*bounds))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        turnable = turnable_joints(flags[:n], lo, hi)
        U = unwound(Q, lo, hi, turnable)
        joint_travel(Q, turnable=turnable)
    assert U.shape == Q.shape
    moved = ~((U == Q) | (np.isnan(U) & np.isnan(Q)))
    for i, j in zip(*np.nonzero(moved)):
        assert turnable[j] and lo[j] <= Q[i, j] <= hi[j] and lo[j] <= U[i, j] <= hi[j]
        turns = (U[i, j] - Q[i, j]) / TURN       # up to the readings' own rounding
        assert abs(turns - round(turns)) <= 1e-6 + 1e-15 * max(abs(Q[i, j]), abs(U[i, j]))


def test_the_xacro_ur10s_postures_turn_the_short_way_to_the_same_link_poses(tmp_path,
                                                                            monkeypatch):
    """ur_description's UR10 (+-2 pi on five joints, the elbow +-pi), the 10 postures the
    xacro graph test plays: each posture's every link pose is the planned one (pinocchio),
    and the moves take less than half the time of the travel order alone (measured:
    31.2 -> 13.9 s at the velocity limits)."""
    import dataclasses

    import pinocchio as pin

    from figaroh_ros.config.calibration import load_calibration_config
    from figaroh_ros.model.sources import resolve_model_source
    from figaroh_ros.tasks.plan_postures import plan_from_config
    monkeypatch.setenv("AMENT_PREFIX_PATH", ur_description_prefix(tmp_path / "ament"))
    plan_cfg = config_with_robot(os.path.join(ROOT, "config", "ur10_sim_calibration.yaml"),
                                 tmp_path / "plan.yaml", UR10_XACRO)
    cfg = load_calibration_config(plan_cfg)
    cfg = cfg.with_postures(max_postures=10, plateau=1e-6, candidates=400, order="weight")
    by_weight = plan_from_config(cfg, str(tmp_path / "w.csv"))
    expanded, _ = resolve_model_source(UR10_XACRO, ROOT)
    assert by_weight.turnable.tolist() == [True, True, False, True, True, True]
    plan = by_weight.in_travel_order()
    ordered_only = dataclasses.replace(by_weight, turnable=None).in_travel_order()
    k = np.arange(10)
    time, before = (1.5 * path_travel(p.postures, k, p.speeds) for p in (plan, ordered_only))
    assert time < 0.5 * before, (time, before)
    model = pin.buildModelFromXML(expanded)
    data = model.createData()
    idx = [model.joints[model.getJointId(j)].idx_q for j in plan.joints]

    def poses(q_chain):
        q = pin.neutral(model)
        q[idx] = q_chain
        pin.forwardKinematics(model, data, q)
        return np.array([data.oMi[i].homogeneous for i in range(1, model.njoints)])
    assert not np.allclose(plan.postures, by_weight.postures[np.argsort(-plan.weights)])
    for q_played in plan.postures:
        planned = by_weight.postures[np.argmin(np.abs(np.mod(
            by_weight.postures - q_played + np.pi, TURN) - np.pi).max(axis=1))]
        assert np.allclose(poses(q_played), poses(planned), atol=1e-9)
    lo, hi = plan.bounds
    assert np.all((plan.postures >= lo) & (plan.postures <= hi))

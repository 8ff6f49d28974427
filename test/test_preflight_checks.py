"""The live checks of a pre-flight (tasks/preflight_checks.py): rates from jittered
arrival times, the QoS request-offer rule, optional topics, controllers, sensor frames
reaching the model through TF."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from figaroh_ros.calibration.identifiability import Identifiability
from figaroh_ros.model.sources import ModelProvenance
from figaroh_ros.tasks.gate import Check
from figaroh_ros.tasks.preflight_checks import (
    RATE_FRACTION, clock_check, controller_check, frame_check, frame_path,
    identifiability_summary, measured_rate, model_check, qos_check, rate_check
)


@settings(max_examples=50, deadline=None)
@given(hz=st.floats(5.0, 2000.0), n=st.integers(20, 500), jitter=st.floats(0.0, 0.3),
       seed=st.integers(0, 10**6))
def test_rate_from_jittered_arrivals(hz, n, jitter, seed):
    rng = np.random.default_rng(seed)
    t = np.arange(n) / hz + rng.uniform(-jitter, jitter, n) / hz
    assert measured_rate(list(rng.permutation(t))) == pytest.approx(
        (n - 1) / (t.max() - t.min()))
    # the span is (n - 1) periods, give or take 2 * jitter periods at its two ends
    # (and the rounding of the stamps themselves: a few ulps of the rate)
    bound = hz * 2 * jitter / (n - 1 - 2 * jitter) * 1.01 + 1e-12 * hz
    assert abs(measured_rate(list(t)) - hz) <= bound


def test_rate_check_against_the_driver():
    t = list(np.arange(0, 2.0, 1 / 250))
    assert rate_check("/joint_states", t, 2.0, 250.0).passed
    slow = list(np.arange(0, 2.0, 1 / (0.7 * 250)))
    c = rate_check("/joint_states", slow, 2.0, 250.0)
    assert not c.passed and "175.0 Hz" in c.detail and f"{RATE_FRACTION * 250:.1f}" in c.detail
    assert not rate_check("/mocap/pose", [], 2.0, None).passed
    assert rate_check("/mocap/pose", [0.0], 2.0, None).passed
    optional = rate_check("/extra", [], 2.0, None, required=False)
    assert optional.passed and "optional" in optional.detail
    assert measured_rate([]) == measured_rate([1.0]) == measured_rate([1.0, 1.0]) == 0.0


@pytest.mark.parametrize("asked, offered, ok", [
    (("auto", "auto"), [("best_effort", "volatile"), ("reliable", "transient_local")], True),
    (("reliable", "auto"), [("best_effort", "volatile")], False),
    (("best_effort", "auto"), [("reliable", "volatile")], True),
    (("auto", "transient_local"), [("reliable", "volatile")], False),
    (("reliable", "volatile"), [("reliable", "transient_local")], True),
    (("reliable", "transient_local"), [], True),
])
def test_qos_request_offer_rule(asked, offered, ok):
    c = qos_check("/t", *asked, offered)
    assert c.passed is ok and c.name == "qos:/t", c.detail


def test_controller_check_names_the_server():
    c = controller_check("arm_controller", False, ["a"], 2.0)
    assert not c.passed and "did not answer within 2 s" in c.detail
    assert "joints ['a']" in controller_check("arm_controller", True, ["a"], 2.0).detail


def test_a_sensor_frame_must_reach_the_model_through_tf():
    links = {"base_link", "tool0", "world"}
    edges = {("tool0", "tool0_controller"), ("mocap", "mocap_body"), ("odom", "map")}
    c = frame_check("/w", "tool0_controller", links, edges, required=True)
    assert c.passed and c.detail.endswith("TF tool0_controller -> tool0")
    assert frame_check("/w", "/tool0", links, set(), True).detail.endswith("a link of the model")
    bad = frame_check("/w", "ft_sensor", links, edges, required=True)
    assert not bad.passed and "'ft_sensor'" in bad.detail and "3 transforms" in bad.detail
    mocap = frame_check("/m", "mocap", links, edges, required=False)
    assert mocap.passed and "estimated by the calibration" in mocap.detail


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 8), st.integers(0, 8)), max_size=12),
       st.integers(0, 8))
def test_frame_path_follows_edges_both_ways(pairs, start):
    edges = {(f"f{a}", f"f{b}") for a, b in pairs}
    path = frame_path(f"f{start}", {"f0"}, edges)
    undirected = edges | {(b, a) for a, b in edges}
    if path is None:                   # then no chain of edges joins start to f0
        seen, todo = {f"f{start}"}, [f"f{start}"]
        while todo:
            f = todo.pop()
            for a, b in undirected:
                if a == f and b not in seen:
                    seen.add(b)
                    todo.append(b)
        assert "f0" not in seen
    else:
        assert path[0] == f"f{start}" and path[-1] == "f0"
        assert all((a, b) in undirected for a, b in zip(path, path[1:]))


def test_the_model_check_fails_without_a_model_or_a_needed_joint():
    from types import SimpleNamespace

    from figaroh_ros.tasks.preflight_checks import model_check
    held = SimpleNamespace(source="live", location="/robot_description", sha256="ab" * 32)
    joints = {"universe", "shoulder_pan_joint", "elbow_joint"}
    ok = model_check(held, joints, {"the controllers": ["shoulder_pan_joint", "elbow_joint"]})
    assert ok.passed and "live /robot_description (sha256 abababababab)" == ok.detail
    none = model_check(None, set(), {"the controllers": ["elbow_joint"]})
    assert not none.passed and "not received" in none.detail
    bad = model_check(held, joints, {"the controllers": ["elbow_joint"],
                                     "id.yaml": ["elbow_joint", "wrist_3_joint", "tool"]})
    assert not bad.passed and bad.value == 2
    assert "['wrist_3_joint', 'tool'] of id.yaml" in bad.detail, bad.detail
    assert "the controllers" not in bad.detail


@settings(max_examples=100, deadline=None)
@given(offset=st.floats(-600.0, 600.0), n=st.integers(1, 300), seed=st.integers(0, 10**6),
       tolerance=st.floats(0.01, 10.0))
def test_the_clock_check_reads_the_robots_clock_from_the_fastest_delivery(offset, n, seed,
                                                                           tolerance):
    """Joint states delivered 0.5 ms to seconds after they were measured (a loaded
    machine), stamped by a robot clock ``offset`` s behind ours (negative: ahead): the
    check's value is the clocks' difference plus the fastest delivery, and it passes
    exactly when that is within the tolerance; unstamped states are not judged."""
    rng = np.random.default_rng(seed)
    delivery = 5e-4 + rng.exponential(0.2, n)
    delays = list(offset + delivery) + [float("nan")] * int(rng.integers(0, 3))
    c = clock_check("/joint_states", list(rng.permutation(delays)), tolerance)
    least = offset + delivery.min()
    assert c.value == pytest.approx(least, abs=1e-9)
    assert c.passed == (abs(least) <= tolerance)
    assert c.name == "clock:/joint_states" and f"{abs(least):.3f} s" in c.detail
    assert ("ahead of" if least < 0 else "behind") in c.detail
    assert ("synchronise" in c.detail) == (not c.passed)


def test_the_clock_check_passes_unstamped_joint_states():
    c = clock_check("/joint_states", [float("nan")] * 4, 2.0)
    assert c.passed and "not checked" in c.detail and c.value is None
    assert clock_check("/joint_states", [], 2.0).passed


# ------------------------------------------------------------------ every field, at the bounds
def test_rates_at_their_bounds():
    """Two messages make a rate; equal stamps at either end do not shorten the span; a
    rate exactly 80 % of the driver's passes; one message never passes a stated rate."""
    assert measured_rate([3, 1]) == 0.5 and measured_rate([0.0, 0.0, 1.0]) == 2.0
    assert measured_rate([0.0, 1.0, 1.0]) == 2.0
    assert rate_check("/j", [0.0, 0.5, 1.0], 1.0, 2.5) == Check(
        "topic:/j", True, 2.0, 2.5, "3 messages in 1.0 s: 2.0 Hz (driver: 2.5 Hz, at least "
        "2.0)")
    assert rate_check("/j", [0.0, 0.5, 1.0], 1.0, 2.6) == Check(
        "topic:/j", False, 2.0, 2.6, "3 messages in 1.0 s: 2.0 Hz (driver: 2.6 Hz, at least "
        "2.1)")
    assert rate_check("/j", [0.0], 1.0, 1e-9) == Check(
        "topic:/j", False, 0.0, 1e-9, "1 messages in 1.0 s: 0.0 Hz (driver: 1e-09 Hz, at "
        "least 0.0)")
    assert rate_check("/j", [], 1.0, 0.0) == Check("topic:/j", False, 0.0, 0.0,
                                                   "0 messages in 1.0 s: 0.0 Hz")
    assert rate_check("/x", [0.0, 0.5], 2.0, 100.0, required=False) == Check(
        "topic:/x", True, 2.0, None, "2 messages in 2.0 s: 2.0 Hz (driver: 100 Hz, at least "
        "80.0); optional")


def test_qos_checks_say_what_was_asked_and_offered():
    offered = [("best_effort", "volatile"), ("best_effort", "volatile")]
    assert qos_check("/p", "reliable", "transient_local", offered) == Check(
        "qos:/p", False, 2.0, None, "2 publishers offering [('best_effort', 'volatile')]; "
        "subscription reliable/transient_local: reliable asked, best_effort offered; "
        "transient_local asked, volatile offered")
    assert qos_check("/p", "auto", "auto", []) == Check(
        "qos:/p", True, 0.0, None, "0 publishers offering nothing; subscription auto/auto")


def test_clocks_at_their_bounds():
    assert clock_check("/js", [0.25, 0.5], 0.25) == Check(
        "clock:/js", True, 0.25, 0.25, "stamps 0.250 s behind this computer's clock at the "
        "fastest of 2 deliveries (clock_tolerance 0.25 s)")
    assert clock_check("/js", [0.0], 0.1).detail.startswith("stamps 0.000 s behind")
    assert clock_check("/js", [-0.5, float("nan")], 0.25) == Check(
        "clock:/js", False, -0.5, 0.25, "stamps 0.500 s ahead of this computer's clock at "
        "the fastest of 1 deliveries (clock_tolerance 0.25 s): synchronise the robot's "
        "clock (chrony, NTP) or raise clock_tolerance")
    assert clock_check("/js", [], 2.0) == Check("clock:/js", True, None, 2.0,
                                                "no stamped message of 0: not checked")


def test_controllers_frames_and_the_model_every_field():
    assert controller_check("arm", True, ["a", "b"], 2.0) == Check(
        "controller:arm", True, None, None,
        "arm/follow_joint_trajectory answers; joints ['a', 'b']")
    assert controller_check("arm", False, ["a"], 2.5) == Check(
        "controller:arm", False, None, None,
        "arm/follow_joint_trajectory did not answer within 2.5 s")
    links, edges = {"base_link", "tool0"}, {("tool0", "Xtion_link"), ("Xtion_link", "cam")}
    assert frame_check("/c", "/cam", links, edges, True) == Check(
        "tf:/cam", True, 2.0, None, "/c: TF cam -> Xtion_link -> tool0")
    assert frame_check("/c", "/Xtion_link", links, edges, True).value == 1.0
    assert frame_check("/w", "tool0", links, set(), True) == Check(
        "tf:tool0", True, 0.0, None, "/w: a link of the model")
    assert frame_check("/w", "ft", links, edges, True) == Check(
        "tf:ft", False, None, None, "/w: frame 'ft' is no link of the model and no TF "
        "lookup connects it to one (2 transforms heard)")
    assert frame_check("/m", "mocap", links, edges, False) == Check(
        "tf:mocap", True, None, None, "/m: frame 'mocap' is no link of the model and no TF "
        "lookup connects it to one (2 transforms heard); estimated by the calibration")
    held = ModelProvenance(source="topic", location="/robot_description", sha256="cd" * 32)
    assert model_check(None, set(), {}) == Check(
        "model", False, None, None, "no model: the robot description was not received")
    assert model_check(held, {"a"}, {"x.yaml": ["a"]}) == Check(
        "model", True, None, None, "topic /robot_description (sha256 cdcdcdcdcdcd)")
    assert model_check(held, {"a"}, {"arm": ["b"], "x.yaml": ["a", "c"]}) == Check(
        "model", False, 2, 0, "topic /robot_description (sha256 cdcdcdcdcdcd) lacks the "
        "joints ['b'] of arm; the joints ['c'] of x.yaml")


def test_the_identifiability_summary_of_planned_postures():
    ident = Identifiability(identified=["a", "b"], structural=["a", "b", "c"],
                            condition_number=np.float64(12.5), expected_std={})
    s = identifiability_summary(ident)
    assert s == {"rank": 2, "parameters": 3, "condition_number": 12.5}
    assert type(s["condition_number"]) is float

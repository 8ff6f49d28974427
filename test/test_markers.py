"""The calibration's posture markers (calibration/markers.py, ros/markers.py): the per-posture
fit written beside result.yaml reproduces the result's RMSEs, the table round-trips exactly,
the colour rule, and bad tables or scales refused by name.  The nominal layer shown while
the calibration runs (tasks/calibrate.py ``on_nominal``, the worker's ``Partial``) is the
final one, sent before the outcome."""
import os

import numpy as np
import pytest
import yaml
from conftest import ROOT
from hypothesis import given, settings, strategies as st

from figaroh_ros.calibration.markers import (
    PostureFit, error_colour, marker_specs, read_posture_fit, write_posture_fit
)
from figaroh_ros.errors import DataError


TIAGO = os.path.join(ROOT, "config", "tiago_calibration_offset.yaml")


@pytest.fixture(scope="module")
def tiago_run(tmp_path_factory):
    from figaroh_ros.tasks import calibrate
    out = tmp_path_factory.mktemp("tiago")
    previews = []
    outcome = calibrate.run(TIAGO, out=str(out / "run"), on_nominal=previews.append)
    return outcome, read_posture_fit(outcome.paths["postures_fit"]), previews


@pytest.fixture(scope="module")
def tiago(tiago_run):
    return tiago_run[:2]


def test_the_fit_reproduces_the_result(tiago):
    outcome, fit = tiago
    s = outcome.summary
    val = np.array([sp == "validation" for sp in fit.split])
    assert val.sum() == s["postures_validation"]
    assert (~val).sum() == s["postures_train"]
    rms = lambda e: 1e3 * np.sqrt(np.mean(e ** 2))   # noqa: E731
    assert rms(fit.errors("calibrated")[val]) == pytest.approx(s["rmse_validation_mm"],
                                                               rel=1e-9)
    assert rms(fit.errors("nominal")[val]) == pytest.approx(s["nominal_rmse_validation_mm"],
                                                            rel=1e-9)
    with open(outcome.paths["result"]) as f:
        assert yaml.safe_load(f)["rmse_validation_mm"] == s["rmse_validation_mm"]


def test_marker_specs_count_positions_and_colours(tiago):
    _, fit = tiago
    specs = marker_specs(fit, good_m=5e-4)
    n = len(fit.ids) * fit.measured.shape[1]
    by_ns = {ns: [s for s in specs if s["ns"] == ns]
             for ns in ("measured", "nominal", "calibrated", "error", "summary")}
    assert [len(by_ns[k]) for k in by_ns] == [n, n, n, n, 1]
    for s in by_ns["measured"]:
        assert np.array_equal(s["points"][0], fit.measured.reshape(-1, 3)[s["id"]])
    e = fit.errors("calibrated").reshape(-1)
    for s in by_ns["calibrated"]:
        assert s["colour"] == error_colour(e[s["id"]], 5e-4)
    assert len({(s["ns"], s["id"]) for s in specs}) == len(specs)      # stable, unique ids


def test_colour_rule():
    assert error_colour(0.0, 1e-3) == (0.0, 1.0, 0.0, 1.0)
    assert error_colour(1e-3, 1e-3) == (0.0, 1.0, 0.0, 1.0)
    assert error_colour(2e-3, 1e-3) == (0.5, 0.5, 0.0, 1.0)
    assert error_colour(1.0, 1e-3) == (1.0, 0.0, 0.0, 1.0)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 6), k=st.integers(1, 3), seed=st.integers(0, 10**6))
def test_table_round_trip(tmp_path_factory, n, k, seed):
    rng = np.random.default_rng(seed)
    fit = PostureFit([f"p{i}" for i in range(n)], ["train"] * n,
                     *(rng.normal(size=(n, k, 3)) * 10.0 ** rng.integers(-6, 3)
                       for _ in range(3)))
    path = str(tmp_path_factory.mktemp("fit") / "postures_fit.csv")
    write_posture_fit(fit, path)
    back = read_posture_fit(path)
    assert back.ids == fit.ids and back.split == fit.split
    for s in ("measured", "nominal", "calibrated"):
        assert np.array_equal(getattr(back, s), getattr(fit, s))


def test_bad_tables_and_scales_refused(tmp_path):
    fit = PostureFit(["a"], ["train"], *(np.zeros((1, 1, 3)) for _ in range(3)))
    path = str(tmp_path / "fit.csv")
    write_posture_fit(fit, path)
    text = open(path).read().splitlines()
    open(path, "w").write("\n".join([text[0], text[1].replace("0.0", "nan", 1)]) + "\n")
    with pytest.raises(DataError, match="row 2: a position is not finite"):
        read_posture_fit(path)
    open(path, "w").write(text[0] + "\n")
    with pytest.raises(DataError, match="no posture"):
        read_posture_fit(path)
    open(path, "wb").write(b"\xff\xfe\x00")
    with pytest.raises(DataError):
        read_posture_fit(path)
    for bad in (0.0, -1e-3, float("nan"), float("inf")):
        with pytest.raises(DataError, match="marker colour scale"):
            marker_specs(fit, bad)


def test_ros_conversion(tiago):
    from builtin_interfaces.msg import Time
    from visualization_msgs.msg import Marker

    from figaroh_ros.ros.markers import marker_array
    outcome, fit = tiago
    msg = marker_array(outcome.paths["postures_fit"], "mocap", 5e-4, Time(sec=3))
    assert msg.markers[0].action == Marker.DELETEALL
    spheres = [m for m in msg.markers if m.ns == "measured"]
    assert all(m.header.frame_id == "mocap" and m.type == Marker.SPHERE for m in spheres)
    p = spheres[3].pose.position
    assert np.array_equal([p.x, p.y, p.z], fit.measured.reshape(-1, 3)[spheres[3].id])


def test_the_nominal_layer_before_the_calibration_is_the_final_one(tiago_run):
    _, fit, previews = tiago_run
    assert len(previews) == 1
    pre = previews[0]
    assert pre.ids == fit.ids and pre.split == fit.split
    assert np.array_equal(pre.measured, fit.measured)
    assert np.allclose(pre.nominal, fit.nominal, rtol=0, atol=1e-12)
    assert np.array_equal(pre.calibrated, pre.nominal)       # not calibrated yet


def test_preview_markers(tiago_run):
    from builtin_interfaces.msg import Time
    from visualization_msgs.msg import Marker

    from figaroh_ros.calibration.markers import GREY
    from figaroh_ros.ros.markers import preview_array, preview_specs
    _, fit, (pre,) = tiago_run
    specs = preview_specs(pre, 5e-4)
    n = len(fit.ids) * fit.measured.shape[1]
    by_ns = {ns: sorted((s for s in specs if s["ns"] == ns), key=lambda s: s["id"])
             for ns in ("measured", "nominal", "calibrated", "error", "summary")}
    assert [len(by_ns[k]) for k in by_ns] == [n, n, 0, n, 1]
    final = {(s["ns"], s["id"]) for s in marker_specs(fit, 5e-4)}
    assert {(s["ns"], s["id"]) for s in specs} <= final            # replaced in place
    for s in by_ns["nominal"]:
        assert np.array_equal(s["points"][0], pre.nominal.reshape(-1, 3)[s["id"]])
        assert s["colour"] == GREY
    measured, nominal = pre.measured.reshape(-1, 3), pre.nominal.reshape(-1, 3)
    for s in by_ns["error"]:
        assert s["colour"] == GREY
        assert np.array_equal(s["points"], [measured[s["id"]], nominal[s["id"]]])
    rms = 1e3 * np.sqrt(np.mean(fit.errors("nominal") ** 2))
    assert by_ns["summary"][0]["text"] == (f"{len(fit.ids)} postures: nominal {rms:.2f} mm "
                                           "RMS; calibrating")
    msg = preview_array(pre, "mocap", 5e-4, Time(sec=3), note="NOT calibrated: Canceled")
    assert msg.markers[0].action == Marker.DELETEALL and len(msg.markers) == 1 + 3 * n + 1
    assert msg.markers[-1].text.endswith("; NOT calibrated: Canceled")
    assert all(m.header.frame_id == "mocap" for m in msg.markers)


def test_the_worker_sends_the_nominal_layer_before_the_outcome(tmp_path, tiago_run):
    from figaroh_ros.progress import Progress
    from figaroh_ros.ros.worker import GEOMETRIC, POSTURES_NOMINAL, Job, Partial, run_job
    from figaroh_ros.tasks import TaskOutcome
    _, fit, _ = tiago_run
    seen = []
    ended = run_job(Job(GEOMETRIC, TIAGO, str(tmp_path / "run")), seen.append,
                    lambda: False, on_partial=seen.append)
    assert isinstance(ended, TaskOutcome), ended
    parts = [m for m in seen if isinstance(m, Partial)]
    assert [p.name for p in parts] == [POSTURES_NOMINAL]
    assert all(isinstance(m, Progress) for m in seen if m is not parts[0])
    pre = parts[0].value
    assert pre.ids == fit.ids and np.array_equal(pre.measured, fit.measured)
    assert np.allclose(pre.nominal, fit.nominal, rtol=0, atol=1e-12)

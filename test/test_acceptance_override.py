"""The Calibrate result's acceptance verdict (PASSED / FAILED / "" when the
config sets no threshold, each threshold with its measured number) and the goal's
``accept_failed_acceptance``: a model that failed only the acceptance thresholds is
published when the goal overrides them, and the message says so; a model that failed any
other check of the gate (physical, plausibility, held-out improvement, residual) is never
published, override or not."""
import pytest

from figaroh_ros.tasks.gate import Check, Verdict, publication_decision

rclpy = pytest.importorskip("rclpy")
from figaroh_ros.action import Calibrate  # noqa: E402
from figaroh_ros.ros.calibration_node import (  # noqa: E402
    dynamic_result, geometric_result, publication_line
)

IMPROVED = [Check("improvement_test", True, 1e-4, 0.01, "p = 1e-4"),
            Check("improvement_margin", True, 0.9, 0.05, "10 -> 1 mm: 90 % lower")]
RMSE_OK = Check("acceptance_position_rmse", True, 0.17, 0.5,
                "held-out position RMSE 0.17 mm (within 0.5 mm)")
RMSE_BAD = Check("acceptance_position_rmse", False, 0.17, 0.05,
                 "held-out position RMSE 0.17 mm (beyond 0.05 mm)")
PHYSICAL_BAD = Check("physical_consistency", False, None, None,
                     "1 links not physically consistent, first link_3: negative mass")


def publication(*checks):
    return Verdict(list(checks)).to_dict()


def geometric_summary(*checks):
    return {"parameters": [{"name": "d_px_1", "value": 1e-3, "std": 1e-5, "unit": "m"}],
            "rmse_validation_mm": 0.17, "nominal_rmse_validation_mm": 10.0,
            "publication": publication(*checks)}


def test_passed_thresholds_are_published_with_their_numbers():
    d = publication_decision(publication(*IMPROVED, RMSE_OK))
    assert d.why == [] and d.overridden == [] and d.acceptance == "PASSED"
    assert d.acceptance_detail == ("acceptance_position_rmse: held-out position RMSE "
                                   "0.17 mm (within 0.5 mm)")
    assert publication_line(d, True) == "; acceptance PASSED"


def test_failed_thresholds_are_not_published_without_the_override():
    d = publication_decision(publication(*IMPROVED, RMSE_BAD))
    assert d.acceptance == "FAILED" and "0.17 mm (beyond 0.05 mm)" in d.acceptance_detail
    assert d.why == ["acceptance_position_rmse: held-out position RMSE 0.17 mm "
                     "(beyond 0.05 mm)"] and d.overridden == []
    line = publication_line(d, True)
    assert line.startswith("; acceptance FAILED; NOT published: acceptance_position_rmse")
    assert "accept_failed_acceptance publishes it" in line


def test_failed_thresholds_are_published_on_the_goals_override():
    d = publication_decision(publication(*IMPROVED, RMSE_BAD), accept_failed_acceptance=True)
    assert d.why == [] and d.acceptance == "FAILED"
    assert d.overridden == ["acceptance_position_rmse: held-out position RMSE 0.17 mm "
                            "(beyond 0.05 mm)"]
    assert publication_line(d, True) == (
        "; acceptance FAILED; published despite FAILED acceptance: acceptance_position_rmse:"
        " held-out position RMSE 0.17 mm (beyond 0.05 mm) (goal override)")


def test_no_threshold_in_the_config():
    for override in (False, True):
        d = publication_decision(publication(*IMPROVED), override)
        assert (d.why, d.acceptance, d.acceptance_detail, d.overridden) == ([], "", "", [])
        assert publication_line(d, True) == ""
    failed = publication(IMPROVED[0], Check("improvement_margin", False, 0.01, 0.05, "1 %"))
    d = publication_decision(failed, accept_failed_acceptance=True)
    assert d.why == ["improvement_margin: 1 %"] and d.acceptance == ""


@pytest.mark.parametrize("other", [
    PHYSICAL_BAD,
    Check("improvement_test", False, 0.3, 0.01, "p = 0.3 (required < 0.01)"),
    Check("residual_vs_noise", False, 80.0, 10.0, "residual RMS 80 x the stated noise"),
])
def test_another_failed_check_is_never_published_even_with_the_override(other):
    d = publication_decision(publication(*IMPROVED, RMSE_BAD, other),
                             accept_failed_acceptance=True)
    assert d.overridden == [] and d.acceptance == "FAILED"
    assert d.why == [RMSE_BAD.line(), other.line()]
    line = publication_line(d, True)
    assert "NOT published" in line and "goal override" not in line
    assert "accept_failed_acceptance publishes it" not in line


def test_no_verdict_or_no_check_is_never_published():
    for pub in (None, {"passed": False, "verdict": "FAILED", "checks": []}):
        d = publication_decision(pub, accept_failed_acceptance=True)
        assert d.why and d.overridden == [] and d.acceptance == ""


def test_the_result_fields_of_a_geometric_goal():
    res = Calibrate.Result()
    gate, line = geometric_result(res, geometric_summary(*IMPROVED, RMSE_BAD))
    assert (res.acceptance, gate.why) == ("FAILED", [RMSE_BAD.line()])
    assert res.acceptance_detail == RMSE_BAD.line() and "gate FAILED" in line
    res = Calibrate.Result()
    gate, _ = geometric_result(res, geometric_summary(*IMPROVED, RMSE_BAD), override=True)
    assert res.acceptance == "FAILED" and gate.why == [] and gate.overridden
    res = Calibrate.Result()
    gate, _ = geometric_result(res, geometric_summary(*IMPROVED, RMSE_BAD, PHYSICAL_BAD),
                               override=True)
    assert res.acceptance == "FAILED" and PHYSICAL_BAD.line() in gate.why
    res = Calibrate.Result()
    gate, _ = geometric_result(res, geometric_summary(*IMPROVED))
    assert (res.acceptance, res.acceptance_detail, gate.why) == ("", "", [])


def test_the_result_fields_of_a_dynamic_goal():
    ratio = Check("acceptance_torque_relative_error", False, 0.08, 0.05, "held-out torque "
                  "RMS over the measured torques' RMS 0.08 (beyond 0.05)")
    summary = {"base_parameters": [{"name": "b1", "value": 1.0, "std": 0.1}],
               "validation_rmse": {"j1": 0.2}, "nominal_validation_rmse": {"j1": 0.4},
               "better_than_nominal": True, "publication": publication(*IMPROVED, ratio)}
    res = Calibrate.Result()
    gate, _ = dynamic_result(res, summary, "/tmp/x.urdf", override=True)
    assert res.acceptance == "FAILED" and "0.08 (beyond 0.05)" in res.acceptance_detail
    assert gate.why == [] and gate.overridden == [ratio.line()]
    summary["publication"] = publication(*IMPROVED, ratio, PHYSICAL_BAD)
    gate, _ = dynamic_result(Calibrate.Result(), summary, "/tmp/x.urdf", override=True)
    assert gate.why == [ratio.line(), PHYSICAL_BAD.line()] and gate.overridden == []

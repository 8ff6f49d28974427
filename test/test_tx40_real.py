"""Real data: the Staubli TX40 recording of Gautier et al. against FIGAROH's reference table.

Every reference base parameter with a relative std below 5 % must lie within 3 of its
reference standard deviations, for OLS and for WLS, and the model has 60 base parameters.
"""
import os

import pytest
from conftest import ROOT, TX40_DIR

from figaroh_ros.config.identification import load_config
from figaroh_ros.io.reference import compare, read_reference
from figaroh_ros.tasks.identify import identify_config


@pytest.fixture(scope="module")
def tx40_result():
    assert os.path.isdir(TX40_DIR), f"shared data missing: {TX40_DIR}"
    cfg = load_config(os.path.join(ROOT, "config", "staubli_tx40.yaml"))
    return identify_config(cfg).to_dict()


@pytest.mark.parametrize("method", ["ols", "wls"])
def test_tx40_matches_reference(tx40_result, method):
    ref = read_reference(os.path.join(TX40_DIR, "reference_base_parameters.csv"))
    assert tx40_result["n_base_parameters"] == 60 == len(ref)
    rows = compare(tx40_result[method], ref, method)
    well = [r for r in rows if r.ref_std_percent < 5.0]
    assert len(well) == 19
    bad = [(r.name, round(r.z, 2)) for r in well if abs(r.z) > 3]
    assert not bad, bad
    # our own uncertainty agrees with the reference's on those parameters
    for r in well:
        assert 0.5 < r.ours_std_percent / r.ref_std_percent < 2.0, r


def test_tx40_essential_parameters(tx40_result):
    ess = {r["name"].split()[0] for r in tx40_result["essential_parameters"]}
    ref = read_reference(os.path.join(TX40_DIR, "reference_essential_parameters.csv"))
    # the essential set is selected by the same rule: most of the reference set is found
    assert len(ess & set(ref)) >= 0.8 * len(ref)
    assert max(r["std_percent"] for r in tx40_result["essential_parameters"]) < 30 * min(
        r["std_percent"] for r in tx40_result["essential_parameters"])

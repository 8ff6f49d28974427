"""A task's nominal model from ``robot.source``: the TX40 identification
started from a xacro wrapping its URDF gives the same base parameters as from the URDF
itself, and result.yaml records where the model came from with the sha256 of its text."""
import hashlib
import os

import numpy as np
import yaml
from conftest import ROOT

from figaroh_ros.tasks import identify


def _tx40_config(tmp_path, robot: dict) -> str:
    with open(os.path.join(ROOT, "config", "staubli_tx40.yaml")) as f:
        cfg = yaml.safe_load(f)
    cfg["robot"] = dict(robot, name="staubli_tx40", joints=cfg["robot"]["joints"])
    cfg.setdefault("output", {})["plots"] = False
    path = tmp_path / f"tx40_{robot.get('source', 'urdf')}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


def test_a_xacro_model_gives_the_urdf_results_and_its_provenance(tmp_path, monkeypatch):
    monkeypatch.setenv("FIGAROH_MODEL_CACHE", str(tmp_path / "cache"))
    urdf = os.path.join(ROOT, "config", "urdf", "tx40_mdh_modified.urdf")
    wrapper = tmp_path / "tx40.urdf.xacro"
    wrapper.write_text('<?xml version="1.0"?>\n<robot xmlns:xacro="http://www.ros.org/wiki/'
                       f'xacro" name="tx40"><xacro:include filename="{urdf}"/></robot>\n')
    by_file = identify.run(_tx40_config(tmp_path, {"urdf": urdf}), out=str(tmp_path / "a"))
    by_xacro = identify.run(_tx40_config(tmp_path, {"source": "xacro",
                                                    "xacro": str(wrapper)}),
                            out=str(tmp_path / "b"))
    a, b = by_file.summary, by_xacro.summary
    assert a["nominal_model"]["source"] == "urdf" and b["nominal_model"]["source"] == "xacro"
    assert a["nominal_model"]["sha256"] == hashlib.sha256(
        open(urdf, "rb").read()).hexdigest()
    cached = [f for f in os.listdir(tmp_path / "cache") if f.endswith(".urdf")]
    assert cached == [f"model_{b['nominal_model']['sha256'][:12]}.urdf"]
    va = {p["name"]: p["value"] for p in a["base_parameters"]}
    vb = {p["name"]: p["value"] for p in b["base_parameters"]}
    assert va.keys() == vb.keys()
    assert np.allclose([va[k] for k in va], [vb[k] for k in va], rtol=1e-9, atol=1e-12)
    with open(tmp_path / "b" / "result.yaml") as f:
        assert yaml.safe_load(f)["nominal_model"]["location"] == str(wrapper)


def test_a_calibration_from_a_xacro_model_matches_the_urdf_one(tmp_path, monkeypatch):
    """``figaroh-ros calibrate`` resolves ``robot.source`` too: TIAGo's offset calibration
    from a xacro wrapping its URDF gives the URDF's parameters; result.yaml names the xacro
    and the sha256 of the expanded text; ``--urdf`` still overrides a xacro source."""
    from figaroh_ros.tasks import calibrate
    monkeypatch.setenv("FIGAROH_MODEL_CACHE", str(tmp_path / "cache"))
    config = os.path.join(ROOT, "config", "tiago_calibration_offset.yaml")
    with open(config) as f:
        cfg = yaml.safe_load(f)
    urdf = os.path.join(ROOT, "config", cfg["robot"]["urdf"])
    wrapper = tmp_path / "tiago.urdf.xacro"
    wrapper.write_text('<?xml version="1.0"?>\n<robot xmlns:xacro="http://www.ros.org/wiki/'
                       f'xacro" name="tiago"><xacro:include filename="{urdf}"/></robot>\n')
    cfg["robot"] = {"name": "tiago", "source": "xacro", "xacro": str(wrapper),
                    "xacro_args": {"unused": "1"}}
    cfg.setdefault("output", {})["plots"] = False
    by_xacro_cfg = tmp_path / "tiago_xacro.yaml"
    by_xacro_cfg.write_text(yaml.safe_dump(cfg))
    a = calibrate.run(config, out=str(tmp_path / "a")).summary
    b = calibrate.run(str(by_xacro_cfg), out=str(tmp_path / "b")).summary
    assert a["nominal_model"]["source"] == "urdf" and b["nominal_model"]["source"] == "xacro"
    assert b["nominal_model"]["location"] == str(wrapper)
    assert b["nominal_model"]["arguments"] == {"unused": "1"}
    va = {p["name"]: p["value"] for p in a["parameters"]}
    vb = {p["name"]: p["value"] for p in b["parameters"]}
    assert va.keys() == vb.keys()
    assert np.allclose([va[k] for k in va], [vb[k] for k in va], rtol=1e-9, atol=1e-12)
    c = calibrate.run(str(by_xacro_cfg), urdf=urdf, out=str(tmp_path / "c")).summary
    assert c["nominal_model"]["source"] == "urdf"
    assert c["nominal_model"]["sha256"] == a["nominal_model"]["sha256"]

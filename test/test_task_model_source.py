"""A task's nominal model from ``robot.source`` (issue 15 item 1): the TX40 identification
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

"""Several contact planes from a config and a posture table (``measurement.planes`` and a
``plane`` column): ``figaroh-ros calibrate`` gives the library's estimate on the same
postures (to 1e-9), writes the planes with the rest, and refuses a bag (no plane is named
in one: the config refuses a plane measurement from bags) and an undeclared plane by name.  The numbers against the hidden truth:
test_planes.py."""
import os

import numpy as np
import pytest
import yaml
from test_planes import NOISE, PROBE, TABLE, WALL, _data, _truth

from figaroh_ros.calibration import calibrate
from figaroh_ros.calibration.planes import Plane
from figaroh_ros.errors import ConfigError, DataError
from figaroh_ros.tasks import calibrate as task


def _table(path, chain, Q, names):
    with open(path, "w") as f:
        f.write(",".join(chain + ["plane"]) + "\n")
        for q, n in zip(Q, names):
            f.write(",".join(f"{v:.17g}" for v in q) + f",{n}\n")
    return str(path)


@pytest.fixture(scope="module")
def case(tmp_path_factory):
    work = tmp_path_factory.mktemp("planes_config")
    urdf, km, x = _truth(PROBE, {"table": TABLE, "wall": WALL}, seed=21)
    rng = np.random.default_rng(121)
    Q, names = _data(km, x, [30, 30], rng)
    Qv, names_v = _data(km, x, [10, 10], rng)
    guess = (np.array(PROBE) + 0.005).tolist()
    cfg = {"robot": {"name": "ur10", "urdf": urdf},
           "calibration": {"level": "offset", "tool_frame": "tool0", "tool_guess": sum(guess, [])},
           "measurement": {"type": "plane", "points": [1], "noise_position_mm": NOISE * 1e3,
                           "planes": [{"name": "table"}, {"name": "wall"}]},
           "data": {"path": _table(work / "train.csv", km.chain, Q, names),
                    "validation": _table(work / "val.csv", km.chain, Qv, names_v)}}
    path = work / "planes.yaml"
    path.write_text(yaml.safe_dump(cfg))
    api = calibrate(urdf, Q, None, tool_frame="tool0", level="offset", measurement="plane",
                    points=np.array(guess), noise=NOISE,
                    planes=[Plane("table"), Plane("wall")], contacts=names,
                    validation=(Qv, None, names_v))
    return {"work": work, "config": str(path), "raw": cfg, "api": api, "chain": km.chain}


def test_the_task_gives_the_librarys_estimate(case):
    out = task.run(case["config"], out=str(case["work"] / "out"))
    res = task.calibrate_config(task.load_calibration_config(case["config"]))
    api = case["api"]
    assert np.allclose(res.estimate.x, api.estimate.x, atol=1e-9, rtol=0)
    assert res.estimate.expressions == api.estimate.expressions
    assert any(e.startswith("plane_wall_") for e in res.estimate.expressions)
    with open(out.paths["result"]) as f:
        doc = yaml.safe_load(f)
    print({k: doc[k] for k in doc if "rmse" in k})
    assert os.path.isfile(out.paths["urdf"])


def test_an_undeclared_plane_and_a_bag_are_refused(case, tmp_path):
    raw = yaml.safe_load(yaml.safe_dump(case["raw"]))
    raw["measurement"]["planes"] = [{"name": "table"}, {"name": "floor"}]
    path = tmp_path / "undeclared.yaml"
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(DataError, match="wall"):
        task.calibrate_config(task.load_calibration_config(str(path)))
    raw = yaml.safe_load(yaml.safe_dump(case["raw"]))
    raw["bag"] = {"paths": [str(tmp_path)]}
    path = tmp_path / "bag.yaml"
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(ConfigError, match="measurement.type"):     # a bag names no plane
        task.calibrate_config(task.load_calibration_config(str(path)))


def test_planning_postures_for_several_planes_is_refused(case):
    from figaroh_ros.tasks import plan_postures
    with pytest.raises(ConfigError, match="measurement.planes"):
        plan_postures.run(case["config"], out=str(case["work"] / "plan" / "postures.csv"))
    assert not os.path.exists(case["work"] / "plan")

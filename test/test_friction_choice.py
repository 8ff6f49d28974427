"""The friction model of each joint chosen by cross-validation inside the training part
(``identification/friction_choice.py``): on a simulated xArm7 whose joints have known,
different friction laws, the choice finds every true term; and it never looks at the
held-out part (the held-out torques replaced, the choice and its evidence are the same
to the last bit)."""
import numpy as np
import pytest
import yaml

from figaroh_ros.config.identification import load_config
from figaroh_ros.errors import ConfigError
from figaroh_ros.excitation.fourier import fourier_trajectory
from figaroh_ros.identification.friction_choice import CANDIDATES, absent_terms
from figaroh_ros.identification.parameters import DriveOptions, parameter_layout
from figaroh_ros.model.robot import example_robot_urdf, load_urdf_model
from figaroh_ros.sim.dynamics import measured_torques, perturbed_parameters
from figaroh_ros.tasks.identify import identify_config

URDF = example_robot_urdf("xarm_description/urdf/xarm7.urdf")
JOINTS = [f"joint{i}" for i in range(1, 8)]
TRUE = ["stribeck", "viscous", "coulomb", "asymmetric_viscous", "stribeck", "viscous",
        "coulomb"]
V_S, V_ST = 0.02, 0.1          # on the search grids


def friction(model: str, v: np.ndarray) -> np.ndarray:
    f = 1.0 * v + 0.2
    if model in ("coulomb", "stribeck"):
        f = f + 0.8 * np.tanh(v / V_S)
    if model == "stribeck":
        f = f + 0.6 * np.sign(v) * np.exp(-(v / V_ST) ** 2)
    if model == "asymmetric_viscous":
        f = f + 1.5 * np.minimum(v, 0.0)
    return f


def write(folder, tau_scale_held_out: float = 1.0, seed: int = 0):
    robot = load_urdf_model(URDF, JOINTS)
    rigid = DriveOptions(viscous_friction=False, coulomb_friction=False,
                         rotor_inertia=False, torque_offset=False)
    layout = parameter_layout(robot, rigid)
    traj = fourier_trajectory(robot, 24.0, 50.0, harmonics=5, amplitude=0.8, seed=3)
    tau = measured_torques(robot, layout, rigid, perturbed_parameters(robot, layout, seed=4),
                           traj, 0.02, seed=5)
    tau += np.column_stack([friction(m, traj.dq[:, j]) for j, m in enumerate(TRUE)])
    k = int(round(len(traj.t) * 0.7))
    rng = np.random.default_rng(seed)
    tau[k:] = tau[k:] * tau_scale_held_out + (seed > 0) * rng.normal(size=tau[k:].shape)
    cols = ["t"] + [f"{j}_position" for j in JOINTS] + [f"{j}_effort" for j in JOINTS]
    folder.mkdir(parents=True, exist_ok=True)
    np.savetxt(folder / "rec.csv", np.column_stack([traj.t, traj.q, tau]), delimiter=",",
               header=",".join(cols), comments="")
    (folder / "c.yaml").write_text(yaml.safe_dump({
        "robot": {"name": "xarm7", "urdf": URDF, "joints": JOINTS},
        "model": {"rotor_inertia": False, "friction_models": ["per_joint"]},
        "data": {"format": "csv_table", "path": str(folder), "table": "rec.csv",
                 "time_column": "t"},
        "processing": {"position_cutoff_hz": 8.0},
        "estimation": {"method": "ols", "validation_fraction": 0.3}}))
    return str(folder / "c.yaml")


@pytest.fixture(scope="module")
def chosen(tmp_path_factory):
    return identify_config(load_config(write(tmp_path_factory.mktemp("sim") / "a")))


def test_every_true_friction_term_is_found(chosen):
    fs = chosen.friction_selection
    got = [fs["joints"][j]["model"] for j in JOINTS]
    for j, (g, t) in enumerate(zip(got, TRUE)):
        assert set(CANDIDATES[t]) <= set(CANDIDATES[g]), (JOINTS[j], g, t)
    # where the laws differ by far more than the noise, the very law
    assert [got[i] for i in (0, 2, 3, 4, 6)] == [TRUE[i] for i in (0, 2, 3, 4, 6)], got
    assert fs["coulomb_velocity"] == V_S and fs["stribeck_velocity"] == V_ST
    # the absent terms are those of the choice, and the held-out prediction is at noise
    ids = [chosen.model.joint_ids[k] for k in range(7)]
    absent = absent_terms({k: m for k, m in enumerate(got)}, ids)
    names = " ".join(chosen.base.names)
    assert all(a not in names.split() for a in absent)
    assert chosen.validation_relative_error_stacked < 0.02


def test_the_held_out_part_is_never_looked_at(chosen, tmp_path):
    """The last 30 % of the torques tripled and drowned in noise: the same choice and
    evidence, and a far worse held-out error (the held-out part is still predicted)."""
    other = identify_config(load_config(write(tmp_path / "b", 3.0, seed=7)))
    a, b = chosen.friction_selection, other.friction_selection
    assert a == b
    assert other.validation_relative_error_stacked > 5 * chosen.validation_relative_error_stacked


def test_per_joint_stands_alone(tmp_path):
    path = write(tmp_path / "c")
    cfg = load_config(path)
    cfg = cfg.model_copy(update={"model": cfg.model.model_copy(
        update={"friction_models": ["per_joint", "tanh"]})})
    with pytest.raises(ConfigError, match="per_joint stands alone"):
        identify_config(cfg)

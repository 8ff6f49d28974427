"""Base parameters defined by the model alone: names, coefficients and hash identical for
every recording of one model (xArm7 from example-robot-data), whatever its trajectory and
noise; coefficients canonical (structural zeros absent); tables refuse results of two
definitions; ``batch identify`` over 8 recordings of two hidden robots gives one table whose
rows equal each recording's own ``identify``."""
import os

import numpy as np
import pytest
import yaml
from conftest import ROOT
from hypothesis import given, settings
from hypothesis import strategies as st

from figaroh_ros.cli.main import main as cli_main
from figaroh_ros.config.identification import load_config
from figaroh_ros.errors import DataError
from figaroh_ros.excitation.fourier import fourier_trajectory
from figaroh_ros.identification.base_definition import (
    SIGNIFICANT, canonical_coefficient, check_same_definition, model_definition
)
from figaroh_ros.identification.base_parameters import base_parameters
from figaroh_ros.identification.fit import EstimationOptions, Setup, identify_equations
from figaroh_ros.identification.observation import Processing, torque_equations
from figaroh_ros.identification.parameters import DriveOptions, parameter_layout
from figaroh_ros.io.bags import typestore
from figaroh_ros.io.expressions import linear_terms
from figaroh_ros.io.segmented_bag import SegmentedBagWriter
from figaroh_ros.model.robot import example_robot_urdf, load_urdf_model
from figaroh_ros.sim.dynamics import measured_torques, perturbed_parameters
from figaroh_ros.tasks import batch
from figaroh_ros.tasks.identify import identify_config

URDF = example_robot_urdf("xarm_description/urdf/xarm7.urdf")
JOINTS = [f"joint{i}" for i in range(1, 8)]
DRIVE = DriveOptions(viscous_friction=True, coulomb_friction=True, rotor_inertia=True,
                     torque_offset=True)


@pytest.fixture(scope="module")
def arm():
    robot = load_urdf_model(URDF, JOINTS)
    return robot, parameter_layout(robot, DRIVE)


def test_coefficients_are_canonical():
    assert canonical_coefficient(0.0825 ** 2) == 0.00680625           # exact decimal
    # both sides of a 6th-digit rounding boundary give one value
    assert canonical_coefficient(0.1233125 + 1e-15) == canonical_coefficient(
        0.1233125 - 1e-15) == 0.1233125
    x = 1 / 3
    assert canonical_coefficient(x) == float(f"{x:.{SIGNIFICANT}g}") == 0.3333333333
    assert canonical_coefficient(-np.sqrt(2)) == -1.414213562
    assert canonical_coefficient(0.0) == 0.0


def test_the_definition_is_the_models_own(arm):
    """Computed twice, the same bits; no coefficient is rounding noise; the data's own
    grouping (on a rich recording) has the same structure and coefficients within 1e-6,
    but for the terms of a joint rpy written 1.5708 (cos = -3.7e-6), absent here."""
    robot, layout = arm
    a = model_definition(robot, layout, DRIVE, JOINTS)
    b = model_definition(robot, layout, DRIVE, JOINTS)
    assert a.names == b.names and a.sha256 == b.sha256 and len(a.sha256) == 64
    assert np.array_equal(a.M, b.M)
    small = [n for n in a.names for c in linear_terms(n).values() if abs(c) < 1e-5]
    assert not small, small
    traj = fourier_trajectory(robot, 20.0, 100.0, harmonics=5, seed=3)
    tau = measured_torques(robot, layout, DRIVE, perturbed_parameters(robot, layout, seed=4),
                           traj, 0.05, seed=5)
    W, _, _ = torque_equations(robot, layout, DRIVE, traj.t, traj.q, tau, Processing())
    data = base_parameters(W, layout.names)
    assert list(data.base_index) == list(a.base_index)
    assert list(data.zero_index) == list(a.zero_index)
    assert np.allclose(data.M, a.M, rtol=1e-6, atol=2e-5)  # the 1.5708 rpy terms
    # another drive model is another definition
    no_rotor = DriveOptions(rotor_inertia=False)
    other = model_definition(robot, parameter_layout(robot, no_rotor), no_rotor, JOINTS)
    assert other.sha256 != a.sha256


@settings(max_examples=6, deadline=None)
@given(seed=st.integers(0, 10_000), noise=st.floats(0.0, 0.5),
       harmonics=st.integers(3, 6))
def test_random_trajectories_and_noise_give_the_same_definition(arm, seed, noise, harmonics):
    robot, layout = arm
    traj = fourier_trajectory(robot, 8.0, 50.0, harmonics=harmonics, seed=seed)
    phi = perturbed_parameters(robot, layout, seed=seed + 1)
    tau = measured_torques(robot, layout, DRIVE, phi, traj, noise, seed=seed + 2)
    setup = Setup("xarm7", robot, layout, DRIVE, list(JOINTS))
    result = identify_equations(
        setup, lambda: torque_equations(robot, layout, DRIVE, traj.t, traj.q, tau,
                                        Processing()), Processing(), EstimationOptions("ols"))
    ref = model_definition(robot, layout, DRIVE, JOINTS)
    assert result.base.names == ref.names
    assert result.to_dict()["base_definition"]["sha256"] == ref.sha256


def test_results_of_two_definitions_are_refused():
    check_same_definition({"a": "1" * 64, "b": "1" * 64, "c": None}, "table")
    with pytest.raises(DataError, match=r"a and b have different base-parameter "
                                        r"definitions \(111111111111 vs 222222222222\)"):
        check_same_definition({"a": "1" * 64, "b": "2" * 64}, "table")
    rows = [{"robot": "r", "recording": k, "date": k, "base_definition": h,
             "parameters": {"p": (1.0, 0.1)}} for k, h in (("x", "1" * 64), ("y", "3" * 64))]
    with pytest.raises(DataError, match="111111111111 vs 333333333333"):
        batch.drift(rows)


def test_a_recording_that_excites_too_little_is_refused_by_name(arm):
    """Joint 7 does not move: its friction cannot be estimated, and the error says so."""
    robot, layout = arm
    traj = fourier_trajectory(robot, 8.0, 50.0, seed=11)
    q = traj.q.copy()
    q[:, 6] = 0.3
    tau = measured_torques(robot, layout, DRIVE, perturbed_parameters(robot, layout), traj,
                           0.01)
    setup = Setup("xarm7", robot, layout, DRIVE, list(JOINTS))
    with pytest.raises(DataError, match=r"does not excite \d+ of the model's \d+ base "
                                        r"parameters \(.*fv7"):
        identify_equations(setup, lambda: torque_equations(robot, layout, DRIVE, traj.t, q,
                                                           tau, Processing()),
                           Processing(), EstimationOptions("ols"))


def _write_bag(folder, t0, traj, tau):
    store = typestore()
    T, JS = store.types, "sensor_msgs/msg/JointState"
    w = SegmentedBagWriter(str(folder), {"/joint_states": JS}, store, "mcap", 0.0)
    for k in range(len(traj.t)):
        ns = int(round((t0 + traj.t[k]) * 1e9))
        hdr = T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](
            sec=ns // 10**9, nanosec=ns % 10**9), frame_id="")
        msg = T[JS](header=hdr, name=JOINTS, position=traj.q[k], velocity=np.zeros(0),
                    effort=tau[k])
        w.write("/joint_states", ns, store.serialize_cdr(msg, JS))
    w.close()


def test_batch_of_eight_recordings_lines_up_with_single_runs(arm, tmp_path):
    """8 recordings (4 days of each of two robots with their own hidden parameters, a new
    trajectory every day; two of them bare storage files without metadata.yaml): one table, the same parameter names for every row, each row
    the recording's own ``identify``."""
    robot, layout = arm
    bags = []
    for r, name in enumerate(("robot_a", "robot_b")):
        phi = perturbed_parameters(robot, layout, seed=20 + r)
        for day in range(4):
            traj = fourier_trajectory(robot, 12.0, 50.0, harmonics=5, seed=100 * r + day)
            tau = measured_torques(robot, layout, DRIVE, phi, traj, 0.05, seed=day)
            folder = tmp_path / "fleet" / name / f"day{day}"
            _write_bag(folder, 1.7e9 + 86400 * day, traj, tau)
            if name == "robot_b" and day >= 2:     # published bare: storage file alone
                os.remove(folder / "metadata.yaml")
            bags.append(str(folder))
    config = tmp_path / "identify.yaml"
    config.write_text(yaml.safe_dump({
        "robot": {"name": "xarm7", "urdf": URDF, "joints": JOINTS},
        "model": {"viscous_friction": True, "coulomb_friction": True,
                  "rotor_inertia": True, "torque_offset": True},
        "data": {"format": "bag", "path": ".", "joint_topic": "/joint_states",
                 "torque_topic": "/joint_states", "events_topic": ""},
        "estimation": {"method": "wls", "validation_fraction": 0.0}}))
    code = cli_main(["batch", "identify", str(config), str(tmp_path / "fleet"), "--out",
                     str(tmp_path / "out"), "--workers", "2"])
    assert code == 0
    with open(tmp_path / "out" / "batch.csv") as f:
        header, *lines = [line.rstrip("\n").split(",") for line in f]
    assert len(lines) == 8
    ref = model_definition(robot, layout, DRIVE, JOINTS)
    names = header[6::2]
    assert names == ref.names                       # one definition, name for name
    assert {line[5] for line in lines} == {ref.sha256}
    assert all("nan" not in line for line in lines)
    drift = yaml.safe_load(open(tmp_path / "out" / "drift.yaml"))
    assert drift["failed"] == []
    assert {d["parameter"] for d in drift["parameters"]} == set(ref.names)
    for line in lines:
        single = identify_config(load_config(str(config), bag=line[2])).to_dict()
        assert single["base_definition"]["sha256"] == ref.sha256
        got = np.array([float(x) for x in line[6::2]])
        want = np.array([p["value"] for p in single["wls"]])
        assert [p["name"] for p in single["wls"]] == names
        np.testing.assert_allclose(got, want, rtol=6e-9, atol=1e-12)   # 9 digits
    # the two hidden robots differ: their rows are not one another's
    a = np.array([float(x) for x in lines[0][6::2]])
    b = np.array([float(x) for x in lines[-1][6::2]])
    assert not np.allclose(a, b, rtol=1e-2)
    assert os.path.basename(lines[0][2]) == "day0"
    # the bare bags are found and dated from their storage: one day apart, like the others
    assert [line[1][:10] for line in lines[4:]] == ["2023-11-14", "2023-11-15",
                                                     "2023-11-16", "2023-11-17"]


def test_an_earlier_result_is_a_reference_of_the_same_definition_only(tmp_path):
    """``identify --reference result.yaml``: a result of the same definition lines up
    parameter by parameter (the same recording: every parameter within 3 std, z = 0); one
    of another definition is refused naming both hashes, nothing written."""
    from figaroh_ros.tasks import identify
    config = os.path.join(ROOT, "config", "staubli_tx40.yaml")
    first = identify.run(config, out=str(tmp_path / "a"))
    again = identify.run(config, out=str(tmp_path / "b"), reference=first.paths["result"])
    check = again.summary["reference"]["wls"]
    assert check["well_identified"] > 10
    assert check["within_3_std"] == check["well_identified"]
    assert check["base_parameters"] == check["reference_parameters"]
    other = yaml.safe_load(open(first.paths["result"]))
    ours = other["base_definition"]["sha256"]
    other["base_definition"]["sha256"] = "f" * 64
    bad = tmp_path / "other.yaml"
    bad.write_text(yaml.safe_dump(other))
    with pytest.raises(DataError, match=rf"--reference {bad} and this identification have "
                                        rf"different .*\(ffffffffffff vs {ours[:12]}\)"):
        identify.run(config, out=str(tmp_path / "c"), reference=str(bad))
    assert not os.path.exists(tmp_path / "c")
    (tmp_path / "empty.yaml").write_text("robot: x\n")
    with pytest.raises(DataError, match="not an identification result.yaml"):
        identify.run(config, out=str(tmp_path / "d"), reference=str(tmp_path / "empty.yaml"))

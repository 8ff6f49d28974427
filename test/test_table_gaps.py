"""A CSV table with a time column and gaps in its stamps, through ``identify``:
split at every step longer than ``data.max_gap`` like a bag (``io/recording.py``
``segmented``), each segment on its own grid, filtered and differentiated alone.  Truth:
the two-joint arm of ``test_bag_gaps`` with hidden parameters and torque noise of known
std, sampled at 200 Hz; rows missing in three stalls (the last in the held-out part).
The held-out RMSE must stay at the noise floor, as for the same table without gaps,
while resampling across the stalls (a large ``max_gap``) does not."""
import numpy as np
import pytest
import test_bag_gaps
from test_bag_gaps import DRIVE, JOINTS, NOISE, RATE, STALLS, URDF

from figaroh_ros.config.identification import load_config
from figaroh_ros.excitation.fourier import fourier_trajectory
from figaroh_ros.identification.parameters import parameter_layout
from figaroh_ros.model.robot import load_urdf_model
from figaroh_ros.sim.dynamics import measured_torques, perturbed_parameters
from figaroh_ros.tasks import identify


def write_table(folder, traj, tau, stalls=()):
    """``log.csv``: t, positions, torques; the rows inside ``stalls`` left out."""
    keep = np.ones(len(traj.t), bool)
    for a, length in stalls:
        keep &= ~((traj.t >= a) & (traj.t < a + length))
    folder.mkdir()
    header = ["t"] + [f"{j}_position" for j in JOINTS] + [f"{j}_effort" for j in JOINTS]
    np.savetxt(folder / "log.csv", np.column_stack([traj.t, traj.q, tau])[keep], delimiter=",",
               header=",".join(header), comments="")
    return str(folder)


def config(tmp_path, folder, name, **data):
    """``test_bag_gaps``'s identification config reading the table instead of a bag."""
    return test_bag_gaps.config(tmp_path, folder, name, format="csv_table",
                                table="log.csv", time_column="t", resample_hz=RATE, **data)


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    """The recording of ``test_bag_gaps`` (same hidden parameters, trajectory and noise) as
    two tables: whole, and with its stalls."""
    robot = load_urdf_model(URDF, JOINTS)
    layout = parameter_layout(robot, DRIVE)
    traj = fourier_trajectory(robot, 36.0, RATE, harmonics=5, base_freq_hz=0.1,
                              amplitude=0.8, seed=12)
    tau = measured_torques(robot, layout, DRIVE, perturbed_parameters(robot, layout, seed=4),
                           traj, NOISE, seed=5)
    root = tmp_path_factory.mktemp("table_gaps")
    return [write_table(root / name, traj, tau, stalls)
            for name, stalls in (("gapless", ()), ("stalled", STALLS))]


def test_a_table_with_gaps_is_split_and_held_out_at_the_noise_floor(tables, tmp_path):
    gapless, stalled = tables
    rmse = {}
    for name, folder, data in (("gapless", gapless, {}), ("split", stalled, {}),
                               ("across", stalled, {"max_gap": 10.0})):
        report = {}
        res = identify.identify_config(load_config(config(tmp_path, folder, name, **data)),
                                       report=report)
        rmse[name] = float(np.max(res.validation_rmse))
        if name == "split":
            rec = report["recording"]
            assert rec["count"] == 4 and rec["used"] == 4, rec
            for (a, length), seg, nxt in zip(STALLS, rec["segments"], rec["segments"][1:]):
                assert seg["to_s"] == pytest.approx(a - 1 / RATE, abs=2 / RATE)
                assert nxt["from_s"] == pytest.approx(a + length, abs=2 / RATE)
    print(f"held-out RMSE (N.m): gapless {rmse['gapless']:.4f}, split {rmse['split']:.4f}, "
          f"resampled across {rmse['across']:.4f}; noise {NOISE}")
    assert rmse["gapless"] <= 1.1 * NOISE
    assert rmse["split"] <= 1.1 * NOISE
    assert rmse["across"] > 1.1 * NOISE           # a line drawn across the stalls

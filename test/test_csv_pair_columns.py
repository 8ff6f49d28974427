"""The main recording's CSV pair: positions and torques are read by column
position, so the torques file must name the columns of the positions file, in their order.
A torques file of the same joints in another order, or of other joints, is refused naming
the file and the columns (``check_columns``, as for a ``--validate`` pair); the same
headers, or two files without names, load.  Truth: the file written with its columns
swapped, which position-wise reading would take as the other joint's torques."""
import numpy as np
import pytest
from test_bag_gaps import JOINTS, URDF
from test_validation_inputs import write_config

from figaroh_ros.config.identification import load_config
from figaroh_ros.errors import DataError
from figaroh_ros.io.recording import read_recording
from figaroh_ros.model.robot import load_urdf_model

N = 40


def _pair(tmp_path, q_names, tau_names, comments=""):
    q = np.column_stack([np.linspace(0, 1, N), np.linspace(0, -1, N)])
    tau = np.column_stack([np.full(N, 1.0), np.full(N, 2.0)])
    for name, values, names in (("q.csv", q, q_names), ("tau.csv", tau, tau_names)):
        header = "" if names is None else ",".join(names)
        np.savetxt(tmp_path / name, values, delimiter=",", header=header, comments=comments)
    path = write_config(tmp_path / "c.yaml", {"format": "csv_pair", "path": str(tmp_path),
                                              "positions": "q.csv", "torques": "tau.csv",
                                              "sample_time": 0.01})
    return read_recording(load_config(path), load_urdf_model(URDF, JOINTS))


def test_torques_in_another_order_are_refused_naming_file_and_columns(tmp_path):
    with pytest.raises(DataError, match=r"tau\.csv: columns \['joint2', 'joint1'\] in "
                                        r"another order .*q\.csv.*\['joint1', 'joint2'\]"):
        _pair(tmp_path, JOINTS, JOINTS[::-1])


def test_torques_of_other_joints_are_refused_naming_them(tmp_path):
    with pytest.raises(DataError, match=r"tau\.csv: columns \['joint2'\] missing and "
                                        r"\['arm_b'\] unexpected"):
        _pair(tmp_path, JOINTS, ["joint1", "arm_b"])


@pytest.mark.parametrize("comments", ["", "# "])
def test_the_same_columns_load(tmp_path, comments):
    """``savetxt``'s ``# `` before the header is not part of the first name."""
    rec = _pair(tmp_path, JOINTS, JOINTS if not comments else ["joint1", "joint2"],
                comments=comments)
    assert rec.q.shape == rec.tau.shape == (N, 2)
    np.testing.assert_allclose(rec.tau[0], [1.0, 2.0])


def test_two_files_without_names_are_not_compared(tmp_path):
    """Headerless files: the first line is taken as a header, as before (not compared)."""
    rec = _pair(tmp_path, None, None)
    assert rec.q.shape == (N - 1, 2)

"""Experiment files: limits and rest checks refuse bad postures and trajectories with a
message naming the joint and the sample, before anything moves."""
import numpy as np
import pytest

from figaroh_ros.errors import DataError
from figaroh_ros.io.experiment_files import (
    check_limits, read_trajectory, trajectory_velocities
)

LIM = {"a": (-1.0, 1.0), "b": (-2.0, 2.0)}
VEL = {"a": 3.0, "b": 1.0}


def test_limits_and_speeds_are_checked():
    Q = np.array([[0.0, 0.0], [0.5, 2.5]])
    with pytest.raises(DataError, match="posture 1: b = 2.5 is outside"):
        check_limits(["a", "b"], Q, LIM)
    t = np.linspace(0, 1, 101)
    Q = np.column_stack([0.5 * (1 - np.cos(2 * np.pi * t)), np.zeros_like(t)])
    V = trajectory_velocities(t, Q)
    check_limits(["a", "b"], Q, LIM, V, {"a": 3.2, "b": 1.0})     # peak speed pi
    with pytest.raises(DataError, match="a moves at"):
        check_limits(["a", "b"], Q, LIM, V, VEL)
    assert V[-1].tolist() == [0.0, 0.0]


def test_trajectory_must_end_at_rest_and_times_increase(tmp_path):
    t = np.linspace(0, 1, 101)
    with pytest.raises(DataError, match="must end at rest"):
        trajectory_velocities(t, np.column_stack([t, t]))
    f = tmp_path / "traj.csv"
    f.write_text("t,a,b\n0,0,0\n0.1,0,0\n0.1,0,0\n")
    with pytest.raises(DataError, match="times must increase"):
        read_trajectory(str(f), ["a", "b"])

"""The regressor writes only the blocks that can be nonzero, into pages shared only where
the workers write, and gives the same matrix to the last bit whatever the workers."""
import mmap
import os

import numpy as np
import pinocchio as pin
import pytest
from conftest import PANDA_JOINTS

from figaroh_ros.identification import regressor, sample_split
from figaroh_ros.identification.base_parameters import base_parameters
from figaroh_ros.identification.parameters import PIN_TO_STD, DriveOptions, parameter_layout
from figaroh_ros.identification.regressor import inertial_blocks, standard_regressor
from figaroh_ros.model.robot import example_robot_urdf, load_urdf_model

FINGERS = ["panda_finger_joint1", "panda_finger_joint2"]


@pytest.fixture(scope="module")
def panda_hand():
    """Panda with its two fingers active: a tree, the fingers on two branches."""
    return load_urdf_model(example_robot_urdf("panda_description/urdf/panda.urdf"),
                           PANDA_JOINTS + FINGERS)


def _states(robot, rng, N):
    n = robot.n_joints
    return rng.uniform(-2, 2, (N, n)), rng.uniform(-3, 3, (N, n)), rng.uniform(-10, 10, (N, n))


@pytest.mark.parametrize("fixture", ["panda", "panda_hand"])
def test_the_blocks_left_out_are_zero_in_pinocchio_and_the_others_are_not(fixture, request,
                                                                          rng):
    robot = request.getfixturevalue(fixture)
    layout = parameter_layout(robot, DriveOptions())
    model, data = robot.model, robot.model.createData()
    q, dq, ddq = _states(robot, rng, 30)
    Q, V, A = robot.full_configuration(q), robot.full_velocity(dq), robot.full_velocity(ddq)
    Y = np.array([pin.computeJointTorqueRegressor(model, data, Q[i], V[i], A[i])
                  for i in range(len(Q))])
    written = 0
    for k, cols, rows in inertial_blocks(robot, layout):
        kept = {j for j, _ in rows}
        assert sorted(cols) == sorted(layout.inertial_cols[k + 1])
        for j, row in enumerate(robot.idx_v):
            block = Y[:, row, 10 * k:10 * k + 10]
            assert (np.count_nonzero(block) > 0) == (j in kept), (fixture, k, j)
            written += j in kept
    # a serial arm: link k moves with joints 1..k; the hand and fingers with all 7 joints,
    # a finger's joint carries its own finger only
    assert written == 28 + 2 * (7 if fixture == "panda" else 8)


@pytest.mark.parametrize("batched", [False, True])
def test_same_matrix_and_base_parameters_to_the_last_bit_whatever_the_workers(
        panda_hand, rng, monkeypatch, batched):
    """Blocks of 1500 samples (12 kB: pages private between them); chunks straddle the
    ranges; the parent's range is shortened; tanh friction and asymmetric viscous
    columns; the passive joints at a rest position.  Both ways of computing the rigid
    bodies' columns: pinocchio's regressor sample by sample (the same bits as pinocchio)
    and the batched Newton-Euler one (the same numbers to rounding)."""
    monkeypatch.setattr(sample_split, "MIN_SAMPLES", 100)
    monkeypatch.setattr(regressor, "CHUNK", 173)
    monkeypatch.setattr(regressor, "BATCH", 211)
    monkeypatch.setattr(regressor, "BATCH_MIN", 1000 if batched else 10**9)
    drive = DriveOptions(coulomb_model="tanh", viscous_per_direction=True)
    layout = parameter_layout(panda_hand, drive)
    q, dq, ddq = _states(panda_hand, rng, 1500)
    q_rest = pin.randomConfiguration(panda_hand.model)
    W = {w: standard_regressor(panda_hand, layout, drive, q, dq, ddq, q_rest, workers=w)
         for w in (1, 2, 3)}
    for w in (2, 3):
        assert W[w].flags.f_contiguous and np.array_equal(W[w], W[1]), w
    bp = [base_parameters(W[w], layout.names) for w in (1, 3)]
    assert bp[0].names == bp[1].names and np.array_equal(bp[0].M, bp[1].M)
    # the matrix is the pinocchio regressor, sample by sample (rows joint by joint)
    model, data = panda_hand.model, panda_hand.model.createData()
    Q = panda_hand.full_configuration(q, q_rest)
    V, A = panda_hand.full_velocity(dq), panda_hand.full_velocity(ddq)
    n, N = panda_hand.n_joints, len(q)
    for i in (0, 210, 211, 777, 1499):
        Y = pin.computeJointTorqueRegressor(model, data, Q[i], V[i], A[i])[panda_hand.idx_v]
        for jid, cols in layout.inertial_cols.items():
            block = Y[:, 10 * (jid - 1):10 * jid][:, PIN_TO_STD]
            ours = W[3][np.arange(n) * N + i][:, cols]
            if batched:
                assert np.abs(ours - block).max() <= 1e-12 * np.abs(Y).max(), (i, jid)
            else:
                assert np.array_equal(ours, block), (i, jid)


@pytest.mark.skipif(not hasattr(os, "fork") or sample_split._LIBC is None,
                    reason="Linux mappings")
def test_only_the_runs_are_shared_with_a_worker():
    page = mmap.PAGESIZE // 8      # float64 entries in a page
    runs = [(0, 3 * page + 5), (6 * page, 7 * page)]
    out = sample_split.partly_shared_zeros((10 * page,), runs)
    assert out.shape == (10 * page,) and not out.any()

    def fill(i0, i1):
        out[:] = 1.0            # the worker writes everywhere: only the runs come back
    sample_split.split_samples(2, 2, lambda i0, i1: None if i0 == 0 else fill(i0, i1))
    seen = np.flatnonzero(out == 1.0)
    # shared: the runs and the rest of their pages; private: the whole pages between
    assert np.array_equal(seen, np.r_[0:4 * page, 6 * page:7 * page])
    sample_split.map_for_reading(out)
    assert out.sum() == 5 * page


def test_the_parent_range_is_shortened_by_its_own_work():
    b = sample_split.sample_bounds(100_000, 2, 0.05)
    assert list(b) == [0, 47_500, 100_000]
    b = sample_split.sample_bounds(1000, 4, 0.1)
    assert b[0] == 0 and b[-1] == 1000 and np.all(np.diff(b) >= 0)
    assert b[1] == 175 and np.ptp(np.diff(b)[1:]) <= 1
    assert list(sample_split.sample_bounds(90, 3)) == [0, 30, 60, 90]
    assert list(sample_split.sample_bounds(7, 1, 0.5)) == [0, 7]


def _huge_advised(array: np.ndarray) -> np.ndarray:
    """Mask of ``array``'s elements (flat, memory order) in mappings advised huge pages
    (``hg`` among the VmFlags of /proc/self/smaps)."""
    lo, hi = array.ctypes.data, array.ctypes.data + array.nbytes
    mask = np.zeros(array.size, bool)
    start = end = None
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split()[0]
            if "-" in head and not head.endswith(":"):
                start, end = (int(x, 16) for x in head.split("-"))
            elif head == "VmFlags:" and "hg" in line.split()[1:]:
                a, b = max(start, lo), min(end, hi)
                if b > a:
                    mask[(a - lo) // 8:(b - lo) // 8] = True
    return mask


@pytest.mark.skipif(sample_split._LIBC is None or not os.path.exists("/proc/self/smaps"),
                    reason="Linux mappings")
@pytest.mark.parametrize("workers", [1, 2])
def test_huge_pages_only_where_nothing_is_written(panda, rng, workers, monkeypatch):
    """The regressor's never-written 2 MiB pages are advised huge pages (a read maps the
    huge zero page) and nothing is written there: every element in an advised mapping is
    zero, while the inertial and drive columns around them are not."""
    monkeypatch.setattr(sample_split, "MIN_SAMPLES", 100)
    drive = DriveOptions(viscous_per_direction=True)
    layout = parameter_layout(panda, drive)
    q, dq, ddq = _states(panda, rng, 60_000)
    W = standard_regressor(panda, layout, drive, q, dq, ddq, workers=workers)
    advised = _huge_advised(W)
    flat = W.ravel(order="F")
    assert advised.sum() * 8 >= 8 * sample_split.HUGE_PAGE      # 60 000 samples: 36 MB
    assert not flat[advised].any()
    written = np.zeros(W.size, bool)
    n = panda.n_joints
    for a, b in regressor.worker_runs(panda, layout, 60_000) + \
            regressor.drive_runs(layout, n, 60_000):
        written[a:b] = True
    assert not (advised & written).any()
    # a written run is nonzero somewhere: the check above would see a run advised
    assert all(flat[a:b].any() for a, b in regressor.drive_runs(layout, n, 60_000))


@pytest.mark.skipif(sample_split._LIBC is None or not os.path.exists("/proc/self/smaps"),
                    reason="Linux mappings")
@pytest.mark.parametrize("shared", [False, True])
def test_every_whole_huge_page_between_the_runs_and_none_of_them(shared):
    """Runs that start and end anywhere: a 2 MiB page wholly between two runs is advised,
    no element of a run is, and the runs read back what was written."""
    huge = sample_split.HUGE_PAGE // 8            # float64 entries in a huge page
    size = 12 * huge
    runs = [(5, 7), (huge + 3, 2 * huge - 1), (2 * huge + 11, 2 * huge + 12),
            (6 * huge - 1, 6 * huge), (11 * huge + 1, 12 * huge)]
    out = (sample_split.partly_shared_zeros((size,), runs) if shared
           else sample_split.mapped_zeros((size,), shared=False))
    sample_split.huge_zero_pages(out, runs)
    for a, b in runs:
        out[a:b] = 1.0
    sample_split.map_for_reading(out)
    advised = _huge_advised(out)
    in_run = np.zeros(size, bool)
    for a, b in runs:
        in_run[a:b] = True
    assert not (advised & in_run).any()
    base = out.ctypes.data
    first = -(-base // sample_split.HUGE_PAGE) * sample_split.HUGE_PAGE
    pages = [(first - base) // 8 + k * huge for k in range(12)]
    whole = [p for p in pages if p + huge <= size and not in_run[p:p + huge].any()]
    assert len(whole) >= 6
    assert all(advised[p:p + huge].all() for p in whole)
    assert np.array_equal(out != 0, in_run)

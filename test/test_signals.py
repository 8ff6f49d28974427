import numpy as np
import pytest
from scipy import signal as scipy_signal

from figaroh_ros.identification import signals


def test_central_difference_constant_and_variable_step():
    t = np.linspace(0, 2, 2001)
    x = np.sin(3 * t)[:, None]
    dq, ddq = signals.derivatives(x, t[1] - t[0])
    inner = slice(5, -5)
    assert np.allclose(dq[inner, 0], 3 * np.cos(3 * t[inner]), atol=1e-5)
    assert np.allclose(ddq[inner, 0], -9 * np.sin(3 * t[inner]), atol=1e-3)
    tv = np.cumsum(np.random.default_rng(0).uniform(0.8e-3, 1.2e-3, 2000))
    dv = signals.central_difference(np.sin(3 * tv)[:, None], tv)
    assert np.allclose(dv[5:-5, 0], 3 * np.cos(3 * tv[5:-5]), atol=1e-4)
    with pytest.raises(ValueError, match="strictly increasing"):
        signals.central_difference(np.zeros((3, 1)), np.array([0.0, 1.0, 1.0]))


def test_zero_phase_filter_keeps_signal_and_removes_noise():
    fs = 1000.0
    t = np.arange(0, 5, 1 / fs)
    clean = np.sin(2 * np.pi * 1.0 * t)
    noisy = clean + 0.05 * np.random.default_rng(1).normal(size=t.size)
    f = signals.lowpass_zero_phase(noisy[:, None], 20.0, fs)[:, 0]
    inner = slice(200, -200)
    assert np.sqrt(np.mean((f - clean)[inner] ** 2)) < 0.01      # noise down 5x
    lag = np.argmax(np.correlate(f[inner], clean[inner], "full")) - (f[inner].size - 1)
    assert lag == 0                                               # zero phase
    with pytest.raises(ValueError, match="Nyquist"):
        signals.lowpass_zero_phase(noisy[:, None], 600.0, fs)


def test_parallel_decimation_preserves_the_linear_model():
    """Filtering W and Y with the same linear filter keeps Y = W phi exact."""
    rng = np.random.default_rng(2)
    N, n, p = 4000, 2, 3
    t = np.arange(N) * 1e-3
    W = np.column_stack([np.sin(2 * np.pi * f * t) for f in (0.5, 1.3, 2.1)])
    W = np.vstack([W, W[::-1]])
    phi = rng.normal(size=p)
    Y = W @ phi
    Wd, Yd = signals.parallel_decimation(W, Y, n, 20)
    assert Wd.shape == (2 * 200, p)
    assert np.allclose(Wd @ phi, Yd, atol=1e-10)
    assert np.allclose(np.linalg.lstsq(Wd, Yd, rcond=None)[0], phi)


def test_parallel_decimation_is_each_joints_columns_decimated_alone():
    """Columns zero on a joint's rows (another joint's friction) stay exactly zero; every
    other column, and Y, is the order-8 Chebyshev decimation of that column alone (scipy),
    to the last bit, in stages for a factor of 50."""
    rng = np.random.default_rng(3)
    n, N, p = 3, 3000, 5
    W = rng.normal(size=(n * N, p)).cumsum(axis=0)
    W[:N, 1] = 0.0                  # column 1 is zero on joint 0's rows
    W[N:2 * N, 3] = 0.0             # column 3 on joint 1's
    W = np.asfortranarray(W)
    Y = rng.normal(size=n * N).cumsum()
    for factor, stages in ((10, (10,)), (50, (10, 5))):
        Wd, Yd = signals.parallel_decimation(W, Y, n, factor)
        Nd = Wd.shape[0] // n
        assert Wd.shape == (n * Nd, p) and Yd.shape == (n * Nd,)
        assert not Wd[:Nd, 1].any() and not Wd[Nd:2 * Nd, 3].any()
        for j in range(n):
            rows, out = slice(j * N, (j + 1) * N), slice(j * Nd, (j + 1) * Nd)
            for c in range(p):
                alone = W[rows, c]
                for stage in stages:
                    alone = scipy_signal.decimate(alone, stage, ftype="iir", zero_phase=True)
                assert np.array_equal(Wd[out, c], alone)
            assert np.array_equal(Yd[out], signals.decimate(Y[rows], factor))


def test_a_large_decimation_shared_among_threads_is_each_column_alone(monkeypatch):
    """Above ``THREADED_SIZE`` values a stage's signals are split among threads (here 3,
    ``FIGAROH_THREADS``): every column, and Y, is still its decimation alone, to the last
    bit and in its place."""
    from figaroh_ros.identification import filters
    monkeypatch.setenv("FIGAROH_THREADS", "3")
    rng = np.random.default_rng(4)
    n, N, p = 2, 20000, 11
    W = rng.normal(size=(n * N, p)).cumsum(axis=0)
    W[:N, 4] = 0.0
    Y = rng.normal(size=n * N).cumsum()
    assert (p + 1) * N >= filters.THREADED_SIZE
    Wd, Yd = signals.parallel_decimation(W, Y, n, 100)
    Nd = Wd.shape[0] // n
    assert not Wd[:Nd, 4].any()
    for j in range(n):
        rows, out = slice(j * N, (j + 1) * N), slice(j * Nd, (j + 1) * Nd)
        for c in range(p):
            alone = W[rows, c]
            for stage in (10, 10):
                alone = scipy_signal.decimate(alone, stage, ftype="iir", zero_phase=True)
            assert np.array_equal(Wd[out, c], alone), (j, c)
        assert np.array_equal(Yd[out], filters.decimate(Y[rows], 100))


def test_decimation_threads_never_outnumber_the_cores(monkeypatch):
    """``FIGAROH_THREADS`` far above the cores: the stage's pool holds at most the cores
    this process may run on (not a thread per signal), and the result is unchanged."""
    from figaroh_ros.identification import filters
    from figaroh_ros.threads import usable_cores
    pools = []

    class Recorded(filters.ThreadPoolExecutor):
        def __init__(self, workers):
            pools.append(workers)
            super().__init__(workers)
    monkeypatch.setattr(filters, "ThreadPoolExecutor", Recorded)
    monkeypatch.setenv("FIGAROH_THREADS", "1000000")
    x = np.random.default_rng(5).normal(size=(64, filters.THREADED_SIZE // 32)).cumsum(axis=1)
    y = filters._stage(x, 10, axis=1)
    assert pools and max(pools) <= usable_cores(), pools
    assert np.array_equal(y[7], scipy_signal.decimate(x[7], 10, ftype="iir", zero_phase=True))


def test_moving_rows_mask_is_joint_major():
    dq = np.array([[0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    assert signals.moving_rows(dq, 0.5).tolist() == [False, True, True, True, False, True]


def test_uniform_grid_marks_what_only_the_interpolation_across_a_gap_made():
    """A publisher stalled for 0.3 s in a 250 Hz recording (with jittered stamps): the
    resampled signal equals the truth where it was recorded, and exactly the stretch the
    straight line across the stall produced (plus one filter time scale either side) is
    marked as not covered."""
    rng = np.random.default_rng(0)
    t = np.arange(0.0, 10.0, 0.004) + rng.uniform(-4e-4, 4e-4, 2500)
    t = t[(t < 5.0) | (t > 5.3)]
    x = np.sin(2 * np.pi * t)[:, None]
    grid, xg, covered = signals.uniform_grid(t, x, cutoff_hz=10.0)
    assert np.allclose(grid[1] - grid[0], 0.004, rtol=0.01)
    inside = (grid > 5.0) & (grid < 5.3)
    assert not covered[inside].any()
    near = (grid > 4.9) & (grid < 5.4)
    assert abs(int((~covered).sum()) - int(near.sum())) <= 3     # stamps jitter
    assert np.max(np.abs(xg[covered, 0] - np.sin(2 * np.pi * grid[covered]))) < 1e-3
    assert np.max(np.abs(xg[inside, 0] - np.sin(2 * np.pi * grid[inside]))) > 0.05


def test_held_out_rows_split_skip_gaps_and_refuse_a_gappy_window():
    covered = np.ones(100, bool)
    covered[40:50] = False
    train, valid = signals.held_out_rows(covered, 5, 0.25, "bag b")
    assert train[0] == 5 and valid[-1] == 94              # edges dropped
    assert valid[0] == 5 + int(90 * 0.75)                  # the last quarter validates
    assert not set(range(40, 50)) & (set(train) | set(valid))
    assert len(train) + len(valid) == 80
    covered[10:70] = False
    with pytest.raises(ValueError, match="bag b: .* gaps .* record again"):
        signals.held_out_rows(covered, 5, 0.25, "bag b")

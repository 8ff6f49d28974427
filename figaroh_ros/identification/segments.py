"""Equations of a recording cut by gaps, and of a recording too long for one regressor.

* A recording with gaps (a stalled publisher, a starved simulator) is split at every step
  between stamps longer than a limit into segments (:func:`gap_segments`); each segment is
  filtered, differentiated and decimated on its own, its filter edges dropped, and the
  segments' rows stacked joint by joint (:func:`stacked`), so no derivative or torque is
  drawn across a gap.  A segment too short for the filters is left out
  (:func:`shortest_segment`).
* A long recording's observation matrix at the full rate (N x n rows by p columns) does
  not fit in memory: the positions are filtered and differentiated whole (N x n, small),
  then the regressor is built and decimated in chunks (:func:`decimated_torque_equations`)
  overlapping by the length over which the zero-phase decimation filter's transients
  decay (:func:`decimation_margin`), and only each chunk's own decimated samples are kept:
  the rows equal the whole-array parallel decimation (Gautier 1997) to round-off.

The equations returned are already decimated: they are fitted with ``decimation = 1``.
"""
from __future__ import annotations

import functools
import math
from dataclasses import replace

import numpy as np
from figaroh_ros.identification.filters import MIN_DECIMATE, decimate, parallel_decimation
from figaroh_ros.identification.observation import MIN_SAMPLES, Processing, joint_motion
from figaroh_ros.identification.regressor import standard_regressor
from figaroh_ros.identification.signals import edge_samples

DECAY = 1e-12            # relative size of a filter transient taken as gone


def gap_segments(t: np.ndarray, limit: float) -> list[tuple[int, int]]:
    """``[start, end)`` sample ranges of ``t`` between the steps longer than ``limit``."""
    cuts = np.flatnonzero(np.diff(np.asarray(t, float)) > limit) + 1
    bounds = np.r_[0, cuts, len(t)].astype(int)
    return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]


def shortest_segment(p: Processing, fs_hz: float) -> int:
    """Samples a segment needs: both filter edges, ``MIN_SAMPLES`` kept, and enough for
    every decimation stage."""
    edge = edge_samples(p.filter_order, p.position_cutoff_hz, fs_hz)
    return 2 * edge + max(MIN_SAMPLES + 1, MIN_DECIMATE * p.decimation)


@functools.lru_cache(maxsize=16)
def decimation_margin(factor: int) -> int:
    """Samples (at the full rate, a multiple of ``factor``) a chunk overlaps its
    neighbours by so that its kept decimated samples match the whole array's: how far the
    zero-phase decimation filters (every stage) carry one sample's influence before it
    falls below ``DECAY`` of its peak, a fifth more, and at least enough samples
    for every stage."""
    if factor <= 1:
        return 0
    n = 256 * factor
    while True:
        x = np.zeros((2 * n + 1, 1))
        x[n] = 1.0
        y = np.abs(decimate(x, factor)[:, 0])
        reach = (int(np.flatnonzero(y > DECAY * y.max())[-1]) - n // factor) * factor
        if reach < n // 2:
            break
        n *= 2
    total = max(int(1.2 * reach) + factor, MIN_DECIMATE * factor)
    return int(math.ceil(total / factor) * factor)


def stacked(parts: list[tuple]) -> tuple:
    """Equations ``(W, Y, moving)`` of consecutive parts (rows joint by joint, N_k per
    part) as one system with the same joint-by-joint layout."""
    parts = [pt for pt in parts if pt[2].shape[0]]
    if len(parts) == 1:
        return parts[0]
    n = parts[0][2].shape[1]
    sizes = [pt[2].shape[0] for pt in parts]
    rows = [np.arange(j * N, (j + 1) * N) for j in range(n) for N in sizes]
    owner = [k for _ in range(n) for k in range(len(parts))]
    W = np.concatenate([parts[k][0][r] for k, r in zip(owner, rows)])
    Y = np.concatenate([parts[k][1][r] for k, r in zip(owner, rows)])
    return W, Y, np.concatenate([pt[2] for pt in parts])


def decimated(equations: tuple, factor: int) -> tuple:
    """Parallel decimation of one segment's ``(W, Y, moving)``."""
    W, Y, moving = equations
    Wd, Yd = parallel_decimation(W, Y, moving.shape[1], factor)
    return Wd, Yd, decimate(moving, factor)


def _chunk(robot, layout, drive, m, tau, lo: int, hi: int, factor: int):
    """Decimated equations of the kept samples ``lo`` to ``hi`` of the motion ``m``."""
    k = slice(m.keep.start + lo, m.keep.start + hi)
    W = standard_regressor(robot, layout, drive, m.q[k], m.dq[k], m.ddq[k])
    return decimated((W, np.asarray(tau, float)[k].T.ravel(), m.dq[k]), factor)


def _place(out: tuple, equations: tuple, j0: int, j1: int, at: int) -> None:
    """Decimated samples ``j0`` to ``j1`` of joint-by-joint ``equations`` written into
    ``out`` (the same layout) from its sample ``at``."""
    (W, Y, moving), (Wo, Yo, Mo) = equations, out
    N, No, k = moving.shape[0], Mo.shape[0], j1 - j0
    for j in range(moving.shape[1]):
        Wo[j * No + at:j * No + at + k] = W[j * N + j0:j * N + j1]
        Yo[j * No + at:j * No + at + k] = Y[j * N + j0:j * N + j1]
    Mo[at:at + k] = moving[j0:j1]


def decimated_torque_equations(robot, layout, drive, t: np.ndarray, q: np.ndarray,
                               tau: np.ndarray, p: Processing, chunk: int,
                               say=None) -> tuple:
    """``torque_equations`` of one segment followed by the parallel decimation by
    ``p.decimation``, with the regressor built ``chunk`` samples at a time (plus the
    overlap of :func:`decimation_margin` on both sides) and each chunk's own decimated
    samples written into the result.  ``say(done, total)`` after each chunk."""
    m = joint_motion(t, q, p)
    n_kept, d, n = m.keep.stop - m.keep.start, max(1, p.decimation), q.shape[1]
    margin = decimation_margin(d)
    chunk = int(math.ceil(max(chunk, margin, d) / d) * d)
    if n_kept <= chunk + 2 * margin:
        # a chunk with its margins would hold as many samples: one pass, no sample twice
        # (the TX40's 45 000 samples, decimated by 100, were built 3 times over)
        chunk = n_kept
    n_out = -(-n_kept // d)
    out = None
    for a in range(0, n_kept, chunk):
        b = min(a + chunk, n_kept)
        lo, hi = max(0, a - margin), min(n_kept, b + margin)
        eq = _chunk(robot, layout, drive, m, tau, lo, hi, d)
        if out is None:
            out = (np.empty((n * n_out, eq[0].shape[1])), np.empty(n * n_out),
                   np.empty((n_out, n)))
        j0 = (a - lo) // d
        _place(out, eq, j0, j0 + -(-(b - a) // d), a // d)
        if say is not None:
            say(b, n_kept)
    return out


def undecimated(p: Processing) -> Processing:
    """The processing of equations already decimated."""
    return replace(p, decimation=1)

"""Postures in an order that shortens the experiment playing them.

The executor moves from posture to posture in one cubic segment whose peak joint speeds
stay within each joint's speed (its URDF velocity limit, at most the executor's
``max_velocity``: ``model/speeds.py``), so a move lasts in proportion to the largest of the
joints' travel divided by their speed.  The order is the shortest of the nearest-neighbour
paths (networkx's greedy travelling-salesman heuristic, its closing move dropped) started
from every posture.  On the UR10 calibration postures the tests plan, the moves take a
third less time at the velocity limits; on TIAGo the slow torso (0.07 m/s) changes height
as few times as it can.

A revolute joint whose limits hold more than a whole turn (a UR arm's +-2 pi) reaches each
link pose at two or more readings, ``q + 2 pi m``.  Such joints are *turnable*: the order
is chosen on their travel the short way round, and each posture is then played at the
reading, within the limits, nearest the previous posture's (``unwound``).  Every link's
pose, and so every measurement, is that of the planned posture.
"""
from __future__ import annotations

import networkx as nx
import numpy as np


TURN = 2.0 * np.pi


def joint_travel(Q, speeds=None, turnable=None) -> np.ndarray:
    """Largest joint travel between every two postures (the rows of ``Q``): k x k; each
    joint's travel divided by its speed when ``speeds`` are given (``model/speeds.py``),
    i.e. the time of a move at those peak speeds, up to the move's shape factor.  The
    ``turnable`` joints (a flag each) count the travel the short way round, at most pi."""
    Q = np.asarray(Q, float)
    with np.errstate(invalid="ignore", over="ignore"):     # a reading not finite: NaN
        d = np.abs(Q[:, None, :] - Q[None, :, :])
        if turnable is not None and np.any(turnable):
            r = np.mod(d, TURN)
            d = np.where(np.asarray(turnable, bool), np.minimum(r, TURN - r), d)
        if speeds is not None:
            d = d / np.asarray(speeds, float)
    return d.max(axis=2)


def path_travel(Q, order, speeds=None) -> float:
    """Total of the largest joint travels (or times, given ``speeds``) of the moves
    through ``Q``'s rows in ``order``."""
    o = np.asarray(order, int)
    return float(joint_travel(Q, speeds)[o[:-1], o[1:]].sum())


def travel_order(Q, speeds=None, turnable=None) -> np.ndarray:
    """A permutation of the rows of ``Q`` (k x n postures) with a short total travel (of
    time, given the joints' ``speeds``; ``turnable`` joints the short way round): the
    shortest of the nearest-neighbour paths from each posture and of the given order
    (never longer than it; the first on a tie, so that every run gives the same order)."""
    k = len(Q)
    if k < 3:
        return np.arange(k)
    d = joint_travel(Q, speeds, turnable)
    G = nx.complete_graph(k)
    for i, j in zip(*np.triu_indices(k, 1)):
        G[int(i)][int(j)]["weight"] = float(d[i, j])
    paths = [np.arange(k)] + [np.array(nx.approximation.greedy_tsp(G, source=s)[:-1])
                              for s in range(k)]
    return min(paths, key=lambda o: float(d[o[:-1], o[1:]].sum()))


def turnable_joints(revolute, lower, upper) -> np.ndarray:
    """The revolute joints whose limits hold more than a whole turn (flags)."""
    span = np.asarray(upper, float) - np.asarray(lower, float)
    return np.asarray(revolute, bool) & (span > TURN)


def unwound(Q, lower, upper, turnable) -> np.ndarray:
    """``Q``'s rows as played in their order: each ``turnable`` joint at its reading plus
    the whole turns, within ``[lower, upper]``, nearest the previous row's (the first row
    as given; on a tie the fewest turns).  Every other joint, and a reading that is not
    finite or not inside its limits, as given."""
    U = np.array(Q, float, ndmin=2)
    lo, hi = np.asarray(lower, float), np.asarray(upper, float)
    for j in np.flatnonzero(np.asarray(turnable, bool)):
        for i in range(1, len(U)):
            U[i, j] += TURN * _nearest_turns(U[i, j], U[i - 1, j], lo[j], hi[j])
    return U


def _nearest_turns(q: float, target: float, lo: float, hi: float) -> int:
    """The whole turns ``m`` putting ``q + 2 pi m`` nearest ``target`` within ``[lo, hi]``
    (0 when no other reading is, or when ``q`` itself is not a finite reading inside them;
    on a tie the fewest)."""
    if not (np.isfinite(q) and np.isfinite(target) and lo <= q <= hi):
        return 0
    first, last = np.ceil((lo - q) / TURN), np.floor((hi - q) / TURN)
    x = (target - q) / TURN
    turns = {0} | {int(np.clip(m, first, last)) for m in (np.floor(x), np.ceil(x))
                   if first <= last}
    inside = [m for m in sorted(turns, key=abs) if lo <= q + TURN * m <= hi]  # rounding
    return min(inside, key=lambda m: abs(q + TURN * m - target))

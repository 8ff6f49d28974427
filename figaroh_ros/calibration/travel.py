"""Postures in an order that shortens the experiment playing them.

The executor moves from posture to posture in one cubic segment whose peak joint speeds
stay within each joint's speed (its URDF velocity limit, at most the executor's
``max_velocity``: ``model/speeds.py``), so a move lasts in proportion to the largest of the
joints' travel divided by their speed.  The order is the shortest of the nearest-neighbour
paths (networkx's greedy travelling-salesman heuristic, its closing move dropped) started
from every posture.  On the UR10 calibration postures the tests plan, the moves take a
third less time at the velocity limits; on TIAGo the slow torso (0.07 m/s) changes height
as few times as it can.
"""
from __future__ import annotations

import networkx as nx
import numpy as np


def joint_travel(Q, speeds=None) -> np.ndarray:
    """Largest joint travel between every two postures (the rows of ``Q``): k x k; each
    joint's travel divided by its speed when ``speeds`` are given (``model/speeds.py``),
    i.e. the time of a move at those peak speeds, up to the move's shape factor."""
    Q = np.asarray(Q, float)
    d = np.abs(Q[:, None, :] - Q[None, :, :])
    if speeds is not None:
        d = d / np.asarray(speeds, float)
    return d.max(axis=2)


def path_travel(Q, order, speeds=None) -> float:
    """Total of the largest joint travels (or times, given ``speeds``) of the moves
    through ``Q``'s rows in ``order``."""
    o = np.asarray(order, int)
    return float(joint_travel(Q, speeds)[o[:-1], o[1:]].sum())


def travel_order(Q, speeds=None) -> np.ndarray:
    """A permutation of the rows of ``Q`` (k x n postures) with a short total travel (of
    time, given the joints' ``speeds``): the shortest of the nearest-neighbour paths from
    each posture and of the given order (never longer than it; the first on a tie, so
    that every run gives the same order)."""
    k = len(Q)
    if k < 3:
        return np.arange(k)
    d = joint_travel(Q, speeds)
    G = nx.complete_graph(k)
    for i, j in zip(*np.triu_indices(k, 1)):
        G[int(i)][int(j)]["weight"] = float(d[i, j])
    paths = [np.arange(k)] + [np.array(nx.approximation.greedy_tsp(G, source=s)[:-1])
                              for s in range(k)]
    return min(paths, key=lambda o: float(d[o[:-1], o[1:]].sum()))

"""Postures in an order that shortens the experiment playing them.

The executor moves from posture to posture in joint space at one speed (its
``max_velocity``), so a move lasts in proportion to the largest joint travel: the Chebyshev
distance between the two postures.  The order is the shortest of the nearest-neighbour
paths (networkx's greedy travelling-salesman heuristic, its closing move dropped) started
from every posture.  On the UR10 calibration postures the tests plan, it shortens the
total travel by about a quarter.
"""
from __future__ import annotations

import networkx as nx
import numpy as np


def joint_travel(Q) -> np.ndarray:
    """Largest joint travel between every two postures (the rows of ``Q``): k x k."""
    Q = np.asarray(Q, float)
    return np.abs(Q[:, None, :] - Q[None, :, :]).max(axis=2)


def path_travel(Q, order) -> float:
    """Total of the largest joint travels of the moves through ``Q``'s rows in ``order``."""
    o = np.asarray(order, int)
    return float(joint_travel(Q)[o[:-1], o[1:]].sum())


def travel_order(Q) -> np.ndarray:
    """A permutation of the rows of ``Q`` (k x n postures) with a short total travel:
    the shortest of the nearest-neighbour paths from each posture and of the given order
    (never longer than it; the first on a tie, so that every run gives the same order)."""
    k = len(Q)
    if k < 3:
        return np.arange(k)
    d = joint_travel(Q)
    G = nx.complete_graph(k)
    for i, j in zip(*np.triu_indices(k, 1)):
        G[int(i)][int(j)]["weight"] = float(d[i, j])
    paths = [np.arange(k)] + [np.array(nx.approximation.greedy_tsp(G, source=s)[:-1])
                              for s in range(k)]
    return min(paths, key=lambda o: float(d[o[:-1], o[1:]].sum()))

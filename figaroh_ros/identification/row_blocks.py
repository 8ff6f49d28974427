"""Least squares on blocks of rows through their triangular factors (Nguyen et al. 2023 Eq. 6-7).

The identification system ``Y = W phi`` is cut into blocks of rows: one row group (a
joint, or a wrench component) in one time block (a fold of the cross-validation, or the
whole recording).  Each block is reduced once to the triangular factor of the QR
decomposition of its rows, ``[W_k | Y_k] = Q_k R_k``.  ``Q_k`` being orthogonal,

    ||w_k (W_k phi - Y_k)||^2 = ||w_k R_k [phi; -1]||^2                          (1)

for any weight ``w_k`` common to the block's rows: a fit on any union of blocks, with a
weight per group (Gautier's WLS, Eq. 7), is the fit on the stacked ``w_k R_k``, at most
``p + 1`` rows per block whatever the number of samples (the R factor of a stack of rows
is that of the stack of the parts' R factors: the updating of a QR factorisation by
blocks of rows, Golub & Van Loan, *Matrix Computations*, on updating factorisations);
each group's residual is (1) with ``w_k = 1``.  So the OLS, the WLS, its essential
parameters and every training set of the cross-validation read the data once.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class RowBlocks:
    """The R factors of ``[W | Y]`` per row group ``j`` and time block ``k``."""

    R: list[list[np.ndarray]]   # [j][k]: at most p + 1 rows of p + 1 columns
    rows: np.ndarray            # (groups, blocks): equations of each block
    live: np.ndarray            # (groups, blocks, p): columns not zero on the block's rows

    @property
    def groups(self) -> int:
        return len(self.R)

    @property
    def size(self) -> int:
        """Equations of all the blocks."""
        return int(self.rows.sum())

    def without(self, k: int) -> "RowBlocks":
        """The blocks of every time block but ``k`` (a training set of a fold)."""
        keep = [i for i in range(self.rows.shape[1]) if i != k]
        return RowBlocks([[Rj[i] for i in keep] for Rj in self.R], self.rows[:, keep],
                         self.live[:, keep])

    def residual_sums(self, phi: np.ndarray) -> np.ndarray:
        """Per group ``||Y_j - W_j phi||^2``, by (1)."""
        z = np.append(phi, -1.0)
        return np.array([sum(float(np.sum((R @ z) ** 2)) for R in Rj) for Rj in self.R])

    def parameters_seen(self) -> np.ndarray:
        """Per group, the number of columns not zero on its rows."""
        return np.count_nonzero(self.live.any(axis=1), axis=1)

    def stacked(self, weights: np.ndarray | None = None) -> np.ndarray:
        """The rows ``w_j R_jk`` of every block stacked (weights per group, default 1)."""
        w = np.ones(self.groups) if weights is None else weights
        return np.vstack([w[j] * R for j, Rj in enumerate(self.R) for R in Rj])


def row_blocks(W: np.ndarray, Y: np.ndarray, row_group: np.ndarray, n_groups: int,
               row_block: np.ndarray | None = None, n_blocks: int = 1) -> RowBlocks:
    """Factor the rows of ``[W | Y]`` of each group ``j`` in each time block ``k``
    (``row_block``: the block of every row, default all in block 0)."""
    if row_block is None:
        row_block = np.zeros(len(Y), int)
    C = np.column_stack([W, Y])
    R, rows = [], np.zeros((n_groups, n_blocks), int)
    live = np.zeros((n_groups, n_blocks, W.shape[1]), bool)
    for j in range(n_groups):
        R.append([])
        for k in range(n_blocks):
            Ck = C[(row_group == j) & (row_block == k)]
            rows[j, k] = Ck.shape[0]
            live[j, k] = np.any(Ck[:, :-1] != 0.0, axis=0)
            R[j].append(np.linalg.qr(Ck, mode="r") if len(Ck) else Ck)
    return RowBlocks(R, rows, live)

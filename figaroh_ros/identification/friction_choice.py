"""A friction model per joint, chosen by cross-validation inside the training part.

Candidates (every one with the joint's torque offset ``off``; Armstrong-Helouvry 1994 for
the shapes; Tröbinger et al. for the smooth Coulomb term):

============================  =====================================================
``viscous``                   ``fv dq``
``asymmetric_viscous``        ``fv dq + fva min(dq, 0)`` (one slope per direction)
``coulomb``                   ``fv dq + fs tanh(dq / v_s)`` (smooth Coulomb)
``asymmetric_coulomb``        both of the above
``stribeck``                  ``coulomb`` + ``fst sign(dq) exp(-(dq / v_st)^2)``
============================  =====================================================

All are column subsets of one superset model (``DriveOptions`` with tanh Coulomb,
``asymmetric_viscous`` and a Stribeck term): a joint's choice leaves the other terms of
that joint *absent* (zero columns of the base-parameter definition, ``base_definition.py``).
The smooth-Coulomb and Stribeck velocities are common to the joints and taken from
:data:`COULOMB_VELOCITIES` and :data:`STRIBECK_VELOCITIES`.

The choice sees the training part only: it is cut into ``folds`` contiguous time blocks;
each candidate is fitted on all blocks but one and predicts the one left out.  The score
of a joint is its relative prediction error over the folds, ``sqrt(sum r_j^2 / sum
tau_j^2)``; the stacked score is the same over every joint's rows.  In turn, each on the
stacked score with every joint at ``stribeck`` (the richest model): the position cut-off
(:data:`CUTOFF_FACTORS` times the config's), the two velocities, the estimator (OLS or
Gautier's WLS); then joint by joint, on the joint's own score, the candidate of lowest
score, the others held (coordinate descent, :data:`SWEEPS` passes; a candidate with more
terms must lower the score by :data:`MIN_GAIN` to be preferred).  Last, Huber's IRLS
(``estimation.py``) replaces that estimator if it predicts the left-out folds of the
chosen model better (its robust weights are those of each training set's IRLS fit of
that model).  IRLS comes after the models so that its weights, which weigh down the rows
a model fits worst, never decide between models.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from figaroh_ros.errors import DataError
from figaroh_ros.identification.estimation import (
    group_factors, iteratively_reweighted_least_squares
)
from figaroh_ros.identification.observation import Observation, Processing, observe
from figaroh_ros.identification.parameters import DriveOptions

CANDIDATES = {"viscous": ("fv", "off"),
              "asymmetric_viscous": ("fv", "fva", "off"),
              "coulomb": ("fv", "fs", "off"),
              "asymmetric_coulomb": ("fv", "fva", "fs", "off"),
              "stribeck": ("fv", "fs", "fst", "off")}
TERMS = ("fv", "fva", "fs", "fst", "off")
COULOMB_VELOCITIES = (0.005, 0.02, 0.1)    # v_s of tanh(dq / v_s), rad/s
STRIBECK_VELOCITIES = (0.03, 0.1, 0.3)     # v_st, rad/s
CUTOFF_FACTORS = (0.5, 0.75, 1.0, 1.5)   # position cut-offs tried, times the config's
SWEEPS = 2
METHODS = ("ols", "wls")
MIN_GAIN = 0.002          # relative score a candidate with more terms must gain


def superset_drive(drive: DriveOptions, v_s: float, v_st: float) -> DriveOptions:
    """Every candidate's terms at once (viscous, per-direction, tanh Coulomb, Stribeck,
    offset), the rest of ``drive`` kept."""
    return dataclasses.replace(drive, viscous_friction=True, coulomb_friction=True,
                               coulomb_model="tanh", coulomb_velocity=v_s,
                               torque_offset=True, viscous_per_direction=True,
                               stribeck_velocity=v_st)


def absent_terms(choice: dict[int, str], joint_ids: list[int]) -> tuple[str, ...]:
    """The standard parameters the per-joint ``choice`` (active joint index -> candidate)
    leaves out: ``fva3``, ``fst3`` ..."""
    return tuple(f"{t}{joint_ids[j]}" for j, m in sorted(choice.items()) for t in TERMS
                 if t not in CANDIDATES[m])


@dataclass
class CrossValidated:
    """One superset system of the training part reduced to the Gram matrices
    ``G_jk = [W | Y]^T [W | Y]`` of every joint ``j``'s rows in every time block ``k``
    (from their R factors, ``row_blocks.py``): a candidate's columns are a subset of
    them, and a fit on any union of blocks, with a weight per joint, is a sum of these
    matrices and one small solve.  The normal equations square the condition number;
    the columns are scaled to unit diagonal first, and they only rank candidates (the
    estimate reported is fitted by QR, ``estimation.py``)."""

    gram: np.ndarray            # (joints, folds, p + 1, p + 1), measurement last
    rows: np.ndarray            # (joints, folds): equations of each block
    live: np.ndarray            # (joints, folds, p): columns not zero on the block's rows
    names: list[str]            # base-parameter names of the columns
    folds: int
    n: int
    obs: Observation | None = None     # the rows (IRLS weighs each row by its residual)
    block: np.ndarray | None = None    # the time block of every row of ``obs``
    robust: np.ndarray | None = None   # (folds, p + 1, p + 1): IRLS-weighted training Grams

    def columns(self, drop: tuple[str, ...]) -> np.ndarray:
        """Base columns left once the standard parameters ``drop`` are absent (each
        friction term is a base parameter of its own)."""
        gone = set(drop)
        return np.array([i for i, name in enumerate(self.names) if name not in gone])

    def scores(self, drop: tuple[str, ...], method: str) -> np.ndarray:
        """Per joint, the relative prediction error over the folds of the model without
        ``drop``, fitted by ``method`` (``ols``, Gautier's ``wls``: each joint weighted
        by its OLS residual's std on the training folds, or ``irls``: each row by its
        robust weight, :meth:`robust_grams`) on the other folds."""
        cols = self.columns(drop)
        keep = np.append(cols, len(self.names))
        G = self.gram[:, :, keep][:, :, :, keep]
        if method == "irls":
            try:
                R = self.robust_grams(drop)[:, keep][:, :, keep]
                zs = [_solve(R[k]) for k in range(self.folds)]
            except (np.linalg.LinAlgError, DataError):
                return np.full(self.n, np.inf)
            res2 = sum(np.einsum("i,jik,k->j", zs[k], G[:, k], zs[k])
                       for k in range(self.folds))
            y2 = G[:, :, -1, -1].sum(axis=1)
            return np.sqrt(np.maximum(res2, 0.0) / np.maximum(y2, 1e-300))
        seen = self.live[:, :, cols]
        res2, y2 = np.zeros(self.n), np.zeros(self.n)
        for k in range(self.folds):
            train = [i for i in range(self.folds) if i != k]
            Gj = G[:, train].sum(axis=1)                      # per joint, training folds
            try:
                z = _solve(Gj.sum(axis=0))
                if method == "wls":
                    dof = np.maximum(self.rows[:, train].sum(axis=1)
                                     - np.count_nonzero(seen[:, train].any(axis=1), axis=1), 1)
                    sig2 = np.einsum("i,jik,k->j", z, Gj, z) / dof
                    if np.any(sig2 <= 0):
                        raise np.linalg.LinAlgError("a joint without residual")
                    z = _solve(np.einsum("j,jab->ab", 1.0 / sig2, Gj))
            except np.linalg.LinAlgError:
                return np.full(self.n, np.inf)
            res2 += np.einsum("i,jik,k->j", z, G[:, k], z)
            y2 += G[:, k, -1, -1]
        return np.sqrt(np.maximum(res2, 0.0) / np.maximum(y2, 1e-300))


    def robust_grams(self, drop: tuple[str, ...]) -> np.ndarray:
        """Per fold, the Gram matrix of the training rows weighted as Huber's IRLS
        (``estimation.py``) weighs them when it fits the model without ``drop`` on them
        (each row scaled by ``sqrt(w) / s_j``); computed at the first call and kept, so
        that every later call is fitted with the same weights."""
        if self.robust is None:
            o = self.obs
            A = np.column_stack([o.Wb, o.Y])
            cols = self.columns(drop)
            grams = []
            for k in range(self.folds):
                train = self.block != k
                est = iteratively_reweighted_least_squares(
                    o.Wb[train][:, cols], o.Y[train], o.row_joint[train], self.n)[0]
                a = np.sqrt(est.row_weights) / est.joint_sigma[o.row_joint[train]]
                grams.append((A[train] * a[:, None]).T @ (A[train] * a[:, None]))
            self.robust = np.array(grams)
        return self.robust


def _solve(G: np.ndarray) -> np.ndarray:
    """``[phi; -1]`` minimising ``[phi; -1]^T G [phi; -1]`` (columns scaled to unit
    diagonal; a LinAlgError when they are dependent)."""
    A, b = G[:-1, :-1], G[:-1, -1]
    d = np.sqrt(np.diag(A))
    if np.any(d <= 0):
        raise np.linalg.LinAlgError("a column without equations")
    c, low = cho_factor(A / d[:, None] / d[None, :])
    return np.append(cho_solve((c, low), b / d) / d, -1.0)


def cross_validated(equations: Callable, definition, p: Processing, folds: int,
                    n: int) -> CrossValidated:
    """The superset system of ``equations`` (base columns of ``definition``) reduced per
    joint and per one of ``folds`` contiguous time blocks."""
    W, Y, moving = equations()
    obs = observe(definition, W, Y, moving, p)
    edges = np.linspace(0, obs.row_sample.max() + 1, folds + 1).astype(int)
    block = np.searchsorted(edges, obs.row_sample, side="right") - 1
    b = group_factors(obs.Wb, obs.Y, obs.row_joint, n, block, folds)
    gram = np.array([[R.T @ R if len(R) else np.zeros((obs.Wb.shape[1] + 1,) * 2)
                      for R in Rj] for Rj in b.R])
    return CrossValidated(gram, b.rows, b.live, list(definition.names), folds, n, obs, block)


def stacked(cv: CrossValidated, drop: tuple[str, ...], method: str) -> float:
    """The relative prediction error of every joint's rows together, over the folds."""
    s = cv.scores(drop, method)
    y2 = cv.gram[:, :, -1, -1].sum(axis=1)
    return float(np.sqrt(np.sum(s ** 2 * y2) / np.sum(y2)))


def choose(build: Callable[[float, float, float], CrossValidated], joint_ids: list[int],
           cutoff: float) -> dict:
    """The position cut-off, the estimator, the velocities and every joint's candidate
    (module docstring).  ``build(v_s, v_st, position_cutoff_hz)``: the cross-validation
    system of the superset model; ``joint_ids``: the model's joint id of each fitted row group;
    ``cutoff``: the config's cut-off (candidates :data:`CUTOFF_FACTORS` times it).
    Global choices minimise the stacked score, a joint's model its own.  Returns the
    choice and its evidence."""
    n = len(joint_ids)
    richest = absent_terms({j: "stribeck" for j in range(n)}, joint_ids)
    v_s, v_st = COULOMB_VELOCITIES[1], STRIBECK_VELOCITIES[1]
    cutoffs = {round(f * cutoff, 6): stacked(build(v_s, v_st, f * cutoff), richest, "ols")
               for f in CUTOFF_FACTORS}
    cut = min(cutoffs, key=cutoffs.get)
    grid = [(stacked(cv, richest, "ols"), a, b, cv) for a in COULOMB_VELOCITIES
            for b in STRIBECK_VELOCITIES for cv in [build(a, b, cut)]]
    _, v_s, v_st, cv = min(grid, key=lambda g: g[0])
    methods = {m: stacked(cv, richest, m) for m in METHODS}
    method = min(methods, key=methods.get)
    choice = {j: "coulomb" for j in range(n)}
    evidence: dict[int, dict[str, float]] = {}
    for _ in range(SWEEPS):
        for j in range(n):
            scores = {m: float(cv.scores(absent_terms({**choice, j: m}, joint_ids),
                                         method)[j]) for m in CANDIDATES}
            evidence[j] = scores
            choice[j] = _best(scores)
    absent = absent_terms(choice, joint_ids)
    robust = {m: stacked(cv, absent, m) for m in (method, "irls")}
    method = min(robust, key=robust.get)
    return {"position_cutoff_hz": cut, "method": method, "coulomb_velocity": v_s,
            "stribeck_velocity": v_st, "choice": choice, "absent": absent,
            "folds": cv.folds, "evidence": evidence, "score": cv.scores(absent, method),
            "stacked_score": stacked(cv, absent, method), "cutoffs": cutoffs,
            "methods": methods, "robust": robust,
            "velocity_grid": [{"coulomb_velocity": g[1], "stribeck_velocity": g[2],
                               "stacked": g[0]} for g in grid]}


def _best(scores: dict[str, float]) -> str:
    """The candidate of lowest score; one with more terms only if it gains
    :data:`MIN_GAIN` (relative) over the best with fewer."""
    order = sorted(scores, key=lambda m: (len(CANDIDATES[m]), scores[m]))
    best = order[0]
    for m in order[1:]:
        if scores[m] < scores[best] * (1 - MIN_GAIN) or (
                len(CANDIDATES[m]) == len(CANDIDATES[best]) and scores[m] < scores[best]):
            best = m
    return best


def record(result: dict, joints: list[str]) -> dict:
    """The choice and its evidence as ``result.yaml`` holds it."""
    return {"chosen": "per_joint",
            "chosen_by": f"{result['folds']}-fold cross-validation over time blocks of the "
                         "training part (the held-out part not used)",
            "position_cutoff_hz": float(result["position_cutoff_hz"]),
            "method": result["method"],
            "coulomb_velocity": float(result["coulomb_velocity"]),
            "stribeck_velocity": float(result["stribeck_velocity"]),
            "joints": {joints[j]: {"model": m,
                                   "cross_validation_relative_error": {
                                       k: float(v) for k, v in result["evidence"][j].items()}}
                       for j, m in sorted(result["choice"].items())},
            "cross_validation_relative_error": {
                **{joints[j]: float(v) for j, v in enumerate(result["score"])},
                "stacked": float(result["stacked_score"])},
            "cutoffs_stacked": {float(k): float(v) for k, v in result["cutoffs"].items()},
            "methods_stacked": {k: float(v) for k, v in result["methods"].items()},
            "irls_stacked": {k: float(v) for k, v in result["robust"].items()},
            "velocities_stacked": result["velocity_grid"],
            "candidates": [{"model": m, "terms": list(t)} for m, t in CANDIDATES.items()]}

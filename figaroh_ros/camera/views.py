"""The inputs of a camera calibration, checked: each view's detected features (ids and
pixels) and the robot's configuration, as :class:`~figaroh_ros.camera.problem.Views`."""
from __future__ import annotations

import numpy as np
import pinocchio as pin

from figaroh_ros.camera.model import Intrinsics
from figaroh_ros.camera.problem import ChainSide, Views
from figaroh_ros.camera.targets import Board, Detection
from figaroh_ros.errors import DataError


def view_features(detections, board: Board, intrinsics: Intrinsics, what: str):
    """(names, ids per view, pixels per view) of ``detections``: :class:`Detection`\\ s or
    ``(ids, pixels)`` pairs, each checked."""
    names, ids, pixels = [], [], []
    n = board.feature_count
    for i, d in enumerate(detections):
        if isinstance(d, Detection):
            name = d.image or f"{what}[{i}]"
            intrinsics.check_image(d.width, d.height, f"{what}: image {name}")
            idx, uv = d.ids, d.pixels
        else:
            name = f"{what}[{i}]"
            try:
                idx, uv = d
            except (TypeError, ValueError) as exc:
                raise DataError(f"{name}: a Detection or an (ids, pixels) pair is "
                                "expected") from exc
        idx = np.asarray(idx).reshape(-1)
        uv = np.asarray(uv, float).reshape(-1, 2) if np.size(uv) else np.zeros((0, 2))
        if len(idx) == 0:
            raise DataError(f"{name}: no feature detected (an empty view)")
        if len(idx) != len(uv):
            raise DataError(f"{name}: {len(idx)} ids but {len(uv)} pixels")
        if not np.issubdtype(idx.dtype, np.integer) or idx.min() < 0 or idx.max() >= n:
            raise DataError(f"{name}: feature ids {idx.min()}..{idx.max()} outside the "
                            f"board's 0..{n - 1} ({board.kind} {board.rows}x{board.cols})")
        if len(np.unique(idx)) != len(idx):
            raise DataError(f"{name}: a feature id appears twice")
        if not np.all(np.isfinite(uv)):
            raise DataError(f"{name}: pixels that are not finite numbers")
        names.append(name)
        ids.append(idx.astype(int))
        pixels.append(uv)
    if not names:
        raise DataError(f"{what}: no views")
    return names, ids, pixels


def configurations(pm: pin.Model, cam, board, q, n_views: int, what: str):
    """Chain readings of each side from ``q``: full configurations (P x nq), or the one
    chain's readings when only one side is a chain."""
    q = np.atleast_2d(np.asarray(q, float))
    if len(q) != n_views:
        raise DataError(f"{what}: {len(q)} joint configurations for {n_views} views")
    if not np.all(np.isfinite(q)):
        row = int(np.flatnonzero(~np.all(np.isfinite(q), axis=1))[0])
        raise DataError(f"{what}: configuration {row} has joint readings that are not "
                        "finite numbers")
    chains = [s for s in (cam, board) if isinstance(s, ChainSide)]
    if q.shape[1] == pm.nq:
        return tuple(s.readings(q) if isinstance(s, ChainSide) else np.zeros((len(q), 0))
                     for s in (cam, board))
    if len(chains) == 1 and q.shape[1] == len(chains[0].km.chain):
        return tuple(q if s is chains[0] else np.zeros((len(q), 0)) for s in (cam, board))
    expected = f"{pm.nq} (a full configuration)"
    if len(chains) == 1:
        expected += f" or {len(chains[0].km.chain)} (the chain {chains[0].km.chain})"
    raise DataError(f"{what}: configurations have {q.shape[1]} columns, expected {expected}")


def make_views(problem, board, q, detections, pm, what) -> Views:
    names, ids, pixels = view_features(detections, board, problem.intrinsics, what)
    Qa, Qb = configurations(pm, problem.cam, problem.board, q, len(names), what)
    P = board.object_points()
    view = np.concatenate([np.full(len(i), k) for k, i in enumerate(ids)])
    return Views(names, Qa, Qb, view, P[np.concatenate(ids)], np.vstack(pixels))

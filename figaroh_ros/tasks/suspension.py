"""``figaroh-ros identify-suspension CONFIG --bag BAG``: the base suspension (seed 002 Eq.
1-5, ``suspension.py``) from a recording of the force-plate wrench and of a motion-capture
body on the base.

    robot: {name: tiago}
    suspension:
      wheel_positions: null            # six [x, y, z] in the base frame (default: TIAGo's)
      wrench_topic: /force_plate/wrench   # in the base frame at rest (the plate's axes)
      base_pose_topic: /mocap/base_pose   # the base frame in the mocap frame
      rest_seconds: 1.0                # the first seconds: rest pose (F_0)
      cutoff_hz: 2.0                   # zero-phase low-pass of the pose before differences
      validation_fraction: 0.3

The displacement of the base is ``T_0^-1 T(t)`` (``T_0``: the mean pose over the rest
window): ``t`` its translation, ``theta`` its rotation vector, expressed in ``F_0``; the
wrench is resampled onto the pose stamps.  The observability report, the identifiable
combinations with their standard deviations and the hold-out wrench RMSE go to
``result.yaml``.
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin

from figaroh_ros.calibration.solve import mean_rotation
from figaroh_ros.errors import DataError
from figaroh_ros.identification import signals
from figaroh_ros.identification.wrench import COMPONENTS
from figaroh_ros.io.bags import read_bag_wrench_and_pose
from figaroh_ros.phenomena.suspension import (
    TIAGO_WHEELS, identify_suspension, parameter_names, predict_wrench, suspension_regressor
)


def identify_from_bag(cfg: dict, bag: str) -> dict:

    s = cfg["suspension"]
    wheels = (TIAGO_WHEELS if s["wheel_positions"] is None
              else np.asarray(s["wheel_positions"], float))
    try:
        tw, W, tp, P = read_bag_wrench_and_pose([bag], s["wrench_topic"], s["base_pose_topic"])
    except DataError as exc:
        raise DataError(str(exc)) from exc
    rate = 1.0 / float(np.median(np.diff(tp)))
    grid = np.arange(max(tw[0], tp[0]), min(tw[-1], tp[-1]), 1.0 / rate)
    if len(grid) < 200:
        raise DataError(f"bag {bag}: only {len(grid)} samples where wrench and pose overlap")
    poses = [pin.XYZQUATToSE3(p) for p in P]
    rest = grid[0] + s["rest_seconds"]
    at_rest = [M for M, t in zip(poses, tp) if t <= rest]
    if len(at_rest) < 5:
        raise DataError(f"suspension.rest_seconds: only {len(at_rest)} poses in the rest "
                        "window")
    T0 = pin.SE3(mean_rotation([M.rotation for M in at_rest]),
                 np.mean([M.translation for M in at_rest], axis=0))
    X = np.array([np.r_[(T0.inverse() * M).translation, pin.log3((T0.inverse() * M).rotation)]
                  for M in poses])
    _, X, seen_x = signals.uniform_grid(tp, X, grid=grid, cutoff_hz=s["cutoff_hz"])
    _, Y, seen_y = signals.uniform_grid(tw, W, grid=grid, cutoff_hz=s["cutoff_hz"])
    Xf = signals.lowpass_zero_phase(X, s["cutoff_hz"], rate, 4)
    dX, _ = signals.derivatives(Xf, 1.0 / rate)
    edge = signals.edge_samples(4, s["cutoff_hz"], rate)
    # the last part validates; samples in or beside a gap of either topic in neither part
    train_rows, valid_rows = signals.held_out_rows(seen_x & seen_y, edge,
                                                   s["validation_fraction"], f"bag {bag}")
    names = parameter_names()

    def rows(r):
        return suspension_regressor(wheels, Xf[r, :3], Xf[r, 3:], dX[r, :3],
                                    dX[r, 3:]), Y[r].T.ravel()
    Wt, Yt = rows(train_rows)
    Wv, Yv = rows(valid_rows)
    est = identify_suspension(Wt, Yt, names)
    pred = predict_wrench(est, Wv)
    rmse = np.sqrt(np.mean((pred - Yv).reshape(6, -1) ** 2, axis=1))
    obs = est.observability
    return {
        "robot": cfg["robot"]["name"], "bag": bag, "samples": int(len(train_rows) + len(valid_rows)),
        "identifiable_combinations": [{"name": n, "value": float(v), "std": float(sd)}
                                      for n, v, sd in zip(obs.base.names, est.values, est.std)],
        "identified_alone": obs.identifiable, "grouped": obs.groups,
        "unobservable": obs.unobservable, "held_at_zero_by_bounds": est.active_bounds,
        "train_rmse": {c: float(v) for c, v in zip(COMPONENTS, est.rmse)},
        "validation_rmse": {c: float(v) for c, v in zip(COMPONENTS, rmse)},
        "report": obs.report(),
    }

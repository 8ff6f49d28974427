"""``figaroh-ros identify-suspension CONFIG --bag BAG``: the base suspension (Nguyen et al. 2024 Eq.
1-5, ``phenomena.identify_suspension``) from a recording of the force-plate wrench and of
a motion-capture body on the base.

    robot: {name: tiago}
    suspension:
      wheel_positions: null            # six [x, y, z] in the base frame (default: TIAGo's)
      wrench_topic: /force_plate/wrench   # in the base frame at rest (the plate's axes)
      base_pose_topic: /mocap/base_pose   # the base frame in the mocap frame
      rest_seconds: 1.0                # the first seconds: rest pose (F_0)
      cutoff_hz: 2.0                   # zero-phase low-pass of the pose before differences
      validation_fraction: 0.3

Both topics are resampled onto one uniform grid at the pose rate, over the span they
share (the orientation by normalised linear interpolation of the quaternions); samples
drawn across a gap of either topic are left out.  The observability report, the
identifiable combinations with their standard deviations and the hold-out wrench RMSE go
to ``result.yaml``.
"""
from __future__ import annotations

import os

import numpy as np

from figaroh_ros.config.suspension import Suspension, load_suspension_config
from figaroh_ros.errors import DataError
from figaroh_ros.identification import signals
from figaroh_ros.identification.wrench import COMPONENTS
from figaroh_ros.io.bags import read_bag_wrench_and_pose
from figaroh_ros.io.output_dir import check_output_folder, staged_output
from figaroh_ros.io.report import write_result
from figaroh_ros.phenomena import SuspensionResult, identify_suspension
from figaroh_ros.phenomena.suspension_identification import FILTER_ORDER, base_displacement
from figaroh_ros.progress import Stage, reporter
from figaroh_ros.tasks import TaskOutcome
from figaroh_ros.tasks.gate import (
    DEFAULT_RESIDUAL_LIMIT, Check, require_sane_fit, residual_check
)

MIN_FILTERED = 30              # rest samples the zero-phase filter needs (else raw)
CAUSES = ("the wrench not in the base frame at rest (axes or sign of the plate)",
          "units (N.mm for N.m, mm for m)", "the base pose of another body, or its "
          "quaternion order (x y z w)", "the robot not at rest during rest_seconds",
          "wheel_positions of another robot")


def default_out(config_path: str) -> str:
    """``results/<robot>_suspension``."""
    return os.path.join("results", load_suspension_config(config_path).robot.name
                        + "_suspension")


def poses_on_grid(t: np.ndarray, poses: np.ndarray, grid: np.ndarray, cutoff_hz: float):
    """Poses (N x 7, ``x y z qx qy qz qw`` at times ``t``) on ``grid``: the quaternions'
    signs made continuous, then interpolated linearly and normalised.  Returns the poses
    and ``covered`` (``signals.uniform_grid``)."""
    q = np.array(poses[:, 3:], float)
    same = np.where(np.sum(q[1:] * q[:-1], axis=1) < 0, -1.0, 1.0)
    q *= np.r_[1.0, np.cumprod(same)][:, None]
    _, P, covered = signals.uniform_grid(t, np.c_[poses[:, :3], q], grid=grid,
                                         cutoff_hz=cutoff_hz)
    P[:, 3:] /= np.linalg.norm(P[:, 3:], axis=1, keepdims=True)
    return P, covered


def _recording(s: Suspension, bag: str):
    """The wrench and the base pose on one uniform grid; the grid and the covered
    samples."""
    tw, W, tp, P = read_bag_wrench_and_pose([bag], s.wrench_topic, s.base_pose_topic)
    rate = 1.0 / float(np.median(np.diff(tp)))
    grid = np.arange(max(tw[0], tp[0]), min(tw[-1], tp[-1]), 1.0 / rate)
    if len(grid) < 200:
        raise DataError(f"bag {bag}: only {len(grid)} samples where wrench and pose overlap")
    pose, seen_p = poses_on_grid(tp, P, grid, s.cutoff_hz)
    _, wrench, seen_w = signals.uniform_grid(tw, W, grid=grid, cutoff_hz=s.cutoff_hz)
    return grid, wrench, pose, seen_p & seen_w


def rest_noise(res: SuspensionResult, wrench, pose, rest, dt: float, cutoff_hz: float
               ) -> np.ndarray:
    """The noise floor per wrench component from the samples at rest (repeated
    measurements of a constant): the scatter of the measured wrench and that of the
    model's prediction from the base pose, filtered as the fit filters it."""
    X, _ = base_displacement(pose[rest], np.ones(int(rest.sum()), bool))
    if len(X) > MIN_FILTERED:
        X = signals.lowpass_zero_phase(X, cutoff_hz, 1.0 / dt, FILTER_ORDER)
    predicted = res.predict(X, signals.central_difference(X, dt))
    return np.sqrt(np.var(wrench[rest], axis=0) + np.var(predicted, axis=0))


def residual_sanity(res: SuspensionResult, noise: np.ndarray) -> Check:
    """Held-out wrench RMSE over the noise floor at rest, worst component."""
    ratio = res.validation_rmse / np.maximum(noise, 1e-12)
    k = int(np.argmax(ratio))
    return residual_check(float(ratio[k]), DEFAULT_RESIDUAL_LIMIT, f"{COMPONENTS[k]} noise "
                          f"at rest ({res.validation_rmse[k]:.3g} over {noise[k]:.3g})")


def run(config_path: str, *, bag: str, out: str, accept_poor_fit: bool = False,
        progress=None) -> TaskOutcome:
    """Config + bag -> ``identify_suspension`` -> ``<out>/result.yaml``; a model whose
    held-out error exceeds ``residual_limit`` x the wrench's noise at rest raises DataError
    unless ``accept_poor_fit`` (then the result warns)."""
    say = reporter(progress)
    cfg = load_suspension_config(config_path)
    check_output_folder(out)           # before any work
    s, bag = cfg.suspension, os.path.abspath(bag)
    say(Stage.LOADING_DATA, 0.0, f"reading {bag}")
    grid, wrench, pose, covered = _recording(s, bag)
    rest = grid <= grid[0] + s.rest_seconds
    try:
        res = identify_suspension(wrench, pose, dt=grid[1] - grid[0], rest=rest,
                                  wheels=s.wheel_positions, usable=covered,
                                  cutoff_hz=s.cutoff_hz,
                                  validation_fraction=s.validation_fraction,
                                  progress=progress)
        dt = grid[1] - grid[0]
        sane = residual_sanity(res, rest_noise(res, wrench, pose, rest & covered, dt,
                                               s.cutoff_hz))
        warnings = require_sane_fit(sane, accept_poor_fit, "the suspension model", CAUSES)
    except DataError as exc:
        raise DataError(f"bag {bag}: {exc}") from None
    summary = {"robot": cfg.robot.name, "bag": bag, **res.to_dict(),
               "residual_vs_noise": sane.to_dict(), **({"warnings": warnings} if warnings
                                                        else {})}
    with staged_output(out) as st:
        write_result(summary, st.dir)
    path = st.final("result.yaml")
    say(Stage.EXPORTING, 1.0, f"wrote {path}")
    return TaskOutcome(summary, {"result": path})

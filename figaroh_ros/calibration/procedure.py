"""``calibrate``: geometric calibration from arrays (Nguyen et al. 2023 §II.A-C; Nguyen et
al. 2024 Eq. 9-10).

The steps of these papers, in the style of ``scipy.optimize.least_squares``:

1. the unknown frames (measurement frame -> robot, tool -> measured points or frame) are
   registered on the nominal model;
2. identifiability: QR of the kinematic regressor gives the base parameters; those these
   postures do not excite, or determine worse than ``max_std``, stay nominal;
3. nonlinear least squares on the base parameters (Eq. 10), standard deviations from
   ``s^2 (J^T J)^-1``;
4. accuracy on the training postures and, when given, on held-out ones.

The nominal model is given the same chance as the calibrated one: its unknown frames are
fitted by the same solver with every joint parameter held at zero, so "nominal vs
calibrated" measures what the joint parameters bring, not what registering the frames
brings.  Nothing is read or written here.
"""
from __future__ import annotations

import os

import numpy as np
import pinocchio as pin

from figaroh_ros.calibration.kinematic_model import KinematicModel, Measurement
from figaroh_ros.calibration.planes import (
    PlaneContactModel, check_touched, contact_index, initial_planes, plane_postures
)
from figaroh_ros.calibration.result import (
    CalibrationResult, chain_postures, measurement_rows, parameters_of
)
from figaroh_ros.calibration.solve import (
    PostureSet, accuracy, estimate, fit_parameters, identifiable_parameters, initial_frames,
    leave_one_out, prune_poorly_excited, structural_parameters, whitened
)
from figaroh_ros.errors import DataError, ModelError, SolverError
from figaroh_ros.model import RobotModel, example_robot_urdf
from figaroh_ros.model.urdf_checks import check_urdf_file, check_urdf_text
from figaroh_ros.progress import Stage, reporter

MEASUREMENTS = ("points", "plane", "pose")
EXAMPLE = "example-robot-data:"


def robot_model(model) -> tuple[pin.Model, str | None]:
    """(pinocchio model, URDF path or text) of a pinocchio Model, a :class:`RobotModel`
    (a caller that needs the model twice parses it once and passes this), a URDF path
    (``example-robot-data:...`` too) or the URDF text, checked and parsed."""
    if isinstance(model, pin.Model):
        return model, None
    if isinstance(model, RobotModel):
        return model.model, model.urdf_xml or model.urdf_path
    source = str(model)
    if source.startswith(EXAMPLE):
        source = example_robot_urdf(source[len(EXAMPLE):])
    text = source.lstrip().startswith("<")
    if not text and not os.path.isfile(source):
        raise ModelError(f"URDF not found: {source}")
    return parsed_urdf(source, text), source


def parsed_urdf(source: str, text: bool) -> pin.Model:
    """The checked URDF (text or file) parsed by pinocchio."""
    (check_urdf_text if text else check_urdf_file)(source)   # before pinocchio reads it
    try:
        return pin.buildModelFromXML(source) if text else pin.buildModelFromUrdf(source)
    except Exception as exc:  # pinocchio raises RuntimeError / ValueError
        raise ModelError(f"cannot parse URDF {'text' if text else source}: {exc}") from exc


def as_pose(guess) -> pin.SE3:
    """A frame given as ``pin.SE3`` or ``[x, y, z, roll, pitch, yaw]``."""
    if isinstance(guess, pin.SE3):
        return guess
    g = np.asarray(guess, float)
    return pin.SE3(pin.rpy.rpyToMatrix(*g[3:]), g[:3])


def kinematic_model(model, *, tool_frame, level="full", measurement="pose", points=None,
                    start_frame=None, joints=None, noise=(5e-4, 2e-3), mask=None,
                    estimate_base=True, base_guess=None, tool_guess=None,
                    elastic_joints=None, planes=None) -> tuple[KinematicModel, str | None]:
    """The chain to calibrate and its measurement (arguments of :func:`calibrate`)."""
    if measurement not in MEASUREMENTS:
        raise ModelError(f"measurement must be one of {MEASUREMENTS}, got {measurement!r}")
    if planes is not None and (measurement != "plane" or base_guess is not None):
        raise ModelError("planes: contacts with several planes are a 'plane' measurement "
                         "whose planes' poses are given in planes (no base_guess)")
    pm, source = robot_model(model)
    n_points = 1 if points is None else (points if np.ndim(points) == 0
                                         else len(np.atleast_2d(points)))
    sigma_p, sigma_o = (noise, noise) if np.ndim(noise) == 0 else noise
    kind = "pose" if measurement == "pose" else "points"
    mask = [False, False, True] if measurement == "plane" else mask
    meas = Measurement(kind, int(n_points), None if mask is None else np.asarray(mask, bool),
                       sigma_position=float(sigma_p), sigma_orientation=float(sigma_o))
    km = (KinematicModel if planes is None else PlaneContactModel)(
        pm, tool_frame, level=level, joints=joints, start_frame=start_frame,
        measurement=meas, estimate_base=estimate_base, elastic_joints=elastic_joints,
        **({} if planes is None else {"planes": planes}))
    if base_guess is not None:
        km.base0 = as_pose(base_guess)
    if kind == "pose" and tool_guess is not None:
        km.tool0 = as_pose(tool_guess)
    return km, source


def postures(km: KinematicModel, q, measurements, ids=None, contacts=None,
             what="contacts") -> PostureSet:
    """The posture set (``contacts``: the plane each posture touches, several planes)."""
    Q = chain_postures(km, q)
    if isinstance(km, PlaneContactModel):
        if contacts is None and measurements is None:
            raise DataError(f"{what}: name the plane each posture touches")
        if measurements is not None:    # columns and finiteness checked (names the fault)
            measurements = measurement_rows(km, measurements)
        if contacts is None:            # rows of a posture table: the plane index in x1
            contacts = contact_index(measurements).tolist()
        d = None if measurements is None else measurements[:, 2::3]
        return plane_postures(km, Q, contacts, ids, d, what)
    Y = np.zeros((len(Q), km.measurement.size)) if measurements is None \
        else measurement_rows(km, measurements)
    return PostureSet(Q, Y, list(ids) if ids is not None else [])


def identifiability(km, train, x0, say):
    """Base parameters of these postures, and the model's own ones they leave unexcited."""
    bp = identifiable_parameters(km, train, x0)
    say(Stage.IDENTIFIABILITY, 0.25,
        f"{bp.size} identifiable parameters of {km.n_params} "
        f"({len(bp.zero_index)} without effect, {len(bp.dependent_index)} grouped)")
    structural = structural_parameters(km, x0)
    unexcited = [e for e, i in zip(structural.names, structural.base_index)
                 if i not in set(bp.base_index)]
    if len(unexcited) and bp.size < structural.size:
        say(Stage.IDENTIFIABILITY, 0.3,
            f"these postures excite {bp.size} of the model's {structural.size} "
            f"identifiable parameters; not excited (kept nominal): "
            f"{', '.join(e.split(' ')[0] for e in unexcited)}")
    return bp, unexcited if bp.size < structural.size else []


def require_enough(km, train, bp):
    per_posture = int(km.measurement.mask.sum())
    n_values = len(train) * per_posture
    if n_values < bp.size + 6:
        raise SolverError(
            f"{len(train)} postures give {n_values} measured values for {bp.size} "
            f"identifiable parameters: measure at least "
            f"{int(np.ceil((bp.size + 6) / per_posture))} postures "
            "(plan-postures chooses them)")


def frames_only(km: KinematicModel, bp) -> np.ndarray:
    """Base parameters that are frames (measurement frame, tool): the nominal fit."""
    frame_idx = set(range(*km.groups["tool"].indices(km.n_params)))
    if km.estimate_base:
        frame_idx |= set(range(6))
    frame_idx |= {int(i) for i in getattr(km, "plane_columns", ())}
    return np.array([i for i in bp.base_index if i in frame_idx], dtype=int)


def nominal_fit(km, train, x0, bp, method, max_iterations):
    frames = frames_only(km, bp)
    if not len(frames):
        return x0, frames
    x = fit_parameters(km, train, x0, frames, "lm" if method == "ils" else method,
                       max_iterations)[0]
    if not np.all(np.isfinite(x)):
        raise SolverError("fitting the measurement/tool frames diverged")
    return x, frames


def prune(km, train, x_nom, bp, max_std, max_iterations, say):
    """A first fit of every base parameter gives the actual residual scale; parameters the
    postures determine worse than ``max_std`` (m, rad) at that scale stay nominal.
    Returns the pruned analysis, the removed expressions and that first fit as
    ``estimate``'s ``first_fit`` (its start, free parameters, method and answer)."""
    first = fit_parameters(km, train, x_nom, bp.base_index, "lm", max_iterations)
    first_fit = (x_nom, bp.base_index, "lm", first)
    x_first = first[0]
    f_first = whitened(km, train, x_first, False)[0]
    scale = float(np.sqrt(f_first @ f_first / max(len(f_first) - bp.size, 1)))
    bp, weak = prune_poorly_excited(km, train, x_nom, bp, max_std[0], max_std[1],
                                    max(1.0, scale))
    if weak:
        say(Stage.IDENTIFIABILITY, 0.35,
            f"{len(weak)} base parameters too weakly excited by these postures, kept "
            f"nominal: {', '.join(w.split(' ')[0] for w in weak)}")
    return bp, weak, first_fit


def solve(km, train, x_nom, bp, method, outlier_threshold, max_iterations, say,
          first_fit=None):
    """The estimate (``first_fit``: the same fit already done, e.g. by :func:`prune`)."""
    est = estimate(km, train, x_nom, method=method, outlier_threshold=outlier_threshold,
                   max_iterations=max_iterations, bp=bp, first_fit=first_fit)
    say(Stage.ESTIMATION, 0.7, f"solver {est.method}: {est.iterations} evaluations, "
        f"whitened residual sigma {est.sigma:.3g}")
    if not est.converged:
        raise SolverError(f"the {est.method} solver did not converge in {max_iterations} "
                          "iterations: the postures excite the parameters too weakly (see "
                          "plan-postures) or the initial frames are wrong (base_guess)")
    return est


def cross_validate(km, train, est, x_nom, frames, max_iterations, say) -> dict:
    """Leave-one-out errors of the calibrated and the nominal model (small sets)."""
    say(Stage.VALIDATION, 0.8, f"leave-one-out cross-validation over {len(train)} postures")
    kept = train.subset(est.kept)
    m = "lm" if est.method == "ils" else est.method
    e_cal = leave_one_out(km, kept, est.x, est.free, m, max_iterations)
    e_nom = leave_one_out(km, kept, x_nom, frames, m, max_iterations)
    return {"rmse_mm": float(1e3 * np.sqrt(np.mean(e_cal ** 2))),
            "max_mm": float(1e3 * e_cal.max()),
            "nominal_rmse_mm": float(1e3 * np.sqrt(np.mean(e_nom ** 2)))}


def calibrate(model, q, measurements, *, tool_frame: str, level: str = "full",
              measurement: str = "pose", points=None, start_frame: str | None = None,
              joints: list[str] | None = None, method: str = "lm", validation=None,
              noise=(5e-4, 2e-3), mask=None, estimate_base: bool = True, base_guess=None,
              tool_guess=None, elastic_joints: list[str] | None = None,
              outlier_threshold: float | None = None, max_iterations: int = 100,
              max_std=(10e-3, 20e-3), cross_validation: bool = False, ids=None,
              planes=None, contacts=None, progress=None) -> CalibrationResult:
    """Calibrate the joint placements (``level="full"``) or offsets (``"offset"``) of the
    chain from ``start_frame`` (default the root) to ``tool_frame``.

    model: a pinocchio ``Model``, a :class:`~figaroh_ros.model.RobotModel`, a URDF path
        or the URDF text (only the last three can be exported by ``to_urdf``).
    q: P x n chain joint readings in chain order (``result.kinematic_model.chain``), or P x
        nq full pinocchio configurations.
    measurements: P x 3k points, P x 6 / P x 7 poses (see :mod:`.result`); ``None`` for
        ``measurement="plane"`` (every point lies on one plane).
    points: number of measured points, or their initial positions in the tool frame (k x
        3, m); tool_guess / base_guess: initial tool frame (pose) / measurement frame,
        ``pin.SE3`` or ``[x y z roll pitch yaw]``.
    validation: held-out ``(q, measurements)`` (several planes: ``(q, measurements,
        contacts)``), scored, never fitted.
    planes: several planes touched (``measurement="plane"``, :mod:`.planes`): names
        (unknown planes), :class:`~.planes.Plane` or ``{"name", "pose"}`` (a known plane's
        frame in the start frame, z = normal); ``contacts``: the plane each posture
        touches (name or index); ``measurements`` then None or the measured distances in
        the ``z<k>`` columns.
    noise: standard deviation of a measured coordinate (m) and orientation (rad); a
        float for both.  max_std: (m, rad) bounds on the base parameters' std.
    outlier_threshold (m): postures with a larger error after a fit are dropped.
    method: ``lm`` (Levenberg-Marquardt), ``ils`` (Gauss-Newton) or ``robust`` (soft L1).
    progress: called with :class:`~figaroh_ros.progress.Progress` objects.
    """
    say = reporter(progress)
    if points is None and measurement != "pose" and measurements is not None:
        points = np.atleast_2d(measurements).shape[1] // 3
    km, source = kinematic_model(model, tool_frame=tool_frame, level=level,
                                 measurement=measurement, points=points,
                                 start_frame=start_frame, joints=joints, noise=noise, mask=mask,
                                 estimate_base=estimate_base, base_guess=base_guess,
                                 tool_guess=tool_guess, elastic_joints=elastic_joints,
                                 planes=planes)
    train = postures(km, q, measurements, ids, contacts)
    val = None if validation is None else (
        postures(km, *validation[:2], None, (list(validation) + [None])[2],
                 "validation contacts")
        if planes is not None else postures(km, *validation))
    tool_points = None if np.ndim(points) < 2 or measurement == "pose" else points
    if planes is not None:
        check_touched(km.planes, contact_index(train.Y), km.measurement.n_points)
        x0 = initial_planes(km, train, km.nominal_parameters(tool_points))
    else:
        x0 = initial_frames(km, train, km.nominal_parameters(tool_points),
                            plane=measurement == "plane")
    bp, unexcited = identifiability(km, train, x0, say)
    require_enough(km, train, bp)
    x_nom, frames = nominal_fit(km, train, x0, bp, method, max_iterations)
    bp, weak, first = prune(km, train, x_nom, bp, max_std, max_iterations, say)
    # nothing pruned and lm: prune's first fit is the estimate's own (estimate checks)
    est = solve(km, train, x_nom, bp, method, outlier_threshold, max_iterations, say, first)
    notes = {"poorly_excited": weak, "not_excited": unexcited}
    if cross_validation:
        notes["leave_one_out"] = cross_validate(km, train, est, x_nom, frames, max_iterations,
                                                say)
    return scored(km, source, est, x_nom, train, val, measurement, notes, say)


def scored(km, source, est, x_nom, train, val, measurement, notes, say) -> CalibrationResult:
    """The result with its training and held-out accuracy."""
    kept = train.subset(est.kept)
    val_rmse = nominal_val_rmse = None
    if val is not None:
        say(Stage.VALIDATION, 0.9, f"scoring {len(val)} held-out postures")
        val_rmse = accuracy(km, val, est.x).rmse
        nominal_val_rmse = accuracy(km, val, x_nom).rmse
    return CalibrationResult(parameters_of(km, est), accuracy(km, kept, est.x).rmse,
                             accuracy(km, kept, x_nom).rmse, val_rmse, nominal_val_rmse, est,
                             km, est.x, x_nom, train, val, measurement, source,
                             km.model.name, notes)

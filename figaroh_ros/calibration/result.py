"""What a geometric calibration returns: the estimated parameters, the accuracy on the
training (and held-out) postures, the calibrated model as predictions and as a URDF.

Measurement convention (``measurement`` of :func:`figaroh_ros.calibration.calibrate`):

* ``points`` / ``plane``: ``P x 3k``, ``[x1 y1 z1 x2 ...]`` in metres, in the measurement
  frame (for ``plane``, the frame of the plane: ``z`` is the distance to it);
* ``pose``: ``P x 6``, position (m) then orientation as a rotation vector (rad), or
  ``P x 7``, position then unit quaternion ``qx qy qz qw``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from figaroh_ros.calibration.kinematic_model import KinematicModel, parameter_unit
from figaroh_ros.calibration.solve import Estimate, PostureSet, accuracy, posture_errors
from figaroh_ros.calibration.urdf_export import checked_urdf_text, write_text
from figaroh_ros.errors import DataError, ModelError


@dataclass
class Parameters:
    """The estimated (base) parameters: name, value, standard deviation, unit, and the
    grouped expression each one stands for (Nguyen et al. 2023 §II.B)."""

    names: list[str]
    values: np.ndarray
    std: np.ndarray
    units: list[str]
    expressions: list[str]

    def to_list(self) -> list[dict]:
        return [{"name": n, "expression": e, "value": float(v), "std": float(s), "unit": u}
                for n, e, v, s, u in zip(self.names, self.expressions, self.values, self.std,
                                         self.units)]


def chain_postures(km: KinematicModel, q) -> np.ndarray:
    """Chain joint readings from ``q``: P x n_chain (chain order) or full pinocchio
    configurations P x nq."""
    q = np.atleast_2d(np.asarray(q, float))
    if q.size == 0:
        raise DataError("no postures: at least one joint reading is needed")
    if not np.all(np.isfinite(q)):
        row = int(np.flatnonzero(~np.all(np.isfinite(q), axis=1))[0])
        raise DataError(f"posture {row}: joint readings that are not finite numbers")
    if q.shape[1] == len(km.chain):
        return q
    if q.shape[1] == km.model.nq:
        return km.chain_angles(q)
    raise DataError(f"postures have {q.shape[1]} columns: expected the {len(km.chain)} chain "
                    f"joints {km.chain} or a full configuration of {km.model.nq}")


def measurement_rows(km: KinematicModel, Y) -> np.ndarray:
    """Measurements in the solver's convention (pose orientation as a rotation vector)."""
    m = km.measurement
    Y = np.atleast_2d(np.asarray(Y, float))
    if m.kind == "pose" and Y.shape[1] == 7:
        R = [pin.Quaternion(y[6], y[3], y[4], y[5]).normalized().matrix() for y in Y]
        Y = np.column_stack([Y[:, :3], [pin.log3(r) for r in R]])
    if Y.shape[1] != m.size:
        expected = "6 or 7" if m.kind == "pose" else str(m.size)
        raise DataError(f"measurements have {Y.shape[1]} columns, expected {expected}")
    if not np.all(np.isfinite(Y)):
        raise DataError("measurements contain non-finite values")
    return Y


def _pose_dict(T: pin.SE3) -> dict:
    return {"xyz": T.translation.tolist(), "rpy": pin.rpy.matrixToRpy(T.rotation).tolist()}


def inside_ranges(train: PostureSet, other: PostureSet) -> np.ndarray:
    """Postures of ``other`` whose every joint lies within the training range."""
    lo, hi = train.Q.min(0), train.Q.max(0)
    return np.all((other.Q >= lo) & (other.Q <= hi), axis=1)


@dataclass
class CalibrationResult:
    """A calibrated kinematic model (see the module docstring for the conventions)."""

    parameters: Parameters
    rmse: float                                # m, training postures kept by the fit
    nominal_rmse: float                        # m, nominal joints, frames fitted
    validation_rmse: float | None
    nominal_validation_rmse: float | None
    estimate: Estimate                         # the solver's full output
    kinematic_model: KinematicModel
    x: np.ndarray                              # every parameter of the calibrated model
    x_nominal: np.ndarray                      # frames fitted, joints nominal
    train: PostureSet
    validation: PostureSet | None
    measurement: str                           # points, plane or pose
    urdf_source: str | None                    # URDF path or text the model came from
    name: str = ""
    notes: dict = field(default_factory=dict)  # poorly_excited, not_excited, leave_one_out
    urdf_path: str | None = None
    urdf_round_trip_gap: float | None = None
    input_checks: list = field(default_factory=list)   # the gate's (a), tasks.gate.Check
    publication: dict | None = None            # the gate's verdict (tasks.gate.Verdict)
    warnings: list[str] = field(default_factory=list)  # e.g. a poor fit accepted

    # ---------------------------------------------------------------- model
    def predict(self, q, nominal: bool = False) -> np.ndarray:
        """Measurements the calibrated (or nominal) model predicts at postures ``q``:
        P x 3k points, or P x 6 poses (position, rotation vector)."""
        km = self.kinematic_model
        x = self.x_nominal if nominal else self.x
        Q = chain_postures(km, q)
        if km.measurement.kind == "points":
            return km.predict_points(Q, x).reshape(len(Q), -1)
        return np.array([np.r_[T.translation, pin.log3(T.rotation)] for T in km.predict(Q, x)])

    def posture_errors(self, which: str = "train", nominal: bool = False) -> np.ndarray:
        """Largest point error (m) of each ``train`` or ``validation`` posture."""
        data = self.train if which == "train" else self.validation
        x = self.x_nominal if nominal else self.x
        return posture_errors(self.kinematic_model, data, x).max(axis=1)

    def to_urdf(self, path: str | None = None) -> str:
        """The URDF with the calibrated joint origins, checked to reproduce the calibrated
        kinematics on every posture (to 1e-9); written to ``path`` when given."""
        if self.urdf_source is None:
            raise ModelError("the model was given as a pinocchio Model: pass the URDF path "
                             "or text to calibrate() to export a URDF")
        Q = self.train.Q if self.validation is None else np.vstack([self.train.Q,
                                                                    self.validation.Q])
        text, gap = checked_urdf_text(self.kinematic_model, self.x, self.urdf_source, Q)
        self.urdf_round_trip_gap = gap
        if path is not None:
            write_text(path, text)
            self.urdf_path = path
        return text

    # ---------------------------------------------------------------- report
    def frames(self, nominal: bool = False) -> dict:
        """The estimated measurement frame and tool points / tool frame."""
        km, x = self.kinematic_model, self.x_nominal if nominal else self.x
        out = {"base_frame": _pose_dict(km.base_pose(x))}
        if km.measurement.kind == "points":
            out["tool_points"] = km.tool_points(x).tolist()
        else:
            out["tool_frame"] = _pose_dict(km.tool_pose(x))
        return out

    def to_dict(self) -> dict:
        """The content of ``result.yaml`` (lengths in mm)."""
        km, est = self.kinematic_model, self.estimate
        kept = self.train.subset(est.kept)
        a_tr = accuracy(km, kept, self.x)
        out = {"robot": self.name, "level": km.level, "measurement": self.measurement,
               "points": km.measurement.n_points, "method": est.method,
               "converged": est.converged, "chain": km.chain, "calibrated_joints": km.joints,
               "postures_train": len(self.train), "rejected_postures": est.rejected,
               "parameters": self.parameters.to_list(),
               "unidentifiable": est.unidentifiable, "grouped": est.grouped,
               "condition_number": est.condition_number, "whitened_sigma": est.sigma,
               "rmse_train_mm": 1e3 * a_tr.rmse, "max_train_mm": 1e3 * a_tr.max,
               "nominal_rmse_train_mm": 1e3 * self.nominal_rmse, "train": a_tr.to_dict()}
        out.update(self.frames())
        out["nominal"] = self.frames(nominal=True)
        if self.validation is not None:
            out.update(self._validation_dict())
        out.update(self.notes)
        if self.urdf_path is not None:
            out["urdf"] = self.urdf_path
        if self.urdf_round_trip_gap is not None:
            out["urdf_round_trip_gap"] = self.urdf_round_trip_gap
        if self.warnings:
            out["warnings"] = list(self.warnings)
        if self.publication is not None:
            out["publication"] = self.publication
        return out

    def _validation_dict(self) -> dict:
        km, v = self.kinematic_model, self.validation
        a_v = accuracy(km, v, self.x)
        out = {"postures_validation": len(v), "rmse_validation_mm": 1e3 * a_v.rmse,
               "max_validation_mm": 1e3 * a_v.max,
               "nominal_rmse_validation_mm": 1e3 * self.nominal_validation_rmse,
               "validation": a_v.to_dict(),
               "better_than_nominal": bool(a_v.rmse < self.nominal_validation_rmse)}
        several = km.measurement.kind == "points" and km.measurement.n_points > 1
        if several:
            out["rmse_validation_point1_mm"] = 1e3 * accuracy(km, v, self.x, [0]).rmse
        ins = np.flatnonzero(inside_ranges(self.train, v))
        if len(ins):
            sub = v.subset(ins)
            inside = {"postures": int(len(ins)), "rmse_mm": 1e3 * accuracy(km, sub, self.x).rmse,
                      "nominal_rmse_mm": 1e3 * accuracy(km, sub, self.x_nominal).rmse}
            if several:
                inside["rmse_point1_mm"] = 1e3 * accuracy(km, sub, self.x, [0]).rmse
            out["inside_training_ranges"] = inside
        return out


def parameters_of(km: KinematicModel, est: Estimate) -> Parameters:
    names = [km.names[i] for i in est.free]
    return Parameters(names, est.x[est.free].copy(), np.asarray(est.std, float),
                      [parameter_unit(km, n) for n in names], list(est.expressions))

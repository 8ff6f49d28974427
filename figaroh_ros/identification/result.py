"""What an identification returns: base parameters with their statistics, the fit, the
held-out check, the physically consistent estimate; and what can be done with it
(predict torques, write the URDF, the ``result.yaml`` content)."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from figaroh_ros.errors import SolverError
from figaroh_ros.identification.base_parameters import BaseParameters
from figaroh_ros.identification.estimation import Estimate
from figaroh_ros.identification.observation import Observation
from figaroh_ros.identification.parameters import DriveOptions, ParameterLayout
from figaroh_ros.identification.physical.fit import physical_dict
from figaroh_ros.identification.physical.problem import PhysicalEstimate
from figaroh_ros.identification.physical.urdf_inertia import identified_urdf_text
from figaroh_ros.identification.regressor import standard_regressor
from figaroh_ros.model.robot import RobotModel


@dataclass(frozen=True)
class BaseParameterTable:
    """Identified base parameters: grouped expressions (``Izz1 + Ia1 + Iyy2 ...``), values,
    absolute and relative standard deviations."""

    names: list[str]
    values: np.ndarray
    std: np.ndarray
    std_percent: np.ndarray

    def __len__(self) -> int:
        return len(self.names)

    def rows(self) -> list[dict]:
        return [{"name": n, "value": float(v), "std": float(s), "std_percent": float(p)}
                for n, v, s, p in zip(self.names, self.values, self.std, self.std_percent)]


def _table(names: list[str], est: Estimate) -> BaseParameterTable:
    return BaseParameterTable(list(names), est.phi, est.std, est.std_percent)


def _per_joint(joints, values) -> dict:
    return {j: float(v) for j, v in zip(joints, values)}


def _rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.asarray(x) ** 2)))


@dataclass
class IdentificationResult:
    robot: str                          # the robot's name
    joints: list[str]                   # row groups: active joints or wrench components
    base: BaseParameters
    method: str
    estimate: Estimate
    ols: Estimate
    wls: Estimate | None
    rmse: np.ndarray
    condition_number: float
    essential_index: np.ndarray
    essential: Estimate
    observation: Observation            # the system the estimate was fitted on
    model: RobotModel | None = None
    layout: ParameterLayout | None = None
    drive: DriveOptions | None = None
    validation_rmse: np.ndarray | None = None
    nominal_validation_rmse: np.ndarray | None = None
    held_out: Observation | None = None  # the held-out system, if any
    physical: PhysicalEstimate | None = None
    physical_validation_rmse: np.ndarray | None = None
    cross_validation: dict | None = None
    validation_relative_error: np.ndarray | None = None    # RMSE / RMS measured, per joint
    validation_relative_error_stacked: float | None = None
    nominal_validation_relative_error: np.ndarray | None = None
    nominal_validation_relative_error_stacked: float | None = None
    gain_factors: np.ndarray | None = None  # drive gain factors found on all the data
    validation_gain_factors: np.ndarray | None = None  # ... on the training part
    friction_selection: dict | None = None  # candidates and the chosen friction model
    timings: dict = field(default_factory=dict)

    def __repr__(self) -> str:
        return (f"IdentificationResult({self.robot!r}, {self.method.upper()}, "
                f"{self.base.size} base parameters, condition number "
                f"{self.condition_number:.4g}, RMSE {np.round(self.rmse, 4).tolist()})")

    @property
    def standard_names(self) -> list[str]:
        return list(self.layout.names) if self.layout is not None else []

    @property
    def base_parameters(self) -> BaseParameterTable:
        return _table(self.base.names, self.estimate)

    @property
    def essential_parameters(self) -> BaseParameterTable:
        return _table([self.base.names[i] for i in self.essential_index], self.essential)

    def predict(self, q, dq, ddq) -> np.ndarray:
        """Joint torques (N x len(joints)) the identified base parameters give for the
        joint-side motion ``q, dq, ddq`` (N x n_joints each): ``W_b(q, dq, ddq) phi_b``,
        for the fitted joints ``joints``."""
        if self.model is None or not set(self.joints) <= set(self.model.active_joints):
            raise SolverError("predict: this result identifies contact wrenches, not joint "
                              "torques")
        W = standard_regressor(self.model, self.layout, self.drive, q, dq, ddq)
        N = W.shape[0] // self.model.n_joints
        rows = np.concatenate([np.arange(j * N, (j + 1) * N) for j in
                               (self.model.active_joints.index(n) for n in self.joints)])
        tau = self.base.base_regressor(W[rows]) @ self.estimate.phi
        return tau.reshape(len(self.joints), -1).T

    @property
    def physical_publishable(self) -> tuple[bool, str]:
        """Whether the consistent standard parameters may be written to a URDF: every link
        consistent and better than the nominal model on the held-out part."""
        if self.physical is None:
            return False, "no physically consistent estimate (physical.method: none)"
        bad = [c for c in self.physical.checks if not c.ok]
        if bad:
            return False, f"link {bad[0].name} is not physically consistent: {bad[0].why}"
        if self.physical_validation_rmse is None:
            return False, ("no held-out data to compare it with the nominal model: set "
                           "estimation.validation_fraction > 0 (or give validation data)")
        ours, nom = _rms(self.physical_validation_rmse), _rms(self.nominal_validation_rmse)
        if not ours < nom:
            return False, (f"hold-out RMSE {ours:.4g} is not better than the nominal "
                           f"model's {nom:.4g}")
        return True, ""

    def to_urdf(self, path: str | None = None) -> str:
        """The URDF text of the model with the physically consistent inertias (written to
        ``path`` too if given); a :class:`SolverError` says why when there are none."""
        ok, why = self.physical_publishable
        if not ok:
            raise SolverError(f"no identified URDF: {why}")
        text = identified_urdf_text(self.model, self.layout, self.physical.phi)
        if path is not None:
            with open(path, "w") as f:
                f.write(text)
        return text

    def to_dict(self) -> dict:
        """The content of ``result.yaml``."""
        out = {"robot": self.robot, "method": self.method, "joints": list(self.joints),
               "n_base_parameters": int(self.base.size),
               "base_parameters": self.base_parameters.rows(),
               **({"base_definition": self.base.record()} if hasattr(self.base, "record")
                  else {}),
               "rmse": _per_joint(self.joints, self.rmse),
               "condition_number": float(self.condition_number),
               "essential_parameters": self.essential_parameters.rows(),
               "ols": _table(self.base.names, self.ols).rows()}
        if self.wls is not None:
            out["wls"] = _table(self.base.names, self.wls).rows()
            out["wls_joint_sigma"] = _per_joint(self.joints, self.wls.joint_sigma)
        if self.method == "irls" and self.estimate.row_weights is not None:
            w = self.estimate.row_weights
            out["irls"] = {"joint_sigma": _per_joint(self.joints, self.estimate.joint_sigma),
                           "rows": int(w.size), "rows_weighed_down": int(np.sum(w < 1.0))}
        out.update(self._validation_dict())
        if self.friction_selection is not None:
            out["friction_selection"] = self.friction_selection
        if self.cross_validation is not None:
            out["cross_validation"] = self._cross_validation_dict()
        out["covariance"] = {"names": list(self.base.names),
                             "matrix": np.asarray(self.estimate.cov).tolist()}
        if self.physical is not None:
            out["physical"] = self._physical_dict()
        return out

    def _validation_dict(self) -> dict:
        out = {}
        if self.validation_rmse is not None:
            out["validation_rmse"] = _per_joint(self.joints, self.validation_rmse)
        if self.nominal_validation_rmse is not None:
            out["nominal_validation_rmse"] = _per_joint(self.joints,
                                                        self.nominal_validation_rmse)
            out["better_than_nominal"] = bool(_rms(self.validation_rmse)
                                              < _rms(self.nominal_validation_rmse))
        for key in ("validation_relative_error", "nominal_validation_relative_error"):
            if getattr(self, key) is not None:
                out[key] = {**_per_joint(self.joints, getattr(self, key)),
                            "stacked": float(getattr(self, key + "_stacked"))}
        for key in ("gain_factors", "validation_gain_factors"):
            if getattr(self, key) is not None:
                out[key] = _per_joint(self.joints, getattr(self, key))
        return out

    def _cross_validation_dict(self) -> dict:
        cv = self.cross_validation
        return {"folds": cv["folds"], "method": cv["method"],
                "rmse": [{"fold": r["fold"], **_per_joint(self.joints, r["rmse"])}
                         for r in cv["rows"]],
                "nominal_rmse": [{"fold": r["fold"],
                                  **_per_joint(self.joints, r["nominal_rmse"])}
                                 for r in cv["rows"] if "nominal_rmse" in r]}

    def _physical_dict(self) -> dict:
        ph = physical_dict(self.physical, self.standard_names)
        if self.physical_validation_rmse is not None:
            ph["validation_rmse"] = _per_joint(self.joints, self.physical_validation_rmse)
        ok, why = self.physical_publishable
        ph["publishable"] = ok
        if not ok:
            ph["not_published_because"] = why
        return ph

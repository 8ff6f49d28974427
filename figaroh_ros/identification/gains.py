"""``identify_gains``: drive gains and torque-sensor gains from an unloaded and a loaded
experiment with a payload of known mass (and CoM, inertia), by total least squares
(Nguyen et al. 2023 Eq. 8-10, ``tls.py``), from arrays in memory."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from figaroh_ros.errors import ConfigError, DataError
from figaroh_ros.identification.base_parameters import base_parameters
from figaroh_ros.identification.observation import (
    Observation, Processing, joint_motion, observe
)
from figaroh_ros.identification.parameters import PIN_TO_STD, DriveOptions, parameter_layout
from figaroh_ros.identification.regressor import standard_regressor
from figaroh_ros.identification.tls import (
    Experiment, TLSResult, payload_split, refine, total_least_squares
)
from figaroh_ros.model.robot import RobotModel
from figaroh_ros.progress import Stage, reporter

MEASURES = ("currents", "sensor_torques")


@dataclass
class GainsExperiment:
    """One experiment: joint-side positions ``q`` (N x n) at times ``t`` with the motor
    currents and/or the torque-sensor readings (N x n, joint side) of the same samples."""

    t: np.ndarray
    q: np.ndarray
    currents: np.ndarray | None = None
    sensor_torques: np.ndarray | None = None


@dataclass(frozen=True)
class Payload:
    """The payload of the loaded experiment: its weighed mass (kg), optionally its centre
    of mass (m, in the frame of ``joint``) and inertia ``[ixx, ixy, ixz, iyy, iyz, izz]``
    about the CoM; ``joint`` defaults to the last active joint."""

    mass: float
    com: tuple | None = None
    inertia: tuple | None = None
    joint: str | None = None


@dataclass
class GainsResult:
    joints: list[str]
    tls: TLSResult            # refined
    raw: TLSResult            # TLS alone (Eq. 10)
    base_names: list[str]
    payload_known: str        # "mass", "mass and CoM" or "all"

    def to_dict(self) -> dict:
        """The content of ``result.yaml``."""
        def per_joint(v):
            return None if v is None else {j: float(x) for j, x in zip(self.joints, v)}
        return {
            "payload_known": self.payload_known,
            "drive_gains": per_joint(self.tls.drive_gains),
            "drive_gains_std": per_joint(self.tls.drive_gains_std),
            "sensor_gains": per_joint(self.tls.sensor_gains),
            "sensor_gains_std": per_joint(self.tls.sensor_gains_std),
            "tls_drive_gains": per_joint(self.raw.drive_gains),
            "tls_sensor_gains": per_joint(self.raw.sensor_gains),
            "base_parameters": [{"name": n, "value": float(v)}
                                for n, v in zip(self.base_names, self.tls.phi_b)],
            "payload_parameters": [
                {"name": n, "value": float(v)} | ({} if self.tls.payload_std is None else
                                                   {"std": float(self.tls.payload_std[i])})
                for i, (n, v) in enumerate(zip(self.tls.payload_names, self.tls.payload))],
            "smallest_singular_values": [float(s) for s in self.raw.singular_values],
        }


def _rows(model, layout, drive, exp: GainsExperiment, p: Processing):
    """The standard-column observation of ``exp`` and the measurements on its rows."""
    if exp.currents is None and exp.sensor_torques is None:
        raise DataError("an experiment needs motor currents, torque-sensor readings or both")
    m = joint_motion(exp.t, np.asarray(exp.q, float), p)
    k = m.keep
    W = standard_regressor(model, layout, drive, m.q[k], m.dq[k], m.ddq[k])
    ys = {kind: np.asarray(y, float)[k].T.ravel() for kind in MEASURES
          if (y := getattr(exp, kind)) is not None}
    first = next(iter(ys))
    obs = observe(None, W, ys[first], m.dq[k], p)
    # the decimation filters each column on its own: the other measurement with one
    # column of W (not all of them again) has the same rows and values
    return obs, {kind: obs.Y if kind == first else observe(None, W[:, :1], y, m.dq[k], p).Y
                 for kind, y in ys.items()}


def _payload_columns(Wp: np.ndarray, names: list[str], payload: Payload):
    """(loaded rows of the payload's unknown columns, known part times its values,
    unknown names, what is known) for the three cases of knowledge."""
    if payload.inertia is not None:
        if payload.com is None:
            raise ConfigError("payload inertia needs its centre of mass")
        I = np.zeros((3, 3))
        I[np.triu_indices(3)] = payload.inertia
        I = I + np.triu(I, 1).T
        known = pin.Inertia(payload.mass, np.asarray(payload.com, float),
                            I).toDynamicParameters()[PIN_TO_STD]
        return Wp[:, []], Wp @ known, [], "all"
    k, unknown = payload_split(Wp, names)
    if payload.com is not None:
        m, c = payload.mass, np.asarray(payload.com, float)
        unknown = [i for i in unknown if i >= 4]              # the inertia only
        return (Wp[:, unknown], Wp[:, 0] * m + Wp[:, 1:4] @ (m * c),
                [names[i] for i in unknown], "mass and CoM")
    return Wp[:, unknown], Wp[:, k] * payload.mass, [names[i] for i in unknown], "mass"


def identify_gains(model: RobotModel, unloaded: GainsExperiment, loaded: GainsExperiment,
                   payload: Payload, *, drive: DriveOptions | None = None,
                   processing: Processing | None = None, progress=None) -> GainsResult:
    """Drive gains (torque per unit of current) and/or sensor gains (torque per unit of
    reading) per joint, the robot's base parameters and the payload's unknown ones."""
    say = reporter(progress)
    drive, p = drive or DriveOptions(), processing or Processing()
    layout = parameter_layout(model, drive)
    say(Stage.IDENTIFIABILITY, 0.3, "regressors of the two experiments")
    (obs_u, y_u), (obs_l, y_l) = (_rows(model, layout, drive, e, p) for e in (unloaded, loaded))
    base = base_parameters(np.vstack([obs_u.Wb, obs_l.Wb]), layout.names)
    joint = payload.joint or model.active_joints[-1]
    if joint not in model.active_joints:
        raise ConfigError(f"payload joint {joint!r} is not an active joint")
    cols = layout.inertial_cols[model.model.getJointId(joint)]
    Wu, wk, unknown_names, how = _payload_columns(obs_l.Wb[:, cols],
                                                  [layout.names[c] for c in cols], payload)
    exps = [_experiment(o, y, base.base_index) for o, y in ((obs_u, y_u), (obs_l, y_l))]
    say(Stage.ESTIMATION, 0.6, "total least squares")
    raw = total_least_squares(exps[0], exps[1], Wu, wk, model.n_joints, unknown_names)
    res = refine(exps[0], exps[1], Wu, wk, model.n_joints, raw)
    return GainsResult(list(model.active_joints), res, raw, list(base.names), how)


def _experiment(obs: Observation, y: dict, base_index: np.ndarray) -> Experiment:
    return Experiment(obs.Wb[:, base_index], obs.row_joint, y.get("currents"),
                      y.get("sensor_torques"))

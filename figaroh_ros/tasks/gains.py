"""``figaroh-ros identify-gains CONFIG``: drive gains and torque-sensor gains from an unloaded
and a loaded experiment (seed 000 Eq. 8-10, ``tls.py``).

The config is an identification config (robot, model, data format and columns,
processing) plus a ``tls`` section naming the two recordings, the measured columns and the
payload:

    tls:
      unloaded: data/unloaded        # folders holding data.table (or bags), one per experiment
      loaded: data/loaded
      current_column: "{joint}_current"   # csv_table: motor currents (null: none)
      sensor_column: "{joint}_sensor"     # csv_table: joint torque sensors (null: none)
      current_topic: /motor_currents      # bag: JointState topics whose effort holds the
      sensor_topic: /joint_torques        # currents / the sensor readings (null: none)
      payload_mass: 4.0                    # kg, weighed
      payload_com: [0.0, 0.0, 0.06]        # optional, in the payload joint's frame
      payload_inertia: [ixx, ixy, ixz, iyy, iyz, izz]   # optional, about the CoM
      payload_joint: wrist_3_joint         # default: the last active joint
"""
from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from figaroh_ros.errors import ConfigError, DataError
from figaroh_ros.identification.base_parameters import base_parameters
from figaroh_ros.identification.parameters import PIN_TO_STD, parameter_layout
from figaroh_ros.identification.pipeline import (
    drive_options, load_recording, observe, process, robot_from_config
)
from figaroh_ros.identification.tls import (
    Experiment, TLSResult, payload_split, refine, total_least_squares
)


@dataclass
class GainsResult:
    joints: list[str]
    tls: TLSResult            # refined
    raw: TLSResult            # TLS alone (Eq. 10)
    base_names: list[str]
    payload_known: str        # "mass", "mass and CoM" or "all"


def _experiment(cfg, robot, layout, drive, folder):
    """Rows (standard regressor, decimated, moving samples) of one experiment with its
    currents and/or sensor readings on the same rows."""
    t = cfg["tls"]
    bag = cfg["data"]["format"] == "bag"
    out, first_q = {}, None
    for what in ("current", "sensor"):
        source = t[f"{what}_topic" if bag else f"{what}_column"]
        if source is None:
            continue
        c = copy.deepcopy(cfg)
        c["data"]["path"] = folder
        c["data"]["torque_topic" if bag else "torque_column"] = source
        rec = load_recording(c, robot)
        if first_q is not None and bag and not (rec.q.shape == first_q.shape
                                and np.allclose(rec.q, first_q, atol=1e-9)):
            raise DataError(f"bag {folder}: '{t['current_topic']}' and '{t['sensor_topic']}' "
                            "are not stamped with the same joint states (a message missing "
                            "on one of them): the two measurements need the same samples")
        first_q = rec.q
        o = observe(c, None, *process(c, robot, layout, drive, rec))
        out[what] = o
    first = next(iter(out.values()))
    return first, {k: o.Y for k, o in out.items()}


def identify_gains(cfg: dict) -> GainsResult:
    robot = robot_from_config(cfg)
    drive = drive_options(cfg)
    layout = parameter_layout(robot, drive)
    t = cfg["tls"]
    obs_u, y_u = _experiment(cfg, robot, layout, drive, t["unloaded"])
    obs_l, y_l = _experiment(cfg, robot, layout, drive, t["loaded"])
    base = base_parameters(np.vstack([obs_u.Wb, obs_l.Wb]), layout.names)
    joint = t["payload_joint"] or robot.active_joints[-1]
    if joint not in robot.active_joints:
        raise ConfigError(f"config field 'tls.payload_joint': {joint!r} is not an active joint")
    cols = layout.inertial_cols[robot.model.getJointId(joint)]
    Wp = obs_l.Wb[:, cols]
    exps = [Experiment(o.Wb[:, base.base_index], o.row_joint, y.get("current"),
                       y.get("sensor")) for o, y in ((obs_u, y_u), (obs_l, y_l))]
    n = robot.n_joints
    names = [layout.names[c] for c in cols]
    if t["payload_inertia"] is not None:
        I = np.zeros((3, 3))
        I[np.triu_indices(3)] = t["payload_inertia"]
        I = I + np.triu(I, 1).T
        known = pin.Inertia(t["payload_mass"], np.asarray(t["payload_com"], float),
                            I).toDynamicParameters()[PIN_TO_STD]
        Wu, wk, unknown_names, how = Wp[:, []], Wp @ known, [], "all"
    elif t["payload_com"] is not None:
        m, c = t["payload_mass"], np.asarray(t["payload_com"], float)
        wk = Wp[:, 0] * m + Wp[:, 1:4] @ (m * c)
        k, unknown = payload_split(Wp, names)
        unknown = [i for i in unknown if i >= 4]              # the inertia only
        Wu, unknown_names, how = Wp[:, unknown], [names[i] for i in unknown], "mass and CoM"
    else:
        k, unknown = payload_split(Wp, names)
        Wu, wk, unknown_names, how = (Wp[:, unknown], Wp[:, k] * t["payload_mass"],
                                      [names[i] for i in unknown], "mass")
    try:
        raw = total_least_squares(exps[0], exps[1], Wu, wk, n, unknown_names)
        res = refine(exps[0], exps[1], Wu, wk, n, raw)
    except ValueError as exc:
        raise DataError(f"total least squares: {exc}") from exc
    return GainsResult(robot.active_joints, res, raw, list(base.names), how)


def gains_dict(g: GainsResult) -> dict:
    def per_joint(v):
        return None if v is None else {j: float(x) for j, x in zip(g.joints, v)}
    return {
        "payload_known": g.payload_known,
        "drive_gains": per_joint(g.tls.drive_gains),
        "sensor_gains": per_joint(g.tls.sensor_gains),
        "tls_drive_gains": per_joint(g.raw.drive_gains),
        "tls_sensor_gains": per_joint(g.raw.sensor_gains),
        "base_parameters": [{"name": n, "value": float(v)}
                            for n, v in zip(g.base_names, g.tls.phi_b)],
        "payload_parameters": [{"name": n, "value": float(v)}
                               for n, v in zip(g.tls.payload_names, g.tls.payload)],
        "smallest_singular_values": [float(s) for s in g.raw.singular_values],
    }

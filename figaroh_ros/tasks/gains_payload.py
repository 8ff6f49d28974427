"""``identify-gains``: the identified payload judged and, unless the config says
otherwise, made realisable (``identification.payload_feasibility``).

What ``result.yaml`` gets under ``payload_feasibility``: the payload as identified and its
verdict (smallest eigenvalue of the pseudo-inertia, centre of mass's excursion out of
``tls.payload_box``), the constrained payload and its verdict, whether the constraint
moved it and by how many standard deviations, and, when it did, the unconstrained gains.
The top-level gains, robot and payload parameters are the constrained ones.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
from scipy import special

from figaroh_ros.errors import SolverError
from figaroh_ros.identification.gains import GainsExperiment, GainsResult
from figaroh_ros.identification.observation import joint_motion, observe
from figaroh_ros.identification.parameters import parameter_layout
from figaroh_ros.identification.payload_feasibility import (
    ConstrainedPayload, PayloadBounds, PayloadStructure, constrain_payload, identified_payload
)
from figaroh_ros.identification.physical.inertia import standard_vector
from figaroh_ros.identification.regressor import standard_regressor
from figaroh_ros.identification.tls import payload_structure
from figaroh_ros.model.robot import RobotModel
from figaroh_ros.tasks.identify import drive_options, processing_options

SHIFT_P = 1e-3      # a shift beyond the chi-square quantile of 1 - SHIFT_P is reported


def payload_bounds(cfg) -> PayloadBounds | None:
    box = cfg.tls.payload_box
    return None if box is None else PayloadBounds(box.lower, box.upper)


def known_parameters(t) -> dict:
    """The payload's standard parameters the config's ``tls`` section gives (indices in
    ``INERTIAL``)."""
    m = float(t.payload_mass)
    if t.payload_com is None:
        return {0: m}
    c = np.asarray(t.payload_com, float)
    if t.payload_inertia is None:
        return {0: m, **{1 + k: m * c[k] for k in range(3)}}
    xx, xy, xz, yy, yz, zz = t.payload_inertia
    I_C = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    return dict(enumerate(standard_vector(m, c, I_C)))


def structure(cfg, robot: RobotModel, g: GainsResult,
              loaded: GainsExperiment) -> PayloadStructure:
    """What the fit knows of the payload; the dependencies of its identified values are
    read again from the loaded experiment's fitted rows (as ``identify_gains`` selects
    them) only when it does not separate all ten."""
    drive = drive_options(cfg)
    layout = parameter_layout(robot, drive)
    joint = cfg.tls.payload_joint or robot.active_joints[-1]
    cols = layout.inertial_cols[robot.model.getJointId(joint)]
    names = [layout.names[c] for c in cols]
    s = PayloadStructure(known_parameters(cfg.tls),
                         [names.index(n) for n in g.tls.payload_names])
    if s.separated() or len(s.known) == 10:
        return s
    p = processing_options(cfg)
    m = joint_motion(loaded.t, np.asarray(loaded.q, float), p)
    W = standard_regressor(robot, layout, drive, m.q[m.keep], m.dq[m.keep], m.ddq[m.keep])
    rows = observe(None, W, np.zeros(W.shape[0]), m.dq[m.keep], p)   # the fitted rows
    _, unknown, deps = payload_structure(rows.Wb[:, cols], names)
    if [i for i in unknown if i not in s.known] != s.unknown:
        raise SolverError(f"the loaded experiment separates the payload's parameters "
                          f"{[names[i] for i in unknown]} here but {g.tls.payload_names} "
                          f"in the fit: its realisability "
                          f"cannot be judged; excite the payload more (a longer, wider "
                          f"loaded run) or set tls.physical_payload: false")
    return replace(s, deps=deps)


def constrained_result(cfg, robot: RobotModel, g: GainsResult,
                       loaded: GainsExperiment) -> tuple[GainsResult, dict, list[str]]:
    """(the result to report, its ``payload_feasibility`` section, warnings)."""
    t, bounds = cfg.tls, payload_bounds(cfg)
    head = {"physical_payload": t.physical_payload,
            "box": None if bounds is None else bounds.to_dict()}
    try:
        s = structure(cfg, robot, g, loaded)
    except SolverError as exc:
        if t.physical_payload:
            raise
        return g, {**head, "judged": False}, [f"PAYLOAD NOT JUDGED: {exc}"]
    if t.physical_payload:
        c = checked(constrain_payload(g.tls, s, bounds))
    else:
        pi, verdict = identified_payload(g.tls, s, bounds)
        c = ConstrainedPayload(pi, verdict, pi, verdict, g.tls, False)
    section = {**head, "judged": True, **c.to_dict()}
    out = replace(g, tls=c.result)
    if c.active:
        section["unconstrained"] = {k: v for k, v in g.to_dict().items() if k in (
            "drive_gains", "sensor_gains", "payload_parameters")}
    return out, section, _warnings(c, len(s.unknown))


def _warnings(c: ConstrainedPayload, dof: int) -> list[str]:
    v = c.identified_verdict
    if not c.active and not c.verdict.realisable():
        return [f"PAYLOAD NOT REALISABLE: no object has the identified payload (pseudo-"
                f"inertia min eigenvalue {v.pseudo_inertia_min_eigenvalue:.3g} kg.m^2, "
                f"centre of mass {v.com_outside_box or 0:.3g} m outside the box); it and "
                f"the gains are reported unconstrained (tls.physical_payload: false)"]
    limit = float(np.sqrt(special.chdtri(max(dof, 1), SHIFT_P)))   # chi2 quantile 1 - SHIFT_P
    if c.active and c.shift > limit:
        return [f"the physical constraints moved the payload by {c.shift:.3g} standard "
                f"deviations (chance explains at most {limit:.3g} at p = {SHIFT_P}): the "
                f"box (tls.payload_box), the payload mass or the drive model may be wrong"]
    return []


def checked(c: ConstrainedPayload) -> ConstrainedPayload:
    """``c``, once its constrained payload passes its verdict (SolverError otherwise)."""
    if not c.verdict.realisable(1e-6):
        raise SolverError(f"the constrained payload is still not realisable: "
                          f"{c.verdict.to_dict()}")
    return c

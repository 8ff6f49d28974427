"""The optimiser sees a grid; the robot plays the control rate.  :func:`check` verifies a
trajectory at every control sample (position, velocity, acceleration, torque, workspace
limits and self-collision); :func:`shrink` repairs a small violation between grid points
without another solve (Nguyen et al. 2023 Eq. 14: the constraints hold on the whole trajectory).
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin

LIMIT_KINDS = ("position", "velocity", "acceleration", "torque", "workspace")


def check(robot, t, Q, V, A, limits, collision=None, tol: float = 1e-6,
          beat=None) -> dict:
    """Every constraint at every sample of (t, Q, V, A): returns the worst ratio to its
    limit per kind (<= 1 is satisfied) and the self-collision samples.  ``beat`` (if
    given) is called every 100 samples (a progress heartbeat)."""
    beat = beat or (lambda: None)
    mid = 0.5 * (limits.q_lo + limits.q_hi)
    half = 0.5 * (limits.q_hi - limits.q_lo)
    out = {"position": float(np.max(np.abs(Q - mid) / half)),
           "velocity": float(np.max(np.abs(V) / limits.v_max)),
           "acceleration": float(np.max(np.abs(A) / limits.a_max))}
    tau, P = _torques_and_tool(robot, Q, V, A, limits, beat)
    out["torque"] = float(np.max(np.abs(tau) / limits.tau_max))
    if P is not None:
        c = 0.5 * (limits.box_lo + limits.box_hi)
        h = 0.5 * (limits.box_hi - limits.box_lo)
        out["workspace"] = float(np.max(np.abs(P - c) / h))
    out["collisions"] = _collision_times(robot, t, Q, collision, beat)
    out["ok"] = worst(out) <= 1.0 + tol and not out["collisions"]
    return out


def worst(checks: dict) -> float:
    """The largest use of any limit (1 = at it)."""
    return max(v for k, v in checks.items() if k in LIMIT_KINDS)


def _torques_and_tool(robot, Q, V, A, limits, beat):
    """Inverse dynamics torques (RNEA) and the tool position (or None) at every sample."""
    data = robot.model.createData()
    fid = robot.model.getFrameId(limits.tool_frame) if limits.tool_frame else None
    tau, P = np.empty_like(Q), []
    Qf, Vf, Af = (robot.full_configuration(Q), robot.full_velocity(V), robot.full_velocity(A))
    for s in range(len(Q)):
        tau[s] = pin.rnea(robot.model, data, Qf[s], Vf[s], Af[s])[robot.idx_v]
        if fid is not None:
            pin.framesForwardKinematics(robot.model, data, Qf[s])
            P.append(data.oMf[fid].translation.copy())
        if s % 100 == 99:
            beat()
    return tau, (np.array(P) if fid is not None else None)


def _collision_times(robot, t, Q, collision, beat) -> list[float]:
    if collision is None:
        return []
    hits = []
    for s in range(len(t)):
        if collision.collides(dict(zip(robot.active_joints, Q[s]))):
            hits.append(float(t[s]))
        if s % 100 == 99:
            beat()
    return hits


def shrink(robot, dense, dense_t, Z, ref, limits, collision, checks,
           smallest: float = 0.9, beat=None):
    """Repair a small violation between grid points: blend the variables towards the
    parameterisation's feasible reference ``ref`` (rest at ``q0`` for the Fourier series,
    straight lines between postures for splines), ``Z(s) = ref + s (Z - ref)``.
    Position, velocity and acceleration limits are convex and hold at ``s = 0``, so they
    hold on an interval ``[0, s_max]``; torques and the workspace are checked again at
    every step, self-collision only at the steps passing the others.  Returns
    (Z(s), checks) of the largest ``s >= smallest`` that passes, or (None, checks)."""
    w = worst(checks)
    if w > 1.0 / smallest:
        return None, checks
    s = 0.999 / w
    while s >= smallest:
        Zs = ref + s * (Z - ref)
        Q, V, A = dense.evaluate(Zs)
        c = check(robot, dense_t, Q, V, A, limits, None, beat=beat)
        if c["ok"] and collision is not None:
            c = check(robot, dense_t, Q, V, A, limits, collision, beat=beat)
        if c["ok"]:
            return Zs, c
        s *= 0.99
    return None, checks


def why(checks: dict) -> str:
    """What a rejected trajectory violates, for people."""
    if checks["collisions"]:
        return f"self-collision at t = {checks['collisions'][0]:.2f} s"
    bad = {k: v for k, v in checks.items() if k in LIMIT_KINDS and v > 1}
    return ", ".join(f"{k} at {100 * v:.0f} % of its limit" for k, v in bad.items())

"""The per-joint drive constants of an identification config: a drive
that reports its motor current gives the joint torque ``tau_j = N_j kt_j i_j``, with
``N_j`` the gear ratio (motor turns per joint turn) and ``kt_j`` the motor's torque
constant (N.m/A at the motor).

``drive.gear_ratios`` and ``drive.torque_constants`` are the alternative to the lumped
``drive.effort_gains`` ``K_j``: both give the one per-joint gain that
``tasks.identify.effort_to_torque`` applies to the recorded efforts (``K_j = N_j kt_j``,
:func:`drive_gains`; ``load_identification`` puts it in ``drive.effort_gains`` of the
loaded config, so there is one conversion, and a coupled transmission enters the regressor as
with any gain).  Signs: ``K_j`` is signed (a drive may report its effort reversed), so
the gear ratio carries the sign (a reversed drive: a negative ratio, as
``transmission.gear_ratios``); the torque constant is a magnitude, > 0.  Given with
``drive.effort_gains`` the two must agree (relative 1e-9); a zero ratio or constant,
one without the other, or a length other than robot.joints is refused naming the field
(and the joint).
"""
from __future__ import annotations

import numpy as np

from figaroh_ros.config.base import Refused

PRODUCT = "drive.gear_ratios x drive.torque_constants"
AGREE_RTOL = 1e-9


def check_drive_constants(joints: list[str], drive) -> None:
    """The rules of the module documentation (``drive``: the typed ``Drive`` section)."""
    n_ratio, kt = drive.gear_ratios, drive.torque_constants
    if n_ratio is None and kt is None:
        return
    for key, values, other in (("gear_ratios", n_ratio, "torque_constants"),
                               ("torque_constants", kt, "gear_ratios")):
        if values is None:
            raise Refused(f"drive.{other}", f"drive.{key} too: the effort gain is gear "
                          "ratio x torque constant, both one per joint of robot.joints",
                          getattr(drive, other))
        if len(values) != len(joints):
            raise Refused(f"drive.{key}", f"expected {len(joints)} values (one per joint of "
                          f"robot.joints {joints})", values)
    for i, (j, r, k) in enumerate(zip(joints, n_ratio, kt)):
        if r == 0.0:
            raise Refused(f"drive.gear_ratios[{i}]", f"joint {j}: a gear ratio cannot be 0 "
                          "(it is signed: a reversed drive is negative)", r)
        if not k > 0.0:
            raise Refused(f"drive.torque_constants[{i}]", f"joint {j}: a torque constant "
                          "is > 0 N.m/A (the sign of a reversed drive goes on its gear "
                          "ratio)", k)
    given = drive.effort_gains
    if given is not None:
        product = np.asarray(n_ratio, float) * np.asarray(kt, float)
        if not np.allclose(given, product, rtol=AGREE_RTOL, atol=0.0):
            differ = [f"{j}: {g:.12g} vs {p:.12g}" for j, g, p in zip(joints, given, product)
                      if not np.isclose(g, p, rtol=AGREE_RTOL, atol=0.0)]
            raise Refused("drive.effort_gains", f"the same gains as {PRODUCT} (give one "
                          f"form, or both agreeing): they disagree on {'; '.join(differ)}",
                          given)


def drive_gains(drive) -> list[float] | None:
    """The per-joint effort-to-torque gains the (typed) ``drive`` section gives:
    ``drive.effort_gains``, or ``N_j kt_j``; None: efforts are torques."""
    n_ratio, kt = drive.gear_ratios, drive.torque_constants
    if n_ratio is not None and kt is not None:
        return [float(r) * float(k) for r, k in zip(n_ratio, kt)]
    given = drive.effort_gains
    return None if given is None else [float(g) for g in given]


def gains_field(drive) -> str | None:
    """The config field(s) the gains of :func:`drive_gains` come from."""
    if drive.gear_ratios is not None:
        return PRODUCT
    return "drive.effort_gains" if drive.effort_gains is not None else None


def constants_record(drive, joints: list[str]) -> dict | None:
    """Per joint ``{gear_ratio, torque_constant}`` for result.yaml, None without them."""
    n_ratio, kt = drive.gear_ratios, drive.torque_constants
    if n_ratio is None:
        return None
    return {j: {"gear_ratio": float(r), "torque_constant": float(k)}
            for j, r, k in zip(joints, n_ratio, kt)}

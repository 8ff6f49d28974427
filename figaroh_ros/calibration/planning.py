"""``plan_postures``: optimal calibration postures from arrays (Nguyen et al. 2023 §II.D, Eq. 12)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from figaroh_ros.calibration.kinematic_model import chain_limits
from figaroh_ros.calibration.postures import PosturePlan, candidate_postures, d_optimal_design
from figaroh_ros.calibration.procedure import kinematic_model
from figaroh_ros.calibration.travel import turnable_joints
from figaroh_ros.progress import Stage, reporter


def plan_postures(model, *, tool_frame: str, level: str = "full", measurement: str = "points",
                  points=None, start_frame: str | None = None, joints: list[str] | None = None,
                  noise=(5e-4, 2e-3), mask=None, estimate_base: bool = True, base_guess=None,
                  tool_guess=None, elastic_joints: list[str] | None = None, candidates=3000,
                  max_postures: int = 60, plateau: float = 0.01, joint_margin: float = 0.05,
                  workspace=None, collision=None, seed: int = 0, progress=None) -> PosturePlan:
    """The fewest postures that reach the best D-optimal criterion O1 (Eq. 12-13, Fig. 2).

    The chain, measurement and noise arguments are those of
    :func:`~figaroh_ros.calibration.calibrate` (``points``: count or initial positions in
    the tool frame).  candidates: a pool of chain postures (N x n_chain) or how many to draw
    inside the joint limits minus ``joint_margin``, with the tool inside ``workspace``
    (``(lo, hi)`` in the start frame, m) and free of self-collision (``collision``: a
    :class:`~figaroh_ros.calibration.SelfCollision`).
    """
    say = reporter(progress)
    km, _ = kinematic_model(model, tool_frame=tool_frame, level=level, measurement=measurement,
                            points=points, start_frame=start_frame, joints=joints, noise=noise,
                            mask=mask, estimate_base=estimate_base, base_guess=base_guess,
                            tool_guess=tool_guess, elastic_joints=elastic_joints)
    if np.ndim(candidates) == 0:
        ws = None if workspace is None else tuple(np.asarray(w, float) for w in workspace)
        pool = candidate_postures(km, int(candidates), joint_margin, seed, ws, collision)
    else:
        pool = np.atleast_2d(np.asarray(candidates, float))
    say(Stage.PLANNING, 0.3, f"{len(pool)} feasible candidate postures")
    tool_points = None if np.ndim(points) < 2 or measurement == "pose" else points
    plan = d_optimal_design(km, pool, max_postures, plateau, km.nominal_parameters(tool_points))
    bounds = chain_limits(km, joint_margin)
    revolute = [km.model.joints[j].shortname().startswith("JointModelR") for j in km.chain_ids]
    return replace(plan, bounds=bounds, turnable=turnable_joints(revolute, *bounds))

"""Postures a camera can use: the board in view, D-optimal over the pixel residuals.

1. Candidates: joint readings drawn around a centre posture (uniform within ``spread``
   on the joints of the camera's and the board's chains, inside the joint limits).
2. Visibility, on the nominal model and the mounts' guesses: every feature (or the
   fraction ``min_visible`` of them, a ChArUco board being usable in part) in front of
   the camera and inside the image with ``margin`` pixels to spare; the board's centre at
   a distance within ``distance``; the angle between the line of sight and the board's
   normal at most ``max_incidence``; then free of self-collision (the calibration
   planner's :class:`~figaroh_ros.calibration.postures.SelfCollision`).
3. Each candidate's information matrix ``Sigma_i = J_i^T J_i`` (its rows of the pixel
   residuals' Jacobian, whitened by the pixel noise, on the base parameters), and the
   calibration's D-optimal design (Nguyen et al. 2023 Eq. 12) with its O1 criterion and
   count (:func:`~figaroh_ros.calibration.postures.ranked_plan`).
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin

from figaroh_ros.calibration.postures import PosturePlan, SelfCollision, ranked_plan
from figaroh_ros.calibration.procedure import as_pose, robot_model
from figaroh_ros.camera.model import Intrinsics
from figaroh_ros.camera.problem import CameraProblem, ChainSide, Views
from figaroh_ros.camera.solve import GROUPS, candidate_columns, set_mounts, sides
from figaroh_ros.camera.synthetic import all_features
from figaroh_ros.camera.targets import Board
from figaroh_ros.errors import DataError, SolverError
from figaroh_ros.identification.base_parameters import base_parameters
from figaroh_ros.model.speeds import joint_speeds


def moved_joints(pm: pin.Model, problem: CameraProblem) -> list[str]:
    """The joints of the camera's and the board's chains, in model order."""
    names = {j for s in (problem.cam, problem.board) if isinstance(s, ChainSide)
             for j in s.km.chain}
    return [n for n in pm.names[1:] if n in names]


def view_geometry(problem: CameraProblem, board: Board, Q: np.ndarray, x: np.ndarray,
                  margin: float):
    """Per posture: the fraction of features in view, the board centre's distance (m)
    and the incidence angle (rad) of the line of sight on the board."""
    views = all_features(problem, board, Q)
    pc, _ = problem.camera_points(views, x)
    uv = problem.predict(views, x)
    K = problem.intrinsics_of(x)
    n = board.feature_count
    ok = (pc[:, 2] > 0.05) & (uv[:, 0] >= margin) & (uv[:, 1] >= margin) & \
        (uv[:, 0] <= K.width - 1 - margin) & (uv[:, 1] <= K.height - 1 - margin)
    Ta, Tb = problem.poses(views, x)
    w, h = board.size()
    centre_b = np.array([w / 2, h / 2, 0.0])
    T = np.linalg.inv(Ta) @ Tb                               # board in the camera
    c = T[:, :3, :3] @ centre_b + T[:, :3, 3]
    normal = T[:, :3, 2]
    dist = np.linalg.norm(c, axis=1)
    cosang = np.abs(np.einsum("pi,pi->p", normal, c)) / np.maximum(dist, 1e-12)
    return ok.reshape(len(Q), n), dist, np.arccos(np.clip(cosang, 0.0, 1.0))


def plan_camera_postures(model, q_centre, *, board: Board, intrinsics, setup: str,
                         tool_frame: str, camera_frame: str | None = None,
                         camera_guess=None, board_guess=None, level: str = "offset",
                         estimate=GROUPS, n_candidates: int = 300, spread: float = 0.3,
                         margin: float = 20.0, min_visible: float = 1.0,
                         distance: tuple = (0.25, 2.0), max_incidence: float = 50.0,
                         collision: SelfCollision | str | None = None,
                         max_postures: int = 40, plateau: float = 0.01,
                         pixel_noise: float = 0.5, seed: int = 0) -> PosturePlan:
    """D-optimal postures that keep the board in view (see the module docstring).

    ``q_centre``: a full configuration where the camera sees the board;
    ``camera_guess`` / ``board_guess``: the mounts (``pin.SE3`` or ``[x y z r p y]``):
    the board in the world for eye-in-hand, the camera in the world for eye-to-hand,
    the board in ``tool_frame`` for eye-to-hand and on_chain, the camera in its frame
    (default the identity: ``camera_frame`` is the optical frame);
    ``max_incidence`` in degrees; ``collision``: a SelfCollision or a URDF path.
    Returns the calibration's :class:`PosturePlan` over the chains' joints."""
    pm, source = robot_model(model)
    if not isinstance(intrinsics, Intrinsics):
        intrinsics = Intrinsics.from_camera_info(intrinsics)
    cam, brd = sides(pm, setup, tool_frame, camera_frame, level,
                     [] if "joints" not in estimate else None)
    problem = CameraProblem(cam, brd, intrinsics, pixel_noise)
    needed = {"eye_in_hand": "board_guess", "eye_to_hand": "camera_guess"}.get(setup)
    guesses = {"camera_guess": camera_guess, "board_guess": board_guess}
    if needed and guesses[needed] is None:
        raise DataError(f"{needed}: the {needed.split('_')[0]}'s pose in the world is "
                        f"needed to plan {setup} postures")
    eye = pin.SE3.Identity()
    set_mounts(problem, as_pose(camera_guess) if camera_guess is not None else eye,
               as_pose(board_guess) if board_guess is not None else eye)
    q_centre = np.asarray(q_centre, float).reshape(-1)
    if q_centre.size != pm.nq:
        raise DataError(f"q_centre: {q_centre.size} values, expected a configuration of "
                        f"{pm.nq}")
    joints = moved_joints(pm, problem)
    idx = np.array([pm.joints[pm.getJointId(j)].idx_q for j in joints])
    lo, hi = pm.lowerPositionLimit[idx], pm.upperPositionLimit[idx]
    rng = np.random.default_rng(seed)
    x = problem.initial()
    if isinstance(collision, str):
        collision = SelfCollision(collision)
    pool: list[np.ndarray] = []
    draws = 0
    while len(pool) < n_candidates and draws < 50 * n_candidates:
        Q = np.tile(q_centre, (4 * n_candidates, 1))
        Q[:, idx] = np.clip(q_centre[idx] + rng.uniform(-spread, spread, (len(Q), len(idx))),
                            lo, hi)
        draws += len(Q)
        ok, dist, inc = view_geometry(problem, board, Q, x, margin)
        keep = (ok.mean(axis=1) >= min_visible) & (dist >= distance[0]) & \
            (dist <= distance[1]) & (inc <= np.radians(max_incidence))
        for q in Q[keep]:
            if collision is not None and collision.collides(dict(zip(joints, q[idx]))):
                continue
            pool.append(q)
            if len(pool) == n_candidates:
                break
    if len(pool) < 2:
        raise SolverError(f"only {len(pool)} postures in {draws} draws keep the board in "
                          "view: check the mount guesses, widen spread or distance")
    P = np.array(pool)
    ok, _, _ = view_geometry(problem, board, P, x, margin)
    views = visible_views(problem, board, P, ok, x)
    _, J = problem.residuals(views, x)
    cols = candidate_columns(problem, estimate)
    bp = base_parameters(J[:, cols], [problem.names[i] for i in cols])
    Jb = J[:, cols[bp.base_index]]
    rows = np.repeat(views.view, 2)
    S = np.array([Jb[rows == i].T @ Jb[rows == i] for i in range(len(P))])
    per = int(np.median(2 * ok.sum(axis=1)))
    plan = ranked_plan(S, P[:, idx], joints, list(bp.names), per, max_postures, plateau)
    limits = [pm.velocityLimit[pm.joints[pm.getJointId(j)].idx_v] for j in joints]
    plan.speeds = joint_speeds(limits)
    return plan


def visible_views(problem: CameraProblem, board: Board, Q: np.ndarray, ok: np.ndarray,
                  x: np.ndarray) -> Views:
    """The visible features of each posture, at the pixels the model predicts."""
    views = all_features(problem, board, Q)
    keep = ok.ravel()
    sub = Views(views.ids, views.Q_cam, views.Q_board, views.view[keep],
                views.points[keep], views.pixels[keep])
    sub.pixels = problem.predict(sub, x)
    return sub

"""``calibrate_camera``: hand-eye, board mount, joint parameters and intrinsics from the
pixels of a board seen at several robot postures (arrays in, a result out; nothing read
or written).

1. The views' board poses by ``cv2.solvePnP``; the camera and board mounts in closed form
   (:mod:`.handeye`, Park & Martin 1994) on the nominal model.
2. Identifiability: the pixel residuals' Jacobian (whitened by the pixel noise) goes
   through the calibration's QR base-parameter analysis; parameters these views do not
   excite stay at their initial value, dependent ones are grouped.
3. Nonlinear least squares on the base parameters (``scipy.optimize.least_squares``,
   Levenberg-Marquardt, exact Jacobian), standard deviations ``s^2 (J^T J)^-1``; views
   whose reprojection RMS exceeds the outlier threshold are rejected one at a time
   (the worst first, at most a quarter of the views) and named.
4. The nominal model is given the same chance: mounts (and intrinsics) fitted with the
   joint parameters at zero; reprojection RMSE of both on the training and held-out views.
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin
from scipy.optimize import least_squares

from figaroh_ros.calibration.kinematic_model import KinematicModel, Measurement
from figaroh_ros.calibration.procedure import as_pose, robot_model
from figaroh_ros.calibration.solve import _covariance_std
from figaroh_ros.camera.handeye import board_poses, hand_eye
from figaroh_ros.camera.model import Intrinsics
from figaroh_ros.camera.problem import CameraProblem, ChainSide, FixedSide, Views
from figaroh_ros.camera.result import CameraCalibrationResult
from figaroh_ros.camera.targets import Board
from figaroh_ros.camera.views import make_views
from figaroh_ros.errors import DataError, ModelError, SolverError
from figaroh_ros.identification.base_parameters import TOL_RANK, base_parameters

SETUPS = ("eye_in_hand", "eye_to_hand", "on_chain")
GROUPS = ("camera", "board", "joints")
# prior standard deviation of the intrinsics around the CameraInfo values: pixels for
# fx, fy, cx, cy; the distortion coefficients are unitless
PRIOR_SIGMA = (20.0, 20.0, 20.0, 20.0, 0.05)


def common_start(model: pin.Model, a: str, b: str) -> str | None:
    """A frame on the last joint both chains (to frames ``a`` and ``b``) share."""
    pa = list(model.supports[model.frames[model.getFrameId(a)].parentJoint])
    pb = list(model.supports[model.frames[model.getFrameId(b)].parentJoint])
    last = 0
    for ja, jb in zip(pa, pb):
        if ja != jb:
            break
        last = ja
    if last == 0:
        return None
    return model.names[last]          # pinocchio names a frame after each joint


def _chain(pm, frame, level, joints, start, what) -> KinematicModel:
    if not pm.existFrame(frame):
        raise ModelError(f"{what}: frame '{frame}' is not in the robot model")
    km = KinematicModel(pm, frame, level=level if joints != [] else "offset",
                        joints=joints, start_frame=start, measurement=Measurement("pose"),
                        estimate_base=False)
    return km


def sides(pm: pin.Model, setup: str, tool_frame: str, camera_frame: str | None, level: str,
          joints):
    """(camera side, board side) of ``setup``."""
    if setup not in SETUPS:
        raise ModelError(f"setup: {setup!r} is not one of {', '.join(SETUPS)}")
    if setup == "eye_in_hand":
        return (ChainSide("camera", _chain(pm, tool_frame, level, joints, None, "tool_frame")),
                FixedSide("board"))
    if setup == "eye_to_hand":
        return (FixedSide("camera"),
                ChainSide("board", _chain(pm, tool_frame, level, joints, None, "tool_frame")))
    if not camera_frame:
        raise ModelError("setup on_chain: camera_frame (the robot frame the camera is "
                         "mounted on) is needed")
    for f, what in ((camera_frame, "camera_frame"), (tool_frame, "tool_frame")):
        if not pm.existFrame(f):
            raise ModelError(f"{what}: frame '{f}' is not in the robot model")
    start = common_start(pm, camera_frame, tool_frame)
    cam_chain = _chain(pm, camera_frame, level, None, start, "camera_frame")
    board_chain = _chain(pm, tool_frame, level, None, start, "tool_frame")
    if joints is not None:
        cam_chain = _chain(pm, camera_frame, level, [j for j in joints if j in cam_chain.chain],
                           start, "camera_frame")
        board_chain = _chain(pm, tool_frame, level,
                             [j for j in joints if j in board_chain.chain], start, "tool_frame")
    return ChainSide("camera", cam_chain), ChainSide("board", board_chain)


# ------------------------------------------------------------------ initial guess
def initial_mounts(problem: CameraProblem, views: Views, setup: str):
    """Closed-form camera and board mounts on the nominal model (:mod:`.handeye`)."""
    pts = [views.points[views.view == i] for i in range(len(views))]
    uv = [views.pixels[views.view == i] for i in range(len(views))]
    C = board_poses(problem.intrinsics, pts, uv, views.ids)
    x = problem.initial()
    cam, board = problem.cam, problem.board
    keep = []
    for side in (cam, board):
        keep.append(side.T0)
        if isinstance(side, ChainSide):
            side.km.tool0 = pin.SE3.Identity()
        else:
            side.T0 = pin.SE3.Identity()
    try:
        Ta, Tb = problem.poses(views, x)        # mount frames, mounts at identity
    finally:
        for side, T0 in zip((cam, board), keep):
            if isinstance(side, ChainSide):
                side.km.tool0 = T0
            else:
                side.T0 = T0
    if setup == "eye_in_hand":
        return hand_eye(Ta, C, eye_in_hand=True)
    if setup == "eye_to_hand":
        return hand_eye(Tb, C, eye_in_hand=False)
    # on_chain: the board's mount frame seen from the camera's mount frame is eye-to-hand
    # with the camera's frame for the world
    return hand_eye(np.linalg.inv(Ta) @ Tb, C, eye_in_hand=False)


def set_mounts(problem: CameraProblem, X: np.ndarray, Y: np.ndarray) -> None:
    for side, T in ((problem.cam, X), (problem.board, Y)):
        T = T if isinstance(T, pin.SE3) else pin.SE3(T[:3, :3], T[:3, 3])
        if isinstance(side, ChainSide):
            side.km.tool0 = T
        else:
            side.T0 = T


# ------------------------------------------------------------------ solving
def candidate_columns(problem: CameraProblem, estimate) -> np.ndarray:
    """Columns of the estimated groups, in the QR's priority order: mounts (their names
    kept), joint parameters from the base out, intrinsics."""
    ca, cb = problem.mount_columns()
    cols = []
    if "camera" in estimate:
        cols += list(ca)
    if "board" in estimate:
        cols += list(cb)
    if "joints" in estimate:
        mounts = set(ca) | set(cb)
        for side, s in ((problem.cam, problem.sa), (problem.board, problem.sb)):
            cols += [s.start + i for i in range(side.n_params) if s.start + i not in mounts]
    cols += list(range(problem.si.start, problem.si.stop))
    return np.array(cols, int)


def identifiable(problem, views, x, cols, tol=TOL_RANK):
    _, J = problem.residuals(views, x)
    bp = base_parameters(J[:, cols], [problem.names[i] for i in cols], tol=tol)
    M = np.zeros((bp.size, problem.n_params))
    M[:, cols] = bp.M
    return cols[bp.base_index], list(bp.names), [problem.names[i] for i in
                                                  cols[bp.zero_index]], M


def prune(problem, views, x, free, expressions, base_matrix, max_std):
    """Base parameters these views determine worse than ``max_std`` (m, rad; at the
    stated pixel noise) stay at their initial value, the worst first, as in the
    geometric calibration; the intrinsics (held by their prior) are never pruned."""
    if max_std is None:
        return free, expressions, base_matrix, []
    _, J = problem.residuals(views, x)
    intrinsic = set(problem.intrinsics.names)
    bound = np.array([np.inf if problem.names[i] in intrinsic else
                      (max_std[1] if "phi" in problem.names[i] or _is_angle_offset(problem, i)
                       else max_std[0]) for i in free])
    keep, removed = list(range(len(free))), []
    while len(keep) > 1:
        R = np.linalg.qr(J[:, free[keep]], mode="r")
        d = np.abs(np.diag(R))
        if d.min() <= 1e-14 * d.max():
            ratio = np.where(d == d.min(), np.inf, 0.0)
        else:
            Rinv = np.linalg.inv(R)
            ratio = np.sqrt(np.einsum("ij,ij->i", Rinv, Rinv)) / bound[keep]
        worst = int(np.argmax(ratio))
        if ratio[worst] <= 1.0:
            break
        removed.append(expressions[keep[worst]])
        del keep[worst]
    k = np.array(keep, int)
    return free[k], [expressions[i] for i in k], base_matrix[k], removed


def _is_angle_offset(problem, i) -> bool:
    name = problem.names[i]
    for side in (problem.cam, problem.board):
        if isinstance(side, ChainSide) and name in side.km.names and name.startswith("offset_"):
            S = side.km._motion_subspace(side.km.model.getJointId(name[len("offset_"):]))
            return bool(np.linalg.norm(S[3:]) > 0.5)
    return False


def fit(problem: CameraProblem, views: Views, x0: np.ndarray, free: np.ndarray,
        max_iterations: int = 100):
    f_memo, j_memo = {}, {}

    def full(z):
        x = x0.copy()
        x[free] = z
        return x

    def fun(z):                 # trial points: the residuals only
        key = z.tobytes()
        if key not in f_memo:
            f_memo.clear()
            f_memo[key] = problem.residuals(views, full(z), jacobian=False)[0]
        return f_memo[key]

    def jac(z):                 # accepted points: the Jacobian (and their residuals)
        key = z.tobytes()
        if key not in j_memo:
            f, J = problem.residuals(views, full(z))
            j_memo.clear()
            j_memo[key] = J[:, free]
            f_memo.clear()
            f_memo[key] = f
        return j_memo[key]

    sol = least_squares(fun, x0[free].copy(), jac=jac, method="lm", xtol=1e-10, ftol=1e-12,
                        gtol=1e-10, max_nfev=max_iterations * (len(free) + 1))
    x = x0.copy()
    x[free] = sol.x
    return x, int(sol.nfev), bool(sol.status > 0)


def robust_fit(problem, views, x0, free, outlier_threshold, max_iterations):
    """Fit, then reject the worst view while its RMS exceeds the threshold (px; default
    4 x the median view RMS, at least 1 px), at most a quarter of the views."""
    kept = np.arange(len(views))
    x, nfev, ok = fit(problem, views, x0, free, max_iterations)
    while len(kept) - 1 >= 0.75 * len(views):
        rms = problem.view_rms(views.subset(kept), x)
        limit = (outlier_threshold if outlier_threshold is not None
                 else max(1.0, 4.0 * float(np.median(rms))))
        worst = int(np.argmax(rms))
        if rms[worst] <= limit:
            break
        kept = np.delete(kept, worst)
        x, n2, ok = fit(problem, views.subset(kept), x, free, max_iterations)
        nfev += n2
    return x, kept, nfev, ok


def rmse(problem: CameraProblem, views: Views, x: np.ndarray) -> float:
    """Reprojection RMSE (px): ``sqrt(mean ||u_pred - u||^2)`` over the features."""
    e = problem.pixel_errors(views, x)
    return float(np.sqrt(np.mean(np.sum(e ** 2, axis=1))))


def calibrate_camera(model, q, detections, *, board: Board, intrinsics, setup: str,
                     tool_frame: str, camera_frame: str | None = None,
                     level: str = "offset", joints: list[str] | None = None,
                     estimate=GROUPS, estimate_intrinsics: bool = False,
                     prior_sigma=PRIOR_SIGMA, pixel_noise: float = 0.5,
                     camera_guess=None, board_guess=None, outlier_threshold=None,
                     validation=None, max_std=(10e-3, 20e-3), max_iterations: int = 100,
                     name: str = ""):
    """Calibrate a camera mount, a board mount and the robot's geometric parameters from
    detected board features (see the module docstring).

    ``q``: one configuration per view (full pinocchio configurations, or the chain's
    readings for eye-in-hand / eye-to-hand); ``detections``: per view a
    :class:`~figaroh_ros.camera.targets.Detection` or an ``(ids, pixels)`` pair;
    ``intrinsics``: :class:`~figaroh_ros.camera.model.Intrinsics` or a CameraInfo dict /
    YAML path; ``setup``: eye_in_hand (camera on ``tool_frame``), eye_to_hand (board on
    ``tool_frame``) or on_chain (camera on ``camera_frame``, board on ``tool_frame``);
    ``estimate``: a subset of camera, board, joints; ``level``: offset or full joint
    parameters; ``validation``: held-out ``(q, detections)``; ``max_std``: (m, rad)
    bounds beyond which a base parameter is too weakly excited and stays initial
    (``None``: every base parameter estimated);
    ``camera_guess`` / ``board_guess``: mounts as ``pin.SE3`` or ``[x, y, z, r, p, y]``
    (default: closed-form hand-eye)."""
    if not isinstance(board, Board):
        raise DataError(f"board: a figaroh_ros.camera.Board is needed, got "
                        f"{type(board).__name__}")
    if not isinstance(intrinsics, Intrinsics):
        intrinsics = Intrinsics.from_camera_info(intrinsics)
    unknown = set(estimate) - set(GROUPS)
    if unknown:
        raise ModelError(f"estimate: {sorted(unknown)} not among {', '.join(GROUPS)}")
    if not (np.isfinite(pixel_noise) and pixel_noise > 0):
        raise DataError(f"pixel_noise: {pixel_noise!r} must be a positive number of pixels")
    pm, source = robot_model(model)
    cam, brd = sides(pm, setup, tool_frame, camera_frame,
                     level, [] if "joints" not in estimate else joints)
    prior = np.asarray(prior_sigma, float)
    if prior.size == 5:
        prior = np.r_[prior[:4], np.full(intrinsics.dist.size, prior[4])]
    problem = CameraProblem(cam, brd, intrinsics, pixel_noise, estimate_intrinsics, prior)
    train = make_views(problem, board, q, detections, pm, "detections")
    val = None if validation is None else make_views(problem, board, validation[0],
                                                     validation[1], pm, "validation")
    X, Y = initial_mounts(problem, train, setup)
    set_mounts(problem, as_pose(camera_guess).homogeneous if camera_guess is not None else X,
               as_pose(board_guess).homogeneous if board_guess is not None else Y)
    x0 = problem.initial()
    cols = candidate_columns(problem, estimate)
    free, expressions, unidentifiable, base_matrix = identifiable(problem, train, x0, cols)
    free, expressions, base_matrix, weak = prune(problem, train, x0, free, expressions,
                                                 base_matrix, max_std)
    nominal_cols = np.array([c for c in free if c in set(candidate_columns(problem, (
        set(estimate) - {"joints"})))], int)
    x_nom = fit(problem, train, x0, nominal_cols, max_iterations)[0] if len(nominal_cols) \
        else x0
    x, kept, nfev, ok = robust_fit(problem, train, x0, free, outlier_threshold,
                                   max_iterations)
    sub = train.subset(kept)
    f, J = problem.residuals(sub, x)
    try:
        std, sigma = _covariance_std(J[:, free], f)
    except SolverError as exc:
        raise SolverError(f"camera calibration: {exc}") from exc
    if len(kept) < len(train) and len(nominal_cols):    # the nominal fit on the same views
        x_nom = fit(problem, sub, x_nom, nominal_cols, max_iterations)[0]
    rejected = [train.ids[i] for i in np.setdiff1d(np.arange(len(train)), kept)]
    return CameraCalibrationResult(
        setup=setup, problem=problem, x=x, x_nominal=x_nom, free=free, std=std,
        expressions=expressions, unidentifiable=unidentifiable, sigma=sigma,
        rejected=rejected, kept=kept, train=train, validation=val,
        rmse=rmse(problem, sub, x), nominal_rmse=rmse(problem, sub, x_nom),
        validation_rmse=None if val is None else rmse(problem, val, x),
        nominal_validation_rmse=None if val is None else rmse(problem, val, x_nom),
        iterations=nfev, converged=ok, urdf_source=source, model=pm, board=board,
        base_matrix=base_matrix, poorly_excited=weak, name=name)

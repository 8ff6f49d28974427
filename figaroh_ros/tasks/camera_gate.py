"""The publication gate of a camera calibration (:func:`camera_verdict`): the geometric
calibration's checks (``figaroh_ros.tasks.gate``) on pixels.

* ``improvement_test`` / ``improvement_margin``: each held-out view's reprojection RMS,
  nominal model (mounts fitted) against calibrated, one-sided paired test, and the
  held-out RMSE's relative fall;
* ``joint_offsets`` / ``prismatic_offsets``: the largest joint offset within its bound;
* ``urdf_round_trip``: the written URDF places the camera relative to the board's mount
  frame as the estimate does, at every view (to 1e-9);
* ``residual_vs_noise``: the whitened residual against the stated pixel noise.
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin

from figaroh_ros.camera.problem import ChainSide
from figaroh_ros.config.acceptance import Acceptance
from figaroh_ros.tasks.calibration_gate import largest_offset_checks
from figaroh_ros.tasks.gate import Verdict, residual_check, round_trip_check
from figaroh_ros.tasks.improvement import improvement_checks


def view_rms(result, nominal: bool) -> np.ndarray:
    x = result.x_nominal if nominal else result.x
    return result.problem.view_rms(result.validation, x)


def offset_checks(result, acc: Acceptance) -> list:
    rev, pri = {}, {}
    for side in (result.problem.cam, result.problem.board):
        if not isinstance(side, ChainSide) or side.km.level != "offset":
            continue
        for j in side.km.joints:
            name = f"offset_{j}"
            value = abs(float(result.x[result.problem.names.index(name)]))
            S = side.km._motion_subspace(side.km.model.getJointId(j))
            (pri if np.linalg.norm(S[:3]) > 0.5 else rev)[j] = value
    return largest_offset_checks(rev, pri, acc)


def configurations(result, views) -> np.ndarray:
    """Full configurations (others at neutral) from the views' chain readings."""
    m = result.model
    Q = np.tile(pin.neutral(m), (len(views), 1))
    for side, R in ((result.problem.cam, views.Q_cam), (result.problem.board, views.Q_board)):
        if isinstance(side, ChainSide):
            idx = [m.joints[j].idx_q for j in side.km.chain_ids]
            Q[:, idx] = R
    return Q


def urdf_gap(result, urdf_text: str, camera_link: str) -> float:
    """Largest difference (homogeneous matrix entries) between the URDF's and the
    estimate's pose of the camera relative to the board's mount frame, over the views."""
    m = pin.buildModelFromXML(urdf_text)
    d = m.createData()
    board = result.problem.board
    mount_frame = board.km.tool_frame if isinstance(board, ChainSide) else None
    views = result.train if result.validation is None else result.validation
    Ta, Tb = result.problem.poses(views, result.x)
    Tframe = Tb @ np.linalg.inv(board.mount(result.x[result.problem.sb]).homogeneous)
    gap = 0.0
    for q, A, F in zip(configurations(result, views), Ta, Tframe):
        pin.framesForwardKinematics(m, d, q)
        cam = d.oMf[m.getFrameId(camera_link)]
        frame = d.oMf[m.getFrameId(mount_frame)] if mount_frame else pin.SE3.Identity()
        gap = max(gap, float(np.abs((cam.inverse() * frame).homogeneous
                                    - np.linalg.inv(A) @ F).max()))
    return gap


def camera_verdict(result, acc: Acceptance | None = None, urdf_text: str | None = None,
                   camera_link: str | None = None) -> Verdict:
    """Every check of the gate for a camera calibration (``acc``: the config's
    ``acceptance`` section, its defaults when not given)."""
    acc = Acceptance() if acc is None else acc
    margins = {"p_value": acc.p_value, "improvement_margin": acc.improvement_margin}
    checks = []
    if result.validation is None:
        checks += improvement_checks([], [], **margins, what="views")
    else:
        checks += improvement_checks(view_rms(result, True), view_rms(result, False),
                                     **margins, unit="px", scale=1.0, what="views")
    checks += offset_checks(result, acc)
    gap = None if urdf_text is None else urdf_gap(result, urdf_text, camera_link)
    checks.append(round_trip_check(gap))
    checks.append(residual_check(float(result.sigma), acc.residual_limit,
                                 f"stated pixel noise ({result.problem.pixel_noise:g} px)"))
    return Verdict(checks)

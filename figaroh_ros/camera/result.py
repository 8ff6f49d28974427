"""The result of a camera calibration: mounts, joint parameters, intrinsics, errors, and
their export (URDF with the camera joint's origin, CameraInfo YAML, ``result.yaml``)."""
from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from figaroh_ros.calibration.kinematic_model import parameter_unit
from figaroh_ros.calibration.result import Parameters
from figaroh_ros.calibration.urdf_export import _fmt, _parse, calibrated_urdf_text, write_text
from figaroh_ros.camera.model import Intrinsics
from figaroh_ros.camera.problem import CameraProblem, ChainSide, Views
from figaroh_ros.camera.views import make_views
from figaroh_ros.errors import ModelError


def _pose(T: pin.SE3) -> dict:
    return {"xyz": T.translation.tolist(), "rpy": pin.rpy.matrixToRpy(T.rotation).tolist()}


@dataclass
class CameraCalibrationResult:
    """Estimated mounts (``camera_mount``: camera optical frame in its mount frame, the
    hand-eye transform; ``board_mount``), joint parameters and intrinsics, with the
    standard deviation of every estimated parameter and the reprojection RMSE (px) of the
    calibrated and of the nominal model (mounts fitted) on the training (kept) and
    held-out views."""

    setup: str
    problem: CameraProblem
    x: np.ndarray
    x_nominal: np.ndarray
    free: np.ndarray
    std: np.ndarray
    expressions: list[str]
    unidentifiable: list[str]
    sigma: float
    rejected: list[str]
    kept: np.ndarray
    train: Views
    validation: Views | None
    rmse: float
    nominal_rmse: float
    validation_rmse: float | None
    nominal_validation_rmse: float | None
    iterations: int
    converged: bool
    urdf_source: str | None
    model: pin.Model
    poorly_excited: list = field(default_factory=list)  # base parameters kept initial
    base_matrix: np.ndarray | None = None      # base parameters = base_matrix @ x
    board: object = None                       # the figaroh_ros.camera.Board seen
    name: str = ""
    warnings: list[str] = field(default_factory=list)

    # ---------------------------------------------------------------- values
    @property
    def parameters(self) -> Parameters:
        names = [self.problem.names[i] for i in self.free]
        return Parameters(names, self.x[self.free].copy(), np.asarray(self.std, float),
                          [self._unit(n) for n in names], list(self.expressions))

    def _unit(self, name: str) -> str:
        if name in self.problem.intrinsics.names:
            return "px" if name in ("fx", "fy", "cx", "cy") else "1"
        if name.startswith(("camera_", "board_")):
            return "rad" if "phi" in name else "m"
        for side in (self.problem.cam, self.problem.board):
            if isinstance(side, ChainSide) and name in side.km.names:
                return parameter_unit(side.km, name)
        return ""

    def std_of(self, name: str) -> float:
        """Standard deviation of the estimated parameter ``name``."""
        names = [self.problem.names[i] for i in self.free]
        if name not in names:
            raise KeyError(f"{name} is not an estimated parameter; estimated: {names}")
        return float(self.std[names.index(name)])

    def parameters_of(self, camera_mount: pin.SE3, board_mount: pin.SE3,
                      joint_parameters: dict | None = None) -> np.ndarray:
        """The parameter vector of this calibration for the given mounts and joint
        parameters (e.g. a known truth); its base parameters are ``base_matrix @ x``."""
        x = self.problem.initial()
        for side, s, T in ((self.problem.cam, self.problem.sa, camera_mount),
                           (self.problem.board, self.problem.sb, board_mount)):
            d = side.T0.inverse() * T
            cols = s.start + side.mount_columns()
            x[cols] = np.r_[d.translation, pin.log3(d.rotation)]
        for k, n in enumerate(self.problem.names):
            if joint_parameters and n in joint_parameters:
                x[k] = joint_parameters[n]
        return x

    def _mount(self, side, s, nominal=False) -> pin.SE3:
        x = self.x_nominal if nominal else self.x
        return side.mount(x[s])

    @property
    def camera_mount(self) -> pin.SE3:
        """The camera's optical frame in its mount frame (eye-in-hand and on_chain: the
        robot frame it is fixed to; eye-to-hand: the world)."""
        return self._mount(self.problem.cam, self.problem.sa)

    @property
    def board_mount(self) -> pin.SE3:
        """The board's frame in its mount frame (the world for eye-in-hand)."""
        return self._mount(self.problem.board, self.problem.sb)

    @property
    def intrinsics(self) -> Intrinsics:
        return self.problem.intrinsics_of(self.x)

    def joint_parameters(self) -> dict:
        """Joint parameter name -> value (offsets in rad or m; full-level placements)."""
        out = {}
        for side, s in ((self.problem.cam, self.problem.sa),
                        (self.problem.board, self.problem.sb)):
            if isinstance(side, ChainSide):
                km, xs = side.km, self.x[s]
                for j in km.joints:
                    for k in range(*km.groups[j].indices(km.n_params)):
                        out[km.names[k]] = float(xs[k])
        return out

    def predict(self, q, detections=None, nominal: bool = False) -> np.ndarray:
        """Predicted pixels of the training views (no argument), or of the features
        ``detections`` at configurations ``q``."""
        x = self.x_nominal if nominal else self.x
        if detections is None:
            return self.problem.predict(self.train, x)
        views = make_views(self.problem, self.board, q, detections, self.model, "views")
        return self.problem.predict(views, x)

    # ---------------------------------------------------------------- export
    def camera_info_yaml(self, camera_name: str = "camera", path: str | None = None) -> str:
        """The (estimated) intrinsics as a CameraInfo YAML in camera_calibration_parsers'
        format, written to ``path`` when given."""
        text = self.intrinsics.to_camera_info_yaml(camera_name)
        if path is not None:
            write_text(path, text)
        return text

    def to_urdf(self, path: str | None = None, camera_joint: str | None = None,
                camera_link: str = "camera_optical_frame") -> str:
        """The URDF with the calibrated joint origins and the camera: the origin of the
        fixed joint ``camera_joint`` (whose child is the camera's optical frame) set to
        the estimated pose, or a new link ``camera_link`` and fixed joint under the
        camera's mount frame when ``camera_joint`` is not given."""
        if self.urdf_source is None:
            raise ModelError("the model was given as a pinocchio Model: pass the URDF path "
                             "or text to calibrate_camera() to export a URDF")
        text = self.urdf_source
        for side, s in ((self.problem.cam, self.problem.sa),
                        (self.problem.board, self.problem.sb)):
            if isinstance(side, ChainSide) and side.km.joints:
                text = calibrated_urdf_text(side.km, self.x[s], text)
        root = _parse(text)
        parent_link, T = self._camera_in_link()
        if camera_joint is not None:
            el = {j.get("name"): j for j in root.findall("joint")}.get(camera_joint)
            if el is None:
                raise ModelError(f"camera_joint '{camera_joint}' not found in the URDF")
            if el.get("type") != "fixed":
                raise ModelError(f"camera_joint '{camera_joint}' is a {el.get('type')} "
                                 "joint: the camera's joint must be fixed")
            plink = el.find("parent").get("link")
            T = self._link_pose(plink).inverse() * self._link_pose(parent_link) * T
        else:
            if any(li.get("name") == camera_link for li in root.findall("link")):
                raise ModelError(f"link '{camera_link}' is already in the URDF: name its "
                                 "joint in camera_joint")
            ET.SubElement(root, "link", name=camera_link)
            el = ET.SubElement(root, "joint", name=f"{camera_link}_joint", type="fixed")
            ET.SubElement(el, "parent", link=parent_link)
            ET.SubElement(el, "child", link=camera_link)
        o = el.find("origin")
        if o is None:
            o = ET.SubElement(el, "origin")
        o.set("xyz", _fmt(T.translation))
        o.set("rpy", _fmt(pin.rpy.matrixToRpy(T.rotation)))
        out = ET.tostring(root, encoding="unicode", xml_declaration=True)
        if path is not None:
            write_text(path, out)
        return out

    def _link_pose(self, link: str) -> pin.SE3:
        """Pose of a link's frame in its parent joint's frame (pinocchio)."""
        m = self.model
        if not m.existFrame(link):
            raise ModelError(f"link '{link}' is not in the robot model")
        return m.frames[m.getFrameId(link)].placement

    def _camera_in_link(self) -> tuple[str, pin.SE3]:
        """(link, pose of the camera in that link's frame)."""
        m, cam = self.model, self.problem.cam
        if isinstance(cam, ChainSide):
            fid = cam.km.tool_fid
            frame_pose = m.frames[fid].placement                  # in the parent joint
        else:
            fid = 1 if len(m.frames) > 1 else 0                   # the root link
            frame_pose = m.frames[fid].placement
        f = m.frames[fid]
        while f.type not in (pin.FrameType.BODY,) and f.name != "universe":
            f = m.frames[f.parentFrame]
        link_pose = f.placement
        return f.name, link_pose.inverse() * frame_pose * self.camera_mount

    def to_dict(self) -> dict:
        """The content of ``result.yaml`` (pixels, metres, radians)."""
        out = {"robot": self.name, "setup": self.setup, "converged": self.converged,
               "views_train": len(self.train), "rejected_views": list(self.rejected),
               "parameters": self.parameters.to_list(),
               "unidentifiable": list(self.unidentifiable),
               "poorly_excited": list(self.poorly_excited),
               "grouped": [e for e in self.expressions if " " in e],
               "whitened_sigma": self.sigma,
               "rmse_train_px": self.rmse, "nominal_rmse_train_px": self.nominal_rmse,
               "camera_mount": _pose(self.camera_mount),
               "board_mount": _pose(self.board_mount),
               "intrinsics": self.intrinsics.camera_info()}
        if self.validation is not None:
            out.update({"views_validation": len(self.validation),
                        "rmse_validation_px": self.validation_rmse,
                        "nominal_rmse_validation_px": self.nominal_validation_rmse,
                        "better_than_nominal":
                            bool(self.validation_rmse < self.nominal_validation_rmse)})
        if self.warnings:
            out["warnings"] = list(self.warnings)
        return out

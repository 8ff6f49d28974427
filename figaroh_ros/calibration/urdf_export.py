"""Writing the calibrated model back into the URDF.

Only the ``<origin>`` of the calibrated joints changes; every other element, attribute and
comment of the file is kept.  pinocchio folds the fixed joints between two movable joints
into the placement of the child joint, so a calibrated placement ``M'`` is turned back into
a URDF origin through the nominal one: ``origin' = origin * M0^-1 * M'``.  Offsets (offset
level) are written as a rotation (translation) of the origin about (along) the joint axis,
which reproduces ``q + dq`` exactly.  The exported file is reloaded and its forward
kinematics compared with the calibrated model's before anything is written.
"""
from __future__ import annotations

import os
import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin

from figaroh_ros.calibration.kinematic_model import KinematicModel
from figaroh_ros.errors import ModelError
from figaroh_ros.model.robot import set_joint_angles


def _origin(joint: ET.Element) -> pin.SE3:
    o = joint.find("origin")
    xyz = np.zeros(3)
    rpy = np.zeros(3)
    if o is not None:
        if o.get("xyz"):
            xyz = np.array([float(v) for v in o.get("xyz").split()])
        if o.get("rpy"):
            rpy = np.array([float(v) for v in o.get("rpy").split()])
    return pin.SE3(pin.rpy.rpyToMatrix(*rpy), xyz)


def _fmt(v) -> str:
    return " ".join(repr(float(a)) for a in v)


def _parse(urdf: str) -> ET.Element:
    """The root element of a URDF given as a file path or as its XML text."""
    parser = ET.XMLParser(target=ET.TreeBuilder(insert_comments=True))
    try:
        if urdf.lstrip().startswith("<"):
            return ET.fromstring(urdf, parser=parser)
        return ET.parse(urdf, parser=parser).getroot()
    except (ET.ParseError, OSError) as exc:
        where = "text" if urdf.lstrip().startswith("<") else urdf
        raise ModelError(f"cannot read URDF {where}: {exc}") from exc


def calibrated_urdf_text(km: KinematicModel, x: np.ndarray, urdf: str) -> str:
    """The URDF ``urdf`` (a path or the XML text) with the calibrated joint origins of
    ``x``."""
    root = _parse(urdf)
    joints = {j.get("name"): j for j in root.findall("joint")}
    for k, (name, M) in enumerate(km.joint_placements(x).items()):
        el = joints.get(name)
        if el is None:
            raise ModelError(f"joint '{name}' not found in the URDF")
        origin0 = _origin(el)
        new = origin0 * km.M0[km.joints.index(name)].inverse() * M
        o = el.find("origin")
        if o is None:
            o = ET.SubElement(el, "origin")
        o.set("xyz", _fmt(new.translation))
        o.set("rpy", _fmt(pin.rpy.matrixToRpy(new.rotation)))
    root.insert(0, ET.Comment(f" joint origins of {', '.join(km.joints)} calibrated by "
                              f"figaroh_ros ({km.level} level) "))
    return ET.tostring(root, encoding="unicode", xml_declaration=True)


def forward_kinematics_gap(km: KinematicModel, x: np.ndarray, urdf_text: str,
                           Q: np.ndarray) -> float:
    """Largest difference (m, rad) between the tool frame of the URDF ``urdf_text`` and
    the calibrated model, relative to the start frame, over postures ``Q``."""
    model = pin.buildModelFromXML(urdf_text)
    data = model.createData()
    fid = model.getFrameId(km.tool_frame)
    sid = None if km.start_fid is None else model.getFrameId(km.start_frame)
    ref = km.tool_frame_poses(Q, x)
    gap = 0.0
    T_bw = km.base_pose(x).inverse()
    for q_chain, T_ref in zip(np.atleast_2d(Q), ref):
        q = pin.neutral(model)[None, :]            # continuous joints: cos, sin
        set_joint_angles(model, q, [model.getJointId(n) for n in km.chain], [q_chain])
        pin.framesForwardKinematics(model, data, q[0])
        T = data.oMf[fid] if sid is None else data.oMf[sid].inverse() * data.oMf[fid]
        err = pin.log6(T.inverse() * (T_bw * T_ref)).vector
        gap = max(gap, float(np.abs(err).max()))
    return gap


def checked_urdf_text(km: KinematicModel, x: np.ndarray, urdf: str, Q_check: np.ndarray,
                      tol: float = 1e-9) -> tuple[str, float]:
    """The calibrated URDF text and its gap, after checking that it reproduces the
    calibrated forward kinematics on ``Q_check`` to ``tol``."""
    text = calibrated_urdf_text(km, x, urdf)
    gap = forward_kinematics_gap(km, x, text, Q_check)
    if not gap <= tol:
        raise ModelError(f"exported URDF differs from the calibrated model by {gap:.3g} "
                         f"(tolerance {tol:g}); nothing written")
    return text, gap


def write_text(path: str, text: str) -> None:
    """Write ``text`` to ``path`` atomically (a reader never sees half a file)."""
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text if text.endswith("\n") else text + "\n")
    os.replace(tmp, path)

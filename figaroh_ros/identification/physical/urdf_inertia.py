"""Writing identified inertial parameters back into the URDF.

pinocchio lumps every link rigidly attached to a joint's body (through fixed joints, or
through joints the model locks) into that body's inertia, and identification sees only
the lump.  For each identified body we keep the URDF inertials of the attached links and
give the joint's child link the remainder ``lump - attached`` when that remainder is a
physically consistent link; otherwise the child link receives the whole lump and the
attached links lose their ``<inertial>`` (a comment says so).  Every other element,
attribute and comment of the file is kept.  The written file is reloaded and its body
inertias compared with the identified ones before anything is returned.
"""
from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin

from figaroh_ros.errors import ModelError
from figaroh_ros.identification.parameters import PIN_TO_STD, ParameterLayout
from figaroh_ros.identification.physical.inertia import check_link, mass_centre_inertia
from figaroh_ros.model.loading import load_model
from figaroh_ros.model.robot import RobotModel

_INV = np.argsort(PIN_TO_STD)


def _floats(text: str | None, n: int = 3) -> np.ndarray:
    return np.array([float(v) for v in text.split()]) if text else np.zeros(n)


def _urdf_inertia(link: ET.Element) -> pin.Inertia:
    """The inertia of a URDF ``<link>`` in its own frame (zero when it has none)."""
    el = link.find("inertial")
    if el is None:
        return pin.Inertia.Zero()
    o = el.find("origin")
    xyz = _floats(o.get("xyz") if o is not None else None)
    rpy = _floats(o.get("rpy") if o is not None else None)
    m = float(el.find("mass").get("value"))
    i = el.find("inertia")
    g = {k: float(i.get(k, 0.0)) for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")}
    I = np.array([[g["ixx"], g["ixy"], g["ixz"]], [g["ixy"], g["iyy"], g["iyz"]],
                  [g["ixz"], g["iyz"], g["izz"]]])
    R = pin.rpy.rpyToMatrix(*rpy)
    return pin.SE3(R, xyz).act(pin.Inertia(m, np.zeros(3), I))


def _std(I: pin.Inertia) -> np.ndarray:
    return I.toDynamicParameters()[PIN_TO_STD]


def _set_inertial(link: ET.Element, pi: np.ndarray):
    """Replace the link's ``<inertial>`` by the standard vector ``pi`` (link frame)."""
    old = link.find("inertial")
    index = list(link).index(old) if old is not None else 0
    if old is not None:
        link.remove(old)
    m, c, I_C = mass_centre_inertia(pi)
    el = ET.Element("inertial")
    el.text, el.tail = "\n      ", "\n    "
    o = ET.SubElement(el, "origin", xyz=" ".join(repr(float(v)) for v in c), rpy="0 0 0")
    mass = ET.SubElement(el, "mass", value=repr(float(m)))
    ine = ET.SubElement(el, "inertia", **{
        k: repr(float(I_C[a, b])) for k, (a, b) in (("ixx", (0, 0)), ("ixy", (0, 1)),
                                                   ("ixz", (0, 2)), ("iyy", (1, 1)),
                                                   ("iyz", (1, 2)), ("izz", (2, 2)))})
    o.tail = mass.tail = "\n      "
    ine.tail = "\n    "
    link.insert(index, el)


def child_links(root: ET.Element, robot: RobotModel) -> dict[str, str]:
    """The link each joint of the model carries, by joint name: the URDF's joints', and
    on a floating base the free flyer pinocchio adds (``root_joint``, in no URDF), which
    carries the URDF's root link (the link no joint has as child)."""
    children = {j.get("name"): j.find("child").get("link") for j in root.findall("joint")}
    if robot.floating_base:
        roots = [l.get("name") for l in root.findall("link")
                 if l.get("name") not in set(children.values())]
        if len(roots) == 1:
            children.setdefault(robot.model.names[1], roots[0])
    return children


def identified_urdf_text(robot: RobotModel, layout: ParameterLayout, phi: np.ndarray,
                         tol: float = 1e-8) -> str:
    """The URDF of ``robot`` with the identified inertial parameters ``phi``."""
    parser = ET.XMLParser(target=ET.TreeBuilder(insert_comments=True))
    try:
        root = ET.fromstring(robot.urdf_text(), parser=parser)
    except ET.ParseError as exc:
        raise ModelError(f"cannot read URDF {robot.urdf_path}: {exc}") from exc
    links = {l.get("name"): l for l in root.findall("link")}
    children = child_links(root, robot)
    model = robot.model
    for jid, cols in layout.inertial_cols.items():
        pi = np.asarray(phi[cols], float)
        main = children.get(model.names[jid])
        if main not in links:
            raise ModelError(f"joint '{model.names[jid]}' has no child link in "
                                     f"{robot.urdf_path}")
        bodies = [f for f in model.frames
                  if f.type == pin.FrameType.BODY and f.parentJoint == jid]
        placement = {f.name: f.placement for f in bodies}
        attached = [name for name in placement if name != main and name in links]
        rest = np.zeros(10)
        for name in attached:
            rest += _std(placement[name].act(_urdf_inertia(links[name])))
        to_link = placement.get(main, pin.SE3.Identity()).inverse()
        if check_link(pi - rest).ok and (pi - rest)[0] > 0:
            _set_inertial(links[main], _std(to_link.act(
                pin.Inertia.FromDynamicParameters((pi - rest)[_INV]))))
        else:
            _set_inertial(links[main], _std(to_link.act(
                pin.Inertia.FromDynamicParameters(pi[_INV]))))
            for name in attached:
                old = links[name].find("inertial")
                if old is not None:
                    links[name].remove(old)
                    links[name].insert(0, ET.Comment(
                        f" inertial lumped into {main} by figaroh_ros identification "))
    root.insert(0, ET.Comment(" inertial parameters identified by figaroh_ros "))
    text = ET.tostring(root, encoding="unicode")
    _verify(text, robot, layout, phi, tol)
    return '<?xml version="1.0"?>\n' + text


def _verify(text: str, robot: RobotModel, layout: ParameterLayout, phi: np.ndarray,
            tol: float):
    check = load_model(text, robot.active_joints, floating_base=robot.floating_base)
    for jid, cols in layout.inertial_cols.items():
        got = _std(check.model.inertias[jid])
        scale = max(np.abs(phi[cols]).max(), 1e-9)
        if np.abs(got - phi[cols]).max() > tol * scale + 1e-12:
            raise ModelError(
                f"the exported URDF does not reproduce the identified inertia of body "
                f"'{robot.model.names[jid]}' (error {np.abs(got - phi[cols]).max():.3g})")

"""What a URDF must be before pinocchio reads it: UTF-8, well-formed, a tree of links with
physically meaningful numbers.

Pinocchio trusts its input: joints forming a loop crash the process, a joint axis of
(0, 0, 0) or a lower limit above the upper one give a model that silently computes
nonsense, and a mass written as text is read as zero.  The URDF specification (ROS wiki,
``urdf/XML``) states what each element means; every rule below is one of its sentences
made a check, and the error names the element, the attribute and the value refused.
"""
from __future__ import annotations

import math
import os
import xml.etree.ElementTree as ET

from figaroh_ros.errors import ModelError

MAX_BYTES = 50_000_000          # a URDF with its collision boxes, never a mesh
AXIS_TOLERANCE = 1e-3           # |norm(axis) - 1| accepted (rounded decimals)
LIMITED = ("revolute", "prismatic")
TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")


def check_urdf_file(path: str) -> str:
    """The text of the URDF file ``path`` once :func:`check_urdf_text` accepts it."""
    if not os.path.isfile(path):
        raise ModelError(f"URDF not found: {path}")
    if os.path.getsize(path) > MAX_BYTES:
        raise ModelError(f"URDF {path}: larger than {MAX_BYTES} bytes")
    with open(path, "rb") as f:
        raw = f.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ModelError(f"URDF {path} is not UTF-8 text (byte {exc.start}: "
                         f"{raw[exc.start:exc.start + 1]!r})") from None
    check_urdf_text(text, path)
    return text


def check_urdf_text(text: str, where: str = "<URDF text>") -> None:
    """A :class:`ModelError` naming ``where``, the element and the value unless ``text`` is
    a well-formed URDF whose links form one tree with valid numbers."""
    if "<!ENTITY" in text:
        raise ModelError(f"URDF {where}: entity declarations (<!ENTITY) are refused")
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise ModelError(f"URDF {where} is not well-formed XML: {exc}") from None
    if root.tag != "robot":
        raise ModelError(f"URDF {where}: the root element is <{root.tag}>, expected <robot>")
    links = _names(root, "link", where)
    if not links:
        raise ModelError(f"URDF {where}: no <link>")
    joints = root.findall("joint")
    _names(root, "joint", where)
    for link in root.findall("link"):
        _check_link(link, where)
    for joint in joints:
        _check_joint(joint, links, where)
    _check_tree(links, joints, where)


def _names(root, tag: str, where: str) -> list[str]:
    names = [e.get("name") for e in root.findall(tag)]
    if any(not n for n in names):
        raise ModelError(f"URDF {where}: a <{tag}> has no name")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ModelError(f"URDF {where}: {tag} names repeated: {repeated}")
    return names


def _numbers(element, attribute: str, count: int, what: str, where: str,
             default: str | None = None) -> list[float]:
    """``count`` finite numbers of ``attribute`` (the URDF default if absent)."""
    raw = element.get(attribute, default) if element is not None else default
    if raw is None:
        raise ModelError(f"URDF {where}: {what} has no '{attribute}'")
    try:
        values = [float(v) for v in raw.split()]
    except ValueError:
        values = []
    if len(values) != count or not all(math.isfinite(v) for v in values):
        raise ModelError(f"URDF {where}: {what} {attribute}={raw!r}: expected {count} finite "
                         f"number{'s' if count > 1 else ''}")
    return values


def _check_origin(parent, what: str, where: str) -> None:
    origin = parent.find("origin")
    if origin is not None:
        _numbers(origin, "xyz", 3, f"{what} <origin>", where, "0 0 0")
        _numbers(origin, "rpy", 3, f"{what} <origin>", where, "0 0 0")


def _check_link(link, where: str) -> None:
    """A link's inertial: a mass >= 0, finite inertia entries with a non-negative
    diagonal."""
    name = link.get("name")
    inertial = link.find("inertial")
    if inertial is None:
        return
    what = f"link '{name}'"
    _check_origin(inertial, what, where)
    mass = _numbers(inertial.find("mass"), "value", 1, f"{what} <mass>", where)[0]
    if mass < 0:
        raise ModelError(f"URDF {where}: {what} <mass> value={mass!r}: expected a mass >= 0")
    inertia = inertial.find("inertia")
    if inertia is not None:
        diagonal = [_numbers(inertia, k, 1, f"{what} <inertia>", where)[0]
                    for k in ("ixx", "iyy", "izz")]
        for k in ("ixy", "ixz", "iyz"):
            _numbers(inertia, k, 1, f"{what} <inertia>", where, "0")
        if min(diagonal) < -1e-9 * max(1.0, *map(abs, diagonal)):   # rounding below 0
            raise ModelError(f"URDF {where}: {what} <inertia> diagonal {diagonal}: expected "
                             "moments >= 0")


def _check_joint(joint, links: list[str], where: str) -> None:
    name, kind = joint.get("name"), joint.get("type")
    what = f"joint '{name}'"
    if kind not in TYPES:
        raise ModelError(f"URDF {where}: {what} type={kind!r}: expected one of {list(TYPES)}")
    for end in ("parent", "child"):
        e = joint.find(end)
        link = e.get("link") if e is not None else None
        if link not in links:
            raise ModelError(f"URDF {where}: {what} <{end} link={link!r}>: no such link")
    _check_origin(joint, what, where)
    if kind in ("revolute", "continuous", "prismatic"):
        axis = _numbers(joint.find("axis"), "xyz", 3, f"{what} <axis>", where, "1 0 0")
        norm = math.sqrt(sum(a * a for a in axis))
        if abs(norm - 1) > AXIS_TOLERANCE:
            raise ModelError(f"URDF {where}: {what} <axis> xyz={axis}: expected a unit "
                             f"vector (norm {norm:.6g})")
    if kind in LIMITED or joint.find("limit") is not None:   # parsed whenever present
        _check_limit(joint.find("limit"), what, where)


def _check_limit(limit, what: str, where: str) -> None:
    if limit is None:
        raise ModelError(f"URDF {where}: {what} has no <limit> (required for its type)")
    lower = _numbers(limit, "lower", 1, f"{what} <limit>", where, "0")[0]
    upper = _numbers(limit, "upper", 1, f"{what} <limit>", where, "0")[0]
    if lower > upper:
        raise ModelError(f"URDF {where}: {what} <limit> lower={lower!r} > upper={upper!r}: "
                         "expected lower <= upper")
    for key in ("effort", "velocity"):
        value = _numbers(limit, key, 1, f"{what} <limit>", where, "0")[0]
        if value < 0:
            raise ModelError(f"URDF {where}: {what} <limit> {key}={value!r}: expected >= 0")


def _check_tree(links: list[str], joints, where: str) -> None:
    """Every link the child of at most one joint, one root, every link reached from it."""
    parent_of: dict[str, str] = {}
    children: dict[str, list[str]] = {}
    for joint in joints:
        parent, child = joint.find("parent").get("link"), joint.find("child").get("link")
        if child in parent_of:
            raise ModelError(f"URDF {where}: link '{child}' is the child of two joints "
                             f"('{parent_of[child]}' and '{joint.get('name')}'): the links "
                             "must form a tree")
        parent_of[child] = joint.get("name")
        children.setdefault(parent, []).append(child)
    roots = [link for link in links if link not in parent_of]
    if len(roots) != 1:
        raise ModelError(f"URDF {where}: expected one root link, found {len(roots)}"
                         f"{' ' + str(roots[:5]) if roots else ' (the joints form a loop)'}")
    reached, todo = set(), [roots[0]]
    while todo:
        link = todo.pop()
        reached.add(link)
        todo.extend(children.get(link, []))
    loop = sorted(set(links) - reached)
    if loop:
        raise ModelError(f"URDF {where}: links {loop[:5]} are not reached from the root "
                         f"'{roots[0]}': their joints form a loop")

"""Deploy files: a calibration or identification result written in the forms the robot's
own software takes (``figaroh-ros export FORMAT RESULT --out FILE``).

* ``ur-kinematics``: ur_description's ``default_kinematics.yaml`` (``kinematics:`` with
  ``shoulder, upper_arm, forearm, wrist_1, wrist_2, wrist_3: {x, y, z, roll, pitch, yaw}``
  and ``hash``).  ur_description's xacro writes each entry verbatim as the ``<origin>`` of
  the six revolute joints, so the entries are our calibrated URDF's joint origins, once the
  chain is checked to be ur_description's (joint and link names, z axes, the fixed
  ``base_link -> base_link_inertia`` half turn).  UR's own ur_calibration derives the same
  six frames from the controller's DH parameters and their factory deltas.
* ``joint-offsets``: an offset-level calibration's reading corrections (true position =
  reading + offset) as a plain ``joint: offset`` YAML (FILE) and as ros2_control joint
  parameters (``FILE`` with ``.ros2_control.yaml``).
* ``urdf-patch``: the calibrated joint origins, or the identified link inertials, as a
  small YAML of strings a xacro can load (``xacro.load_yaml``) into ``<origin>`` /
  ``<inertial>`` attributes.
* ``dynamics``: the physically consistent standard parameters (inertial per link, rotor
  inertia, friction, offset per joint) as YAML, and the identified URDF beside it
  (``FILE`` with ``.urdf``).

Every file is built in memory and checked first; they are then written together (each
through a temporary file renamed into place), so a refused export writes nothing.
"""
from __future__ import annotations

import hashlib
import os
import re
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass

import numpy as np
import pinocchio as pin
import yaml

from figaroh_ros.calibration import CalibrationResult
from figaroh_ros.errors import DataError, FigarohError, ModelError
from figaroh_ros.identification import IdentificationResult

FORMATS = ("ur-kinematics", "joint-offsets", "urdf-patch", "dynamics")
# ur_description's serial chain: (joint, parent link, child link, kinematics entry)
UR_CHAIN = (("shoulder_pan_joint", "base_link_inertia", "shoulder_link", "shoulder"),
            ("shoulder_lift_joint", "shoulder_link", "upper_arm_link", "upper_arm"),
            ("elbow_joint", "upper_arm_link", "forearm_link", "forearm"),
            ("wrist_1_joint", "forearm_link", "wrist_1_link", "wrist_1"),
            ("wrist_2_joint", "wrist_1_link", "wrist_2_link", "wrist_2"),
            ("wrist_3_joint", "wrist_2_link", "wrist_3_link", "wrist_3"))
_PARAM = re.compile(r"^([A-Za-z]+?)(\d+)$")


@dataclass
class ResultFiles:
    """A result as its ``result.yaml`` content and the URDF that goes with it."""

    kind: str                   # "calibration" or "identification"
    summary: dict
    urdf_text: str | None       # calibrated / identified URDF (None: why_no_urdf)
    where: str
    why_no_urdf: str = ""


def _read_text(path: str, what: str) -> str:
    try:
        with open(path) as f:
            return f.read()
    except OSError as exc:
        raise DataError(f"cannot read {what} {path}: {exc}") from exc


def _from_object(result) -> ResultFiles:
    if isinstance(result, CalibrationResult):
        return ResultFiles("calibration", result.to_dict(), result.to_urdf(), "result")
    ok, why = result.physical_publishable
    return ResultFiles("identification", result.to_dict(),
                       result.to_urdf() if ok else None, "result", why)


def _kind(summary: dict, where: str) -> str:
    if isinstance(summary, dict) and "calibrated_joints" in summary:
        return "calibration"
    if isinstance(summary, dict) and "base_parameters" in summary:
        return "identification"
    raise DataError(f"{where} is neither a calibration nor an identification result.yaml")


def _from_files(path: str) -> ResultFiles:
    folder, yml = (path, os.path.join(path, "result.yaml")) if os.path.isdir(path) else \
        (os.path.dirname(path) or ".", path)
    try:
        summary = yaml.safe_load(_read_text(yml, "result"))
    except yaml.YAMLError as exc:
        raise DataError(f"{yml} is not YAML: {exc}") from exc
    kind = _kind(summary, yml)
    robot = summary.get("robot") or "robot"
    if kind == "calibration":
        urdf = summary.get("urdf") or os.path.join(folder, f"{robot}_calibrated.urdf")
        urdf = urdf if os.path.isfile(urdf) else os.path.join(folder, os.path.basename(urdf))
        return ResultFiles(kind, summary, _read_text(urdf, "calibrated URDF"), yml)
    urdf = os.path.join(folder, f"{robot}_identified.urdf")
    if os.path.isfile(urdf):
        return ResultFiles(kind, summary, _read_text(urdf, "identified URDF"), yml)
    why = (summary.get("physical") or {}).get(
        "not_published_because", "no physically consistent estimate (physical.method)")
    return ResultFiles(kind, summary, None, yml, f"no {urdf}: {why}")


def read_result(result) -> ResultFiles:
    """A :class:`CalibrationResult`, an :class:`IdentificationResult`, a result folder or
    its ``result.yaml``."""
    if isinstance(result, (CalibrationResult, IdentificationResult)):
        return _from_object(result)
    if isinstance(result, (str, os.PathLike)):
        return _from_files(os.fspath(result))
    raise DataError(f"cannot export a {type(result).__name__}: give a calibration or "
                    "identification result, or its folder / result.yaml")


def _needs(res: ResultFiles, kind: str, fmt: str) -> None:
    if res.kind != kind:
        other = {"calibration": "geometric calibration (figaroh-ros calibrate)",
                 "identification": "dynamic identification (figaroh-ros identify)"}
        raise DataError(f"{res.where} is a {other[res.kind]} result; {fmt} exports a "
                        f"{other[kind]} result")


def _xml(res: ResultFiles) -> ET.Element:
    try:
        return ET.fromstring(res.urdf_text)
    except ET.ParseError as exc:
        raise DataError(f"the URDF of {res.where} is not XML: {exc}") from exc


def _floats(text: str | None) -> list[float]:
    return [float(v) for v in text.split()] if text else [0.0, 0.0, 0.0]


def _origin(el: ET.Element) -> tuple[list[float], list[float]]:
    o = el.find("origin")
    return (_floats(None if o is None else o.get("xyz")),
            _floats(None if o is None else o.get("rpy")))


# ------------------------------------------------------------------ ur-kinematics
def _ur_refusal(joints: dict, prefix: str) -> str:
    """Why the URDF is not ur_description's chain ('' when it is)."""
    for name, parent, child, _ in UR_CHAIN:
        j = joints.get(prefix + name)
        if j is None:
            return f"it has no joint {prefix + name}"
        if j.get("type") not in ("revolute", "continuous"):
            return f"joint {prefix + name} is {j.get('type')}, not revolute"
        axis = j.find("axis")
        xyz = _floats(axis.get("xyz") if axis is not None else "1 0 0")
        if not np.allclose(xyz, [0, 0, 1], atol=1e-12):
            return (f"joint {prefix + name} turns about {xyz}: ur_description's joints all "
                    "turn about z")
        links = (j.find("parent").get("link"), j.find("child").get("link"))
        if links != (prefix + parent, prefix + child):
            return (f"joint {prefix + name} joins {links[0]} -> {links[1]}, ur_description's "
                    f"joins {prefix + parent} -> {prefix + child}")
    fixed = [j for j in joints.values() if j.find("child").get("link") ==
             prefix + "base_link_inertia" and j.find("parent").get("link") == prefix +
             "base_link"]
    if not fixed or not np.allclose(pin.rpy.rpyToMatrix(*_origin(fixed[0])[1]),
                                    pin.rpy.rpyToMatrix(0, 0, np.pi), atol=1e-12) or \
            not np.allclose(_origin(fixed[0])[0], 0, atol=1e-12):
        return (f"{prefix}base_link -> {prefix}base_link_inertia is not ur_description's "
                "fixed half turn about z")
    return ""


def ur_kinematics(res: ResultFiles, hash_value: str | None = None) -> str:
    """The ``default_kinematics.yaml`` text of a UR calibration."""
    _needs(res, "calibration", "ur-kinematics")
    root = _xml(res)
    joints = {j.get("name"): j for j in root.findall("joint")}
    pans = [n for n in joints if n.endswith("shoulder_pan_joint")]
    prefix = pans[0][:-len("shoulder_pan_joint")] if len(pans) == 1 else ""
    why = _ur_refusal(joints, prefix)
    outside = set(res.summary.get("calibrated_joints", [])) - {prefix + c[0] for c in UR_CHAIN}
    if not why and outside:
        why = f"joints {sorted(outside)} were calibrated too and have no place in the file"
    if why:
        raise ModelError(f"{res.where}: not a UR chain in ur_description's conventions "
                         f"({why}); export urdf-patch instead")
    kin = {}
    for name, _, _, entry in UR_CHAIN:
        xyz, rpy = _origin(joints[prefix + name])
        kin[entry] = dict(zip(("x", "y", "z", "roll", "pitch", "yaw"), xyz + rpy))
    digest = hashlib.sha256(repr(sorted(kin.items())).encode()).hexdigest()[:16]
    kin["hash"] = hash_value or f"figaroh_{digest}"
    return ("# ur_description kinematics from a FIGAROH calibration (figaroh-ros export "
            "ur-kinematics);\n# use as ur_description's kinematics_params / the driver's "
            "kinematics_params_file\n" + yaml.safe_dump({"kinematics": kin}, sort_keys=False))


# ------------------------------------------------------------------ joint-offsets
def joint_offsets(res: ResultFiles) -> dict[str, float]:
    """Offsets (rad, or m for prismatic joints) of an offset-level calibration."""
    _needs(res, "calibration", "joint-offsets")
    if res.summary.get("level") != "offset":
        raise DataError(f"{res.where} is a {res.summary.get('level')}-level calibration: its "
                        "joint placements changed, not only the readings; calibrate with "
                        "calibration.level: offset, or export urdf-patch / ur-kinematics")
    values = {p["name"]: float(p["value"]) for p in res.summary.get("parameters", [])}
    return {j: values.get(f"offset_{j}", 0.0) for j in res.summary["calibrated_joints"]}


def joint_offset_texts(res: ResultFiles) -> tuple[str, str]:
    offsets = joint_offsets(res)
    head = ("# joint reading offsets from a FIGAROH offset-level calibration: true position "
            "= reading + offset (rad; m for prismatic joints)\n")
    plain = head + yaml.safe_dump(offsets, sort_keys=False)
    ros2 = head + ("# ros2_control <joint> parameters: <param name=\"offset\">"
                   "${params['joints'][NAME]['offset']}</param>\n") + yaml.safe_dump(
        {"joints": {j: {"offset": v} for j, v in offsets.items()}}, sort_keys=False)
    return plain, ros2


# ------------------------------------------------------------------ urdf-patch
def _text(v) -> str:
    return " ".join(repr(float(a)) for a in v)


def _inertial(link: ET.Element) -> dict:
    el = link.find("inertial")
    xyz, rpy = _origin(el)
    i = el.find("inertia")
    return {"mass": repr(float(el.find("mass").get("value"))),
            "origin": {"xyz": _text(xyz), "rpy": _text(rpy)},
            "inertia": {k: repr(float(i.get(k, 0.0)))
                        for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")}}


def _identified_links(res: ResultFiles) -> dict[str, int]:
    """Link name -> joint id of the links the identification wrote."""
    std = (res.summary.get("physical") or {}).get("standard_parameters") or []
    jids = sorted({int(m.group(2)) for p in std if (m := _PARAM.match(p["name"]))
                   and m.group(1) == "m"})
    model = pin.buildModelFromXML(res.urdf_text)
    child = {j.get("name"): j.find("child").get("link") for j in _xml(res).findall("joint")}
    return {child[model.names[jid]]: jid for jid in jids}


def urdf_patch(res: ResultFiles) -> dict:
    """The changed joint origins (calibration) or link inertials (identification)."""
    if res.urdf_text is None:
        raise DataError(f"{res.where}: no URDF to patch from ({res.why_no_urdf})")
    root = _xml(res)
    if res.kind == "calibration":
        joints = {j.get("name"): j for j in root.findall("joint")}
        out = {}
        for name in res.summary["calibrated_joints"]:
            xyz, rpy = _origin(joints[name])
            out[name] = {"xyz": _text(xyz), "rpy": _text(rpy)}
        return {"joints": out}
    links = {link.get("name"): link for link in root.findall("link")}
    return {"links": {name: _inertial(links[name]) for name in _identified_links(res)}}


# ------------------------------------------------------------------ dynamics
def dynamics(res: ResultFiles) -> dict:
    """Standard parameters per link and drive parameters per joint, with their std."""
    _needs(res, "identification", "dynamics")
    if res.urdf_text is None:
        raise DataError(f"{res.where}: no physically consistent identified model to "
                        f"export ({res.why_no_urdf})")
    std = res.summary["physical"]["standard_parameters"]
    model = pin.buildModelFromXML(res.urdf_text)
    links = {jid: name for name, jid in _identified_links(res).items()}
    out = {"robot": res.summary.get("robot"), "joints": res.summary.get("joints"),
           "links": {}, "drives": {}}
    for p in std:
        prefix, jid = _PARAM.match(p["name"]).groups()
        jid = int(jid)
        entry = {"value": p["value"], "std": p["std"]}
        if jid in links and prefix in ("m", "mx", "my", "mz", "Ixx", "Ixy", "Ixz", "Iyy",
                                       "Iyz", "Izz"):
            out["links"].setdefault(links[jid], {})[prefix] = entry
        else:
            out["drives"].setdefault(model.names[jid], {})[prefix] = entry
    out["units"] = {"m": "kg", "mx..mz": "kg.m (first moments, joint frame)",
                    "Ixx..Izz": "kg.m^2 (about the joint frame origin)", "Ia": "kg.m^2",
                    "fv": "N.m.s/rad", "fs": "N.m", "off": "N.m"}
    return out


# ------------------------------------------------------------------ writing
def _beside(out: str, suffix: str) -> str:
    stem = out[:-5] if out.endswith(".yaml") else out
    return stem + suffix


def _files(fmt: str, res: ResultFiles, out: str, hash_value: str | None) -> dict:
    if fmt == "ur-kinematics":
        return {out: ur_kinematics(res, hash_value)}
    if fmt == "joint-offsets":
        plain, ros2 = joint_offset_texts(res)
        return {out: plain, _beside(out, ".ros2_control.yaml"): ros2}
    if fmt == "urdf-patch":
        return {out: "# changed URDF elements from FIGAROH (figaroh-ros export urdf-patch)\n"
                + yaml.safe_dump(urdf_patch(res), sort_keys=False)}
    if fmt == "dynamics":
        urdf = _beside(out, ".urdf")
        data = dynamics(res)
        data["urdf"] = os.path.basename(urdf)
        return {out: yaml.safe_dump(data, sort_keys=False), urdf: res.urdf_text}
    raise DataError(f"unknown export format {fmt!r}; expected one of {', '.join(FORMATS)}")


def _check_out(path: str) -> None:
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise DataError(f"--out {path} is a folder: give a file name")
    if not os.path.isdir(folder) or not os.access(folder, os.W_OK):
        raise DataError(f"--out {path}: folder {folder} does not exist or is not writable")


def write_all(files: dict[str, str]) -> None:
    """Write every file or none: temporary files first, renamed once all are written."""
    staged = []
    try:
        for path, text in files.items():
            fd, tmp = tempfile.mkstemp(prefix=".figaroh-export-",
                                       dir=os.path.dirname(os.path.abspath(path)))
            staged.append((tmp, path))
            with os.fdopen(fd, "w") as f:
                f.write(text)
        for tmp, path in staged:
            os.replace(tmp, path)
    except OSError as exc:
        raise DataError(f"cannot write {', '.join(files)}: {exc}") from exc
    finally:
        for tmp, _ in staged:
            if os.path.exists(tmp):
                os.remove(tmp)


def export(fmt: str, result, out: str, *, hash: str | None = None) -> list[str]:
    """Write ``result`` (object, folder or ``result.yaml``) as ``fmt`` (one of
    :data:`FORMATS`) to ``out`` (plus its companion file); the paths written."""
    if fmt not in FORMATS:
        raise DataError(f"unknown export format {fmt!r}; expected one of "
                        f"{', '.join(FORMATS)}")
    for path in [out]:
        _check_out(path)
    try:
        files = _files(fmt, read_result(result), out, hash)
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        if isinstance(exc, FigarohError):
            raise
        raise DataError(f"{result}: incomplete result for {fmt}: {exc!r}") from exc
    write_all(files)
    return list(files)

"""Deploy files (``figaroh-ros export``) against the robot's own description tools.

The UR round trip: ur_description's xacro (an unmodified minimal copy in
``test/data/ur_description``, see its PROVENANCE.md) expanded with the ``xacro`` package
gives the nominal UR10; a calibration with hidden joint-placement errors gives our
calibrated URDF; the same xacro expanded with the exported ``default_kinematics.yaml``
must give the same joint placements (pinocchio) to 1e-9.  Bad exports: a chain that is not
ur_description's, a dynamic result as kinematics and the reverse -- refused with the
reason, nothing written.
"""
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
import xacro
import yaml
from conftest import ur_description_prefix

from figaroh_ros import calibrate, export, identify, load_model
from figaroh_ros.cli.main import main
from figaroh_ros.errors import DataError, ModelError
from figaroh_ros.excitation.fourier import fourier_trajectory
from figaroh_ros.identification import DriveOptions, parameter_layout
from figaroh_ros.sim.dynamics import measured_torques, perturbed_parameters

DATA = os.path.join(os.path.dirname(__file__), "data")
UR_XACRO = os.path.join(DATA, "ur_description", "urdf", "ur.urdf.xacro")
UR_JOINTS = ["shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint", "wrist_1_joint",
             "wrist_2_joint", "wrist_3_joint"]
ERD_UR10 = "example-robot-data:ur_description/urdf/ur10_robot.urdf"


@pytest.fixture(scope="module")
def ament_prefix(tmp_path_factory):
    """An ament index where ``$(find ur_description)`` is our fixture."""
    prefix = Path(ur_description_prefix(tmp_path_factory.mktemp("ament")))
    old = os.environ.get("AMENT_PREFIX_PATH")
    os.environ["AMENT_PREFIX_PATH"] = str(prefix)
    yield prefix
    if old is None:
        del os.environ["AMENT_PREFIX_PATH"]
    else:
        os.environ["AMENT_PREFIX_PATH"] = old


def expand_ur(kinematics: str | None = None) -> str:
    mappings = {"ur_type": "ur10", "name": "ur"}
    if kinematics:
        mappings["kinematics_params"] = kinematics
    return xacro.process_file(UR_XACRO, mappings=mappings).toprettyxml(indent="  ")


def placements(urdf_text: str) -> dict:
    model = pin.buildModelFromXML(urdf_text)
    return {model.names[j]: model.jointPlacements[j] for j in range(1, model.njoints)}


def gap(a: dict, b: dict) -> float:
    assert set(a) == set(b)
    return max(np.max(np.abs(a[k].homogeneous - b[k].homogeneous)) for k in a)


def flange_poses(model, Q, offsets=None):
    data, fid, out = model.createData(), model.getFrameId("tool0"), []
    for q in Q:
        pin.framesForwardKinematics(model, data, q + (0 if offsets is None else offsets))
        T = data.oMf[fid]
        out.append(np.r_[T.translation, pin.log3(T.rotation)])
    return np.array(out)


@pytest.fixture(scope="module")
def ur_nominal(ament_prefix, tmp_path_factory):
    path = tmp_path_factory.mktemp("ur") / "ur10.urdf"
    path.write_text(expand_ur())
    return str(path)


@pytest.fixture(scope="module")
def ur_calibration(ur_nominal):
    """Full-level calibration of the xacro's UR10 with hidden 2 mm / 2 mrad errors."""
    rng = np.random.default_rng(3)
    nominal = pin.buildModelFromUrdf(ur_nominal)
    true = nominal.copy()
    for j in range(1, true.njoints):
        true.jointPlacements[j] *= pin.SE3(pin.exp3(rng.normal(0, 2e-3, 3)),
                                           rng.normal(0, 2e-3, 3))
    Q = rng.uniform(-np.pi, np.pi, (40, 6))
    return calibrate(ur_nominal, Q, flange_poses(true, Q), tool_frame="tool0",
                     measurement="pose", noise=(1e-5, 1e-5)), true


def test_ur_kinematics_round_trip_through_the_xacro(ur_calibration, ament_prefix, tmp_path):
    cal, true = ur_calibration
    calibrated = placements(cal.to_urdf())
    out = tmp_path / "my_robot_calibration.yaml"
    assert export("ur-kinematics", cal, str(out)) == [str(out)]
    kin = yaml.safe_load(out.read_text())["kinematics"]
    assert set(kin) == {"shoulder", "upper_arm", "forearm", "wrist_1", "wrist_2", "wrist_3",
                        "hash"}
    expanded = placements(expand_ur(str(out)))
    print("xacro round trip gap:", gap(expanded, calibrated))
    assert gap(expanded, calibrated) < 1e-9
    # not trivially true: the calibration moved the joints by millimetres
    assert gap(placements(expand_ur()), calibrated) > 5e-4
    # and the calibration found the hidden chain (frames fitted): new postures to 0.1 mm
    Q = np.random.default_rng(9).uniform(-np.pi, np.pi, (20, 6))
    assert np.max(np.abs(cal.predict(Q)[:, :3] - flange_poses(true, Q)[:, :3])) < 1e-4


def test_ur_kinematics_from_the_result_folder_and_cli(ur_calibration, tmp_path, capsys):
    cal, _ = ur_calibration
    folder = tmp_path / "ur10_calibration"
    folder.mkdir()
    cal.to_urdf(str(folder / "ur_calibrated.urdf"))
    (folder / "result.yaml").write_text(yaml.safe_dump(cal.to_dict()))
    out = tmp_path / "kin.yaml"
    assert main(["export", "ur-kinematics", str(folder), "--out", str(out),
                 "--hash", "calib_123"]) == 0
    kin = yaml.safe_load(out.read_text())["kinematics"]
    assert kin["hash"] == "calib_123"
    direct = tmp_path / "direct.yaml"
    export("ur-kinematics", cal, str(direct))
    ref = yaml.safe_load(direct.read_text())["kinematics"]
    assert all(kin[k] == ref[k] for k in ref if k != "hash")


def test_non_ur_chain_refused_with_the_reason(tmp_path):
    """example-robot-data's UR10 has the same joint names but the older conventions."""
    folder = tmp_path / "erd"
    folder.mkdir()
    urdf = load_model(ERD_UR10, UR_JOINTS).urdf_path
    (folder / "result.yaml").write_text(yaml.safe_dump(
        {"robot": "ur10", "level": "full", "calibrated_joints": UR_JOINTS, "urdf": urdf}))
    out = tmp_path / "kin.yaml"
    with pytest.raises(ModelError, match="not a UR chain.*(turns about|joins)"):
        export("ur-kinematics", str(folder), str(out))
    assert not out.exists()
    assert main(["export", "ur-kinematics", str(folder), "--out", str(out)]) == 2
    assert not out.exists() and os.listdir(tmp_path) == ["erd"]


def test_joint_offsets(ur_nominal, tmp_path):
    rng = np.random.default_rng(4)
    nominal = pin.buildModelFromUrdf(ur_nominal)
    hidden = rng.normal(0, 5e-3, 6)
    Q = rng.uniform(-np.pi, np.pi, (30, 6))
    cal = calibrate(ur_nominal, Q, flange_poses(nominal, Q, hidden), tool_frame="tool0",
                    level="offset", measurement="pose", noise=(1e-5, 1e-5))
    out = tmp_path / "offsets.yaml"
    written = export("joint-offsets", cal, str(out))
    assert written == [str(out), str(tmp_path / "offsets.ros2_control.yaml")]
    plain = yaml.safe_load(out.read_text())
    ros2 = yaml.safe_load((tmp_path / "offsets.ros2_control.yaml").read_text())
    got = np.array([plain[j] for j in UR_JOINTS])
    # the fitted base frame absorbs the first joint's offset and the tool frame the last's
    print("offset errors (rad):", got[1:5] - hidden[1:5])
    assert np.max(np.abs(got[1:5] - hidden[1:5])) < 1e-6
    assert [ros2["joints"][j]["offset"] for j in UR_JOINTS] == list(got)


def test_full_level_is_not_offsets_and_urdf_patch(ur_calibration, ur_nominal, tmp_path):
    cal, _ = ur_calibration
    with pytest.raises(DataError, match="full-level"):
        export("joint-offsets", cal, str(tmp_path / "o.yaml"))
    assert not (tmp_path / "o.yaml").exists()
    out = tmp_path / "patch.yaml"
    export("urdf-patch", cal, str(out))
    patch = yaml.safe_load(out.read_text())["joints"]
    # applying the patch to the nominal URDF's origins gives the calibrated model
    text = open(ur_nominal).read()
    root = ET.fromstring(text)
    for j in root.findall("joint"):
        if j.get("name") in patch:
            j.find("origin").attrib.update(patch[j.get("name")])
    assert gap(placements(ET.tostring(root, encoding="unicode")),
               placements(cal.to_urdf())) < 1e-9


@pytest.fixture(scope="module")
def identified():
    arm = load_model(ERD_UR10, UR_JOINTS)
    drive = DriveOptions()
    layout = parameter_layout(arm, drive)
    phi = perturbed_parameters(arm, layout, seed=2)

    def experiment(seed):
        traj = fourier_trajectory(arm, 20.0, 50.0, harmonics=5, base_freq_hz=0.1, seed=seed)
        tau = measured_torques(arm, layout, drive, phi, traj, 0.05, seed=seed + 10)
        return traj.q, traj.dq, traj.ddq, tau
    return identify(arm, *experiment(1), validation=experiment(2), physical="lmi"), phi, layout


def test_dynamics_export(identified, tmp_path):
    res, phi, layout = identified
    assert res.physical_publishable[0], res.physical_publishable[1]
    out = tmp_path / "ur10_dynamics.yaml"
    written = export("dynamics", res, str(out))
    assert written == [str(out), str(tmp_path / "ur10_dynamics.urdf")]
    data = yaml.safe_load(out.read_text())
    assert data["urdf"] == "ur10_dynamics.urdf"
    # drive parameters are the identified ones, and near the hidden truth
    for k, j in enumerate(UR_JOINTS):
        fv = data["drives"][j]["fv"]["value"]
        assert abs(fv - phi[layout.fv_col[k]]) < 0.05
    # the URDF written beside it carries the identified masses
    model = pin.buildModelFromUrdf(str(tmp_path / "ur10_dynamics.urdf"))
    for link, values in data["links"].items():
        jid = model.frames[model.getFrameId(link)].parentJoint
        assert abs(model.inertias[jid].mass - values["m"]["value"]) < 1e-6 * max(
            1.0, values["m"]["value"])


def test_urdf_patch_of_identification(identified, tmp_path):
    res, _, _ = identified
    out = tmp_path / "inertials.yaml"
    export("urdf-patch", res, str(out))
    links = yaml.safe_load(out.read_text())["links"]
    assert "upper_arm_link" in links and float(links["upper_arm_link"]["mass"]) > 0
    assert set(links["upper_arm_link"]["inertia"]) == {"ixx", "ixy", "ixz", "iyy", "iyz",
                                                       "izz"}


def test_kind_mismatches_write_nothing(identified, ur_calibration, tmp_path):
    res, _, _ = identified
    cal, _ = ur_calibration
    for fmt, result, match in (("ur-kinematics", res, "dynamic identification.*ur-kinematics"),
                               ("joint-offsets", res, "dynamic identification"),
                               ("dynamics", cal, "geometric calibration.*dynamics")):
        out = tmp_path / f"{fmt}.yaml"
        with pytest.raises(DataError, match=match):
            export(fmt, result, str(out))
    assert os.listdir(tmp_path) == []
    with pytest.raises(DataError, match="unknown export format"):
        export("moveit", cal, str(tmp_path / "x.yaml"))
    with pytest.raises(DataError, match="is a folder"):
        export("ur-kinematics", cal, str(tmp_path))
    with pytest.raises(DataError, match="neither a calibration nor"):
        (tmp_path / "r.yaml").write_text("a: 1\n")
        export("urdf-patch", str(tmp_path / "r.yaml"), str(tmp_path / "p.yaml"))
    assert sorted(os.listdir(tmp_path)) == ["r.yaml"]


# ------------------------------------------------------------------ xacro sources
XACRO_NS = "http://www.ros.org/wiki/xacro"


def _as_xacro(urdf_text: str, patch_file: str, edit) -> str:
    """``urdf_text`` as a xacro that ``xacro.load_yaml``s ``patch_file`` into the property
    ``patch``; ``edit(root)`` replaces attributes by ``${patch[...]}`` expressions."""
    ET.register_namespace("xacro", XACRO_NS)
    root = ET.fromstring(urdf_text)
    prop = ET.Element(f"{{{XACRO_NS}}}property",
                      {"name": "patch", "value": f"${{xacro.load_yaml('{patch_file}')}}"})
    root.insert(0, prop)
    edit(root)
    return ET.tostring(root, encoding="unicode")


def _expand(tmp_path, xacro_text: str) -> str:
    path = tmp_path / "robot.urdf.xacro"
    path.write_text(xacro_text)
    return xacro.process_file(str(path)).toprettyxml(indent="  ")


def test_urdf_patch_of_calibration_through_xacro_load_yaml(ur_calibration, ur_nominal,
                                                          tmp_path):
    """The documented use: a xacro loads the exported patch with ``xacro.load_yaml`` and
    sets the joint origins from it; expanded by the xacro package, its joint placements
    are our calibrated URDF's."""
    cal, _ = ur_calibration
    out = tmp_path / "patch.yaml"
    export("urdf-patch", cal, str(out))
    names = list(yaml.safe_load(out.read_text())["joints"])
    assert sorted(names) == sorted(cal.to_dict()["calibrated_joints"])

    def edit(root):
        for j in root.findall("joint"):
            if j.get("name") in names:
                for key in ("xyz", "rpy"):
                    j.find("origin").set(key, f"${{patch['joints']['{j.get('name')}']"
                                              f"['{key}']}}")
    expanded = _expand(tmp_path, _as_xacro(open(ur_nominal).read(), str(out), edit))
    assert "${" not in expanded
    print("xacro load_yaml patch gap:", gap(placements(expanded), placements(cal.to_urdf())))
    assert gap(placements(expanded), placements(cal.to_urdf())) < 1e-9
    assert gap(placements(open(ur_nominal).read()), placements(cal.to_urdf())) > 5e-4


def _inertials(urdf_text: str) -> dict:
    model = pin.buildModelFromXML(urdf_text)
    return {model.names[j]: model.inertias[j].toDynamicParameters()
            for j in range(1, model.njoints)}


def test_urdf_patch_of_identification_through_xacro_load_yaml(identified, tmp_path):
    """An identification's patch loaded by a xacro into the ``<inertial>`` of the links it
    names gives the identified URDF's inertials (mass, centre of mass, inertia)."""
    res, _, _ = identified
    out = tmp_path / "inertials.yaml"
    export("urdf-patch", res, str(out))
    links = list(yaml.safe_load(out.read_text())["links"])
    nominal = open(load_model(ERD_UR10, UR_JOINTS).urdf_path).read()

    def edit(root):
        for link in root.findall("link"):
            name = link.get("name")
            if name not in links:
                continue
            for old in link.findall("inertial"):
                link.remove(old)
            p = f"patch['links']['{name}']"
            inertial = ET.SubElement(link, "inertial")
            ET.SubElement(inertial, "origin", {k: f"${{{p}['origin']['{k}']}}"
                                               for k in ("xyz", "rpy")})
            ET.SubElement(inertial, "mass", {"value": f"${{{p}['mass']}}"})
            ET.SubElement(inertial, "inertia", {k: f"${{{p}['inertia']['{k}']}}" for k in
                                                ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")})
    expanded = _inertials(_expand(tmp_path, _as_xacro(nominal, str(out), edit)))
    target, before = _inertials(res.to_urdf()), _inertials(nominal)
    worst = max(np.max(np.abs(expanded[j] - target[j])) for j in target)
    print("xacro load_yaml inertial gap:", worst, "links patched:", links)
    assert len(links) == 6 and worst < 1e-9
    assert max(np.max(np.abs(before[j] - target[j])) for j in target) > 1e-3


def test_dynamics_export_equals_the_identification(identified, tmp_path):
    """Every drive parameter (Ia, fv, fs, off) with its std is the identification's, and
    the URDF beside the YAML carries its full inertials (mass, first moments, inertia
    about the joint frame) -- the standard parameters the YAML lists."""
    from figaroh_ros.identification.parameters import PIN_TO_STD
    res, _, _ = identified
    out = tmp_path / "ur10_dynamics.yaml"
    export("dynamics", res, str(out))
    data = yaml.safe_load(out.read_text())
    std = {p["name"]: p for p in res.to_dict()["physical"]["standard_parameters"]}
    model = pin.buildModelFromUrdf(str(tmp_path / "ur10_dynamics.urdf"))
    for k, j in enumerate(UR_JOINTS):
        jid = model.getJointId(j)
        assert set(data["drives"][j]) == {"Ia", "fv", "fs", "off"}
        for prefix in ("Ia", "fv", "fs", "off"):
            ref = std[f"{prefix}{jid}"]
            assert data["drives"][j][prefix] == {"value": ref["value"], "std": ref["std"]}
            assert ref["std"] > 0
    names = ("m", "mx", "my", "mz", "Ixx", "Ixy", "Ixz", "Iyy", "Iyz", "Izz")
    assert len(data["links"]) == 6
    for link, values in data["links"].items():
        jid = model.frames[model.getFrameId(link)].parentJoint
        assert set(values) == set(names)
        for n in names:
            assert values[n] == {"value": std[f"{n}{jid}"]["value"],
                                 "std": std[f"{n}{jid}"]["std"]}
        urdf_std = model.inertias[jid].toDynamicParameters()[PIN_TO_STD]
        assert np.allclose(urdf_std, [values[n]["value"] for n in names], rtol=1e-9,
                           atol=1e-12), (link, urdf_std)


def _result_folders(tmp_path, res, cal):
    ident, calib = tmp_path / "ident", tmp_path / "calib"
    ident.mkdir()
    calib.mkdir()
    (ident / "result.yaml").write_text(yaml.safe_dump(res.to_dict()))
    res.to_urdf(str(ident / f"{res.to_dict().get('robot') or 'robot'}_identified.urdf"))
    cal.to_urdf(str(calib / "ur_calibrated.urdf"))
    (calib / "result.yaml").write_text(yaml.safe_dump(cal.to_dict()))
    return ident, calib


def test_kind_mismatches_through_the_cli(identified, ur_calibration, tmp_path, capsys):
    """``figaroh-ros export``: a dynamic result as kinematics and the reverse exit 2,
    naming the format and the result's kind; nothing written."""
    res, _, _ = identified
    cal, _ = ur_calibration
    ident, calib = _result_folders(tmp_path, res, cal)
    before = sorted(os.listdir(tmp_path))
    for fmt, folder, kind in (("ur-kinematics", ident, "dynamic identification"),
                              ("joint-offsets", ident, "dynamic identification"),
                              ("dynamics", calib, "geometric calibration")):
        out = tmp_path / f"{fmt}.yaml"
        assert main(["export", fmt, str(folder), "--out", str(out)]) == 2
        err = capsys.readouterr().err
        print(err)
        assert fmt in err and kind in err, err
        assert sorted(os.listdir(tmp_path)) == before
        assert not any(p.name.startswith(".figaroh-export") for p in tmp_path.rglob("*"))


def test_joint_offsets_ros2_control_form_through_xacro(ur_nominal, tmp_path):
    """The ``.ros2_control.yaml`` form in its documented use: a xacro loads it and writes
    each joint's ``<param name="offset">`` of a ``<ros2_control>`` block; reading that
    block as ros2_control's URDF parser does (``joint/@name`` -> ``param/@name`` -> text)
    gives the plain file's values exactly."""
    rng = np.random.default_rng(5)
    nominal = pin.buildModelFromUrdf(ur_nominal)
    Q = rng.uniform(-np.pi, np.pi, (30, 6))
    cal = calibrate(ur_nominal, Q, flange_poses(nominal, Q, rng.normal(0, 5e-3, 6)),
                    tool_frame="tool0", level="offset", measurement="pose",
                    noise=(1e-5, 1e-5))
    out = tmp_path / "offsets.yaml"
    export("joint-offsets", cal, str(out))
    plain = yaml.safe_load(out.read_text())
    ros2_path = tmp_path / "offsets.ros2_control.yaml"
    ros2 = yaml.safe_load(ros2_path.read_text())
    # structure: joints -> <joint name> -> offset (a number), the same joints as the plain
    assert list(ros2) == ["joints"] and list(ros2["joints"]) == list(plain)
    assert all(list(v) == ["offset"] and isinstance(v["offset"], float)
               for v in ros2["joints"].values())
    joints = "".join(
        f'<joint name="{j}"><command_interface name="position"/>'
        f'<state_interface name="position"/>'
        f'<param name="offset">${{params[\'joints\'][\'{j}\'][\'offset\']}}</param></joint>'
        for j in plain)
    text = (f'<robot name="ur" xmlns:xacro="{XACRO_NS}">'
            f'<xacro:property name="params" value="${{xacro.load_yaml(\'{ros2_path}\')}}"/>'
            '<link name="base_link"/>'
            '<ros2_control name="ur" type="system"><hardware>'
            '<plugin>mock_components/GenericSystem</plugin></hardware>'
            f'{joints}</ros2_control></robot>')
    root = ET.fromstring(_expand(tmp_path, text))
    read = {j.get("name"): {p.get("name"): p.text.strip() for p in j.findall("param")}
            for j in root.find("ros2_control").findall("joint")}
    assert list(read) == list(plain)
    assert all(float(read[j]["offset"]) == plain[j] for j in plain)

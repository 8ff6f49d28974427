"""Typed configs: every shipped config loads, every kind has a JSON schema (its reference
page, docs/reference/config.md, is checked by test_docs_generated), and whatever a field holds, loading gives a valid config or a
ConfigError naming the field, never another exception."""
from __future__ import annotations

import copy
import fnmatch
import functools
import json
import os
import re
import tempfile

import pytest
import yaml
from conftest import ROOT
from hypothesis import given, settings, strategies as st
from pydantic import BaseModel

from figaroh_ros.cli.main import main as cli_main
from figaroh_ros.config.backlash import load_backlash_config
from figaroh_ros.config.base import parse_file
from figaroh_ros.config.calibration import load_calibration_config
from figaroh_ros.config.gains import load_gains_config
from figaroh_ros.config.identification import load_config, load_identification, parse_config
from figaroh_ros.config.kinds import KINDS
from figaroh_ros.config.payload import load_payload_config
from figaroh_ros.config.robot import load_robot_config
from figaroh_ros.config.sim import load_sim_file
from figaroh_ros.config.sim_camera import parse_sim_camera
from figaroh_ros.config.suspension import load_suspension_config
from figaroh_ros.config.trajectory import load_trajectory_config
from figaroh_ros.errors import ConfigError

CONFIG = os.path.join(ROOT, "config")
LOADERS = {"identification": load_config, "calibration": load_calibration_config,
           "trajectory": load_trajectory_config, "gains": load_gains_config,
           "backlash": load_backlash_config, "suspension": load_suspension_config,
           "robot": load_robot_config, "sim": load_sim_file,
           "payload": load_payload_config, "sim_camera": parse_sim_camera}
# a valid config of each kind, from a shipped file (gains: built in ``_gains``)
BASES = {"identification": "staubli_tx40.yaml", "calibration": "tiago_calibration_full.yaml",
         "trajectory": "ur10_trajectory.yaml", "backlash": "tiago_backlash.yaml",
         "suspension": "tiago_suspension.yaml", "robot": "robot_ur10.yaml",
         "sim": "sim_tiago_phenomena.yaml", "payload": "ur10_payload.yaml",
         "sim_camera": "sim_ur10_wrist_camera.yaml"}
# fields a cross-field rule may blame when another one changes
RELATED = {"robot.joints": ("transmission.", "data.joint_offsets", "trajectory."),
           "robot.floating_base": ("measurements.kind",),
           "data.format": ("data.", "tls"), "data.sample_time": ("data.time_column",),
           "data.time_column": ("data.time_column",), "measurement.type": (
               "measurement.", "calibration.tool_guess"),
           "measurement.points": ("calibration.tool_guess",),
           "measurements.kind": ("data.format",), "trajectory.tool_frame": ("trajectory.",),
           "trajectory.parameterisation": ("trajectory.postures_file",),
           "trajectory.workspace_max": ("trajectory.",),
           "postures.workspace_max": ("postures.workspace_min",),
           "bag.paths": ("measurement.type",), "tls.current_column": ("tls",),
           "tls.current_topic": ("tls",), "tls.sensor_column": ("tls",),
           "tls.payload_com": ("tls.payload_inertia",),
           # no source: the default (urdf) then needs its file
           "robot.source": ("robot.urdf", "robot.xacro")}
# a field of an optional section the base config leaves out: its required siblings named
RELATED.update({f"driver.{section}.{leaf}": (f"driver.{section}.",)
                for section in ("wrench", "pose")
                for leaf in ("topic", "type", "frame", "reliability", "durability",
                             "required")})


def kind_of(filename: str) -> str | None:
    for kind, k in KINDS.items():
        if any(fnmatch.fnmatch(filename, p.strip()) for p in k.files.split(",") if p.strip()):
            return kind
    return None


SHIPPED = sorted(f for f in os.listdir(CONFIG) if f.endswith(".yaml"))


@pytest.mark.parametrize("filename", SHIPPED)
def test_every_shipped_config_loads(filename):
    kind = kind_of(filename)
    assert kind is not None, f"config/{filename} matches no kind's files in KINDS"
    cfg = LOADERS[kind](os.path.join(CONFIG, filename))
    if kind == "identification":
        assert isinstance(cfg, KINDS[kind].model)
        assert os.path.isfile(cfg.robot.urdf)
    if kind in ("calibration", "trajectory"):
        assert isinstance(cfg, KINDS[kind].model)
        assert os.path.isfile(cfg.robot.urdf)
    if kind in ("backlash", "suspension", "payload", "sim", "sim_camera"):
        assert isinstance(cfg, KINDS[kind].model)      # the validated model, not a dump


def test_shipped_kinds_cover_the_verbs():
    found = {kind_of(f) for f in SHIPPED}
    assert found >= set(KINDS) - {"gains"}, set(KINDS) - found


def test_loaded_identification_is_the_typed_config_with_defaults():
    path = os.path.join(CONFIG, "staubli_tx40.yaml")
    loaded = load_identification(path)
    assert loaded.file == path and loaded.effort["unit"] == "as recorded"
    cfg = loaded.config
    assert cfg == parse_config(path)        # no gains or driver to resolve: the config itself
    assert cfg.estimation.cross_validation_folds == 4          # a default
    assert [c.model_dump() for c in cfg.transmission.coupling] == [
        {"motor": "joint_6", "joint": "joint_5", "coefficient": 1.0}]
    assert cfg.data.path == os.path.normpath(os.path.join(CONFIG, "../../shared/data/"
                                                          "staubli_tx40"))


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_json_schema_of_every_kind(kind, capsys):
    assert cli_main(["config-schema", kind]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["type"] == "object" and schema["additionalProperties"] is False
    assert set(schema["properties"]) == set(KINDS[kind].model.model_fields)


def test_unknown_kind_lists_the_kinds(capsys):
    with pytest.raises(SystemExit) as exc:
        cli_main(["config-schema", "nope"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and all(k in err for k in KINDS), err


def _write(folder, raw, name="c.yaml") -> str:
    path = os.path.join(folder, name)
    with open(path, "w", encoding="utf-8") as f:
        yaml.safe_dump(raw, f, allow_unicode=True)
    return path


def _raw(kind: str, folder: str) -> dict:
    """A complete valid config of ``kind`` with absolute paths (its model's dump)."""
    if kind == "gains":
        return _gains(folder)
    return copy.deepcopy(_shipped(kind))


@functools.cache
def _shipped(kind: str) -> dict:
    return parse_file(KINDS[kind].model, os.path.join(CONFIG, BASES[kind])).model_dump()


def _gains(folder: str) -> dict:
    raw = _raw("identification", folder)
    for d in ("unloaded", "loaded"):
        os.makedirs(os.path.join(folder, d), exist_ok=True)
    raw["data"].update(format="csv_table", table="log.csv", time_column="t", path=folder)
    raw["tls"] = {"unloaded": os.path.join(folder, "unloaded"),
                  "loaded": os.path.join(folder, "loaded"),
                  "current_column": "{joint}_current", "payload_mass": 4.0}
    return raw


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_the_base_configs_are_valid(kind, tmp_path):
    LOADERS[kind](_write(str(tmp_path), _raw(kind, str(tmp_path))))


def _leaf_paths(model: type[BaseModel], prefix=()) -> list[tuple]:
    out = []
    for name, field in model.model_fields.items():
        sub = _section_model(field.annotation)
        out.append(prefix + (name,))
        if sub is not None and len(prefix) < 2:
            out += _leaf_paths(sub, prefix + (name,))
    return out


def _section_model(annotation):
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        if isinstance(arg, type) and issubclass(arg, BaseModel):
            return arg
    return None


def _set(raw: dict, path: tuple, value) -> tuple[str, ...]:
    """Write ``value`` at ``path``; the sections it had to create (their required
    siblings may then be the ones an error names), as dotted prefixes."""
    node, created = raw, []
    for i, key in enumerate(path[:-1]):
        if not isinstance(node.get(key), dict):
            node[key] = {}
            created.append(".".join(path[:i + 1]) + ".")
        node = node[key]
    node[path[-1]] = value
    return tuple(created)


MALFORMED = st.one_of(
    st.sampled_from([float("nan"), float("inf"), -float("inf"), 1e300, -1e300, -1, 0, 1, 2,
                     10**30, -0.5, 0.5, True, False, None, "", "x", "1.0", [], {}, [1e300],
                     [float("nan")] * 3, ["a", "a"], [[1, 2, 3]] * 6, "\x00", "é" * 300]),
    st.floats(allow_nan=True, allow_infinity=True), st.integers(), st.text(max_size=30),
    st.booleans(),
    st.lists(st.one_of(st.floats(), st.integers(-3, 3), st.text(max_size=4)), max_size=8),
    st.dictionaries(st.text(max_size=6), st.one_of(st.integers(), st.text(max_size=4)),
                    max_size=3))


def _names(message: str) -> list[str]:
    return re.findall(r"(?:field|section) '([^']*)'", message)


@pytest.mark.parametrize("kind", sorted(KINDS))
@settings(max_examples=50, deadline=None)
@given(data=st.data())
def test_any_value_gives_a_config_or_an_error_naming_the_field(kind, data):
    path = data.draw(st.sampled_from(_leaf_paths(KINDS[kind].model)), label="field")
    value = data.draw(MALFORMED, label="value")
    dotted = ".".join(path)
    with tempfile.TemporaryDirectory() as folder:
        raw = _raw(kind, folder)
        created = _set(raw, path, value)
        file = _write(folder, raw)
        try:
            LOADERS[kind](file)
        except ConfigError as exc:
            message = str(exc)
            assert file in message, message
            named = _names(message)
            assert named, message
            allowed = (dotted,) + RELATED.get(dotted, ()) + created
            assert any(n.startswith(allowed) or dotted.startswith(n) for n in named), message


@settings(max_examples=50, deadline=None)
@given(blob=st.binary(max_size=200))
def test_any_bytes_give_a_config_error(blob):
    with tempfile.TemporaryDirectory() as folder:
        file = os.path.join(folder, "c.yaml")
        with open(file, "wb") as f:
            f.write(blob)
        with pytest.raises(ConfigError, match=re.escape(file)):
            load_config(file)


def test_error_names_file_field_expectation_and_value(tmp_path):
    raw = _raw("identification", str(tmp_path))
    raw["estimation"]["method"] = "magic"
    raw["processing"]["filter_order"] = 12
    file = _write(str(tmp_path), raw)
    with pytest.raises(ConfigError) as exc:
        load_config(file)
    msg = str(exc.value)
    assert file in msg
    assert "field 'estimation.method': expected 'ols', 'wls' or 'irls', got 'magic'" in msg
    assert "field 'processing.filter_order': expected less than or equal to 10, got 12" in msg


@pytest.mark.parametrize("kind,path,value,words", [
    ("identification", ("transmission", "gear_ratios"), [1.0, 2.0], "expected 6 values"),
    ("identification", ("transmission", "coupling"), [{"motor": "joint_6", "joint": "j9",
                                                       "coefficient": 1.0}], "'j9'"),
    ("identification", ("estimation", "cross_validation_folds"), 1, ">= 2 folds"),
    ("identification", ("data", "rows"), [5, 2], "0 <= first < last"),
    ("identification", ("model", "frobnicate"), True, "known: ['coulomb_friction'"),
    ("identification", ("robot", "urdf"), "example-robot-data:nope.urdf", "not found"),
    ("calibration", ("postures", "candidates"), 20_001, "less than or equal to 20000"),
    ("calibration", ("measurement", "mask"), [True, False], "expected 3 booleans"),
    ("calibration", ("data", "fixed_joints"), {"a": "x"}, "data.fixed_joints.a"),
    ("trajectory", ("trajectory", "harmonics"), 1000, "less than or equal to 50"),
    ("trajectory", ("trajectory", "starts"), 0, "greater than or equal to 1"),
    ("trajectory", ("trajectory", "workspace_max"), [0.0, 0.0, 0.0], "above workspace_min"),
    ("sim", ("truth", "suspension"), {"stiffness": [5.0, 1.0]}, "0 <= low <= high"),
    ("sim", ("rates", "mocap_hz"), 1e9, "less than or equal to 10000"),
    ("robot", ("controllers",), {"a": ["j"], "b": ["j"]}, "one controller"),
    ("suspension", ("suspension", "wheel_positions"), [[0, 0, 0]] * 5, "expected 6 items"),
])
def test_specific_refusals(tmp_path, kind, path, value, words):
    raw = _raw(kind, str(tmp_path))
    _set(raw, path, value)
    with pytest.raises(ConfigError, match=re.escape(words)):
        LOADERS[kind](_write(str(tmp_path), raw))


@pytest.mark.parametrize("text,words", [
    ("a: &a [1, 1]\n" + "".join(f"k{i}: [*a, *a]\n" for i in range(60)), "aliases"),
    ("robot: {name: x}\nrobot: {name: y}\n", "repeated"),
    ("- 1\n- 2\n", "expected a YAML mapping"),
    ("robot: [\n", "not valid YAML"),
    ("---\na: 1\n---\nb: 2\n", "not valid YAML"),
])
def test_unreadable_yaml_is_refused(tmp_path, text, words):
    file = tmp_path / "c.yaml"
    file.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError, match=words):
        load_config(str(file))


def test_non_utf8_is_refused(tmp_path):
    file = tmp_path / "c.yaml"
    file.write_bytes(b"robot:\n  name: \xff\xfe\n")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_config(str(file))


def test_yaml12_numbers_are_numbers(tmp_path):
    raw = _raw("sim", str(tmp_path))
    text = yaml.safe_dump(raw).replace("- 5000.0", "- 5.0e3")
    assert "5.0e3" in text
    (tmp_path / "c.yaml").write_text(text)
    assert load_sim_file(str(tmp_path / "c.yaml")).truth.suspension.stiffness[0] == 5000.0

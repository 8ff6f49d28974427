"""Field types shared by the config kinds: files, URDFs, names, vectors, bounded counts.

Paths are resolved against the folder of the config file (the ``base_dir`` of the
validation context) and must exist; ``example-robot-data:<relative>`` names a URDF of the
installed ``example-robot-data`` wheel.  Counts that size a computation (candidates,
harmonics, iterations, ...) carry a stated maximum so that a typo cannot exhaust the
machine.
"""
from __future__ import annotations

import os
import string
from typing import Annotated

from pydantic import AfterValidator, Field, ValidationInfo

from figaroh_ros.config.env_paths import expand_env
from figaroh_ros.errors import ModelError
from figaroh_ros.model.robot import example_robot_urdf
from figaroh_ros.model.urdf_checks import check_urdf_file

MAX_PATH = 4096                # characters of a path
MAX_NAMES = 200                # joints, frames or topics in one list
EXAMPLE_ROBOT_DATA = "example-robot-data:"
MAX_MAGNITUDE = 1e9            # |number| in a list: no SI quantity of a robot comes close,
                               # and products of two stay far from overflow


def _base_dir(info: ValidationInfo) -> str:
    return (info.context or {}).get("base_dir", os.getcwd())


def resolve_path(value: str, base_dir: str) -> str:
    """``value`` made absolute from ``base_dir`` (unless it already is), normalised;
    ``${NAME}`` is the environment variable ``NAME`` (config/env_paths.py)."""
    value = expand_env(value)
    return value if os.path.isabs(value) else os.path.normpath(os.path.join(base_dir, value))


def _existing(value: str, info: ValidationInfo) -> str:
    path = resolve_path(value, _base_dir(info))
    if not os.path.exists(path):
        raise ValueError(f"path does not exist: {path}")
    return path


def _urdf(value: str, info: ValidationInfo) -> str:
    """The URDF's path, once its text passes :func:`check_urdf_file`."""
    try:
        if value.startswith(EXAMPLE_ROBOT_DATA):
            path = example_robot_urdf(value[len(EXAMPLE_ROBOT_DATA):])
        else:
            path = _existing(value, info)
            if not os.path.isfile(path):
                raise ValueError(f"expected a URDF file, got the folder {path}")
        check_urdf_file(path)
    except ModelError as exc:
        raise ValueError(str(exc)) from None
    return path


def _file_stem(value: str) -> str:
    """A name that becomes part of output file names: no folder separator, no leading
    dot, printable."""
    bad = sorted({c for c in value if c in '/\\' or not c.isprintable()})
    if bad or value.startswith("."):
        raise ValueError("expected a name usable in a file name (no '/', '\\', control "
                         "characters or leading '.')")
    return value


def _column_template(value: str) -> str:
    """A column name with at most the placeholder ``{joint}``."""
    try:
        parts = [(f, spec, conv) for _, f, spec, conv in string.Formatter().parse(value)
                 if f is not None]
    except ValueError as exc:
        raise ValueError(f"expected a column name template ({exc})") from None
    unknown = sorted({f for f, spec, conv in parts if (f, spec, conv) != ("joint", "", None)})
    if unknown:
        raise ValueError(f"expected a column name whose only placeholder is {{joint}}, "
                         f"found {['{' + f + '}' for f in unknown]}")
    return value


def _unique(names: list[str]) -> list[str]:
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"names are repeated: {repeated}")
    return names


Name = Annotated[str, Field(min_length=1, max_length=256)]
FileStem = Annotated[str, Field(min_length=1, max_length=128), AfterValidator(_file_stem)]
ColumnTemplate = Annotated[str, Field(min_length=1, max_length=256),
                           AfterValidator(_column_template)]
Topic = Annotated[str, Field(max_length=256)]        # "": not recorded / not used
Path = Annotated[str, Field(min_length=1, max_length=MAX_PATH,
                            json_schema_extra={"format": "path"}), AfterValidator(_existing)]
Urdf = Annotated[str, Field(min_length=1, max_length=MAX_PATH,
                            json_schema_extra={"format": "urdf"}), AfterValidator(_urdf)]
Names = Annotated[list[Name], Field(min_length=1, max_length=MAX_NAMES),
                  AfterValidator(_unique)]
Real = Annotated[float, Field(ge=-MAX_MAGNITUDE, le=MAX_MAGNITUDE)]
Vector3 = Annotated[list[Real], Field(min_length=3, max_length=3)]
Interval = Annotated[list[Real], Field(min_length=2, max_length=2)]
Numbers = Annotated[list[Real], Field(max_length=MAX_NAMES)]
Seed = Annotated[int, Field(ge=0, le=2**32 - 1)]


def check_per_joint(values: list | None, joints: list[str]) -> bool:
    """True when ``values`` is absent or has one entry per joint."""
    return values is None or len(values) == len(joints)


def ordered_box(lo: list[float], hi: list[float]) -> bool:
    """True when every bound of ``hi`` exceeds the same bound of ``lo``."""
    return all(a < b for a, b in zip(lo, hi))

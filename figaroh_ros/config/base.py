"""What every config kind shares: strict sections and one readable error per refusal.

A config is a pydantic model whose fields are sections, themselves models.  Every model
refuses unknown keys, converts nothing implicitly (``"3"`` is not a number, ``1`` is not
``true``) and refuses NaN and infinities; a ``null`` value means "the default".  Rules
that tie fields together are ``model_validator``s raising :class:`Refused` with the path
of the field at fault.  :func:`parse` turns pydantic's errors into one
:class:`ConfigError` naming the file, each field path, what was expected and the value
refused.
"""
from __future__ import annotations

import os
import typing
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, model_validator
from pydantic.fields import FieldInfo

from figaroh_ros.config.yaml_file import read_mapping
from figaroh_ros.errors import ConfigError

SHOWN_ERRORS = 5               # refusals listed in one message


class Section(BaseModel):
    """A config section: unknown keys refused, strict types, finite numbers."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _null_means_default(cls, raw: Any) -> Any:
        if isinstance(raw, dict):
            return {k: v for k, v in raw.items() if v is not None}
        return raw


class Refused(ValueError):
    """A cross-field rule broken: ``field`` is the dotted path (from the model that
    checks) of the value at fault, ``value`` the value refused (if one is)."""

    def __init__(self, field: str, expected: str, value: Any = ...):
        super().__init__(expected)
        self.field, self.expected, self.value = field, expected, value


def parse(model: type[BaseModel], raw: Any, path: str, **context) -> BaseModel:
    """``raw`` (the YAML of ``path``) validated as ``model``; relative paths are resolved
    from the folder of ``path``.  Raises :class:`ConfigError`."""
    base_dir = os.path.dirname(os.path.abspath(path))
    try:
        return model.model_validate(raw, context=dict(context, base_dir=base_dir))
    except ValidationError as exc:
        raise ConfigError(describe(exc, model, path)) from None


def parse_file(model: type[BaseModel], path: str, **context) -> BaseModel:
    """The config file at ``path`` validated as ``model``."""
    return parse(model, read_mapping(path), path, **context)


def describe(exc: ValidationError, model: type[BaseModel], path: str) -> str:
    """One line per refusal (at most ``SHOWN_ERRORS``), prefixed by the file."""
    lines = [_refusal(err, model) for err in exc.errors()]
    more = len(lines) - SHOWN_ERRORS
    text = "; ".join(lines[:SHOWN_ERRORS]) + (f"; and {more} more" if more > 0 else "")
    return f"config {path}: {text}"


def field_path(loc) -> str:
    """``('transmission', 'coupling', 0, 'motor')`` -> ``transmission.coupling[0].motor``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def shown(value: Any, limit: int = 80) -> str:
    """``repr`` of a refused value, cut to ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _refusal(err: dict, model: type[BaseModel]) -> str:
    loc, kind = tuple(err["loc"]), err["type"]
    error = (err.get("ctx") or {}).get("error")
    if isinstance(error, Refused):
        where = field_path(loc + tuple(error.field.split(".")))
        got = "" if error.value is ... else f", got {shown(error.value)}"
        return f"field '{where}': {error.expected}{got}"
    if kind == "missing":
        return f"{_what(loc)} '{field_path(loc)}' is required"
    if kind == "extra_forbidden":
        known = sorted(_model_at(model, loc[:-1]).model_fields)
        return f"unknown {_what(loc)} '{field_path(loc)}'; known: {known}"
    got = shown(err["input"])
    if not loc:
        return f"expected a mapping of sections {sorted(model.model_fields)}, got {got}"
    return f"field '{field_path(loc)}': {_expected(err, error, _field_at(model, loc))}, got {got}"


def _what(loc) -> str:
    return "section" if len(loc) == 1 else "field"


def _expected(err: dict, error, field: FieldInfo | None) -> str:
    if error is not None:
        return str(error)
    msg = err["msg"]
    if err["type"] in ("too_short", "too_long") and field is not None:
        lo, hi = _length_bounds(field.metadata, field.annotation)
        return f"expected {_count(lo, hi)} items" if lo or hi else msg
    if err["type"] == "model_type":
        return "expected a mapping of fields"
    return "expected " + msg.removeprefix("Input should be ") if msg.startswith("Input") else msg


def _length_bounds(metadata, annotation) -> tuple[int | None, int | None]:
    """``min_length``, ``max_length`` of a list field, from its own constraints or from
    the first ``Annotated`` list type of its annotation."""
    metadata = [c for m in metadata for c in (m.metadata if isinstance(m, FieldInfo) else [m])]
    lo = next((m.min_length for m in metadata if hasattr(m, "min_length")), None)
    hi = next((m.max_length for m in metadata if hasattr(m, "max_length")), None)
    if lo is not None or hi is not None:
        return lo, hi
    for arg in typing.get_args(annotation):
        inner = getattr(arg, "__metadata__", ())
        found = _length_bounds(inner, typing.get_args(arg)[0] if inner else arg)
        if found != (None, None):
            return found
    return None, None


def _count(lo, hi) -> str:
    if lo is None:
        return f"at most {hi}"
    if hi is None:
        return f"at least {lo}"
    return f"{lo}" if lo == hi else f"{lo} to {hi}"


def _model_at(model: type[BaseModel], loc) -> type[BaseModel]:
    """The section model found at ``loc`` below ``model`` (list indices skipped)."""
    for key in loc:
        field = model.model_fields.get(key) if isinstance(key, str) else None
        model = (_submodel(field.annotation) if field else None) or model
    return model


def _field_at(model: type[BaseModel], loc) -> FieldInfo | None:
    """The declaration of the field at ``loc`` (None below a list item or a mapping)."""
    if not loc or not isinstance(loc[-1], str):
        return None
    return _model_at(model, loc[:-1]).model_fields.get(loc[-1])


def _submodel(annotation) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in typing.get_args(annotation):
        found = _submodel(arg)
        if found is not None:
            return found
    return None

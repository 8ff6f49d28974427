"""``docs/reference/config.md``: every config kind of ``figaroh_ros.config.kinds.KINDS``,
a table of every field (path, type, default, range or options, meaning) from the kind's
JSON schema.  A kind that extends another (its schema holds every section of the other)
lists only the sections it adds."""
from __future__ import annotations

import json

from tools.docs.markdown import anchor, cell, note

PLURAL = {"number": "numbers", "integer": "integers", "bool": "bools", "string": "strings",
          "path": "paths", "urdf": "URDFs", "mapping": "mappings"}


def resolve(node: dict, defs: dict) -> dict:
    """``node`` with a ``$ref`` (also inside ``anyOf [X, null]``) replaced by its target,
    keeping the referring node's own keys (description, default)."""
    options = [o for o in node.get("anyOf", []) if o.get("type") != "null"]
    inner = options[0] if len(options) == 1 else node
    if "$ref" in inner:
        target = defs[inner["$ref"].rsplit("/", 1)[1]]
        return {**target, **{k: v for k, v in node.items() if k not in ("anyOf", "$ref")},
                "description": node.get("description") or target.get("description", "")}
    return {**inner, **{k: v for k, v in node.items() if k != "anyOf"}} if options else node


def type_name(node: dict) -> str:
    """``number``, ``list of 3 numbers``, ``path``, ``mapping of name to number``..."""
    kind = node.get("type")
    if "anyOf" in node:
        return " or ".join(type_name(o) for o in node["anyOf"] if o.get("type") != "null")
    if "const" in node:
        return f"`{node['const']}`"
    if "enum" in node:
        return "option"
    if kind == "array":
        item = node.get("items", {})
        n = node.get("minItems") if node.get("minItems") == node.get("maxItems") else None
        inner = "mapping" if "properties" in item else type_name(item)
        inner = PLURAL.get(inner, f"({inner})")
        return f"list of {n} {inner}" if n else f"list of {inner}"
    if kind == "object":
        values = node.get("additionalProperties")
        return f"mapping of name to {type_name(values)}" if isinstance(values, dict) \
            else "mapping"
    if kind == "string":
        return node.get("format", "string")
    return {"number": "number", "integer": "integer", "boolean": "bool"}.get(kind, "any")


def number(x) -> str:
    return str(x) if isinstance(x, int) else f"{x:g}"


def bounds(node: dict) -> str:
    """Options, numeric range and list length of a field."""
    if "enum" in node:
        return " \\| ".join(f"`{v}`" for v in node["enum"])
    parts = [f"{op} {number(node[key])}" for key, op in (
        ("exclusiveMinimum", ">"), ("minimum", "≥"), ("exclusiveMaximum", "<"),
        ("maximum", "≤")) if key in node]
    if node.get("type") == "array":
        lo, hi = node.get("minItems"), node.get("maxItems")
        if hi is not None and lo != hi:
            parts.append(f"{lo} to {hi} items" if lo else f"≤ {hi} items")
        elif lo is not None and hi is None:
            parts.append(f"≥ {lo} items")
        inner = bounds(node.get("items", {}))
        parts += [f"each {inner}"] if inner else []
    return ", ".join(parts)


def shown_default(node: dict, required: bool) -> str:
    if "default" not in node:
        return "required" if required else ""
    value = node["default"]
    if value is None:
        return "none"
    return cell(f"`{value}`" if isinstance(value, str) else f"`{json.dumps(value)}`")


def rows(node: dict, defs: dict, prefix: str, required: bool) -> list[str]:
    """Table rows of the object ``node`` (fields of sections, items of lists of objects)."""
    out = []
    for name, field in node.get("properties", {}).items():
        field = resolve(field, defs)
        if "items" in field:
            field = dict(field, items=resolve(field["items"], defs))
        path = f"{prefix}{name}"
        need = required and name in node.get("required", [])
        if field.get("type") == "object" and "properties" in field:
            state = "required" if need else "optional"
            text = cell(field.get("description", ""))
            out.append(f"| **`{path}`** | section | {state} | | {text} |")
            out += rows(field, defs, path + ".", True)
            continue
        out.append(f"| `{path}` | {cell(type_name(field))} | {shown_default(field, need)} | "
                   f"{bounds(field)} | {cell(field.get('description', ''))} |")
        item = field.get("items", {})
        if field.get("type") == "array" and "properties" in item:
            out += rows(item, defs, path + "[].", True)
    return out


def base_kind(kind: str, kinds) -> str | None:
    """The kind whose model ``kind``'s model extends (the nearest), if any."""
    model = kinds[kind].model
    parents = [k for k, v in kinds.items() if k != kind and v.model is not model
               and issubclass(model, v.model)]
    return max(parents, key=lambda k: len(kinds[k].model.__mro__), default=None)


def section(kind: str, kinds) -> list[str]:
    """The page section of ``kind``: what reads it, its shipped files, the table."""
    schema = kinds[kind].model.model_json_schema()
    defs = schema.get("$defs", {})
    base = base_kind(kind, kinds)
    if base:
        inherited = set(kinds[base].model.model_fields)
        schema = dict(schema, properties={k: v for k, v in schema["properties"].items()
                                          if k not in inherited})
    k = kinds[kind]
    head = [f"## {kind}", "",
            f"{cell(schema.get('description', ''))} Read by {k.used_by}"
            + (f"; shipped: `config/{k.files}`." if k.files else "."), ""]
    if base:
        head += [f"The sections of a [`{base}`](#{anchor(base)}) config, plus:", ""]
    lines = ["| field | type | default | range / options | meaning |",
             "|---|---|---|---|---|"]
    return head + lines + rows(schema, defs, "", True) + [""]


def render() -> str:
    from figaroh_ros.config.kinds import KINDS

    out = [note("the config models' JSON schemas (`figaroh_ros/config/`, "
                "`figaroh_ros.config.kinds.KINDS`)"),
           "# Config reference", "",
           "Every YAML config the commands and nodes read, one section per kind, every "
           "field with its type, default, range and meaning. `figaroh-ros config-schema "
           "KIND` prints the JSON schema of a kind. A field marked *required* has no "
           "default; an optional section may be left out.", ""]
    out += [f"- [{kind}](#{anchor(kind)}): read by {KINDS[kind].used_by}" for kind in KINDS]
    out.append("")
    for kind in KINDS:
        out += section(kind, KINDS)
    return "\n".join(out).rstrip("\n") + "\n"

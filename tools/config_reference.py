#!/usr/bin/env python3
"""Generate the README's config tables from the config models (their JSON schemas).

    .venv/bin/python tools/config_reference.py           # rewrite the marked README blocks
    .venv/bin/python tools/config_reference.py --check   # exit 1 if README is stale

Each kind of ``figaroh_ros.config.kinds.KINDS`` has one block in README.md between
``<!-- config-reference:KIND:begin -->`` and ``<!-- config-reference:KIND:end -->``: a
table of every field (path, type, default, range or options, meaning).  A kind that
extends another (``gains``, ``sim``) lists only the sections it adds.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from figaroh_ros.config.kinds import KINDS, json_schema  # noqa: E402  (after the path)

README = os.path.join(ROOT, "README.md")
# kind -> (the kind it extends, the sections it adds)
EXTENDS = {"gains": ("identification", ("tls",)),
           "sim": ("robot", ("truth", "noise", "rates"))}
BLOCK = re.compile(r"(<!-- config-reference:(\w+):begin -->\n)(.*?)(<!-- config-reference:"
                   r"\2:end -->)", re.S)


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


PLURAL = {"number": "numbers", "integer": "integers", "bool": "bools", "string": "strings",
          "path": "paths", "urdf": "URDFs", "mapping": "mappings"}


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
    """Options, numeric range and list length of a field, as README text."""
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
    return f"`{value}`" if isinstance(value, str) else f"`{json.dumps(value)}`"


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


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
        out.append(f"| `{path}` | {type_name(field)} | {shown_default(field, need)} | "
                   f"{bounds(field)} | {cell(field.get('description', ''))} |")
        item = field.get("items", {})
        if field.get("type") == "array" and "properties" in item:
            out += rows(item, defs, path + "[].", True)
    return out


def table(kind: str) -> str:
    """The README block of ``kind``: what reads it, its shipped files, the table."""
    schema = json_schema(kind)
    defs = schema.get("$defs", {})
    base, added = EXTENDS.get(kind, (None, None))
    if added:
        schema = dict(schema, properties={k: schema["properties"][k] for k in added})
    k = KINDS[kind]
    head = [f"{cell(schema.get('description', ''))} Read by {k.used_by}"
            + (f"; shipped: `config/{k.files}`." if k.files else ".")]
    if base:
        head.append(f"The sections of a `{base}` config, plus:")
    lines = ["| field | type | default | range / options | meaning |", "|---|---|---|---|---|"]
    return "\n".join(head) + "\n\n" + "\n".join(lines + rows(schema, defs, "", True)) + "\n"


def rewrite(text: str) -> tuple[str, list[str]]:
    """README ``text`` with every block regenerated, and the kinds without a block."""
    found = set()

    def fill(m):
        found.add(m.group(2))
        if m.group(2) not in KINDS:
            raise SystemExit(f"README: unknown config kind in marker: {m.group(2)}")
        return m.group(1) + table(m.group(2)) + m.group(4)

    return BLOCK.sub(fill, text), sorted(set(KINDS) - found)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if README is stale")
    parser.add_argument("--readme", default=README)
    args = parser.parse_args(argv)
    with open(args.readme, encoding="utf-8") as f:
        text = f.read()
    new, missing = rewrite(text)
    if missing:
        print(f"README: no config-reference block for {missing}", file=sys.stderr)
        return 1
    if args.check:
        if new != text:
            print("README config reference is stale: run tools/config_reference.py",
                  file=sys.stderr)
            return 1
        return 0
    if new != text:
        with open(args.readme, "w", encoding="utf-8") as f:
            f.write(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())

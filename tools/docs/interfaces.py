"""``docs/reference/interfaces.md``: every message, service and action of the package
(``msg/``, ``srv/``, ``action/``), read with rosidl_adapter's parser: each part's fields
with their types and defaults, its constants with their values, and the comments of the
file."""
from __future__ import annotations

import glob
import os

from tools.docs.markdown import anchor, cell, note, table

PARTS = {"msg": ("",), "srv": ("request", "response"),
         "action": ("goal", "result", "feedback")}


def _comment(item) -> str:
    return cell(" ".join(item.annotations.get("comment", [])))


def _value(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "`true`" if value else "`false`"
    return f"`{value!r}`" if isinstance(value, str) else f"`{value}`"


def _type(t) -> str:
    """A field's type, linked to its page section when it is one of ours."""
    return cell(f"`{t}`")


def _part(spec, title: str) -> list[str]:
    out = [f"**{title}**", ""] if title else []
    text = _comment(spec)
    if text and title:
        out += [text, ""]
    if spec.constants:
        out += table(["constant", "type", "value", "meaning"],
                     [[f"`{c.name}`", f"`{c.type}`", _value(c.value), _comment(c)]
                      for c in spec.constants]) + [""]
    if spec.fields:
        out += table(["field", "type", "default", "meaning"],
                     [[f"`{f.name}`", _type(f.type), _value(f.default_value), _comment(f)]
                      for f in spec.fields]) + [""]
    if not spec.constants and not spec.fields:
        out += ["(empty)", ""]
    return out


def _parse(kind: str, path: str):
    from rosidl_adapter import parser

    read = {"msg": parser.parse_message_file, "srv": parser.parse_service_file,
            "action": parser.parse_action_file}[kind]
    return read("figaroh_ros", path)


def files(root: str) -> dict[str, list[str]]:
    return {kind: sorted(glob.glob(os.path.join(root, kind, f"*.{kind}"))) for kind in PARTS}


def render(root: str) -> str:
    found = files(root)
    out = [note("the interface files `msg/*.msg`, `srv/*.srv`, `action/*.action` and "
                "their comments"),
           "# Interface reference", "",
           "Every message, service and action of `figaroh_ros`, with the comments of "
           "its file. Which node serves or publishes each is in the "
           "[node reference](nodes.md).", ""]
    for kind, paths in found.items():
        for path in paths:
            name = os.path.splitext(os.path.basename(path))[0]
            full = f"figaroh_ros/{kind}/{name}"
            out.append(f"- [`{full}`](#{anchor(full)})")
    out.append("")
    for kind, paths in found.items():
        for path in paths:
            name = os.path.splitext(os.path.basename(path))[0]
            spec = _parse(kind, path)
            out += [f"## {'figaroh_ros'}/{kind}/{name}", "",
                    f"File: [`{kind}/{name}.{kind}`](../../{kind}/{name}.{kind})", ""]
            if kind == "msg":
                text = _comment(spec)
                out += ([text, ""] if text else []) + _part(spec, "")
                continue
            parts = [getattr(spec, p) for p in PARTS[kind]]
            text = _comment(parts[0])
            out += [text, ""] if text else []
            for part, spec_part in zip(PARTS[kind], parts):
                part_text = _comment(spec_part) if part != PARTS[kind][0] else ""
                out += [f"**{part.capitalize()}**", ""] + \
                    ([part_text, ""] if part_text else []) + _part(spec_part, "")
    return "\n".join(out).rstrip("\n") + "\n"

"""``docs/reference/cli.md``: every ``figaroh-ros`` verb and sub-verb with its usage and
options, read from the argparse parser (``figaroh_ros.cli.main.build_parser``), and the
exit codes as ``figaroh_ros.cli.main`` states them."""
from __future__ import annotations

import argparse
import inspect
import os
import re

from tools.docs.markdown import anchor, cell, note, table

WIDTH = 90          # usage lines wrapped as in a terminal of this width


def _subparsers(parser: argparse.ArgumentParser):
    """(name, help, parser) of each sub-command of ``parser``, in declaration order."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                yield name, helps.get(name, ""), sub


def _usage(parser: argparse.ArgumentParser) -> str:
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(WIDTH)       # argparse wraps at the terminal's width
    try:
        text = parser.format_usage()
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old
    lines = text.removeprefix("usage: ").rstrip().splitlines()
    return "\n".join(lines[:1] + [line[len("usage: "):] for line in lines[1:]])


def _default(action) -> str:
    if action.required or isinstance(action, (argparse._StoreTrueAction,
                                              argparse._StoreFalseAction)):
        return ""
    if action.default in (None, argparse.SUPPRESS) or action.option_strings == []:
        return ""
    return f"`{action.default}`" if action.default != "" else '`""`'



def _takes(action) -> str:
    """What an option takes: its metavar, its type, how many."""
    if action.nargs == 0:
        return "flag"
    kind = getattr(action.type, "__name__", "string") if action.type else "string"
    kind = {"float": "number", "int": "integer", "str": "string"}.get(kind, kind)
    if action.metavar:
        kind = f"{kind} `{action.metavar}`"
    if action.nargs == "+":
        return f"one or more: {kind}"
    if action.nargs == "*":
        return f"any number: {kind}"
    if isinstance(action, argparse._AppendAction):
        return f"{kind}, repeatable"
    return kind


def _options(parser: argparse.ArgumentParser) -> list[str]:
    groups = {id(a): g for g in parser._mutually_exclusive_groups for a in g._group_actions}
    rows = []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        name = ", ".join(f"`{s}`" for s in action.option_strings) or f"`{action.dest}`"
        need = "required" if action.required or not action.option_strings else ""
        group = groups.get(id(action))
        if group is not None:
            others = [o for a in group._group_actions if a is not action
                      for o in a.option_strings[:1]]
            need = ("one of it and " if group.required else "not with ") + \
                ", ".join(f"`{o}`" for o in others)
        choices = " \\| ".join(f"`{c}`" for c in action.choices) if action.choices else ""
        help_text = (action.help or "").replace("%%", "%")
        rows.append([name, cell(_takes(action)), need, _default(action), choices,
                     cell(help_text)])
    if not rows:
        return []
    return table(["argument", "takes", "required", "default", "choices", "meaning"], rows)


def _verb(path: list[str], help_text: str, parser, level: int) -> list[str]:
    title = " ".join(path)
    out = [f"{'#' * level} `{title}`", ""]
    if help_text:
        out += [cell(help_text[0].upper() + help_text[1:]) + ".", ""]
    if any(not isinstance(a, argparse._HelpAction) for a in parser._actions):
        out += ["```text", _usage(parser), "```", ""]
    opts = _options(parser)
    out += opts + ([""] if opts else [])
    for name, sub_help, sub in _subparsers(parser):
        out += _verb(path + [name], sub_help, sub, level + 1)
    return out


def rst_to_markdown(text: str) -> str:
    """A docstring's reStructuredText roles and literals as Markdown, on one line."""
    text = re.sub(r":\w+:`~?([^`]+)`", r"`\1`", " ".join(text.split()))
    return text.replace("``", "`")


def _index(path: list[str], parser, depth: int = 0) -> list[str]:
    out = []
    for name, help_text, sub in _subparsers(parser):
        title = " ".join(path + [name])
        out.append(f"{'  ' * depth}- [`{title}`](#{anchor(title)}): {cell(help_text)}")
        out += _index(path + [name], sub, depth + 1)
    return out


def render() -> str:
    from figaroh_ros.cli import main as cli_main

    parser = cli_main.build_parser()
    parser.prog = "figaroh-ros"
    out = [note("the argparse parsers (`figaroh_ros/cli/parsers.py`, "
                "`figaroh_ros.cli.main.build_parser`) and `figaroh_ros/cli/main.py`"),
           "# `figaroh-ros` command reference", "",
           "Every verb and sub-verb with its arguments, as `figaroh-ros VERB --help` "
           "prints them. `launch` and `demo` read their own arguments (see their "
           "sections).", ""]
    out += _index(["figaroh-ros"], parser) + [""]
    out += ["## Exit codes", "", rst_to_markdown(inspect.getdoc(cli_main)), ""]
    for name, help_text, sub in _subparsers(parser):
        out += _verb(["figaroh-ros", name], help_text, sub, 2)
    return "\n".join(out).rstrip("\n") + "\n"

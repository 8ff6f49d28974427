"""ROS 2 YAML launch files read the way ``ros2 launch`` reads them, for the no-ROS runner.

Accepted, with ``ros2 launch``'s meaning (launch / launch_ros YAML frontends):

* ``arg``: ``name``, ``default``, ``description``; ``name:=value`` on the command line
  overrides it (an argument nobody declared is reported and ignored, as ``ros2 launch``
  passes it on unused);
* ``node``: ``pkg``, ``exec``, ``name``, ``namespace``, ``param`` (``name``/``value`` pairs
  or ``from: file.yaml``), ``remap`` (``from``/``to``), ``args``, ``ros_args``, ``output``,
  ``respawn``, ``respawn_delay``, ``on_exit: shutdown`` (the whole launch stops with this
  node), ``env`` (``name``/``value``), ``if`` / ``unless``;
* ``group``: ``push-ros-namespace`` (or ``namespace``), ``scoped``, ``if`` / ``unless``,
  with its own list of entries; ``include``: ``file`` and ``arg`` (``name``/``value``),
  ``if`` / ``unless``;
* ``let``: ``name``, ``value``;
* substitutions ``$(var NAME)``, ``$(env NAME)`` (an error when unset), ``$(env NAME
  DEFAULT)``, ``$(find-pkg-share PKG)``, ``$(not X)``, ``$(eval ...)`` refused.

Anything else is refused with the file, the line and the tag.  A condition is true for
``true``/``1`` and false for ``false``/``0`` (case-insensitive), anything else refused.
"""
from __future__ import annotations

import os
import re
import shlex

import yaml

from figaroh_ros.errors import ConfigError
from figaroh_ros.io.share import share_directory

NODE_KEYS = {"pkg", "exec", "name", "namespace", "param", "remap", "args", "ros_args",
             "output", "respawn", "respawn_delay", "on_exit", "env", "if", "unless"}
GROUP_KEYS = {"push-ros-namespace", "namespace", "scoped", "if", "unless", "launch"}
INCLUDE_KEYS = {"file", "arg", "if", "unless"}
SUBSTITUTION = re.compile(r"\$\(([^()]*)\)")


class _LineLoader(yaml.SafeLoader):
    """Mappings remember the line they start on (``__line__``)."""


def _mapping_with_line(loader, node):
    mapping = loader.construct_mapping(node, deep=True)
    mapping["__line__"] = node.start_mark.line + 1
    return mapping


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping_with_line)


class Scope:
    """Where an entry is read: its file, the arguments in force, the namespace pushed."""

    def __init__(self, path: str, args: dict[str, str], namespace: str = ""):
        self.path, self.args, self.namespace = path, args, namespace

    def refuse(self, entry, what: str) -> ConfigError:
        line = entry.get("__line__", "?") if isinstance(entry, dict) else "?"
        return ConfigError(f"{self.path}:{line}: {what}")

    def child(self, namespace: str | None = None, scoped: bool = True) -> "Scope":
        ns = self.namespace
        if namespace:
            ns = namespace if namespace.startswith("/") else f"{ns}/{namespace}"
        return Scope(self.path, dict(self.args) if scoped else self.args, ns)


def find_package_share(pkg: str) -> str:
    """The share folder of ``pkg``: ours, or one on ``AMENT_PREFIX_PATH``."""
    if pkg == "figaroh_ros":
        found = share_directory()
        if found is not None:
            return found
    for prefix in filter(None, os.environ.get("AMENT_PREFIX_PATH", "").split(":")):
        candidate = os.path.join(prefix, "share", pkg)
        if os.path.isdir(candidate):
            return candidate
    raise ConfigError(f"package '{pkg}' not found (no share/{pkg} under AMENT_PREFIX_PATH)")


def substitute(text, scope: Scope, entry=None):
    """``text`` with every ``$(...)`` resolved in ``scope``."""
    if not isinstance(text, str):
        return text

    def one(m):
        parts = m.group(1).split()
        kind, rest = (parts[0], parts[1:]) if parts else ("", [])
        if kind == "var" and len(rest) == 1:
            if rest[0] not in scope.args:
                raise scope.refuse(entry, f"undefined launch argument '{rest[0]}'")
            return scope.args[rest[0]]
        if kind == "env" and rest:
            if rest[0] not in os.environ and len(rest) == 1:
                raise scope.refuse(entry, f"environment variable '{rest[0]}' is not set "
                                   f"(give a default: $(env {rest[0]} DEFAULT))")
            return os.environ.get(rest[0], " ".join(rest[1:]))
        if kind == "find-pkg-share" and len(rest) == 1:
            return find_package_share(rest[0])
        if kind == "not" and len(rest) == 1:
            return "false" if condition(rest[0], scope, entry) else "true"
        raise scope.refuse(entry, f"unsupported substitution $({m.group(1)})")
    return SUBSTITUTION.sub(one, text)


def condition(value, scope: Scope, entry) -> bool:
    text = str(substitute(str(value), scope, entry)).strip().lower()
    if text in ("true", "1"):
        return True
    if text in ("false", "0"):
        return False
    raise scope.refuse(entry, f"condition {value!r} is {text!r}, expected true or false")


def _enabled(entry: dict, scope: Scope) -> bool:
    """The entry's ``if`` / ``unless`` conditions."""
    if "if" in entry and not condition(entry["if"], scope, entry):
        return False
    return not ("unless" in entry and condition(entry["unless"], scope, entry))


def _check_keys(entry: dict, allowed: set[str], tag: str, scope: Scope) -> None:
    unknown = sorted(set(entry) - allowed - {"__line__"})
    if unknown:
        raise scope.refuse(entry, f"'{tag}' does not take {unknown} here "
                           f"(accepted: {sorted(allowed)})")


def _params(entry: dict, scope: Scope) -> list[tuple[str, object]]:
    """``param`` entries: name/value pairs, or every parameter of a ``from`` file."""
    out = []
    for p in entry.get("param", []):
        if "from" in p:
            out += _params_file(substitute(p["from"], scope, p), scope, p)
        elif "name" in p and "value" in p:
            out.append((p["name"], substitute(p["value"], scope, p)))
        else:
            raise scope.refuse(p, "a param needs name and value, or from")
    return out


def _params_file(path: str, scope: Scope, entry) -> list[tuple[str, object]]:
    """The ``ros__parameters`` of a parameter file (any node name or ``/**``)."""
    try:
        with open(path) as f:
            doc = yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as exc:
        raise scope.refuse(entry, f"param file {path}: {exc}") from None
    found = []
    for body in (doc or {}).values():
        if isinstance(body, dict) and isinstance(body.get("ros__parameters"), dict):
            found += list(body["ros__parameters"].items())
    if not found and doc:
        raise scope.refuse(entry, f"param file {path}: no '<node>: ros__parameters:' mapping")
    return found


def _node(entry: dict, scope: Scope) -> dict:
    _check_keys(entry, NODE_KEYS, "node", scope)
    if "pkg" not in entry or "exec" not in entry:
        raise scope.refuse(entry, "a node needs pkg and exec")
    node = {k: substitute(entry.get(k), scope, entry)
            for k in ("pkg", "exec", "name", "output", "on_exit")}
    own = substitute(entry.get("namespace") or "", scope, entry)
    node["namespace"] = scope.child(own).namespace if own or scope.namespace else ""
    node["param"] = _params(entry, scope)
    node["remap"] = [(substitute(r["from"], scope, r), substitute(r["to"], scope, r))
                     for r in entry.get("remap", [])]
    node["args"] = shlex.split(str(substitute(entry.get("args", ""), scope, entry)))
    node["ros_args"] = shlex.split(str(substitute(entry.get("ros_args", ""), scope, entry)))
    node["env"] = {e["name"]: str(substitute(e["value"], scope, e))
                   for e in entry.get("env", [])}
    node["respawn"] = condition(entry.get("respawn", False), scope, entry)
    node["respawn_delay"] = float(substitute(entry.get("respawn_delay", 0.0), scope, entry))
    node["line"] = f"{scope.path}:{entry.get('__line__', '?')}"
    return node


def _entries(entries, scope: Scope, overrides: dict[str, str]) -> list[dict]:
    if not isinstance(entries, list):
        raise ConfigError(f"{scope.path}: expected a list of launch entries")
    nodes = []
    for entry in entries:
        if not isinstance(entry, dict) or len(set(entry) - {"__line__"}) != 1:
            raise scope.refuse(entry, "each entry is one of arg, let, node, group, include")
        kind = next(k for k in entry if k != "__line__")
        body = entry[kind] if isinstance(entry[kind], dict) else {}
        body.setdefault("__line__", entry.get("__line__"))
        nodes += _entry(kind, body, scope, overrides)
    return nodes


def _entry(kind: str, body: dict, scope: Scope, overrides: dict[str, str]) -> list[dict]:
    if kind == "arg":
        name = body.get("name")
        if name in overrides:
            scope.args[name] = overrides[name]
        elif "default" in body:
            scope.args[name] = str(substitute(str(body["default"]), scope, body))
        elif name not in scope.args:
            raise scope.refuse(body, f"launch argument '{name}' has no default: give "
                               f"{name}:=...")
        return []
    if kind == "let":
        scope.args[body["name"]] = str(substitute(str(body["value"]), scope, body))
        return []
    if kind in ("node", "group", "include") and not _enabled(body, scope):
        return []
    if kind == "node":
        return [_node(body, scope)]
    if kind == "group":
        _check_keys(body, GROUP_KEYS, "group", scope)
        ns = substitute(body.get("push-ros-namespace") or body.get("namespace") or "",
                        scope, body)
        inner = scope.child(ns, scoped=condition(body.get("scoped", True), scope, body))
        return _entries(body.get("launch", []), inner, {})
    if kind == "include":
        _check_keys(body, INCLUDE_KEYS, "include", scope)
        given = {a["name"]: str(substitute(a["value"], scope, a)) for a in body.get("arg", [])}
        path = substitute(body["file"], scope, body)
        return read_launch(path, given, scope.namespace)
    raise scope.refuse(body, f"unsupported tag '{kind}' (arg, let, node, group, include)")


def read_launch(path: str, overrides: dict[str, str], namespace: str = "") -> list[dict]:
    """The nodes a launch file starts, every substitution and condition resolved."""
    try:
        with open(path) as f:
            doc = yaml.load(f, Loader=_LineLoader)
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read launch file {path}: {exc}") from None
    if not isinstance(doc, dict) or "launch" not in doc:
        raise ConfigError(f"{path}: expected a mapping with a 'launch' list")
    scope = Scope(path, {}, namespace)
    return _entries(doc["launch"], scope, overrides)


def declared(path: str) -> set[str]:
    """The arguments a launch file declares at its top level."""
    with open(path) as f:
        doc = yaml.safe_load(f) or {}
    return {e["arg"]["name"] for e in doc.get("launch", []) if isinstance(e, dict)
            and isinstance(e.get("arg"), dict)}

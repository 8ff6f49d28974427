"""Reading a config file: one UTF-8 YAML mapping, few aliases, no repeated keys.

``yaml.safe_load`` builds nothing but plain data, yet a file can still hurt: aliases
nesting aliases expand exponentially once the document is walked ("billion laughs"), a
repeated key silently keeps the last value, and a binary file raises a decoding error far
from the field it concerns.  Each is refused here with a :class:`ConfigError` naming the
file.
"""
from __future__ import annotations

import os
import re

import yaml

from figaroh_ros.errors import ConfigError

MAX_BYTES = 1_000_000          # a config is a page of YAML, never a data set
MAX_ALIASES = 100              # ``*anchor`` references per document
MAX_VALUES = 100_000           # values of the document once every alias is expanded


class _ConfigLoader(yaml.SafeLoader):
    """``SafeLoader`` that counts aliases and refuses repeated mapping keys."""

    aliases = 0

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                mark = self.peek_event().start_mark
                raise yaml.YAMLError(f"more than {MAX_ALIASES} aliases (*name) {mark}")
        return super().compose_node(parent, index)

    def compose_document(self):
        node = super().compose_document()
        if node is not None and _expanded_size(node, {}) > MAX_VALUES:
            raise yaml.YAMLError(f"the document expands to more than {MAX_VALUES} values "
                                 "(aliases nesting aliases)")
        return node

    def construct_mapping(self, node, deep=False):
        keys = [self.construct_object(k, deep=True) for k, _ in node.value]
        repeated = sorted({str(k) for k in keys if keys.count(k) > 1})
        if repeated:
            raise yaml.YAMLError(f"key {repeated[0]!r} is repeated {node.start_mark}")
        return super().construct_mapping(node, deep)


def _expanded_size(node, memo: dict) -> int:
    """Values under ``node`` counting each alias as a full copy (memoised per node)."""
    if id(node) not in memo:
        memo[id(node)] = 0                  # a node nesting itself counts once
        if isinstance(node, yaml.SequenceNode):
            size = 1 + sum(_expanded_size(n, memo) for n in node.value)
        elif isinstance(node, yaml.MappingNode):
            size = 1 + sum(_expanded_size(k, memo) + _expanded_size(v, memo)
                           for k, v in node.value)
        else:
            size = 1
        memo[id(node)] = size
    return memo[id(node)]


_ConfigLoader.add_implicit_resolver(   # after int and YAML 1.1 float: only what they miss
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."))


def read_yaml(path: str):
    """The YAML document at ``path``, or a :class:`ConfigError` saying why not."""
    if not os.path.isfile(path):
        raise ConfigError(f"config file not found: {path}")
    if os.path.getsize(path) > MAX_BYTES:
        raise ConfigError(f"config {path}: larger than {MAX_BYTES} bytes")
    try:
        with open(path, encoding="utf-8") as f:
            return yaml.load(f, Loader=_ConfigLoader)
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config {path} is not UTF-8 text: {exc}") from None
    except (yaml.YAMLError, RecursionError) as exc:
        raise ConfigError(f"config {path} is not valid YAML: {exc}") from None


def read_mapping(path: str) -> dict:
    """The YAML mapping at ``path`` (an empty file is an empty mapping)."""
    raw = read_yaml(path)
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"config {path}: expected a YAML mapping of sections, "
                          f"got {type(raw).__name__}")
    return raw

"""A package's public names loaded on first use (PEP 562 module ``__getattr__``).

A package ``__init__`` maps each name it offers to the module defining it; importing the
package then loads none of them, and the first ``package.name`` (or ``from package import
name``) imports that one module only.  A command thus pays for what its task uses.
"""
from __future__ import annotations

from importlib import import_module


def lazy_names(namespace: dict, public: dict[str, str]):
    """``(__getattr__, __dir__)`` for the package whose ``globals()`` is ``namespace``,
    ``public`` mapping each name to the module that defines it."""
    package = namespace["__name__"]

    def load(name: str):
        if name not in public:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(public[name]), name)
        namespace[name] = value          # later look-ups bypass this function
        return value

    def names():
        return sorted(set(namespace) | set(public))
    return load, names

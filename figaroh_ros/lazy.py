"""A package's public names loaded on first use (PEP 562 module ``__getattr__``).

A package ``__init__`` maps each name it offers to the module defining it; importing the
package then loads none of them, and the first ``package.name`` (or ``from package import
name``) imports that one module only.  A command thus pays for what its task uses.
A package may also name some of its submodules: ``package.sub`` then imports ``sub`` at
its first use (a node keeps ``from figaroh_ros import tasks`` at its top and loads the
task module ``tasks.preflight`` when a goal needs it, not when it starts).
"""
from __future__ import annotations

from importlib import import_module


def lazy_names(namespace: dict, public: dict[str, str], submodules: tuple[str, ...] = ()):
    """``(__getattr__, __dir__)`` for the package whose ``globals()`` is ``namespace``,
    ``public`` mapping each name to the module that defines it, ``submodules`` the short
    names of the package's own modules loaded on first use."""
    package = namespace["__name__"]

    def load(name: str):
        if name in submodules:
            return import_module(f"{package}.{name}")   # the import binds it in namespace
        if name not in public:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(public[name]), name)
        namespace[name] = value          # later look-ups bypass this function
        return value

    def names():
        return sorted(set(namespace) | set(public) | set(submodules))
    return load, names

"""``${NAME}`` in a config path: the value of the environment variable ``NAME``.

The shipped configs name real recordings as ``${FIGAROH_DATA}/<robot>/<file>`` so that an
installed package refers to nothing outside itself: the recordings live wherever the user
keeps them (``FIGAROH_DATA``), or come from the command line (``--data``, ``--validate``,
``--bag``), which replaces the config's path before it is read.  Only the braced form is
expanded (a ``$`` alone is kept, as in a file name); an unset variable is refused by name.
"""
from __future__ import annotations

import os
import re

_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand_env(value: str) -> str:
    """``value`` with every ``${NAME}`` replaced by the environment's ``NAME``."""
    def _value(match: re.Match) -> str:
        name = match.group(1)
        if not os.environ.get(name):
            raise ValueError(f"the environment variable {name} is not set (set it "
                             "to the folder holding the data, or give the file on the "
                             "command line)")
        return os.environ[name]
    return _VARIABLE.sub(_value, value)

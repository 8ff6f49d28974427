"""Where the package's shared files (msg/, config/, launch/) are: the source checkout, or
the install space's ``share/figaroh_ros`` found through the ament index."""
from __future__ import annotations

import os

SOURCE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def share_directory() -> str | None:
    """The checkout holding ``package.xml`` beside these sources, else the installed share
    directory, else ``None``."""
    if os.path.isfile(os.path.join(SOURCE_ROOT, "package.xml")):
        return SOURCE_ROOT
    try:
        from ament_index_python.packages import get_package_share_directory  # ROS install only
        return get_package_share_directory("figaroh_ros")
    except Exception:          # not installed in an ament prefix
        return None

"""Which task a calibration config asks for, read before the task is loaded: a config
whose ``measurement`` says ``type: camera`` is a camera calibration from a bag
(``figaroh_ros.tasks.camera_bag``), every other a geometric calibration."""
from __future__ import annotations

from figaroh_ros.config.yaml_file import read_mapping


def measures_pixels(path: str) -> bool:
    """Whether the config at ``path`` says ``measurement: {type: camera}``."""
    raw = read_mapping(path)
    m = raw.get("measurement") if isinstance(raw, dict) else None
    return isinstance(m, dict) and m.get("type") == "camera"


__all__ = ["measures_pixels"]

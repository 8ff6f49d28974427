"""rosbag2 ``metadata.yaml`` in the form Humble, Jazzy and Kilted all open: version 8.

rosbag2's metadata versions (``rosbag2_storage/metadata_io.cpp``): 4 serialises each
topic's ``offered_qos_profiles`` as a YAML *string* with the rmw enums as integers, 6 adds
``custom_data`` (a map: an empty map, never null, or yaml-cpp refuses the file), 7
``ros_distro``, 8 ``type_description_hash`` (RIHS01) per topic, and 9 turns the QoS profiles
into a YAML *list* with the enums as lower-case names.  Humble's ``ros2 bag`` reads the QoS
field as a string ("yaml-cpp: bad conversion" on version 9) and ignores the keys it does
not know; Jazzy and Kilted read every version up to their own.  Version 8 with the string
form is therefore the one form all three open.  ``offered_qos`` reads both forms back.
"""
from __future__ import annotations

import os

import yaml

from figaroh_ros.errors import DataError

VERSION = 8
_TIME_KEYS = ("deadline", "lifespan", "liveliness_lease_duration")
_ENUMS = {"history": ["system_default", "keep_last", "keep_all", "unknown"],
          "reliability": ["system_default", "reliable", "best_effort", "unknown",
                          "best_available"],
          "durability": ["system_default", "transient_local", "volatile", "unknown",
                         "best_available"],
          "liveliness": ["system_default", "automatic", "manual_by_node", "manual_by_topic",
                         "unknown", "best_available"]}


def qos_dict(q) -> dict:
    """One rosbags ``Qos`` as rosbag2's version-8 mapping (enums as the rmw integers)."""
    out = {"history": int(q.history.value), "depth": int(q.depth),
           "reliability": int(q.reliability.value), "durability": int(q.durability.value),
           "liveliness": int(q.liveliness.value),
           "avoid_ros_namespace_conventions": bool(q.avoid_ros_namespace_conventions)}
    for key in _TIME_KEYS:
        t = getattr(q, key)
        out[key] = {"sec": int(t.sec), "nsec": int(t.nsec)}
    return out


def qos_string(profiles) -> str:
    """The offered profiles of one topic as the YAML string of version <= 8 ('' if none)."""
    if not profiles:
        return ""
    return yaml.safe_dump([qos_dict(q) for q in profiles], sort_keys=False).strip()


def offered_qos(topic_metadata: dict) -> list[dict]:
    """The offered profiles of a topic's metadata, in either form (version-8 string or
    version-9 list), with the enums as rosbag2's lower-case names."""
    raw = topic_metadata.get("offered_qos_profiles") or []
    profiles = (yaml.safe_load(raw) or []) if isinstance(raw, str) else raw
    return [{k: _ENUMS[k][v] if k in _ENUMS and isinstance(v, int) else v
             for k, v in p.items()} for p in profiles]


def topic_entry(topic: str, msgtype: str, qos: str, type_hash: str, count: int) -> dict:
    return {"topic_metadata": {"name": topic, "type": msgtype, "serialization_format": "cdr",
                               "offered_qos_profiles": qos,
                               "type_description_hash": type_hash},
            "message_count": count}


def file_entry(path: str, start_ns: int, end_ns: int, count: int) -> dict:
    return {"path": path, "starting_time": {"nanoseconds_since_epoch": start_ns},
            "duration": {"nanoseconds": max(0, end_ns - start_ns)}, "message_count": count}


def bag_metadata(storage: str, files: list[dict], topics: list[dict],
                 custom_data: dict[str, str] | None = None) -> dict:
    """The whole ``rosbag2_bagfile_information`` mapping of a bag; ``custom_data``: string
    pairs (rosbag2 >= Iron shows them in ``ros2 bag info``; Humble ignores the key)."""
    counted = [f for f in files if f["message_count"]]
    start = min((f["starting_time"]["nanoseconds_since_epoch"] for f in counted), default=0)
    end = max((f["starting_time"]["nanoseconds_since_epoch"] + f["duration"]["nanoseconds"]
               for f in counted), default=0)
    return {"version": VERSION, "storage_identifier": storage,
            "duration": {"nanoseconds": end - start},
            "starting_time": {"nanoseconds_since_epoch": start},
            "message_count": sum(f["message_count"] for f in files),
            "topics_with_message_count": topics, "compression_format": "",
            "compression_mode": "", "relative_file_paths": [f["path"] for f in files],
            "files": files,
            "custom_data": {str(k): str(v) for k, v in (custom_data or {}).items()},
            "ros_distro": os.environ.get("ROS_DISTRO", "")}


FRAMES_KEY = "figaroh_ros.frames"
UNRESOLVED_KEY = "figaroh_ros.frames_unresolved"


def frames_custom_data(root: str, frames: dict[str, tuple], unresolved: list[str],
                       stamp_ns: int) -> dict[str, str]:
    """The ``custom_data`` pairs of the measurement frames a recorder looked up on TF at
    the start of a bag: ``frames``: frame -> (xyz, quaternion xyzw) of ``T_root_frame``;
    ``unresolved``: the frames TF did not give."""
    table = {f: {"parent": root, "stamp_ns": int(stamp_ns),
                 "xyz": [float(v) for v in xyz], "xyzw": [float(v) for v in q]}
             for f, (xyz, q) in sorted(frames.items())}
    out = {FRAMES_KEY: yaml.safe_dump(table, sort_keys=True).strip() if table else "{}"}
    if unresolved:
        out[UNRESOLVED_KEY] = ",".join(sorted(unresolved))
    return out


def bag_information(folder: str) -> dict:
    """The ``rosbag2_bagfile_information`` of ``folder/metadata.yaml``; DataError naming
    the file when it is missing, unreadable or not rosbag2 metadata."""
    path = os.path.join(folder, "metadata.yaml")
    try:
        with open(path, "rb") as f:
            info = yaml.safe_load(f)["rosbag2_bagfile_information"]
    except (OSError, KeyError, TypeError, yaml.YAMLError) as exc:
        raise DataError(f"{path}: not a rosbag2 metadata file ({exc})") from exc
    if not isinstance(info, dict):
        raise DataError(f"{path}: rosbag2_bagfile_information is not a mapping")
    return info


def custom_data(folder: str) -> dict:
    """The bag's ``custom_data`` (writer's key -> string); {} when there is none."""
    data = bag_information(folder).get("custom_data") or {}
    if not isinstance(data, dict):
        raise DataError(f"{folder}/metadata.yaml: custom_data is not a mapping")
    return data


def recorded_frames(folder: str) -> dict[str, dict]:
    """The measurement frames the recorder wrote into the bag at ``folder``: frame ->
    ``{"parent", "stamp_ns", "xyz", "xyzw"}`` (``T_parent_frame`` at the start of the
    bag); {} for a bag without them; DataError naming the file for unreadable ones."""
    try:
        frames = yaml.safe_load(custom_data(folder).get(FRAMES_KEY) or "{}") or {}
    except (yaml.YAMLError, TypeError) as exc:
        raise DataError(f"{folder}/metadata.yaml: custom_data {FRAMES_KEY} is not "
                        f"YAML ({exc})") from exc
    if not isinstance(frames, dict):
        raise DataError(f"{folder}/metadata.yaml: custom_data {FRAMES_KEY} is not a "
                        "mapping of frames")
    return frames


# libyaml's emitter where PyYAML has it: a recorder rewrites the metadata at every commit
# (PyYAML's pure-Python emitter took 11 % of a recorder's busy time)
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def write_metadata(folder: str, info: dict):
    """Replace ``folder/metadata.yaml`` atomically (a reader sees the old or the new file)."""
    tmp = os.path.join(folder, ".metadata.yaml.tmp")
    with open(tmp, "w") as f:
        yaml.dump({"rosbag2_bagfile_information": info}, f, Dumper=_DUMPER, sort_keys=False)
    os.replace(tmp, os.path.join(folder, "metadata.yaml"))

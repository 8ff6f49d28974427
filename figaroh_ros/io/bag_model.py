"""The robot model recorded in a bag (``robot: {source: bag}``), and the one call through
which offline tasks resolve a config's model source.

The recorder writes ``/robot_description`` (``std_msgs/msg/String``) into every bag: the
model robot_state_publisher held when the recording started, then every update published
during it.  The experiment was planned and run with the first one, so that is the model
read back; later versions are counted in the provenance.  No rclpy here.
"""
from __future__ import annotations

from pathlib import Path

from rosbags.highlevel import AnyReader

from figaroh_ros.errors import DataError
from figaroh_ros.io.bag_backend import every_message
from figaroh_ros.io.bag_index import reader_paths
from figaroh_ros.io.bags import typestore
from figaroh_ros.model.sources import ModelProvenance, resolve_model_source

TOPIC = "/robot_description"
TYPE = "std_msgs/msg/String"


def read_bag_model(paths: list[str], topic: str = TOPIC) -> tuple[str, int]:
    """(first ``robot_description`` recorded in the bags ``paths``, number of distinct
    versions recorded).  Raises :class:`DataError` naming the bag when it holds none."""
    where = reader_paths(paths)       # a bag as published: no metadata.yaml needed
    try:
        with AnyReader([Path(p) for p in where], default_typestore=typestore()) as reader:
            conns = [c for c in reader.connections if c.topic == topic]
            if conns and any(c.msgtype != TYPE for c in conns):
                raise DataError(f"bag {paths}: '{topic}' is {conns[0].msgtype}, "
                                f"expected {TYPE}")
            texts = [reader.deserialize(raw, c.msgtype).data
                     for c, _, raw in every_message(reader, conns, paths)]
    except DataError:
        raise
    except Exception as exc:       # rosbags' reader errors: a damaged or foreign bag
        raise DataError(f"bag {paths}: cannot be read ({exc})") from None
    if not texts:
        raise DataError(f"bag {paths} holds no '{topic}' message: record it with the "
                        "figaroh_ros recorder while robot_state_publisher runs, or set "
                        "robot.source to a file")
    return texts[0], len(set(texts))


def bag_provider(paths: list[str]):
    """The ``bag`` provider of :func:`resolve_model_source` for the bags ``paths``."""
    def provide(section) -> tuple[str, str]:
        text, versions = read_bag_model(paths)
        more = f" (first of {versions} versions)" if versions > 1 else ""
        return text, ", ".join(paths) + more
    return provide


def nominal_model(section, base_dir: str, bags: list[str] | None = None,
                  live: dict | None = None) -> tuple[str, ModelProvenance]:
    """(URDF text, provenance) of a config's ``robot`` section for a task: the bags
    ``bags`` serve ``source: bag``; ``live`` (from ``figaroh_ros.ros.description``) serves
    ``topic`` and ``parameter`` where a ROS graph is at hand."""
    providers = dict(live or {})
    if bags:
        providers["bag"] = bag_provider(list(bags))
    return resolve_model_source(section, base_dir, providers)

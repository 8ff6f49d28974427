"""``figaroh-ros bag info PATH`` and ``figaroh-ros bag reindex PATH``: a rosbag2 bag as
it was published (a folder or a storage file, ``.db3`` or ``.mcap``, with or without
``metadata.yaml``; ``figaroh_ros.io.bag_index`` and ``figaroh_ros.io.bag_info``)."""
from __future__ import annotations

import json

import yaml

from figaroh_ros.config.identification import load_config
from figaroh_ros.io.bag_index import reindex
from figaroh_ros.io.bag_info import bag_summary
from figaroh_ros.tasks.identify import robot_from_config
from figaroh_ros.tasks.robot_model import resolved_robot


def _model(config: str, path: str):
    """The identification config's model and joint map, for the effort check."""
    cfg, _ = resolved_robot(load_config(config, bag=path), config, [path])
    return robot_from_config(cfg), cfg.data.joint_map or {}


def cmd_bag(args) -> int:
    if args.action == "reindex":
        print(reindex(args.path, force=args.force))
        return 0
    robot, joint_map = _model(args.config, args.path) if args.config else (None, None)
    summary = bag_summary(args.path, robot, joint_map)
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(yaml.safe_dump(summary, sort_keys=False, width=100).rstrip())
    return 0

"""``figaroh-ros config-schema KIND``: the JSON schema of a config kind (editors and
validators take it; docs/reference/config.md is generated from the same models)."""
from __future__ import annotations

import json

from figaroh_ros.config.kinds import json_schema


def cmd_config_schema(args) -> int:
    print(json.dumps(json_schema(args.kind), indent=2))
    return 0

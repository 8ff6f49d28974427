"""Every config kind by name: its model (for the JSON schema and the generated config
reference, docs/reference/config.md) and the command or node that reads it."""
from __future__ import annotations

from typing import NamedTuple

from pydantic import BaseModel

from figaroh_ros.config.backlash import BacklashConfig
from figaroh_ros.config.calibration import CalibrationConfig
from figaroh_ros.config.gains import GainsConfig
from figaroh_ros.config.identification import IdentificationConfig
from figaroh_ros.config.payload import PayloadConfig
from figaroh_ros.config.robot import RobotFileConfig
from figaroh_ros.config.sim import SimConfig
from figaroh_ros.config.sim_camera import SimCameraConfig
from figaroh_ros.config.suspension import SuspensionConfig
from figaroh_ros.config.trajectory import TrajectoryConfig


class Kind(NamedTuple):
    model: type[BaseModel]
    used_by: str                # the verb or node reading it
    files: str                  # shipped examples, a glob under config/


KINDS: dict[str, Kind] = {
    "identification": Kind(IdentificationConfig, "`figaroh-ros identify`",
                           "staubli_tx40.yaml, panda_gaz2019.yaml, panda_unisa.yaml, "
                           "*_identification.yaml"),
    "calibration": Kind(CalibrationConfig, "`figaroh-ros calibrate`, `plan-postures`, the "
                        "calibration node", "*_calibration*.yaml"),
    "trajectory": Kind(TrajectoryConfig, "`figaroh-ros plan-trajectory`", "*_trajectory.yaml"),
    "gains": Kind(GainsConfig, "`figaroh-ros identify-gains`", ""),
    "backlash": Kind(BacklashConfig, "`figaroh-ros identify-backlash`", "*_backlash.yaml"),
    "suspension": Kind(SuspensionConfig, "`figaroh-ros identify-suspension`",
                       "*_suspension.yaml"),
    "payload": Kind(PayloadConfig, "`figaroh-ros identify-payload`", "*_payload.yaml"),
    "robot": Kind(RobotFileConfig, "the experiment executor node", "robot_*.yaml"),
    # before "sim": a simulated camera's file names also begin with sim_
    "sim_camera": Kind(SimCameraConfig, "the simulated camera node (`sim_camera`)",
                       "sim_*_wrist_camera.yaml, sim_*_head_camera.yaml"),
    "sim": Kind(SimConfig, "the simulated robot node, `figaroh-ros demo`", "sim_*.yaml"),
}


def json_schema(kind: str) -> dict:
    """The JSON schema of the config kind ``kind`` (a key of :data:`KINDS`)."""
    return KINDS[kind].model.model_json_schema()

"""The fields shared by both planners (postures and trajectories): the tool's workspace
box and self-collision."""
from __future__ import annotations

from pydantic import Field

from figaroh_ros.config.base import Section
from figaroh_ros.config.fields import Names, Urdf, Vector3


class Workspace(Section):
    """Where the tool may go and which geometry must not collide."""

    workspace_min: Vector3 | None = Field(None, description="[x y z] lower corner of the "
                                          "tool box, m")
    workspace_max: Vector3 | None = Field(None, description="[x y z] upper corner, m")
    self_collision: bool = Field(False, description="refuse self-colliding motions (URDF "
                                 "collision geometry)")
    collision_urdf: Urdf | None = Field(None, description="URDF whose collision meshes are "
                                        "installed")
    package_dirs: Names | None = Field(None, description="folders holding `package://` "
                                       "meshes")

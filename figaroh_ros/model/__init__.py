"""Robot models: a pinocchio model, its active joints and its drive chain."""
from figaroh_ros.model.loading import load_model
from figaroh_ros.model.robot import (
    RobotModel, Transmission, example_robot_urdf, load_urdf_model, random_states, resolve_urdf
)

__all__ = ["load_model", "RobotModel", "Transmission", "example_robot_urdf",
           "load_urdf_model", "random_states", "resolve_urdf"]

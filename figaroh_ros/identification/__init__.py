"""Dynamic identification: arrays in, base parameters and their statistics out."""
from figaroh_ros.identification.arrays import identify
from figaroh_ros.identification.fit import EstimationOptions
from figaroh_ros.identification.gains import (
    GainsExperiment, GainsResult, Payload, identify_gains
)
from figaroh_ros.identification.observation import Processing
from figaroh_ros.identification.parameters import DriveOptions, parameter_layout
from figaroh_ros.identification.physical.fit import PhysicalOptions
from figaroh_ros.identification.result import BaseParameterTable, IdentificationResult

__all__ = ["identify", "IdentificationResult", "BaseParameterTable", "identify_gains",
           "GainsExperiment", "Payload", "GainsResult", "PhysicalOptions", "Processing",
           "EstimationOptions", "DriveOptions", "parameter_layout"]

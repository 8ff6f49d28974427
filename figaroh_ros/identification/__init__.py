"""Dynamic identification: arrays in, base parameters and their statistics out.

The public names below are loaded on first use (PEP 562), so that importing one submodule
(``parameters``, ``base_parameters``, ``signals`` ...) does not load every other one and
the libraries they need (``scipy.signal``, ``scipy.optimize``, cyipopt, cvxpy)."""
from figaroh_ros.lazy import lazy_names

_PUBLIC = {
    "identify": "figaroh_ros.identification.arrays",
    "EstimationOptions": "figaroh_ros.identification.fit",
    "GainsExperiment": "figaroh_ros.identification.gains",
    "GainsResult": "figaroh_ros.identification.gains",
    "Payload": "figaroh_ros.identification.gains",
    "identify_gains": "figaroh_ros.identification.gains",
    "TrajectoryIdentifiability": "figaroh_ros.identification.identifiability",
    "trajectory_identifiability": "figaroh_ros.identification.identifiability",
    "Processing": "figaroh_ros.identification.observation",
    "DriveOptions": "figaroh_ros.identification.parameters",
    "parameter_layout": "figaroh_ros.identification.parameters",
    "PhysicalOptions": "figaroh_ros.identification.physical.fit",
    "BaseParameterTable": "figaroh_ros.identification.result",
    "IdentificationResult": "figaroh_ros.identification.result",
}
__all__ = sorted(_PUBLIC)


__getattr__, __dir__ = lazy_names(globals(), _PUBLIC)

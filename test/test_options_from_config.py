"""The identification options carry the config's field names and are built from its
typed sections field by field: a field of the ``model``, ``processing`` or
``estimation`` section that the options lack (or the reverse) fails here, and every
value given in the config is the one the options hold."""
from __future__ import annotations

import dataclasses

import pytest

from figaroh_ros.config.identification import DriveModel, Estimation, Physical
from figaroh_ros.config.identification import Processing as ProcessingSection
from figaroh_ros.identification.fit import SPLIT_FIELDS, EstimationOptions
from figaroh_ros.identification.observation import Processing
from figaroh_ros.identification.parameters import MODEL_CHOICE, DriveOptions
from figaroh_ros.identification.physical.fit import PhysicalOptions

# a value other than the default for every field of each section
MODEL = {"viscous_friction": False, "coulomb_friction": False, "coulomb_model": "tanh",
         "coulomb_velocity": 0.37, "rotor_inertia": False, "torque_offset": False,
         "coupled_convention": "lumped", "viscous_per_direction": True,
         "friction_models": ["tanh"], "stribeck_range": [0.01, 0.2]}
PROCESSING = {"position_cutoff_hz": 7.5, "filter_order": 3, "decimation": 6,
              "min_velocity": 0.02}
ESTIMATION = {"method": "ols", "essential_ratio": 12.0, "validation_fraction": 0.3,
              "cross_validation_folds": 5}
# options set from elsewhere than their section: the Stribeck velocity (searched or chosen),
# the physical options, gain masks and Stribeck interval (other sections)
DERIVED = {DriveOptions: {"stribeck_velocity"},
           EstimationOptions: {"physical", "nominal_gains", "free_gains", "stribeck_range"}}


def _names(options) -> set[str]:
    return {f.name for f in dataclasses.fields(options)}


@pytest.mark.parametrize("section,values,options,left", [
    (DriveModel, MODEL, DriveOptions, set(MODEL_CHOICE)),
    (ProcessingSection, PROCESSING, Processing, set()),
    (Estimation, ESTIMATION, EstimationOptions, set(SPLIT_FIELDS))])
def test_every_section_field_reaches_the_options(section, values, options, left):
    assert set(values) == set(section.model_fields), "give every field a test value"
    typed = section(**values)
    for key, value in values.items():
        assert getattr(typed, key) != section.model_fields[key].default, key
    built = options.from_config(typed)
    assert _names(options) == set(section.model_fields) - left | DERIVED.get(options, set())
    for key in set(values) - left:
        assert getattr(built, key) == values[key], key


def test_a_section_field_the_options_lack_is_an_error():
    class Wider(DriveModel):
        backlash: bool = True
    with pytest.raises(TypeError, match="backlash"):
        DriveOptions.from_config(Wider())


def test_changes_override_the_section():
    drive = DriveOptions.from_config(DriveModel(coulomb_model="tanh"), coulomb_model="sign",
                                     stribeck_velocity=0.1)
    assert (drive.coulomb_model, drive.stribeck_velocity) == ("sign", 0.1)
    p = Processing.from_config(ProcessingSection(position_cutoff_hz=5.0),
                               position_cutoff_hz=2.5)
    assert p.position_cutoff_hz == 2.5


def test_the_physical_section_reaches_its_options():
    values = {"method": "qp", "alpha": 2.5, "prior_relative": 0.4, "prior_length": 0.2,
              "total_mass": 31.0, "com_margin": 0.02}
    assert set(values) == set(Physical.model_fields)
    opts = PhysicalOptions(**Physical(**values).model_dump())
    assert _names(PhysicalOptions) == set(values)
    assert all(getattr(opts, k) == v for k, v in values.items())

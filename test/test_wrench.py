"""Floating-base identification from a force plate (Nguyen et al. 2023 Eq. 2, Table I): a simulated
TALOS stands on a plate and moves its torso, arms and head; its inertial parameters are
hidden; the plate wrench alone identifies the segment inertial parameters."""
import numpy as np
import pinocchio as pin
import pytest

from figaroh_ros.errors import DataError
from figaroh_ros.excitation.fourier import fourier_trajectory
from figaroh_ros.identification.base_parameters import base_parameters
from figaroh_ros.identification.estimation import ordinary_least_squares
from figaroh_ros.identification.parameters import DriveOptions, parameter_layout
from figaroh_ros.identification.wrench import contact_wrench_regressor, plate_to_world
from figaroh_ros.model.robot import example_robot_urdf, load_urdf_model
from figaroh_ros.sim.dynamics import perturbed_parameters

UPPER = (["torso_1_joint", "torso_2_joint", "head_1_joint", "head_2_joint"]
         + [f"arm_{s}_{i}_joint" for s in ("left", "right") for i in range(1, 8)])
NOISE = np.array([2.0, 2.0, 4.0, 0.5, 0.5, 0.3])     # plate noise: N, N, N, N.m, N.m, N.m


@pytest.fixture(scope="module")
def talos():
    robot = load_urdf_model(example_robot_urdf("talos_data/robots/talos_reduced.urdf"),
                            UPPER, floating_base=True)
    layout = parameter_layout(robot, DriveOptions(False, False, rotor_inertia=False,
                                                  torque_offset=False))
    rest = pin.neutral(robot.model)
    rest[:3] = [0.1, -0.05, 1.02]               # pelvis above the plate, feet on it
    return robot, layout, rest


def _states(robot, rest, seed, duration):
    tr = fourier_trajectory(robot, duration, 50, harmonics=5, base_freq_hz=0.1,
                            amplitude=0.8, seed=seed)
    return (robot.full_configuration(tr.q, rest), robot.full_velocity(tr.dq),
            robot.full_velocity(tr.ddq))


def test_force_plate_identifies_the_segment_parameters(talos):
    """60 s of upper-body motion; identify on the first 45 s, predict the last 15 s."""
    robot, layout, rest = talos
    phi = perturbed_parameters(robot, layout, seed=21)
    rng = np.random.default_rng(22)
    # the plate: 2 cm below the floor level of the world origin, turned 90 deg about z
    plate = pin.SE3(pin.rpy.rpyToMatrix(0, 0, np.pi / 2), np.array([0.0, 0.0, -0.02]))
    W = contact_wrench_regressor(robot, layout, *_states(robot, rest, 23, 60.0))
    N = W.shape[0] // 6
    true_world = (W @ phi).reshape(6, N).T
    reading = plate_to_world(true_world, plate.inverse()) + NOISE * rng.normal(size=(N, 6))
    Y = plate_to_world(reading, plate).T.ravel()          # back to the world frame
    bp = base_parameters(W, layout.names)
    rows = np.arange(6 * N).reshape(6, N)
    k = int(0.75 * N)
    train, test = rows[:, :k].ravel(), rows[:, k:].ravel()
    # per-component weights: the plate's noise (its rotation about z mixes fx with fy
    # and mx with my, whose noises are equal)
    w = 1.0 / np.repeat(NOISE, N)
    Wb = bp.base_regressor(W)
    est = ordinary_least_squares(Wb[train] * w[train, None], Y[train] * w[train])
    rms = np.sqrt(np.mean((Wb[test] @ est.phi - Y[test]).reshape(6, -1) ** 2, axis=1))
    assert np.all(rms < 1.1 * NOISE) and np.all(rms > 0.9 * NOISE), rms / NOISE
    # the nominal URDF (centres of mass off by up to 2 cm) is clearly worse
    from figaroh_ros.identification.parameters import standard_parameters
    nominal = Wb[test] @ bp.from_standard(standard_parameters(robot, layout))
    rms_nom = np.sqrt(np.mean((nominal - Y[test]).reshape(6, -1) ** 2, axis=1))
    assert np.max(rms_nom / NOISE) > 3, rms_nom / NOISE
    # total mass: the static vertical force at any posture over g
    Qs, Vs, As = _states(robot, rest, 25, 1.0)
    Ws = contact_wrench_regressor(robot, layout, Qs[:5], 0 * Vs[:5], 0 * As[:5])
    fz = (bp.base_regressor(Ws) @ est.phi).reshape(6, 5)[2]
    masses = sum(phi[c[0]] for c in layout.inertial_cols.values())
    assert np.allclose(fz / 9.81, masses, rtol=2e-4)
    # the base parameters agree with the hidden truth as their standard deviations say
    z = (est.phi - bp.from_standard(phi)) / est.std
    assert np.mean(np.abs(z) < 3) > 0.95 and np.all(np.abs(z) < 5), np.abs(z).max()


def test_fixed_base_model_is_refused(talos):
    robot, layout, rest = talos
    fixed = load_urdf_model(robot.urdf_path, UPPER)
    with pytest.raises(DataError, match="floating-base"):
        contact_wrench_regressor(fixed, parameter_layout(fixed, DriveOptions()),
                                 pin.neutral(fixed.model)[None], np.zeros((1, fixed.model.nv)),
                                 np.zeros((1, fixed.model.nv)))


def test_identified_urdf_of_a_floating_base_robot(talos):
    """The identified inertias of a robot on a free flyer written into its URDF: the free
    flyer (pinocchio's ``root_joint``, in no URDF) carries the URDF's root link, whose
    inertial is rewritten; the file reloads with every identified inertia (checked inside
    ``identified_urdf_text``) and keeps its joints."""
    from figaroh_ros.identification.parameters import standard_parameters
    from figaroh_ros.identification.physical.urdf_inertia import identified_urdf_text
    robot, layout, _ = talos
    phi = standard_parameters(robot, layout)
    root = robot.model.names[1]
    phi[layout.inertial_cols[1]] *= 1.1                     # the pelvis 10 % heavier
    text = identified_urdf_text(robot, layout, phi)
    again = pin.buildModelFromXML(text, pin.JointModelFreeFlyer())
    assert again.names[1] == root and again.njoints == robot.model.njoints
    assert again.inertias[1].mass == pytest.approx(1.1 * robot.model.inertias[1].mass,
                                                   rel=1e-9)

"""Joint position limits where they protect the robot, at both bounds: the URDF's limits
as the model reads them (``model.robot``), the publication gate's check of the readings
(``tasks.gate.joint_limits_check``) and the executor's refusal of a goal outside them
(``io.experiment_files.check_limits``, with the limits the executor takes from its model).

The Panda is the case: its joint 4 lies in [-3.0718, -0.0698] rad and its joint 6 in
[-0.0175, 3.7525] rad, so a reading below a lower limit is neither below ``-pi`` nor the
mirror of an upper one.  The limits are read from the URDF's XML here (the oracle), not
through pinocchio.
"""
import math
import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin
import pytest
from conftest import PANDA_JOINTS

from figaroh_ros.errors import DataError, ModelError
from figaroh_ros.io.experiment_files import check_limits
from figaroh_ros.model.robot import (
    angle_limits, example_robot_urdf, locked_model, random_states
)
from figaroh_ros.tasks.gate import joint_limits_check

PANDA_URDF = example_robot_urdf("panda_description/urdf/panda.urdf")


def urdf_limits(path: str, joints: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """``<limit lower upper>`` of each joint, straight from the XML."""
    found = {j.get("name"): j.find("limit") for j in ET.parse(path).getroot().iter("joint")}
    return (np.array([float(found[j].get("lower")) for j in joints]),
            np.array([float(found[j].get("upper")) for j in joints]))


LOWER, UPPER = urdf_limits(PANDA_URDF, PANDA_JOINTS)


def test_the_model_reads_both_bounds_of_the_urdf(panda):
    lo, hi = panda.position_limits()
    assert lo == pytest.approx(LOWER, abs=1e-12) and hi == pytest.approx(UPPER, abs=1e-12)
    assert lo[3] == pytest.approx(-3.0718) and hi[3] == pytest.approx(-0.0698)
    assert lo[5] == pytest.approx(-0.0175) and hi[5] == pytest.approx(3.7525)
    # the active joints' limits only, in their order (not the fingers')
    lo2, hi2 = angle_limits(panda.model, panda.joint_ids[::-1])
    assert lo2 == pytest.approx(LOWER[::-1], abs=1e-12)
    assert hi2 == pytest.approx(UPPER[::-1], abs=1e-12)


def test_a_continuous_joint_spans_one_turn():
    """A continuous joint's bounds are on ``cos``/``sin``, not an angle: -pi, pi; a
    revolute joint beside it keeps its own."""
    urdf = """<robot name="r">
      <link name="base"/><link name="a"/><link name="b"/>
      <joint name="turn" type="continuous"><parent link="base"/><child link="a"/>
        <axis xyz="0 0 1"/></joint>
      <joint name="bend" type="revolute"><parent link="a"/><child link="b"/>
        <axis xyz="0 1 0"/><limit lower="-0.25" upper="1.5" effort="1" velocity="1"/>
      </joint></robot>"""
    model = pin.buildModelFromXML(urdf)
    lo, hi = angle_limits(model, [model.getJointId("turn"), model.getJointId("bend")])
    assert lo.tolist() == [-math.pi, -0.25] and hi.tolist() == [math.pi, 1.5]


def test_random_states_stay_inside_both_bounds(panda):
    """What an excitation's random states draw: inside the URDF's limits, joint 6 (its
    lower bound near 0) and joint 4 (both bounds negative) included, reaching near each."""
    q, dq, ddq = random_states(panda, np.random.default_rng(5), 4000)
    assert np.all(q >= LOWER) and np.all(q <= UPPER)
    assert np.all(q.min(axis=0) < LOWER + 0.01 * (UPPER - LOWER))
    assert np.all(q.max(axis=0) > UPPER - 0.01 * (UPPER - LOWER))
    assert np.abs(dq).max() <= 1.0 and np.abs(ddq).max() <= 3.0
    assert dq.min() < -0.99 and dq.max() > 0.99 and ddq.min() < -2.97 and ddq.max() > 2.97


def _inside(k: int, value: float) -> np.ndarray:
    """Readings of the Panda: the limits' midpoints, with joint ``k`` at ``value`` in
    posture 1 of 3."""
    Q = np.tile(0.5 * (LOWER + UPPER), (3, 1))
    Q[1, k] = value
    return Q


@pytest.mark.parametrize("k", [3, 5])              # panda_joint4, panda_joint6
def test_a_reading_below_a_lower_limit_fails_the_gate(k):
    tol = 0.02
    c = joint_limits_check(_inside(k, LOWER[k] - 0.03), LOWER, UPPER, tol, PANDA_JOINTS)
    assert not c.passed and c.name == "joint_limits"
    assert c.value == pytest.approx(0.03, abs=1e-12) and c.limit == tol
    assert f"{PANDA_JOINTS[k]} = {LOWER[k] - 0.03:.6g} at posture 1" in c.detail
    assert c.detail.startswith("1 readings beyond the joint limits by more than 0.02")
    # within the tolerance below the bound: passes, the excess its value
    c = joint_limits_check(_inside(k, LOWER[k] - 0.01), LOWER, UPPER, tol, PANDA_JOINTS)
    assert c.passed and c.value == pytest.approx(0.01, abs=1e-12)
    assert f"closest: {PANDA_JOINTS[k]} = " in c.detail
    # exactly the tolerance beyond: still inside (<=), and not counted beside a reading
    # further out
    Q = _inside(k, LOWER[k] - 0.25)
    c = joint_limits_check(Q, LOWER, UPPER + 1.0, 0.25, PANDA_JOINTS)
    assert c.passed and c.value == pytest.approx(0.25, abs=1e-12)
    Q[2, k] = LOWER[k] - 0.5
    c = joint_limits_check(Q, LOWER, UPPER + 1.0, 0.25, PANDA_JOINTS)
    assert not c.passed and c.detail.startswith("1 readings beyond the joint limits by more "
                                                "than 0.25: worst 0.5 ")


def test_a_reading_above_an_upper_limit_fails_the_gate():
    c = joint_limits_check(_inside(5, UPPER[5] + 0.05), LOWER, UPPER, 0.02, PANDA_JOINTS)
    assert not c.passed and c.value == pytest.approx(0.05, abs=1e-12)
    Q = _inside(3, UPPER[3] + 0.05)
    Q[2, 5] = LOWER[5] - 0.04                       # two readings beyond, the worst named
    c = joint_limits_check(Q, LOWER, UPPER, 0.02, PANDA_JOINTS)
    assert not c.passed and c.detail.startswith("2 readings beyond")
    assert "panda_joint4 = " in c.detail and "at posture 1" in c.detail


def test_readings_inside_give_their_margin_to_the_nearest_bound():
    """Inside, the value is minus the smallest distance to a bound (joint 4, 0.1 above its
    lower limit: -0.1)."""
    c = joint_limits_check(_inside(3, LOWER[3] + 0.1), LOWER, UPPER, 0.0, PANDA_JOINTS)
    assert c.passed and c.value == pytest.approx(-0.1, abs=1e-12)
    assert "panda_joint4" in c.detail and "posture 1" in c.detail


def executor_limits(model: pin.Model, joints: list[str]) -> dict:
    """The position limits the executor checks a goal against (from its model)."""
    out = {}
    for j in joints:
        jm = model.joints[model.getJointId(j)]
        out[j] = (model.lowerPositionLimit[jm.idx_q], model.upperPositionLimit[jm.idx_q])
    return out


@pytest.mark.parametrize("k", [3, 5])
def test_the_executor_refuses_a_posture_below_a_lower_limit(panda, k):
    limits = executor_limits(panda.model, PANDA_JOINTS)
    Q = _inside(k, LOWER[k] - 1e-3)
    with pytest.raises(DataError, match=rf"posture 1: {PANDA_JOINTS[k]} = "
                                        rf"{LOWER[k] - 1e-3:.4g} is outside its limits"):
        check_limits(PANDA_JOINTS, Q, limits)
    check_limits(PANDA_JOINTS, _inside(k, LOWER[k]), limits)        # on the bound: moves
    check_limits(PANDA_JOINTS, _inside(k, UPPER[k]), limits)
    with pytest.raises(DataError, match=rf"{PANDA_JOINTS[k]} = .* outside"):
        check_limits(PANDA_JOINTS, _inside(k, UPPER[k] + 1e-3), limits)


def test_the_executor_refuses_a_speed_above_the_velocity_limit(panda):
    limits = executor_limits(panda.model, PANDA_JOINTS)
    speed = {j: 2.0 for j in PANDA_JOINTS}
    Q, V = _inside(0, 0.0), np.zeros((3, 7))
    V[2, 6] = -2.0                                   # at the limit, backwards: moves
    check_limits(PANDA_JOINTS, Q, limits, V, speed)
    V[2, 6] = -2.001
    with pytest.raises(DataError, match="sample 2: panda_joint7 moves at -2.001, above its "
                                        "velocity limit 2"):
        check_limits(PANDA_JOINTS, Q, limits, V, speed)


def test_speed_and_effort_limits_are_the_urdfs(panda):
    limit = {j.get("name"): j.find("limit")
             for j in ET.parse(PANDA_URDF).getroot().iter("joint")}
    v = panda.velocity_limits()
    assert v.tolist() == [float(limit[j].get("velocity")) for j in PANDA_JOINTS]
    assert panda.effort_limits().tolist() == [float(limit[j].get("effort"))
                                              for j in PANDA_JOINTS]
    v[0] = 0.0                                         # a copy: the model keeps its own
    assert panda.velocity_limits()[0] == 2.175


@pytest.mark.parametrize("k", [3, 5])
def test_a_joint_locks_on_its_bounds_but_not_beyond(panda, k):
    """``lock_joints`` takes a value on either bound of the joint's limits (1e-9 of
    rounding allowed), refuses one beyond, naming the joint, the value and the limits."""
    j = PANDA_JOINTS[k]
    for value in (LOWER[k], UPPER[k], LOWER[k] - 1e-9, UPPER[k] + 1e-9):
        m = locked_model(panda.model, {j: value})
        assert m.nq == panda.model.nq - 1 and not m.existJointName(j)
    for value in (LOWER[k] - 1e-6, UPPER[k] + 1e-6):
        with pytest.raises(ModelError, match=rf"lock_joints: {j} = {value} is outside its "
                                             rf"limits \[{LOWER[k]:g}, {UPPER[k]:g}\]"):
            locked_model(panda.model, {j: value})
    with pytest.raises(ModelError, match="lock_joints: no joint 'universe' in the URDF"):
        locked_model(panda.model, {"universe": 0.0})
    with pytest.raises(ModelError, match="lock_joints: no joint 'elbow' in the URDF"):
        locked_model(panda.model, {"elbow": 0.0})
    floating = pin.buildModelFromUrdf(PANDA_URDF, pin.JointModelFreeFlyer())
    with pytest.raises(ModelError, match="^lock_joints: 'root_joint' is not a 1-dof joint$"):
        locked_model(floating, {"root_joint": 0.0})


def test_a_locked_joint_keeps_its_value_and_the_gravity():
    """Locking joint 2 of the Panda at 0.5 rad: the hand is where the full model puts it
    with joint 2 at 0.5, and the gravity vector is the model's."""
    model = pin.buildModelFromUrdf(PANDA_URDF)
    model.gravity.linear = np.array([0.0, 0.0, -9.0])
    reduced = locked_model(model, {"panda_joint2": 0.5})
    q_full = pin.neutral(model)
    q_full[1] = 0.5
    q = np.delete(q_full, 1)
    f, fr = model.getFrameId("panda_hand"), reduced.getFrameId("panda_hand")
    d, dr = model.createData(), reduced.createData()
    pin.framesForwardKinematics(model, d, q_full)
    pin.framesForwardKinematics(reduced, dr, q)
    assert np.allclose(d.oMf[f].homogeneous, dr.oMf[fr].homogeneous, atol=1e-12)
    assert reduced.gravity.linear.tolist() == [0.0, 0.0, -9.0]


def test_random_states_of_unbounded_joints_span_one_turn():
    """A joint whose limits are 1000 rad or more (a URDF's way to say none) or infinite
    is drawn in [-pi, pi]; one with 999 rad keeps them."""
    from figaroh_ros.model.robot import RobotModel
    joints = "".join(
        f'<link name="l{i}"/><joint name="j{i}" type="revolute"><parent link="l{i - 1}"/>'
        f'<child link="l{i}"/><axis xyz="0 0 1"/><limit lower="{lo}" upper="{hi}" '
        'effort="1" velocity="1"/></joint>'
        for i, (lo, hi) in enumerate([(-1000, 999), (-999, 1000)], start=1))
    model = pin.buildModelFromXML(f'<robot name="r"><link name="l0"/>{joints}</robot>')
    robot = RobotModel(model, ["j1", "j2"], "r.urdf")
    q, _, _ = random_states(robot, np.random.default_rng(2), 5000)
    assert -np.pi <= q[:, 0].min() < 0.0 and q[:, 0].max() > 100.0
    assert 0.0 < q[:, 1].max() <= np.pi and q[:, 1].min() < -100.0
    model.lowerPositionLimit[0], model.upperPositionLimit[1] = -np.inf, np.inf
    q, _, _ = random_states(RobotModel(model, ["j1", "j2"], "r.urdf"),
                            np.random.default_rng(2), 5000)
    assert q[:, 0].min() >= -np.pi and q[:, 1].max() <= np.pi

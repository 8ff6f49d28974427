"""The simulator's true torques with their models built once (regressor.ParameterTorques,
sim/torques.py) and its memoised functions of the posture (sim/truth.py): the very bits
the per-call functions give."""
from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from figaroh_ros.config.sim import SimPayload
from figaroh_ros.identification.regressor import joint_torques_from_parameters
from figaroh_ros.sim.truth import TrueRobot, load_sim_config

CONFIGS = ["config/sim_ur10.yaml", "config/sim_tiago_phenomena.yaml", "config/sim_talos.yaml"]


@pytest.fixture(scope="module", params=CONFIGS)
def truth(request):
    return TrueRobot(load_sim_config(request.param))


def _motion(n: int, N: int = 7, seed: int = 0):
    return np.random.default_rng(seed).uniform(-1.5, 1.5, (3, N, n))


def test_the_true_torques_are_those_of_the_parameters(truth):
    Q, dQ, ddQ = _motion(len(truth.cfg.joints))
    ref = joint_torques_from_parameters(truth.robot, truth.layout, truth.drive, truth.phi,
                                        Q, dQ, ddQ)
    assert np.array_equal(truth.joint_torques(Q, dQ, ddQ), ref)
    for i in range(len(Q)):                           # one sample at a time, twice
        for _ in range(2):
            assert np.array_equal(truth.joint_torques(Q[i], dQ[i], ddQ[i])[0], ref[i])


def test_the_payload_torques_are_rnea_with_it_minus_without():
    cfg = load_sim_config(CONFIGS[0])
    cfg.truth = cfg.truth.model_copy(update={"payload": SimPayload(
        frame="tool0", mass=1.2, com=[0.01, 0.02, 0.05], inertia=[0.01, 0.02, 0.03])})
    t = TrueRobot(cfg)
    r, (frame, inertia) = t.robot, t.payload
    loaded = r.model.copy()
    f = loaded.frames[loaded.getFrameId(frame)]
    loaded.inertias[f.parentJoint] = loaded.inertias[f.parentJoint] + f.placement.act(inertia)
    Q, dQ, ddQ = _motion(6, seed=2)
    X = zip(r.full_configuration(Q), r.full_velocity(dQ), r.full_velocity(ddQ))
    ref = np.array([pin.rnea(loaded, loaded.createData(), *x)
                    - pin.rnea(r.model, r.model.createData(), *x) for x in X])[:, r.idx_v]
    assert np.array_equal(t.payload_torques(Q, dQ, ddQ), ref)


def test_the_remembered_posture_functions_follow_the_posture(truth):
    names = truth.cfg.joints
    for q in np.random.default_rng(3).uniform(-1, 1, (4, len(names))):
        d = dict(zip(names, q))
        qc = truth.chain_positions(names, q)
        assert np.array_equal(qc, [d.get(j, 0.0) for j in truth.km.chain])
        for _ in range(2):
            assert np.array_equal(truth.marker_pose(qc).homogeneous,
                                  truth.km.predict(qc[None, :], truth.x)[0].homogeneous)
            assert np.array_equal(truth.ground_reaction(qc), truth._ground_reaction(qc))
            g = pin.computeGeneralizedGravity(truth.model, truth.gdata, truth._full(qc))
            assert np.array_equal(truth.gravity_torques(names, qc), [
                g[truth.model.joints[truth.model.getJointId(j)].idx_v] for j in names])
            if truth.suspension is not None:
                B = (truth.km.base_pose(truth.x) * truth._base_displacement(qc)
                     * truth.suspension["root_M_frame"])
                assert np.array_equal(truth.base_marker_pose(qc).homogeneous, B.homogeneous)
    assert np.array_equal(truth.chain_positions(["no_such_joint"], [1.0]),
                          np.zeros(len(truth.km.chain)))

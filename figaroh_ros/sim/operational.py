"""Operational accuracy of a mobile manipulator with geometric and non-geometric models
(Nguyen et al. 2024 §II, Table III), on a simulated TIAGo whose every phenomenon is hidden.

The truth: the arm's weight tilts the base on its six spring-damper wheels (a static
displacement ``D(q)`` from the change of the ground reaction, ``suspension``), the joint
placements carry millimetre / milliradian errors, and every arm joint's link angle differs
from its motor reading by the gear play (on the side of the last motion), an eccentric
encoder and a compliant shaft (``backlash``).  A motion-capture system measures the gripper
pose in its own frame.

Identification, as in Nguyen et al. 2024: the suspension from a force-plate experiment, the backlash
model of each joint from dual-encoder sweeps (degrees on validation data), the geometry
from calibration postures.  Four models predict held-out postures:

* nominal: the URDF, base at rest, motor readings (only the mocap-to-base and gripper
  marker frames registered);
* model 1: + the identified suspension (``D(q)`` from the nominal masses);
* model 2: + the geometric calibration;
* model 3: + the backlash model (link angles from motor readings, approach direction and
  joint torque).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from figaroh_ros.calibration.kinematic_model import KinematicModel, Measurement
from figaroh_ros.calibration.solve import (
    PostureSet, estimate, identifiable_parameters, initial_frames
)
from figaroh_ros.phenomena.backlash import select_degrees
from figaroh_ros.phenomena.suspension import (
    TIAGO_WHEELS, displacement, estimate_suspension, ground_reaction, parameter_names,
    stiffness_matrix, suspension_regressor
)
from figaroh_ros.sim.kinematics import hidden_errors, measure, random_postures
from figaroh_ros.sim.phenomena import JointPlay, PlayTracker, random_suspension

ARM = [f"arm_{i}_joint" for i in range(1, 8)]
CHAIN = ["torso_lift_joint"] + ARM


@dataclass
class Table3Row:
    model: str
    position_rmse_mm: float
    position_mae_mm: float
    orientation_rmse_deg: float
    orientation_mae_deg: float


def _errors(km: KinematicModel, x: np.ndarray, data: PostureSet):
    F, _ = km.residuals(data.Q, data.Y, x)
    pos = np.linalg.norm(F[:, :3], axis=1) * 1e3
    ang = np.degrees(np.linalg.norm(F[:, 3:], axis=1))
    return (float(np.sqrt(np.mean(pos ** 2))), float(np.mean(pos)),
            float(np.sqrt(np.mean(ang ** 2))), float(np.mean(ang)))


class SimulatedTiago:
    """A TIAGo with hidden geometry, suspension and joint play (the truth)."""

    def __init__(self, urdf: str, seed: int = 0, tool_frame: str = "wrist_ft_tool_link",
                 geometric_mm: float = 1.0, stiffness=(5e3, 5e4), gap=(0.002, 0.006)):
        self.rng = np.random.default_rng(seed)
        self.urdf = urdf
        self.model = pin.buildModelFromUrdf(urdf)
        self.tool_frame = tool_frame
        meas = Measurement("pose", sigma_position=5e-4, sigma_orientation=1e-3)
        self.km = KinematicModel(self.model, tool_frame, level="full", joints=CHAIN,
                                 measurement=meas)
        self.km.base0 = pin.SE3(pin.rpy.rpyToMatrix(0.02, -0.01, 1.2),
                                np.array([1.5, -0.8, 0.05]))
        self.km.tool0 = pin.SE3(pin.rpy.rpyToMatrix(0.1, -0.2, 0.3),
                                np.array([0.02, 0.01, 0.12]))
        self.x = hidden_errors(self.km, self.rng, position_mm=geometric_mm,
                               rotation_mrad=geometric_mm)
        self.data = self.model.createData()
        # suspension: wheel stiffness in ``stiffness`` (N/m), torsion a tenth of it per
        # radian (soft casters: the arm stretched sideways tilts the base by milliradians,
        # as in Nguyen et al. 2024 Fig. 3)
        self.q_rest = self._full(np.zeros(len(CHAIN)))
        pin.framesForwardKinematics(self.model, self.data, self.q_rest)
        self.root_M_base = self.data.oMf[self.model.getFrameId("base_link")].copy()
        self.P = random_suspension(self.rng, stiffness,
                                    ground_reaction(self.model, self.q_rest))
        self.names = parameter_names()
        self.K_true = stiffness_matrix(self.P, None, TIAGO_WHEELS)
        self.play = {j: JointPlay(self.rng.uniform(*gap), self.rng.uniform(0.001, 0.003),
                                  self.rng.uniform(0, 2 * np.pi), self.rng.uniform(5e-5, 2e-4))
                     for j in ARM}

    # -------------------------------------------------------------- the truth
    def _full(self, q_chain):
        return self.km.configuration(q_chain)

    def gravity(self, q_chain) -> np.ndarray:
        """Gravity torque of every chain joint (N.m), nominal masses."""
        g = pin.computeGeneralizedGravity(self.model, self.data, self._full(q_chain))
        return np.array([g[self.model.joints[self.model.getJointId(j)].idx_v] for j in CHAIN])

    def base_displacement(self, q_chain, K=None) -> pin.SE3:
        """Displacement of the root frame (the suspension acts in base_link)."""
        dR = ground_reaction(self.model, self._full(q_chain), data=self.data) - self.P[42:48]
        D = displacement(self.K_true if K is None else K, dR)
        return self.root_M_base * D * self.root_M_base.inverse()

    def link_angles(self, q_motor, directions) -> np.ndarray:
        tau = self.gravity(q_motor)
        q = np.array(q_motor, float)
        for k, j in enumerate(CHAIN):
            if j in self.play:
                q[k] = self.play[j].link(q_motor[k], directions[k], tau[k])
        return q

    def postures(self, n: int):
        """Motor readings, approach directions and mocap measurements of ``n`` postures."""
        Qm = random_postures(self.km, n, self.rng, margin=0.15)
        dirs = self.rng.choice([-1.0, 1.0], size=Qm.shape)
        Ql = np.array([self.link_angles(q, d) for q, d in zip(Qm, dirs)])
        self.km.base_motion = self.base_displacement      # the true posture's weight
        data = measure(self.km, Ql, self.x, self.rng)
        self.km.base_motion = None
        return Qm, dirs, data.Y

    # -------------------------------------------------------------- experiments
    def force_plate_experiment(self, seconds: float = 60.0, rate: float = 120.0,
                               noise=(1.0, 1.0, 2.0, 0.3, 0.3, 0.2)):
        """Base displacements as arm motions cause them, and the plate wrench."""
        t = np.arange(0, seconds, 1 / rate)
        X, dX = np.zeros((len(t), 6)), np.zeros((len(t), 6))
        for k, amp in enumerate((1e-3, 1e-3, 5e-4, 3e-3, 3e-3, 2e-3)):
            f = self.rng.uniform(0.2, 2.0, 4)
            ph = self.rng.uniform(0, 2 * np.pi, 4)
            a = self.rng.normal(size=4) * amp / 2
            X[:, k] = (a * np.sin(2 * np.pi * np.outer(t, f) + ph)).sum(axis=1)
            dX[:, k] = (a * 2 * np.pi * f * np.cos(2 * np.pi * np.outer(t, f) + ph)).sum(axis=1)
        W = suspension_regressor(TIAGO_WHEELS, X[:, :3], X[:, 3:], dX[:, :3], dX[:, 3:])
        N = len(t)
        Y = W @ self.P + np.repeat(noise, N) * self.rng.normal(size=6 * N)
        return W, Y, np.asarray(noise)

    def encoder_sweeps(self, joint: str, speeds, rate: float = 100.0):
        """Motor / link encoder sweeps of one arm joint (the others held at a random
        posture per sweep)."""
        k = CHAIN.index(joint)
        lo, hi = self.km.model.lowerPositionLimit, self.km.model.upperPositionLimit
        idx = self.model.joints[self.model.getJointId(joint)].idx_q
        a, b = lo[idx] + 0.1, hi[idx] - 0.1
        seg, x = [], a
        for v in speeds:
            for target in (b, a):
                seg.append(np.linspace(x, target, int(abs(target - x) / v * rate),
                                       endpoint=False))
                x = target
        th = np.concatenate(seg)
        dth = np.gradient(th, 1 / rate)
        # the other joints held at a different random posture for each sweep, so that
        # the joint's torque covers its working range
        rest = random_postures(self.km, len(seg), self.rng, margin=0.15)
        q = np.repeat(rest, [len(s_) for s_ in seg], axis=0)
        q[:, k] = th
        tau = np.array([self.gravity(qq)[k] for qq in q[::10]])
        tau = np.interp(np.arange(len(th)), np.arange(0, len(th), 10), tau)
        tracker = PlayTracker([self.play[joint]], th[:1])      # the real play: a deadband
        link = np.array([tracker.update(th[i:i + 1], tau[i:i + 1])[0] for i in range(len(th))])
        return th, dth, tau, link - th + 2e-4 * self.rng.normal(size=th.shape)


def identify_phenomena(sim: SimulatedTiago):
    """Nguyen et al. 2024's experiments on the simulated robot: the suspension from the force
    plate (``K_s`` of the identified combinations) and every arm joint's backlash model
    from dual-encoder sweeps (degrees on validation sweeps)."""
    W, Y, noise = sim.force_plate_experiment()
    est = estimate_suspension(W, Y, sim.names, noise)
    K_hat = stiffness_matrix(est.values, est.observability.base, TIAGO_WHEELS)
    play = {}
    for j in ARM:
        train = sim.encoder_sweeps(j, [0.1, 0.4, 0.8])
        valid = sim.encoder_sweeps(j, [0.25, 0.6])
        play[j], _ = select_degrees(train, valid, degrees=range(1, 4))
    info = {"suspension_combinations": est.observability.base.size,
            "backlash_r2": {j: m.info["validation_r2"] for j, m in play.items()}}
    return K_hat, play, info


def link_angles(sim: SimulatedTiago, play: dict, Qm, dirs, approach_speed: float):
    """Model 3's joint angles: the identified backlash of each joint at its approach
    direction (a speed of ``approach_speed``) and its gravity torque."""
    out = np.array(Qm, float)
    for i, (q, d) in enumerate(zip(Qm, dirs)):
        tau = sim.gravity(q)
        for k, j in enumerate(CHAIN):
            if j in play:
                out[i, k] = play[j].link_angle(np.array([q[k]]),
                                               np.array([d[k] * approach_speed]),
                                               np.array([tau[k]]))[0]
    return out


MODELS = (("nominal", False, False, False),            # suspension, calibration, backlash
          ("model 1 (suspension)", True, False, False),
          ("model 2 (+ geometric calibration)", True, True, False),
          ("model 3 (+ backlash)", True, True, True))


def evaluate(sim: SimulatedTiago, n_train: int = 80, n_valid: int = 100,
             approach_speed: float = 0.2) -> tuple[list[Table3Row], dict]:
    """Identify the three non-nominal models on the simulated robot and score all four
    on held-out postures (Nguyen et al. 2024 Table III)."""
    K_hat, play, info = identify_phenomena(sim)
    Qm_t, dir_t, Y_t = sim.postures(n_train)
    Qm_v, dir_v, Y_v = sim.postures(n_valid)
    corrected = {False: (Qm_t, Qm_v),
                 True: (link_angles(sim, play, Qm_t, dir_t, approach_speed),
                        link_angles(sim, play, Qm_v, dir_v, approach_speed))}
    meas = Measurement("pose", sigma_position=5e-4, sigma_orientation=1e-3)
    rows = []
    for name, use_susp, calib, use_play in MODELS:
        Qt, Qv = corrected[use_play]
        km = KinematicModel(pin.buildModelFromUrdf(sim.urdf), sim.tool_frame, level="full",
                            joints=CHAIN if calib else [], measurement=meas)
        if use_susp:   # the identified suspension under the posture's weight
            km.base_motion = lambda q_chain: sim.base_displacement(q_chain, K_hat)
        train, valid = PostureSet(Qt, Y_t), PostureSet(Qv, Y_v)
        x0 = initial_frames(km, train, km.nominal_parameters())
        res = estimate(km, train, x0, bp=identifiable_parameters(km, train, x0))
        rows.append(Table3Row(name, *_errors(km, res.x, valid)))
    return rows, info


def markdown(rows: list[Table3Row]) -> str:
    lines = ["| model | position RMSE [mm] | position MAE [mm] | orientation RMSE [deg] | "
             "orientation MAE [deg] |", "|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r.model} | {r.position_rmse_mm:.2f} | {r.position_mae_mm:.2f} | "
                     f"{r.orientation_rmse_deg:.3f} | {r.orientation_mae_deg:.3f} |")
    return "\n".join(lines)

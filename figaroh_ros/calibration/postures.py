"""Optimal exciting postures (Nguyen et al. 2023 §II.D, Eq. 12-13, Fig. 2).

1. A pool of feasible candidates: joint readings drawn inside the limits minus a margin,
   kept when the tool lies in the workspace box and the robot is free of self-collision
   (pinocchio + coal on the URDF collision geometry, pairs that cannot move relative to
   each other or that touch in the reference posture left out).
2. Each candidate ``i`` brings an information matrix ``Sigma_i = R_i^T R_i`` (``R_i``: its
   rows of the base regressor, whitened by the measurement noise).
3. D-optimal design, Eq. 12: ``max_w log det(sum_i w_i Sigma_i)`` subject to
   ``sum_i w_i = 1, w_i >= 0`` - a concave program solved by IPOPT (cyipopt) with the exact
   gradient ``-tr(M^-1 Sigma_i)``.
4. Candidates ranked by weight; criterion ``O1 = det(M_k)^(1/2 Np) / sqrt(N_m)`` of the
   ``k`` best (Table II) computed for every ``k``; the count is the fewest postures that
   reach the peak (or plateau) of ``O1`` to within ``plateau``.
5. For the robot, :meth:`PosturePlan.in_travel_order` orders them for a short experiment
   (``travel.py``), a joint with more than a whole turn within its limits turned the
   short way between postures.

Static postures for mass / centre-of-mass identification (Eq. 13) use the same design on
the static regressor (gravity torques, ``v = a = 0``) with the joint torques of every
candidate kept under the effort limits.
"""
from __future__ import annotations

import csv
import os
from dataclasses import dataclass, replace

import cyipopt
import numpy as np
import pinocchio as pin

from figaroh_ros.calibration.kinematic_model import KinematicModel, chain_limits
from figaroh_ros.calibration.solve import PostureSet, identifiable_parameters, whitened
from figaroh_ros.calibration.travel import path_travel, travel_order, unwound
from figaroh_ros.errors import SolverError
from figaroh_ros.identification.base_parameters import base_parameters
from figaroh_ros.identification.parameters import DriveOptions, parameter_layout
from figaroh_ros.identification.regressor import standard_regressor
from figaroh_ros.model.robot import set_joint_angles
from figaroh_ros.model.speeds import joint_speeds


# ------------------------------------------------------------------ feasibility
class SelfCollision:
    """Self-collision test of a URDF's collision geometry (pinocchio + coal)."""

    def __init__(self, urdf_path: str, package_dirs: list[str] | None = None,
                 margin: float = 0.0, reference: dict | None = None):
        self.model = pin.buildModelFromUrdf(urdf_path)
        dirs = list(package_dirs or [])
        try:
            self.geom = pin.buildGeomFromUrdf(self.model, urdf_path,
                                              pin.GeometryType.COLLISION, package_dirs=dirs)
        except ValueError as exc:
            raise SolverError(
                f"collision geometry of {urdf_path} cannot be loaded ({exc}); give "
                "postures.package_dirs, a postures.collision_urdf whose meshes are "
                "installed, or set postures.self_collision: false") from None
        self.data = self.model.createData()
        g = self.geom
        g.addAllCollisionPairs()
        supports = [set(self.model.supports[o.parentJoint]) for o in g.geometryObjects]
        keep = []
        for k, p in enumerate(g.collisionPairs):
            a, b = p.first, p.second
            ja, jb = g.geometryObjects[a].parentJoint, g.geometryObjects[b].parentJoint
            # same or adjacent bodies, or bodies no joint moves apart
            if ja == jb or self.model.parents[ja] == jb or self.model.parents[jb] == ja:
                continue
            if supports[a] == supports[b]:
                continue
            keep.append(p)
        g.removeAllCollisionPairs()
        for p in keep:
            g.addCollisionPair(p)
        self.margin = margin
        self.gdata = self._geometry_data(g)
        self._moved_by: dict[frozenset, tuple] = {}
        q_ref = self.configuration(reference or {})
        pin.computeCollisions(self.model, self.data, g, self.gdata, q_ref, False)
        touching = [p for k, p in enumerate(g.collisionPairs)
                    if self.gdata.collisionResults[k].isCollision()]
        if touching:          # permanent contacts of the reference posture, as in an SRDF
            g.removeAllCollisionPairs()
            for p in keep:
                if p not in touching:
                    g.addCollisionPair(p)
            self.gdata = self._geometry_data(g)

    def _geometry_data(self, g: pin.GeometryModel) -> pin.GeometryData:
        gdata = pin.GeometryData(g)
        for req in gdata.collisionRequests:
            req.security_margin = self.margin
        return gdata

    def configuration(self, joints: dict) -> np.ndarray:
        q = pin.neutral(self.model)[None, :]
        known = [n for n in joints if self.model.existJointName(n)]
        set_joint_angles(self.model, q, [self.model.getJointId(n) for n in known],
                         [[joints[n] for n in known]])
        return q[0]

    def collides(self, joints: dict) -> bool:
        """Whether the posture ``joints`` (by name; the other joints neutral) is in
        self-collision.  Exact, and cheaper than testing every pair: only the pairs whose
        relative placement depends on the named joints are tested each time."""
        always, geom, gdata = self._pairs_moved_by(frozenset(joints))
        if always:
            return True
        q = self.configuration(joints)
        return bool(pin.computeCollisions(self.model, self.data, geom, gdata, q, True))

    def _pairs_moved_by(self, names: frozenset) -> tuple:
        """For a set of moving joints: (whether a pair they cannot move collides, the
        geometry model and data of the pairs they move).  The placement of object ``b``
        relative to ``a`` depends on the joints between them, ``supports(a) xor
        supports(b)``: a pair none of ``names`` lies between is tested once, with every
        joint neutral (a hand's fingers against each other on a calibrated arm: 80 % of
        TIAGo's collision time, for an answer that never changes)."""
        if names not in self._moved_by:
            m, g = self.model, self.geom
            ids = {m.getJointId(n) for n in names if m.existJointName(n)}
            supports = [set(m.supports[o.parentJoint]) for o in g.geometryObjects]
            moved = {k for k, p in enumerate(g.collisionPairs)
                     if (supports[p.first] ^ supports[p.second]) & ids}
            pin.computeCollisions(m, self.data, g, self.gdata, self.configuration({}), False)
            always = any(r.isCollision() for k, r in enumerate(self.gdata.collisionResults)
                         if k not in moved)
            sub = pin.GeometryModel(g)
            sub.removeAllCollisionPairs()
            for k in sorted(moved):
                sub.addCollisionPair(g.collisionPairs[k])
            self._moved_by[names] = (always, sub, self._geometry_data(sub))
        return self._moved_by[names]


def candidate_postures(km: KinematicModel, n: int, margin: float = 0.05, seed: int = 0,
                       workspace: tuple | None = None,
                       collision: SelfCollision | None = None,
                       max_draws: int | None = None) -> np.ndarray:
    """``n`` feasible chain postures (fewer if ``max_draws`` random draws do not find them)."""
    rng = np.random.default_rng(seed)
    lo, hi = chain_limits(km, margin)
    x = km.nominal_parameters()
    out: list[np.ndarray] = []
    draws = 0
    max_draws = max_draws or 50 * n
    while len(out) < n and draws < max_draws:
        batch = rng.uniform(lo, hi, size=(min(4 * n, 2000), len(lo)))
        draws += len(batch)
        if workspace is not None:
            T = km.tool_frame_poses(batch, x)
            Tbw = km.base_pose(x).inverse()
            pos = np.array([(Tbw * t).translation for t in T])
            ok = np.all((pos >= workspace[0]) & (pos <= workspace[1]), axis=1)
            batch = batch[ok]
        for q in batch:
            if collision is not None and collision.collides(dict(zip(km.chain, q))):
                continue
            out.append(q)
            if len(out) == n:
                break
    if len(out) < 2:
        raise SolverError(f"only {len(out)} feasible postures in {draws} draws: widen "
                               "the workspace box or the joint margin")
    return np.array(out)


# ------------------------------------------------------------------ D-optimal design
def information_matrices(R_rows: list[np.ndarray]) -> np.ndarray:
    """``Sigma_i = R_i^T R_i`` for each candidate's block of regressor rows."""
    return np.array([R.T @ R for R in R_rows])


class _LogDetProblem:
    """IPOPT callbacks for ``min -log det(sum w_i Sigma_i)`` s.t. ``sum w = 1``."""

    def __init__(self, S: np.ndarray, exact_hessian: bool):
        self.S = S
        self.flat = S.reshape(len(S), -1)
        self.exact = exact_hessian
        n = len(S)
        self.rows, self.cols = np.tril_indices(n if exact_hessian else 0)   # n^2/2 pairs

    def _M(self, w):
        return np.tensordot(w, self.S, axes=1)

    def objective(self, w):
        sign, logdet = np.linalg.slogdet(self._M(w))
        return -logdet if sign > 0 else 1e30

    def gradient(self, w):
        Minv = np.linalg.inv(self._M(w))
        return -self.flat @ Minv.ravel()

    def constraints(self, w):
        return np.array([w.sum()])

    def jacobian(self, w):
        return np.ones(len(w))

    def hessianstructure(self):
        return self.rows, self.cols

    def hessian(self, w, lagrange, obj_factor):
        # d2/dwi dwj -log det M = tr(M^-1 S_i M^-1 S_j) = <A_i, A_j>, A_i = L^-1 S_i L^-T
        L = np.linalg.cholesky(self._M(w))
        Li = np.linalg.inv(L)
        A = np.matmul(np.matmul(Li, self.S), Li.T).reshape(len(w), -1)
        H = A @ A.T
        return obj_factor * H[self.rows, self.cols]


def d_optimal_weights(S: np.ndarray, tol: float = 1e-8, max_iter: int = 500) -> np.ndarray:
    """Weights of the D-optimal design over candidates with information matrices ``S``
    (Eq. 12), by IPOPT.

    The matrices are first expressed in the basis that whitens the uniform design,
    ``S_i -> U^-1/2 S_i U^-1/2``: log det changes by a constant, the optimal weights do
    not, and the problem becomes well scaled whatever the parameter units.  The exact
    Hessian is used when it is small enough, L-BFGS otherwise."""
    n, p = S.shape[0], S.shape[1]
    U = S.mean(0)
    evals, evecs = np.linalg.eigh(U)
    if evals.min() <= 1e-12 * max(evals.max(), 1e-300):
        raise SolverError("the candidate postures together do not excite every "
                               "identifiable parameter: widen the candidate pool")
    W = evecs / np.sqrt(evals)
    Sn = np.matmul(np.matmul(W.T, S), W)
    exact = n * n * p * p <= 1e9
    prob = cyipopt.Problem(n=n, m=1, problem_obj=_LogDetProblem(Sn, exact),
                           lb=np.zeros(n), ub=np.ones(n), cl=[1.0], cu=[1.0])
    if not exact:
        prob.add_option("hessian_approximation", "limited-memory")
    prob.add_option("tol", tol)
    prob.add_option("max_iter", max_iter)
    prob.add_option("print_level", 0)
    prob.add_option("sb", "yes")
    w, info = prob.solve(np.full(n, 1.0 / n))
    if info["status"] not in (0, 1):
        raise SolverError(f"D-optimal design did not converge: {info['status_msg']}")
    w = np.clip(w, 0.0, None)
    return w / w.sum()


def o1_curve(S_ranked: np.ndarray, rows_per_posture: int) -> np.ndarray:
    """O1 of the first k ranked postures, k = 1..len (0 while the matrix is singular)."""
    p = S_ranked.shape[1]
    M = np.zeros((p, p))
    out = np.zeros(len(S_ranked))
    for k, Sk in enumerate(S_ranked, start=1):
        M += Sk
        sign, logdet = np.linalg.slogdet(M)
        if sign > 0 and k * rows_per_posture >= p:
            out[k - 1] = np.exp(logdet / (2 * p)) / np.sqrt(k * rows_per_posture)
    return out


def choose_count(crit: np.ndarray, plateau: float) -> int:
    """Number of postures: the fewest whose O1 is within ``plateau`` (a fraction) of the
    best value of the curve - its peak, or the start of its plateau."""
    if not np.any(crit > 0):
        raise SolverError("no subset of the ranked candidates excites every "
                               "identifiable parameter: add candidates")
    return int(np.flatnonzero(crit >= (1.0 - plateau) * crit.max())[0]) + 1


@dataclass
class PosturePlan:
    """D-optimal postures: ``postures`` (k x n, columns ``joints``), their design weights
    and the criterion O1 of the k best candidates for every k (Table II)."""

    postures: np.ndarray        # chosen postures, by decreasing weight (or travel order)
    weights: np.ndarray         # D-optimal weight of each chosen posture
    criterion: np.ndarray       # O1 of the k best, k = 1..max_postures
    joints: list[str]           # column names of the postures
    candidates: np.ndarray      # feasible pool
    candidate_weights: np.ndarray
    parameter_names: list[str]  # base parameters the design is for
    order: str = "weight"       # "weight": by decreasing weight; "travel": travel_order
    speeds: np.ndarray | None = None   # each joint's speed in a move (model/speeds.py)
    # joints with more than a whole turn within ``bounds`` (lower, upper): travel.py
    turnable: np.ndarray | None = None
    bounds: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def n_candidates(self) -> int:
        return len(self.candidates)

    @property
    def selected(self) -> np.ndarray:
        """The chosen postures (the name the demo and ROS tests use)."""
        return self.postures

    def in_travel_order(self) -> PosturePlan:
        """The same postures in the order that shortens the experiment (``travel_order``
        at the joints' ``speeds``: the executor's moves then take a third less time on the
        UR10), the turnable joints played at their readings nearest the previous posture's
        (``unwound``) when that is shorter still: the same link poses."""
        o = travel_order(self.postures, self.speeds)
        Q = self.postures[o]
        if self.turnable is not None and self.bounds is not None and self.turnable.any():
            ot = travel_order(self.postures, self.speeds, self.turnable)
            U = unwound(self.postures[ot], *self.bounds, self.turnable)
            k = np.arange(len(U))
            if path_travel(U, k, self.speeds) < path_travel(Q, k, self.speeds):
                o, Q = ot, U
        return replace(self, postures=Q, weights=self.weights[o], order="travel")

    def to_dict(self) -> dict:
        k = len(self.postures)
        out = {"postures": k, "candidates": self.n_candidates, "joints": self.joints,
               "criterion_o1": float(self.criterion[k - 1]),
               "base_parameters": len(self.parameter_names), "order": self.order,
               "joint_travel": path_travel(self.postures, np.arange(k))}
        if self.speeds is not None:      # the executor's cubic moves peak at 1.5 x average
            out["move_time_at_limits_s"] = 1.5 * path_travel(self.postures, np.arange(k),
                                                             self.speeds)
        return out

    def to_csv(self, path: str) -> str:
        """The postures file the executor plays, in this plan's order: a column per joint,
        then ``weight`` (ignored by the executor); written atomically."""
        table = np.column_stack([self.postures, self.weights])
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        tmp = path + ".tmp"
        with open(tmp, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(list(self.joints) + ["weight"])
            n = len(self.joints)
            for row in table:
                w.writerow([repr(float(v)) for v in row[:n]] + [f"{row[n]:.6g}"])
        os.replace(tmp, path)
        return path


def ranked_plan(S: np.ndarray, pool: np.ndarray, joints: list[str], names: list[str],
                rows_per_posture: int, max_postures: int, plateau: float) -> PosturePlan:
    """Weights, ranking and count of a D-optimal design over ``pool``."""
    w = d_optimal_weights(S)
    order = np.argsort(-w, kind="stable")
    crit = o1_curve(S[order[:max_postures]], rows_per_posture)
    k = choose_count(crit, plateau)
    return PosturePlan(pool[order[:k]], w[order[:k]], crit, list(joints), pool, w, names)


def d_optimal_design(km: KinematicModel, candidates: np.ndarray, max_postures: int = 60,
                     plateau: float = 0.01, x: np.ndarray | None = None) -> PosturePlan:
    """D-optimal calibration postures for ``km`` among ``candidates`` (Eq. 12, Fig. 2)."""
    x = km.nominal_parameters() if x is None else x
    size = int(km.measurement.mask.sum())
    fake = PostureSet(candidates, np.zeros((len(candidates), km.measurement.size)))
    bp = identifiable_parameters(km, fake, x)
    _, R = whitened(km, fake, x)
    Rb = R[:, bp.base_index].reshape(len(candidates), size, -1)
    plan = ranked_plan(information_matrices(list(Rb)), candidates, km.chain,
                       list(bp.names), size, max_postures, plateau)
    limits = [km.model.velocityLimit[km.model.joints[j].idx_v] for j in km.chain_ids]
    return replace(plan, speeds=joint_speeds(limits))


def static_postures(robot_model, candidates_q: np.ndarray, effort_fraction: float = 0.8,
                    max_postures: int = 40, plateau: float = 0.01) -> PosturePlan:
    """Static postures for mass / centre-of-mass identification (Eq. 13): D-optimal over
    the static base regressor, candidates whose gravity torques stay under
    ``effort_fraction`` of the effort limits.  ``robot_model`` is a
    :class:`figaroh_ros.model.robot.RobotModel`; ``candidates_q`` its active joint values."""
    rm = robot_model
    Qf = rm.full_configuration(candidates_q)
    data = rm.model.createData()
    limit = effort_fraction * rm.effort_limits()
    ok = []
    for q in Qf:
        g = pin.computeGeneralizedGravity(rm.model, data, q)[rm.idx_v]
        ok.append(bool(np.all(np.abs(g) <= limit)))
    ok = np.array(ok)
    if ok.sum() < 2:
        raise SolverError("no candidate posture keeps the gravity torques under the "
                               "effort limits")
    Qa = candidates_q[ok]
    n = len(Qa)
    zeros = np.zeros_like(Qa)
    opts = DriveOptions(viscous_friction=False, coulomb_friction=False, rotor_inertia=False,
                        torque_offset=False)
    layout = parameter_layout(rm, opts)
    W = standard_regressor(rm, layout, opts, Qa, zeros, zeros)
    bp = base_parameters(W, layout.names)
    Wb = bp.base_regressor(W)
    nj = rm.n_joints
    blocks = Wb.reshape(nj, n, -1).transpose(1, 0, 2)      # joint-major rows
    plan = ranked_plan(information_matrices(list(blocks)), Qa, rm.active_joints,
                       list(bp.names), nj, max_postures, plateau)
    return replace(plan, speeds=joint_speeds(rm.velocity_limits()))


"""Optimal exciting trajectories by IPOPT (seed 000 Eq. 14; seed 003 Eq. 11-13).

    min_z  Psi(Sigma^-1/2 W_b(q(z), dq(z), ddq(z)))
    s.t.   q-, dq-, ddq- limits            (linear in z: constant Jacobian)
           |tau(q, dq, ddq)| <= tau+       (inverse dynamics of the nominal model;
                                             Jacobian from pinocchio's RNEA derivatives)
           P- <= p_tool(q) <= P+            (workspace box and floor; frame Jacobian)

on a grid of ``grid_points`` samples.  Every grid-feasible iterate is scored by the exact
criterion on a 4x finer grid and the best one is kept (the criterion is not convex; an
interior-point run's last iterate is not always its best).  The result is then checked at
the control rate (limits, torques, workspace) and for self-collision (pinocchio + coal):
a small violation between grid points is repaired by blending towards the feasible
reference of the parameterisation, a larger one by tighter margins, a collision by
distance constraints on the colliding pairs (active set), then restarts from other seeds.

Gradient of the criterion: ``dPsi = <G, dW>`` (``criteria``) contracted sample by sample
with the regressor's directional derivatives: exact in ``ddq`` (the regressor is linear in
it), exact in ``dq`` by central differences (it is quadratic in ``dq``; sign-Coulomb columns
have zero derivative), central differences in ``q``; then through the constant bases of
the parameterisation.  FIGAROH differentiates the whole problem by finite differences.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass

import cyipopt
import numpy as np
import pinocchio as pin

from figaroh_ros.errors import SolverError
from figaroh_ros.excitation.collision import PairDistances
from figaroh_ros.excitation.criteria import criterion, criterion_value
from figaroh_ros.excitation.parameterisation import LinearTrajectory
from figaroh_ros.excitation.planned import PlannedTrajectory
from figaroh_ros.identification.base_parameters import base_parameters, condition_number
from figaroh_ros.identification.parameters import DriveOptions, ParameterLayout
from figaroh_ros.identification.regressor import standard_regressor
from figaroh_ros.model.robot import RobotModel, random_states
from figaroh_ros.progress import Stage, reporter


@dataclass
class Limits:
    q_lo: np.ndarray
    q_hi: np.ndarray
    v_max: np.ndarray
    a_max: np.ndarray
    tau_max: np.ndarray
    tool_frame: str | None = None
    box_lo: np.ndarray | None = None
    box_hi: np.ndarray | None = None


def robot_limits(robot: RobotModel, velocity_scale: float = 0.8, acceleration: float = 5.0,
                 torque_scale: float = 0.8, margin: float = 0.05) -> Limits:
    lo, hi = robot.position_limits()
    lo = np.where(np.isfinite(lo) & (lo > -1e3), lo, -np.pi) + margin
    hi = np.where(np.isfinite(hi) & (hi < 1e3), hi, np.pi) - margin
    v = robot.velocity_limits()
    v = np.where(np.isfinite(v) & (v > 0) & (v < 1e3), v, 2.0) * velocity_scale
    tau = robot.effort_limits()
    tau = np.where(np.isfinite(tau) & (tau > 0) & (tau < 1e5), tau, 1e5) * torque_scale
    return Limits(lo, hi, v, np.full(len(lo), acceleration), tau)


class TrajectoryProblem:
    """The IPOPT problem (cyipopt callbacks) for one parameterisation."""

    def __init__(self, robot: RobotModel, layout: ParameterLayout, drive: DriveOptions,
                 traj: LinearTrajectory, limits: Limits, base_index: np.ndarray,
                 kind: str = "cond", weights: np.ndarray | None = None,
                 margin: float = 0.0):
        self.robot, self.layout, self.drive = robot, layout, drive
        self.traj, self.lim, self.kind = traj, limits, kind
        self.base = base_index
        self.n = robot.n_joints
        self.m = traj.n_vars_per_joint
        self.G = len(traj.t)
        self.w = np.ones(self.n) if weights is None else np.asarray(weights, float)
        self.scale = 1.0 - margin
        self.data = robot.model.createData()
        self.fid = None
        if limits.tool_frame is not None:
            self.fid = robot.model.getFrameId(limits.tool_frame)
        self._cache_z = None
        self.evaluations = 0
        self.iterations = 0
        self.pairs = None               # PairDistances, with collision constraints
        self.col = []                   # (Bq row, c row, pair) of each such constraint
        self.col_margin = 0.02
        self._gradient_x = None
        self.best = (np.inf, None)      # (score, x) of the best grid-feasible iterate
        self.monitor = None             # x -> score (default: the objective)

    def intermediate(self, alg_mod, iter_count, obj_value, inf_pr, *args):
        """Keep the best grid-feasible iterate: with a non-smooth criterion the last
        iterate of an interior-point run need not be the best one it visited."""
        self.iterations = int(iter_count)
        x = self._gradient_x      # IPOPT evaluates the gradient at every new iterate
        if x is None or not np.isclose(self.objective(x), obj_value, rtol=1e-12, atol=0):
            return True
        g = self.constraints(x)
        if np.any(g < self.bounds[0] - 1e-7) or np.any(g > self.bounds[1] + 1e-7):
            return True
        score = obj_value if self.monitor is None else self.monitor(x)
        if score < self.best[0]:
            self.best = (float(score), x.copy())
        return True

    # ------------------------------------------------------------ helpers
    def unpack(self, x: np.ndarray) -> np.ndarray:
        return x.reshape(self.n, self.m).T          # m x n

    def states(self, x):
        return self.traj.evaluate(self.unpack(x))

    def regressor(self, Q, V, A) -> np.ndarray:
        """Weighted base regressor per sample: N x n x p."""
        N = Q.shape[0]
        W = standard_regressor(self.robot, self.layout, self.drive, Q, V, A)
        return W[:, self.base].reshape(self.n, N, -1).transpose(1, 0, 2) * self.w[None, :, None]

    def _value_and_G(self, x):
        z = x.tobytes()
        if self._cache_z != z:
            Q, V, A = self.states(x)
            Wt = self.regressor(Q, V, A)
            val, G = criterion(Wt.reshape(-1, Wt.shape[2]), self.kind)
            self._cache = (Q, V, A, val, G.reshape(Wt.shape))
            self._cache_z = z
            self.evaluations += 1
        return self._cache

    # ------------------------------------------------------------ objective
    def objective(self, x):
        return self._value_and_G(x)[3]

    def gradient(self, x):
        self._gradient_x = np.array(x)
        Q, V, A, _, G = self._value_and_G(x)
        n, N = self.n, Q.shape[0]
        h = 1e-7
        # perturbed states: +h in q_j, +h in v_j (forward differences: error O(h), far
        # below what the optimiser needs), +e_j in a_j (exact: W is linear in ddq)
        E = np.eye(n)
        blocks = ([(Q + h * E[j], V, A) for j in range(n)]
                  + [(Q, V + h * E[j], A) for j in range(n)]
                  + [(Q, V, A + E[j]) for j in range(n)] + [(Q, V, A)])
        Wall = self.regressor(np.vstack([b[0] for b in blocks]),
                              np.vstack([b[1] for b in blocks]),
                              np.vstack([b[2] for b in blocks])).reshape(-1, N, n, G.shape[2])
        W0 = Wall[-1]
        D = Wall[:-1] - W0[None]                       # 3n x N x n x p
        g = np.einsum("srp,ksrp->ks", G, D)            # 3n x N
        gq, gv, ga = (g[:n] / h).T, (g[n:2 * n] / h).T, g[2 * n:].T
        T = self.traj
        grad = T.Bq.T @ gq + T.Bv.T @ gv + T.Ba.T @ ga      # m x n
        return grad.T.ravel()

    # ------------------------------------------------------------ constraints
    def constraint_bounds(self):
        L, s, G = self.lim, self.scale, self.G
        mid = 0.5 * (L.q_lo + L.q_hi)
        half = 0.5 * (L.q_hi - L.q_lo) * s
        lo = [np.tile(mid - half, G), np.tile(-L.v_max * s, G), np.tile(-L.a_max * s, G),
              np.tile(-L.tau_max * s, G)]
        hi = [np.tile(mid + half, G), np.tile(L.v_max * s, G), np.tile(L.a_max * s, G),
              np.tile(L.tau_max * s, G)]
        if self.fid is not None:
            c, h = 0.5 * (L.box_lo + L.box_hi), 0.5 * (L.box_hi - L.box_lo) * s
            lo.append(np.tile(c - h, G))
            hi.append(np.tile(c + h, G))
        lo.append(np.full(len(self.col), self.col_margin))
        hi.append(np.full(len(self.col), 1e19))
        return np.concatenate(lo), np.concatenate(hi)

    def _collision_values(self, x, jac: bool):
        Z = self.unpack(x)
        vals, rows = [], []
        for b, c, pair in self.col:
            d, g = self.pairs.distance(c + b @ Z, pair)
            vals.append(d)
            rows.append(np.outer(g, b).ravel())      # d d / d z_k = g_k b
        return np.array(vals), rows

    def _full(self, q):
        return self.robot.full_configuration(q[None, :])[0]

    def constraints(self, x):
        Q, V, A = self.states(x)
        tau = np.empty_like(Q)
        m = self.robot.model
        parts = [Q.ravel(), V.ravel(), A.ravel()]
        P = []
        for s in range(self.G):
            qf = self._full(Q[s])
            vf = self.robot.full_velocity(V[s][None, :])[0]
            af = self.robot.full_velocity(A[s][None, :])[0]
            tau[s] = pin.rnea(m, self.data, qf, vf, af)[self.robot.idx_v]
            if self.fid is not None:
                pin.framesForwardKinematics(m, self.data, qf)
                P.append(self.data.oMf[self.fid].translation.copy())
        parts.append(tau.ravel())
        if self.fid is not None:
            parts.append(np.ravel(P))
        parts.append(self._collision_values(x, False)[0])
        return np.concatenate(parts)

    def jacobianstructure(self):
        rows, cols = [], []
        n, m, G = self.n, self.m, self.G
        r = 0
        for _ in range(3):                       # q, v, a: row (s, j) depends on z_j
            for s in range(G):
                for j in range(n):
                    rows += [r] * m
                    cols += list(range(j * m, (j + 1) * m))
                    r += 1
        dense_rows = G * n + (G * 3 if self.fid is not None else 0) + len(self.col)
        for _ in range(dense_rows):              # torques, tool position: every variable
            rows += [r] * (n * m)
            cols += list(range(n * m))
            r += 1
        return np.array(rows), np.array(cols)

    def jacobian(self, x):
        T = self.traj
        n, G = self.n, self.G
        out = [np.repeat(B[:, None, :], n, axis=1).ravel() for B in (T.Bq, T.Bv, T.Ba)]
        Q, V, A = self.states(x)
        m = self.robot.model
        iv = self.robot.idx_v
        Jt = np.empty((G, n, n * self.m))
        Jp = np.empty((G, 3, n * self.m)) if self.fid is not None else None
        for s in range(G):
            qf = self._full(Q[s])
            vf = self.robot.full_velocity(V[s][None, :])[0]
            af = self.robot.full_velocity(A[s][None, :])[0]
            dq, dv, da = pin.computeRNEADerivatives(m, self.data, qf, vf, af)
            dq, dv, da = (np.asarray(d)[np.ix_(iv, iv)] for d in (dq, dv, da))
            # d tau / d z_k = dtau/dq[:, k] Bq[s] + dtau/dv[:, k] Bv[s] + dtau/da[:, k] Ba[s]
            Jt[s] = (np.einsum("jk,m->jkm", dq, T.Bq[s]) + np.einsum("jk,m->jkm", dv, T.Bv[s])
                     + np.einsum("jk,m->jkm", da, T.Ba[s])).reshape(n, -1)
            if Jp is not None:
                pin.computeJointJacobians(m, self.data, qf)
                pin.framesForwardKinematics(m, self.data, qf)
                J = pin.getFrameJacobian(m, self.data, self.fid,
                                         pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)[:3, iv]
                Jp[s] = np.einsum("jk,m->jkm", J, T.Bq[s]).reshape(3, -1)
        out.append(Jt.ravel())
        if Jp is not None:
            out.append(Jp.ravel())
        out += self._collision_values(x, True)[1]
        return np.concatenate(out)


def structural_base(robot, layout, drive, rng, samples: int = 2000) -> np.ndarray:
    """Base columns from random states (what a rich excitation identifies)."""
    W = standard_regressor(robot, layout, drive, *random_states(robot, rng, samples))
    return base_parameters(W, layout.names)


def initial_point(traj: LinearTrajectory, limits: Limits, rng, fraction: float = 0.3):
    """Random variables scaled so that the trajectory uses ``fraction`` of the limits."""
    n = len(limits.q_lo)
    if traj.initial is not None:
        Z = traj.initial + 0.05 * rng.normal(size=traj.initial.shape)
    else:
        Z = rng.normal(size=(traj.n_vars_per_joint, n))
    Q, V, A = traj.evaluate(Z)
    dQ = np.abs(Q - traj.c).max(axis=0) + 1e-12
    half = 0.5 * (limits.q_hi - limits.q_lo)
    k = np.min(np.vstack([fraction * half / dQ,
                          fraction * limits.v_max / (np.abs(V - traj.cv).max(axis=0) + 1e-12),
                          fraction * limits.a_max / (np.abs(A - traj.ca).max(axis=0) + 1e-12)]),
               axis=0)
    if traj.initial is not None:
        return Z
    return Z * k


# a solve ends once the objective changed by less than this (relative) for that many
# consecutive feasible iterations
STOPPING = {"acceptable_obj_change_tol": 1e-4, "acceptable_iter": 10}


def solve(problem: TrajectoryProblem, x0: np.ndarray, max_iter: int = 200,
          tol: float = 1e-6):
    cl, cu = problem.constraint_bounds()
    nlp = cyipopt.Problem(n=len(x0), m=len(cl), problem_obj=problem, cl=cl, cu=cu)
    nlp.add_option("hessian_approximation", "limited-memory")
    nlp.add_option("max_iter", max_iter)
    nlp.add_option("tol", tol)
    # the condition number is not smooth: stop once the objective has stalled for 10
    # feasible iterations rather than waiting for a stationarity measure that never falls
    nlp.add_option("acceptable_tol", 1e10)
    nlp.add_option("acceptable_dual_inf_tol", 1e10)
    nlp.add_option("acceptable_compl_inf_tol", 1e-3)
    nlp.add_option("acceptable_constr_viol_tol", 1e-6)
    for key, value in STOPPING.items():
        nlp.add_option(key, value)
    nlp.add_option("print_level", int(os.environ.get("FIGAROH_IPOPT_PRINT", "0")))
    if os.environ.get("FIGAROH_IPOPT_PRINT"):
        nlp.add_option("print_timing_statistics", "yes")
    nlp.add_option("sb", "yes")
    problem.best, problem.bounds = (np.inf, None), (cl, cu)
    x, info = nlp.solve(x0)
    if problem.best[1] is not None:
        x = problem.best[1]
    return x, info


def check(robot: RobotModel, t, Q, V, A, limits: Limits, collision=None,
          tol: float = 1e-6) -> dict:
    """Every constraint at every sample of (t, Q, V, A): returns the worst ratio to its
    limit per kind (<= 1 is satisfied) and the self-collision samples."""
    data = robot.model.createData()
    out = {}
    mid = 0.5 * (limits.q_lo + limits.q_hi)
    half = 0.5 * (limits.q_hi - limits.q_lo)
    out["position"] = float(np.max(np.abs(Q - mid) / half))
    out["velocity"] = float(np.max(np.abs(V) / limits.v_max))
    out["acceleration"] = float(np.max(np.abs(A) / limits.a_max))
    tau = np.empty_like(Q)
    P = []
    fid = robot.model.getFrameId(limits.tool_frame) if limits.tool_frame else None
    hits = []
    for s in range(len(t)):
        qf = robot.full_configuration(Q[s][None, :])[0]
        tau[s] = pin.rnea(robot.model, data, qf, robot.full_velocity(V[s][None, :])[0],
                          robot.full_velocity(A[s][None, :])[0])[robot.idx_v]
        if fid is not None:
            pin.framesForwardKinematics(robot.model, data, qf)
            P.append(data.oMf[fid].translation.copy())
        if collision is not None and collision.collides(dict(zip(robot.active_joints, Q[s]))):
            hits.append(float(t[s]))
    out["torque"] = float(np.max(np.abs(tau) / limits.tau_max))
    if fid is not None:
        P = np.array(P)
        c = 0.5 * (limits.box_lo + limits.box_hi)
        h = 0.5 * (limits.box_hi - limits.box_lo)
        out["workspace"] = float(np.max(np.abs(P - c) / h))
    out["collisions"] = hits
    out["ok"] = all(v <= 1.0 + tol for k, v in out.items()
                    if k not in ("collisions", "ok")) and not hits
    return out


def plan(robot: RobotModel, layout: ParameterLayout, drive: DriveOptions,
         make_trajectory, limits: Limits, kind: str = "cond", grid_points: int = 60,
         rate_hz: float = 100.0, duration: float = 10.0, weights=None, collision=None,
         starts: int = 3, max_iter: int = 200, seed: int = 0,
         progress=None) -> PlannedTrajectory:
    """Optimise from several random starts; keep the best trajectory that passes the
    dense check (limits, torques, workspace at ``rate_hz``; self-collision).  A start whose
    dense check fails between grid points is re-solved with 2 % tighter margins.
    ``make_trajectory(t)`` builds the parameterisation on the time grid ``t``."""
    t0 = time.perf_counter()
    say = reporter(progress)
    rng = np.random.default_rng(seed)
    bp = structural_base(robot, layout, drive, rng)
    grid = np.linspace(0.0, duration, grid_points, endpoint=False)
    dense_t = np.arange(0.0, duration + 0.5 / rate_hz, 1.0 / rate_hz)
    coarse, dense = make_trajectory(grid), make_trajectory(dense_t)
    # iterates are ranked on a 4x finer grid (far above the trajectory's bandwidth)
    monitor_basis = make_trajectory(np.linspace(0.0, duration, 4 * grid_points,
                                                endpoint=False))
    pairs = None
    if collision is not None:
        pairs = PairDistances(collision, robot.active_joints)
    best, iterations, tried = None, 0, 0
    for k in range(starts):
        tried += 1
        x = initial_point(coarse, limits, rng).T.ravel()
        col = []
        margin = 0.0
        for _ in range(8):
            prob = TrajectoryProblem(robot, layout, drive, coarse, limits, bp.base_index,
                                     kind, weights, margin)
            prob.pairs, prob.col = pairs, col
            prob.monitor = _dense_score(prob, monitor_basis)
            x, info = solve(prob, x, max_iter=max_iter if not col and margin == 0
                            else max(40, max_iter // 2))
            iterations += prob.iterations
            Q, V, A = dense.evaluate(prob.unpack(x))
            checks = check(robot, dense_t, Q, V, A, limits, collision)
            if not checks["ok"] and not checks["collisions"]:
                x, checks = _shrink(robot, dense, dense_t, prob, x, limits, collision, checks)
                Q, V, A = dense.evaluate(prob.unpack(x))
            if checks["ok"]:
                break
            if checks["collisions"]:        # active set: constrain the colliding pairs
                col = col + _collision_constraints(make_trajectory, pairs, prob, x,
                                                   checks["collisions"])
            if any(v > 1.0 for key, v in checks.items() if key not in ("collisions", "ok")):
                margin = min(margin + 0.02, 0.1)   # violated between grid points: tighten
        if not checks["ok"]:
            say(Stage.PLANNING, 0.9 * (k + 1) / starts,
                f"start {k + 1}: rejected ({_why(checks)})")
            continue
        W = prob.regressor(Q, V, A)
        cond = condition_number(W.reshape(-1, W.shape[2]))
        say(Stage.PLANNING, 0.9 * (k + 1) / starts,
            f"start {k + 1}: condition number {cond:.4g}")
        if best is None or cond < best.condition_number:
            best = PlannedTrajectory(dense_t, Q, V, A, cond, float(prob.objective(x)),
                                     iterations, 0.0, tried, bp.size, checks,
                                     list(robot.active_joints))
    if best is None:
        raise SolverError(f"no start out of {starts} gave a trajectory satisfying every "
                            "constraint: loosen the limits or add starts")
    best.seconds = time.perf_counter() - t0
    best.starts = tried
    return best


def _dense_score(prob: TrajectoryProblem, dense: LinearTrajectory):
    """The exact criterion of the trajectory on a finer grid than the optimiser's: what
    that grid stands for, and what its iterates are ranked by."""
    def score(x):
        W = prob.regressor(*dense.evaluate(prob.unpack(x)))
        return criterion_value(W.reshape(-1, W.shape[2]), prob.kind)
    return score


def _shrink(robot, dense, dense_t, prob, x, limits, collision, checks,
            smallest: float = 0.9):
    """Repair a small violation between grid points without another solve: blend the
    variables towards the parameterisation's feasible reference (rest at ``q0`` for the
    Fourier series, straight lines between postures for splines),
    ``z(s) = z_ref + s (z - z_ref)``.  Position, velocity and acceleration limits are
    convex and hold at ``s = 0``, so they hold on an interval ``[0, s_max]``; torques and
    the workspace are checked again at every step.  Returns (x, checks) of the largest
    ``s >= smallest`` that passes, or the input unchanged."""
    worst = max(v for k, v in checks.items() if k not in ("collisions", "ok"))
    if worst > 1.0 / smallest:
        return x, checks
    ref = np.zeros_like(prob.unpack(x)) if prob.traj.initial is None else prob.traj.initial
    Z = prob.unpack(x)
    s = 0.999 / worst
    while s >= smallest:
        Zs = ref + s * (Z - ref)
        Q, V, A = dense.evaluate(Zs)
        c = check(robot, dense_t, Q, V, A, limits, collision)
        if c["ok"]:
            return Zs.T.ravel(), c
        s *= 0.99
    return x, checks


def _collision_constraints(make_trajectory, pairs, prob, x, times, spread: float = 0.1):
    """Distance constraints for the pairs colliding at ``times``: at the start, middle
    and end of every run of colliding samples and ``spread`` seconds around them (a
    constraint at one instant pushes the contact to the next)."""
    times = np.sort(np.asarray(times))
    runs = np.split(times, np.flatnonzero(np.diff(times) > 0.05) + 1)
    pick = []
    for r in runs:
        a, b = r[0], r[-1]
        pick += [a - spread, a - spread / 2, a, 0.5 * (a + b), b, b + spread / 2, b + spread]
    pick = np.clip(np.array(pick), prob.traj.t[0], None)
    basis = make_trajectory(pick)
    Z = prob.unpack(x)
    out = []
    colliding = set()
    for i in range(len(pick)):
        colliding.update(pairs.colliding_pairs(basis.c[i] + basis.Bq[i] @ Z))
    for i in range(len(pick)):
        for pair in sorted(colliding):
            out.append((basis.Bq[i], basis.c[i], pair))
    return out


def _why(checks: dict) -> str:
    if checks["collisions"]:
        return f"self-collision at t = {checks['collisions'][0]:.2f} s"
    bad = {k: v for k, v in checks.items() if k not in ("collisions", "ok") and v > 1}
    return ", ".join(f"{k} at {100 * v:.0f} % of its limit" for k, v in bad.items())

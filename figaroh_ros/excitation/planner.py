"""Optimal exciting trajectories by IPOPT (Nguyen et al. 2023 Eq. 14; Tröbinger et al. Eq. 11-13).

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
A start's first solve takes at most 2/3 of its ``max_iter`` IPOPT iterations and its
repairs share the rest: iteration counts, never the clock, end every solve.

Gradient of the criterion: ``dPsi = <G, dW>`` (``criteria``) contracted sample by sample
with the regressor's directional derivatives: exact in ``ddq`` (the regressor is linear in
it), forward differences of step 1e-7 in ``dq`` and ``q`` (error O(h), far below what the
optimiser needs; sign-Coulomb columns have zero derivative); then through the constant
bases of the parameterisation.  FIGAROH differentiates the whole problem by finite differences.
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
from figaroh_ros.excitation.dense_check import check, shrink, why, worst
from figaroh_ros.excitation.parameterisation import LinearTrajectory
from figaroh_ros.excitation.planned import PlannedTrajectory
from figaroh_ros.excitation.ticker import Ticker
from figaroh_ros.identification.base_parameters import base_parameters, condition_number
from figaroh_ros.identification.parameters import DriveOptions, ParameterLayout
from figaroh_ros.identification.regressor import standard_regressor
from figaroh_ros.model.robot import RobotModel, random_states
from figaroh_ros.progress import Stage, reporter
from figaroh_ros.threads import limited_threads


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
        self.ticker = Ticker()          # iteration progress (silent by default)
        self._g_cache = (None, None)    # (x bytes, constraint values)
        self._col_cache = (None, None, None)

    def intermediate(self, alg_mod, iter_count, obj_value, inf_pr, *args):
        """Keep the best grid-feasible iterate: with a non-smooth criterion the last
        iterate of an interior-point run need not be the best one it visited."""
        self.iterations = int(iter_count)
        self.ticker.iteration(iter_count, obj_value, inf_pr)
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
            self.ticker.beat()
        return self._cache

    # ------------------------------------------------------------ objective
    def objective(self, x):
        return self._value_and_G(x)[3]

    def gradient(self, x):
        self._gradient_x = np.array(x)
        Q, V, A, _, G = self._value_and_G(x)
        self.ticker.beat()
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

    def _collisions(self, x):
        """(distances, Jacobian rows) of the collision constraints at ``x``, computed
        once per point (exact mesh distances are the dearest evaluation)."""
        key = np.asarray(x).tobytes()
        if self._col_cache[0] != key:
            Z = self.unpack(x)
            vals, rows = [], []
            for b, c, pair in self.col:
                d, g = self.pairs.distance(c + b @ Z, pair)
                vals.append(d)
                rows.append(np.outer(g, b).ravel())      # d d / d z_k = g_k b
            self._col_cache = (key, np.array(vals), rows)
        return self._col_cache[1], self._col_cache[2]

    def _full_states(self, x):
        """Full-model configurations, velocities and accelerations on the grid."""
        Q, V, A = self.states(x)
        r = self.robot
        return Q, V, A, r.full_configuration(Q), r.full_velocity(V), r.full_velocity(A)

    def constraints(self, x):
        key = np.asarray(x).tobytes()
        if self._g_cache[0] == key:      # IPOPT's new iterate, seen again by intermediate
            return self._g_cache[1].copy()
        Q, V, A, Qf, Vf, Af = self._full_states(x)
        tau = np.empty_like(Q)
        m, iv = self.robot.model, self.robot.idx_v
        parts = [Q.ravel(), V.ravel(), A.ravel()]
        P = []
        for s in range(self.G):
            tau[s] = pin.rnea(m, self.data, Qf[s], Vf[s], Af[s])[iv]
            if self.fid is not None:
                pin.framesForwardKinematics(m, self.data, Qf[s])
                P.append(self.data.oMf[self.fid].translation.copy())
        parts.append(tau.ravel())
        if self.fid is not None:
            parts.append(np.ravel(P))
        self.ticker.beat()
        parts.append(self._collisions(x)[0])
        g = np.concatenate(parts)
        self._g_cache = (key, g)
        return g.copy()

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
        _, _, _, Qf, Vf, Af = self._full_states(x)
        m = self.robot.model
        ix = np.ix_(self.robot.idx_v, self.robot.idx_v)
        D = np.empty((3, G, n, n))            # d tau / d (q, v, a) per sample
        Jp = np.empty((G, 3, n)) if self.fid is not None else None
        for s in range(G):
            for k, d in enumerate(pin.computeRNEADerivatives(m, self.data, Qf[s], Vf[s],
                                                             Af[s])):
                D[k, s] = np.asarray(d)[ix]
            if Jp is not None:
                Jp[s] = pin.computeFrameJacobian(m, self.data, Qf[s], self.fid,
                                                 pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
                                                 )[:3, self.robot.idx_v]
        # d tau / d z_k = dtau/dq[:, k] Bq[s] + dtau/dv[:, k] Bv[s] + dtau/da[:, k] Ba[s]
        Jt = sum(np.einsum("sjk,sm->sjkm", D[k], B) for k, B in enumerate((T.Bq, T.Bv, T.Ba)))
        out.append(Jt.ravel())
        self.ticker.beat()
        if Jp is not None:
            out.append(np.einsum("sjk,sm->sjkm", Jp, T.Bq).ravel())
        out += self._collisions(x)[1]
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


# share of a start's iterations its first solve may take: the rest is kept for the
# repairs the dense check may ask for (collision constraints, tighter margins)
FIRST_SOLVE_SHARE = 2.0 / 3.0
MAX_REPAIRS = 7


@dataclass
class Setting:
    """What every start of one plan shares."""

    robot: RobotModel
    layout: ParameterLayout
    drive: DriveOptions
    make_trajectory: object          # grid -> LinearTrajectory
    limits: Limits
    kind: str
    weights: np.ndarray | None
    collision: object
    base_index: np.ndarray
    coarse: LinearTrajectory         # the optimiser's grid
    dense_t: np.ndarray              # the control rate
    dense: LinearTrajectory
    monitor: LinearTrajectory        # 4x finer than the grid: iterates are ranked on it
    pairs: PairDistances | None
    ticker: Ticker

    def problem(self, margin: float, col: list) -> TrajectoryProblem:
        prob = TrajectoryProblem(self.robot, self.layout, self.drive, self.coarse,
                                 self.limits, self.base_index, self.kind, self.weights,
                                 margin)
        prob.pairs, prob.col, prob.ticker = self.pairs, col, self.ticker
        prob.monitor = _dense_score(prob, self.monitor)
        return prob

    def verify(self, prob: TrajectoryProblem, x):
        """(x, checks) at the control rate, a small violation repaired by shrinking."""
        Z = prob.unpack(x)
        checks = check(self.robot, self.dense_t, *self.dense.evaluate(Z), self.limits,
                       self.collision, beat=self.ticker.beat)
        if checks["ok"] or checks["collisions"]:
            return x, checks
        ref = np.zeros_like(Z) if prob.traj.initial is None else prob.traj.initial
        Zs, checks = shrink(self.robot, self.dense, self.dense_t, Z, ref, self.limits,
                            self.collision, checks, beat=self.ticker.beat)
        return (x if Zs is None else Zs.T.ravel()), checks


def plan(robot: RobotModel, layout: ParameterLayout, drive: DriveOptions,
         make_trajectory, limits: Limits, kind: str = "cond", grid_points: int = 60,
         rate_hz: float = 100.0, duration: float = 10.0, weights=None, collision=None,
         starts: int = 3, max_iter: int = 200, seed: int = 0,
         progress=None) -> PlannedTrajectory:
    """Optimise from several random starts; keep the best trajectory that passes the
    dense check (limits, torques, workspace at ``rate_hz``; self-collision).  A start whose
    dense check fails between grid points is re-solved with 2 % tighter margins, one that
    collides with distance constraints on the colliding pairs.  ``max_iter`` bounds the
    IPOPT iterations of each start, its repairs included; iterations, not seconds, end
    every solve, and the BLAS runs one thread (:mod:`figaroh_ros.threads`), so the answer
    is the same, to the last bit, whatever the machine's load.  ``progress`` hears of the iterations
    (criterion, constraint violation) at least every second.
    ``make_trajectory(t)`` builds the parameterisation on the time grid ``t``."""
    t0 = time.perf_counter()
    with limited_threads(1):       # the answer may not depend on the thread count
        rng = np.random.default_rng(seed)
        grid = np.linspace(0.0, duration, grid_points, endpoint=False)
        dense_t = np.arange(0.0, duration + 0.5 / rate_hz, 1.0 / rate_hz)
        bp = structural_base(robot, layout, drive, rng)
        pairs = None if collision is None else PairDistances(collision, robot.active_joints)
        st = Setting(robot, layout, drive, make_trajectory, limits, kind, weights, collision,
                     bp.base_index, make_trajectory(grid), dense_t, make_trajectory(dense_t),
                     make_trajectory(np.linspace(0.0, duration, 4 * grid_points,
                                                 endpoint=False)),
                     pairs, Ticker(progress, starts, max_iter))
        best = _best_of_starts(st, rng, starts, max_iter, reporter(progress))
    best.base_size, best.starts = bp.size, starts
    best.seconds = time.perf_counter() - t0
    return best


def _best_of_starts(st: Setting, rng, starts: int, max_iter: int, say):
    best, iterations = None, 0
    for k in range(starts):
        x0 = initial_point(st.coarse, st.limits, rng).T.ravel()
        prob, x, checks, used = _one_start(st, k, x0, max_iter)
        iterations += used
        if not checks["ok"]:
            say(Stage.PLANNING, 0.9 * (k + 1) / starts,
                f"start {k + 1}: rejected after {used} iterations ({why(checks)})")
            continue
        Q, V, A = st.dense.evaluate(prob.unpack(x))
        W = prob.regressor(Q, V, A)
        cond = condition_number(W.reshape(-1, W.shape[2]))
        say(Stage.PLANNING, 0.9 * (k + 1) / starts,
            f"start {k + 1}: condition number {cond:.4g} after {used} iterations")
        if best is None or cond < best.condition_number:
            best = PlannedTrajectory(st.dense_t, Q, V, A, cond, float(prob.objective(x)),
                                     0, 0.0, starts, 0, checks,
                                     list(st.robot.active_joints))
    if best is None:
        raise SolverError(f"no start out of {starts} gave a trajectory satisfying every "
                          "constraint: loosen the limits, add starts or iterations")
    best.iterations = iterations
    return best


def _one_start(st: Setting, k: int, x, cap: int):
    """Solve, check at the control rate, repair; at most ``cap`` iterations in all.
    Returns (problem, x, checks, iterations used)."""
    col, margin, used = [], 0.0, 0
    budget = max(1, int(np.ceil(FIRST_SOLVE_SHARE * cap)))
    for attempt in range(1 + MAX_REPAIRS):
        prob = st.problem(margin, col)
        st.ticker.begin(k, "repair" if attempt else "solve", used)
        x, _ = solve(prob, x, max_iter=budget)
        used += prob.iterations
        x, checks = st.verify(prob, x)
        budget = cap - used
        if checks["ok"] or budget < 1:
            break
        if checks["collisions"]:        # active set: constrain the colliding pairs
            col = col + _collision_constraints(st.make_trajectory, st.pairs, prob, x,
                                               checks["collisions"])
        if worst(checks) > 1.0:         # violated between grid points: tighten
            margin = min(margin + 0.02, 0.1)
    return prob, x, checks, used


def _dense_score(prob: TrajectoryProblem, dense: LinearTrajectory):
    """The exact criterion of the trajectory on a finer grid than the optimiser's: what
    that grid stands for, and what its iterates are ranked by."""
    def score(x):
        W = prob.regressor(*dense.evaluate(prob.unpack(x)))
        return criterion_value(W.reshape(-1, W.shape[2]), prob.kind)
    return score


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

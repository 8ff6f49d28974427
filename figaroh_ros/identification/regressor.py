"""Dynamic identification model tau = W(q, dq, ddq) phi (Nguyen et al. 2023 Eq. 2, 3 and 5).

Rows are stacked joint by joint: rows ``j*N .. (j+1)*N-1`` are the N samples of active joint
``j``. This is the layout Gautier's weighted least squares works on (one noise variance per
joint) and the one FIGAROH uses.

Columns follow :func:`figaroh_ros.identification.parameters.parameter_layout`:

* inertial columns: pinocchio's joint torque regressor (``computeJointTorqueRegressor``),
  computed on the model whose non-active joints are locked at ``q_rest`` (they do not
  move): the columns of a locked joint's body are its host's times the linear map of its
  parameters to the host's frame, an exact reparametrisation (``locked_joints.py``);
* ``Ia_j``:  ``ddq_j`` in row j (rotor inertia referred to the joint side, r_j^2 I_mj);
* ``fv_j``:  ``dq_j``; ``fs_j``: ``sign(dq_j)`` or ``tanh(dq_j / v_s)``; ``off_j``: 1;
* optional friction terms: ``fva_j``: ``min(dq_j, 0)`` (viscous friction per direction:
  ``fv_j`` forwards, ``fv_j + fva_j`` backwards; with ``off_j`` the Coulomb level is also
  per direction, ``off_j +- fs_j``); ``fst_j``: ``sign(dq_j) exp(-(dq_j / v_st)^2)``, the
  Stribeck excess of static over Coulomb friction (Armstrong-Helouvry 1994), linear in
  ``fst_j`` once the Stribeck velocity ``v_st`` is given (searched in ``fit.py``);
* coupled motor ``k`` with transmission row ``K_k`` (motor speed / r_k = K_k . dq):
  ``Iam_k``: ``K_kj (K_k . ddq)`` in row j, ``fvm_k``: ``K_kj (K_k . dq)``,
  ``fsm_k``: ``K_kj sign(K_k . dq)`` -- the motor torque mapped to the joints by K^T.
  With the "lumped" convention the diagonal terms ``K_kj^2 ddq_j`` and ``K_kj^2 dq_j`` are
  moved into the joint's own ``Ia_j`` / ``fv_j`` (an exact reparametrisation:
  ``fv_j' = fv_j + K_kj^2 fvm_k``), leaving the cross terms on the motor parameters.
"""
from __future__ import annotations

import copy
import threading

import numpy as np
import pinocchio as pin

from figaroh_ros.identification.locked_joints import LockedJoints, locked_joints
from figaroh_ros.identification.newton_euler_regressor import (
    NewtonEulerRegressor, supported, trigonometry
)
from figaroh_ros.identification.parameters import (
    PIN_TO_STD, DriveOptions, ParameterLayout, set_inertial_parameters
)
from figaroh_ros.identification.sample_split import (
    huge_zero_pages, map_for_reading, mapped_zeros, partly_shared_zeros, split_samples,
    worker_count
)
from figaroh_ros.model.robot import RobotModel


def coulomb(v: np.ndarray, drive: DriveOptions) -> np.ndarray:
    """Coulomb friction shape: sign(v), or the smooth tanh(v / v_s) (Tröbinger et al. §II.B)."""
    if drive.coulomb_model == "tanh":
        return np.tanh(v / drive.coulomb_velocity)
    return np.sign(v)


def friction_columns(layout: ParameterLayout, drive: DriveOptions, dq: np.ndarray):
    """``(column, joint, signal)`` of every per-joint friction and offset term."""
    fs_shape = coulomb(dq, drive)
    for j in range(dq.shape[1]):
        v = dq[:, j]
        yield layout.fv_col[j], j, v
        yield layout.fs_col[j], j, fs_shape[:, j]
        yield layout.off_col[j], j, np.ones_like(v)
        if layout.fva_col is not None:
            yield layout.fva_col[j], j, np.minimum(v, 0.0)
        if layout.fst_col is not None and drive.stribeck_velocity is not None:
            yield layout.fst_col[j], j, np.sign(v) * np.exp(-(v / drive.stribeck_velocity) ** 2)


def set_stribeck_columns(layout: ParameterLayout, W: np.ndarray, dq: np.ndarray,
                         v_st: float) -> None:
    """Rewrite in place the ``fst`` columns of the stacked ``W`` (rows of every active
    joint, N samples of velocity ``dq`` each) for the Stribeck velocity ``v_st``."""
    N = dq.shape[0]
    for j, col in enumerate(layout.fst_col if layout.fst_col is not None else []):
        if col >= 0:
            W[j * N:(j + 1) * N, col] = np.sign(dq[:, j]) * np.exp(-(dq[:, j] / v_st) ** 2)


CHUNK = 512  # samples per block of pinocchio's regressors (held in the CPU's cache)
# samples per block of the batched regressor (newton_euler_regressor.py): 7-joint arm,
# 2.4-3.6 us a sample in blocks of 8192, 4.5 us in blocks of 1024, 9 us in blocks of 256,
# against 4.9-6.4 us a pinocchio call
BATCH = 8192
# samples from which the batched regressor is used (below, numpy's cost per operation
# outweighs pinocchio's per call)
BATCH_MIN = 1024
# entries of a matrix allocated in 4 KiB pages: numpy asks huge pages for a large array,
# and on a busy machine the kernel compacted memory to find them (a 700 000 x 118 matrix:
# 0.1 to 1.4 s of system time, against 0.2 to 0.27 s in small pages)
BIG = 2**21
# the parent's own columns and page mapping (parent_columns) per sample, against the
# inertial columns of a sample: Panda, 100 000 samples, 0.05-0.08 s against 0.6-0.8 s
# with the batched regressor and huge zero pages (0.05 s against 0.9 s with pinocchio's)
PARENT_EXTRA = 0.07


def inertial_blocks(robot: RobotModel, layout: ParameterLayout):
    """``(link, columns, [(active joint, pinocchio row)])`` of every link: the torque of an
    active joint depends on a link's parameters only when the joint carries the link (it
    is among the link's supports), so the other blocks of the regressor are zero and are
    never written.  ``columns``: the link's columns of ``W`` in pinocchio's order."""
    model = robot.model
    blocks = []
    for k, jid in enumerate(sorted(layout.inertial_cols)):
        joints = [model.joints[s] for s in model.supports[jid]]
        carried = {v for jm in joints for v in range(jm.idx_v, jm.idx_v + jm.nv)}
        rows = [(j, row) for j, row in enumerate(robot.idx_v) if row in carried]
        # PIN_TO_STD swaps two parameters: it is its own inverse
        blocks.append((k, layout.inertial_cols[jid][PIN_TO_STD], rows))
    return blocks


def block_sources(robot: RobotModel, layout: ParameterLayout,
                  locked: LockedJoints | None):
    """Where the blocks of :func:`inertial_blocks` are read from in the regressor computed
    (``robot``'s, or that of ``locked.robot`` when non-active joints are locked,
    ``locked_joints.py``): ``direct``, ``(link, columns, [(active joint, row)])`` copied;
    ``moved``, ``(host link, [(active joint, row)], [X], [columns])``, the columns of the
    bodies a host carries, ``Y_host X`` (one matrix product for all of them)."""
    blocks = inertial_blocks(robot, layout)
    if locked is None:
        return blocks, []
    rows_of = locked.robot.idx_v
    direct, moved = [], {}
    for jid, (_, cols, rows) in zip(sorted(layout.inertial_cols), blocks):
        if not rows:
            continue
        k, rows = locked.host[jid] - 1, [(j, rows_of[j]) for j, _ in rows]
        if jid not in locked.transform:
            direct.append((k, cols, rows))
            continue
        group = moved.setdefault((k, tuple(rows)), (k, rows, [], []))
        group[2].append(locked.transform[jid]); group[3].append(cols)
    return direct, list(moved.values())


def inertial_into(robot: RobotModel, layout: ParameterLayout, states: tuple,
                  WT: np.ndarray, i0: int, i1: int, locked: LockedJoints | None = None) -> None:
    """Write the rigid bodies' columns of samples ``i0`` to ``i1`` into the stacked ``W``
    (column-major, rows joint by joint) seen as ``WT = W.T.reshape(n_params, n_joints,
    N)``, a block of samples at a time.

    ``states``: ``(q, dq, ddq, q_rest, trig)`` of the active joints, completed into
    states of the model block by block: ``robot``'s, or ``locked.robot`` (``q_rest`` then
    ``None``: its joints are the active ones); ``trig`` the sines and cosines of the
    model's positions when its regressor is computed by :class:`NewtonEulerRegressor`
    (:func:`batched_trigonometry`), else ``None``: pinocchio's, sample by sample.  A
    sample's joint torque regressor is nv x 10 n_links, links in joint order, parameters
    in pinocchio's order (``PIN_TO_STD`` maps them to the standard one).  Only the blocks
    of :func:`inertial_blocks` are written: ``W`` starts at zero and the pages of the
    others are never touched."""
    source = robot if locked is None else locked.robot
    q, dq, ddq, q_rest, trig = states
    if trig is None:
        chunk, fill = CHUNK, pinocchio_blocks(source, min(CHUNK, max(i1 - i0, 1)))
    else:
        chunk, fill = BATCH, batched_blocks(source, min(BATCH, max(i1 - i0, 1)), trig)
    direct, moved = block_sources(robot, layout, locked)
    for c0 in range(i0, i1, chunk):
        c1 = min(c0 + chunk, i1)
        block = fill(q, dq, ddq, q_rest, c0, c1)     # (row, link) -> parameter x sample
        for k, cols, rows in direct:
            for j, row in rows:
                WT[cols, j, c0:c1] = block(row, k)
        for group in moved:
            moved_into(group, block, WT[:, :, c0:c1])


def pinocchio_blocks(robot: RobotModel, chunk: int):
    """``fill(q, dq, ddq, q_rest, c0, c1)``: pinocchio's regressors of the samples ``c0``
    to ``c1`` (at most ``chunk``), as a function ``(row, link) -> (10, c1 - c0)``."""
    model = robot.model
    buf = np.empty((chunk, model.nv, model.njoints - 1, 10))
    sample_fill = sample_regressors(robot, buf)

    def fill(q, dq, ddq, q_rest, c0, c1):
        sample_fill(q[c0:c1], dq[c0:c1], ddq[c0:c1], q_rest)
        blocks = buf[:c1 - c0].transpose(1, 2, 3, 0)   # row, link, parameter, sample
        return lambda row, k: blocks[row, k]
    return fill


def batched_blocks(robot: RobotModel, chunk: int, trig: tuple):
    """Like :func:`pinocchio_blocks`, from :class:`NewtonEulerRegressor` (every joint of
    ``robot``'s model active, one axis each; ``trig`` of all the samples)."""
    regressor = NewtonEulerRegressor(robot.model)
    pair = regressor.pairs.index()        # one velocity per joint: joint j's row is j
    out = np.empty((10, len(regressor.pairs.body), chunk))

    def fill(q, dq, ddq, q_rest, c0, c1):
        Y = out[:, :, :c1 - c0]
        regressor(tuple(x[:, c0:c1] for x in trig), robot.full_velocity(dq[c0:c1]).T,
                  robot.full_velocity(ddq[c0:c1]).T, Y)
        return lambda row, k: Y[:, pair[row, k]]
    return fill


def batched_trigonometry(robot: RobotModel, q: np.ndarray) -> tuple | None:
    """``(sin, cos, q)`` of ``robot``'s model joints (nj x N) at the samples ``q`` of its
    joints when they are all active and :class:`NewtonEulerRegressor` computes its
    regressor faster than pinocchio (``BATCH_MIN`` samples or more); else ``None``."""
    model = robot.model
    if len(q) < BATCH_MIN or len(set(robot.joint_ids)) != model.njoints - 1 \
            or not supported(model):
        return None
    return trigonometry(model, robot.full_configuration(q))


def sample_regressors(robot: RobotModel, buf: np.ndarray):
    """A function ``fill(q, dq, ddq, q_rest)`` writing pinocchio's joint torque regressor
    of each sample (active joints' states, passive joints at ``q_rest``) into ``buf``
    (sample, nv, link, parameter), one call per sample."""
    model = robot.model
    data = model.createData()
    samples = list(buf.reshape(buf.shape[0], model.nv, -1))  # views, as pinocchio returns
    regressor = pin.computeJointTorqueRegressor

    def fill(q, dq, ddq, q_rest):
        Q = robot.full_configuration(q, q_rest)
        V, A = robot.full_velocity(dq), robot.full_velocity(ddq)
        for sample, qi, vi, ai in zip(samples, Q, V, A):
            sample[...] = regressor(model, data, qi, vi, ai)
    return fill


def moved_into(group: tuple, block, WT: np.ndarray) -> None:
    """The columns of the bodies a host carries, ``Y_host [X_1 ... X_L]``: one product
    per sample, of the same shapes whatever the chunk (the same bits whatever the
    workers).  ``block``: ``(row, link) -> (parameter, sample)``; ``WT``: column, joint,
    sample."""
    k, rows, transforms, cols = group
    Y = np.stack([block(row, k) for _, row in rows]).transpose(2, 0, 1)   # sample, row, 10
    Z = np.ascontiguousarray(Y) @ np.hstack(transforms)                  # sample, row, 10 L
    for b, c in enumerate(cols):
        for i, (j, _) in enumerate(rows):
            WT[c, j] = Z[:, i, 10 * b:10 * b + 10].T


def worker_runs(robot: RobotModel, layout: ParameterLayout, N: int) -> list[tuple[int, int]]:
    """Element runs ``(start, stop)`` of the stacked ``W`` (column-major, ``N`` samples)
    that :func:`inertial_into` writes: the blocks of :func:`inertial_blocks`."""
    n = len(robot.idx_v)
    return [((c * n + j) * N, (c * n + j + 1) * N)
            for _, cols, rows in inertial_blocks(robot, layout)
            for c in cols for j, _ in rows]


def drive_runs(layout: ParameterLayout, n: int, N: int) -> list[tuple[int, int]]:
    """Element runs of the stacked ``W`` that :func:`drive_columns` (and
    :func:`set_stribeck_columns`) write: a joint's rows of its own columns, every row of a
    coupled motor's."""
    runs = []
    for cols in (layout.ia_col, layout.fv_col, layout.fs_col, layout.off_col,
                 layout.fva_col, layout.fst_col):
        if cols is not None:
            runs += [((c * n + j) * N, (c * n + j + 1) * N) for j, c in enumerate(cols)
                     if c >= 0]
    for cols in layout.motor_cols.values():
        runs += [(c * n * N, (c + 1) * n * N) for c in cols if c >= 0]
    return runs


def regressor_zeros(robot: RobotModel, layout: ParameterLayout, N: int,
                    count: int) -> np.ndarray:
    """The zero matrix ``W`` is built in (column-major): shared with ``count - 1`` worker
    processes on the pages they write, in small private pages when large (where nothing
    is ever written, huge pages of zeros), else numpy's."""
    shape = (len(robot.idx_v) * N, layout.size)
    if count > 1:
        W = partly_shared_zeros(shape, worker_runs(robot, layout, N))
    elif shape[0] * shape[1] > BIG:
        W = mapped_zeros(shape, shared=False)
    else:
        return np.zeros(shape, order="F")
    huge_zero_pages(W, worker_runs(robot, layout, N) + drive_runs(layout, shape[0] // N, N))
    return W


def standard_regressor(robot: RobotModel, layout: ParameterLayout, drive: DriveOptions,
                       q: np.ndarray, dq: np.ndarray, ddq: np.ndarray,
                       q_rest: np.ndarray | None = None,
                       workers: int | None = None) -> np.ndarray:
    """Observation matrix W (n_joints*N x n_params) of the standard parameters.

    ``q, dq, ddq`` hold the active joints only (N x n_joints); passive joints stay at
    ``q_rest`` (neutral by default) with zero velocity.  Long recordings are split over
    ``workers`` processes (default: the cores available, ``sample_split.py``); the matrix
    is the same to the last bit whatever their number.
    """
    q, dq, ddq = (np.atleast_2d(np.asarray(x, float)) for x in (q, dq, ddq))
    N, n = q.shape
    if n != robot.n_joints or dq.shape != q.shape or ddq.shape != q.shape:
        raise ValueError(f"q, dq, ddq must be N x {robot.n_joints}; got "
                         f"{q.shape}, {dq.shape}, {ddq.shape}")
    locked = locked_joints(robot, q_rest)
    source = robot if locked is None else locked.robot
    states = (q, dq, ddq, q_rest if locked is None else None, batched_trigonometry(source, q))
    count = worker_count(N, workers)
    # column-major: every column below is written as contiguous runs
    W = regressor_zeros(robot, layout, N, count)
    WT = W.T.reshape(layout.size, n, N)      # a view: column, joint, sample
    split_samples(N, count,
                  lambda i0, i1: inertial_into(robot, layout, states, WT, i0, i1, locked),
                  lambda: parent_columns(robot, layout, drive, dq, ddq, W), PARENT_EXTRA)
    return W


def parent_columns(robot: RobotModel, layout: ParameterLayout, drive: DriveOptions,
                   dq: np.ndarray, ddq: np.ndarray, W: np.ndarray) -> None:
    """The parent's share besides its samples: the drive-chain columns, then the pages of
    the zero blocks mapped for the first reader of ``W`` while the workers finish."""
    drive_columns(robot, layout, drive, dq, ddq, W)
    map_for_reading(W)


def drive_columns(robot: RobotModel, layout: ParameterLayout, drive: DriveOptions,
                  dq: np.ndarray, ddq: np.ndarray, W: np.ndarray) -> None:
    """Write the rotor inertia, friction, offset and coupled-motor columns into ``W``."""
    N, n = dq.shape
    for j in range(n):
        if layout.ia_col[j] >= 0:
            W[j * N:(j + 1) * N, layout.ia_col[j]] = ddq[:, j]
    for col, j, sig in friction_columns(layout, drive, dq):
        if col >= 0:
            W[j * N:(j + 1) * N, col] = sig
    for col, block in coupled_motor_columns(robot, layout, drive, dq, ddq):
        W[:, col] = block.T.ravel()


def coupled_motor_columns(robot: RobotModel, layout: ParameterLayout, drive: DriveOptions,
                          dq: np.ndarray, ddq: np.ndarray):
    """Yield ``(column, N x n_joints block)`` for every coupled-motor parameter."""
    K = robot.transmission.K
    for k, cols in layout.motor_cols.items():
        Kk = K[k]
        sigs = (ddq @ Kk, dq @ Kk, coulomb(dq @ Kk, drive))
        own = (layout.ia_col, layout.fv_col, None)
        diag_src = (ddq, dq, None)
        for col, sig, own_cols, src in zip(cols, sigs, own, diag_src):
            if col < 0:
                continue
            block = np.outer(sig, Kk)
            if drive.coupled_convention == "lumped" and own_cols is not None:
                for j in np.flatnonzero((np.abs(Kk) > 1e-12) & (own_cols >= 0)):
                    block[:, j] -= Kk[j] ** 2 * src[:, j]
            yield col, block


class ParameterTorques:
    """Model torques (N x n_joints) of the parameters ``phi``, computed *without* the
    regressor: pinocchio RNEA on the model whose inertias are taken from ``phi``, plus the
    drive-chain terms.  The model is built once (a simulator asks for one sample at every
    tick); callable from several threads (one pinocchio data, under a lock)."""

    def __init__(self, robot: RobotModel, layout: ParameterLayout, drive: DriveOptions,
                 phi: np.ndarray):
        self.robot = copy.copy(robot)
        self.robot.model = robot.model.copy()
        set_inertial_parameters(self.robot, layout, phi)
        self.layout, self.drive, self.phi = layout, drive, phi
        self.data, self.lock = self.robot.model.createData(), threading.Lock()

    def __call__(self, q, dq, ddq, q_rest=None) -> np.ndarray:
        rm = self.robot
        q, dq, ddq = (np.atleast_2d(np.asarray(x, float)) for x in (q, dq, ddq))
        Q, V, A = rm.full_configuration(q, q_rest), rm.full_velocity(dq), rm.full_velocity(ddq)
        tau = np.empty_like(q)
        with self.lock:
            for i in range(q.shape[0]):
                tau[i] = pin.rnea(rm.model, self.data, Q[i], V[i], A[i])[rm.idx_v]
        return self._drive_terms(tau, dq, ddq)

    def _drive_terms(self, tau: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> np.ndarray:
        """Rotor inertia, friction, offset and coupled motors added to ``tau``."""
        layout, phi = self.layout, self.phi
        for j in range(self.robot.n_joints):
            if layout.ia_col[j] >= 0:
                tau[:, j] += phi[layout.ia_col[j]] * ddq[:, j]
        for col, j, sig in friction_columns(layout, self.drive, dq):
            if col >= 0:
                tau[:, j] += phi[col] * sig
        for col, block in coupled_motor_columns(self.robot, layout, self.drive, dq, ddq):
            tau += phi[col] * block
        return tau


def joint_torques_from_parameters(robot: RobotModel, layout: ParameterLayout,
                                  drive: DriveOptions, phi: np.ndarray, q, dq, ddq,
                                  q_rest=None) -> np.ndarray:
    """:class:`ParameterTorques` of ``phi`` at the samples ``q, dq, ddq``. Used to check
    the regressor and to simulate measurements."""
    return ParameterTorques(robot, layout, drive, phi)(q, dq, ddq, q_rest)

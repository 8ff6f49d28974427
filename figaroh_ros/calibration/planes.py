"""Contacts with several planes: each posture names the plane its tool
points touch (a probe: one point on the plane; a flat face held flush: three points).

Every plane is a frame whose z axis is its unit normal, seen from the chain's start frame
(the measurement frame is the start frame: no base frame is estimated, the planes play
its part).  A *known* plane keeps the pose it is given.  An *unknown* plane is estimated
with the joint parameters with a minimal parameterisation, three parameters about the
frame ``P0`` fitted to its contacts on the nominal model:

    T_plane = P0 * SE3(exp3([phix, phiy, 0]), [0, 0, pz])

(tilts of the normal about the frame's x and y axes, and the offset along it).  The
in-plane translations and the rotation about the normal move no contact off the plane:
they are not parameters (the single-plane measurement estimates a full base frame and lets
the rank analysis drop them).  A rigid motion of the robot base that several planes do not
see (a rotation about a vertical axis for a table and a wall, a translation along their
intersection line, any in-plane motion of parallel planes) is grouped by the rank analysis
with the planes' or the joints' parameters like any other dependency.

Measured values: the signed distance of each tool point to its plane (0 for a contact);
``PostureSet.Y`` keeps the usual ``[x1 y1 z1 ...]`` rows of a ``plane`` measurement with
the distance in ``z<k>`` and the index of the touched plane in ``x1`` (a masked axis, never
fitted), so that subsets of postures keep their planes.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from figaroh_ros.calibration.kinematic_model import KinematicModel
from figaroh_ros.calibration.rigid_fit import plane_frame
from figaroh_ros.calibration.solve import PostureSet, whitened
from figaroh_ros.errors import DataError, ModelError

PLANE_PARAMS = ("phix", "phiy", "pz")
MIN_DISTANCES = 6      # an unknown plane: 3 parameters, and as many distances to check them


@dataclass
class Plane:
    """A plane the tool touches: ``pose`` (``pin.SE3`` or ``[x y z roll pitch yaw]``, the
    plane frame in the chain's start frame, z = the unit normal) when known, else None."""

    name: str
    pose: object = None

    @property
    def known(self) -> bool:
        return self.pose is not None


def pose_of(guess) -> pin.SE3:
    """A frame given as ``pin.SE3`` or ``[x, y, z, roll, pitch, yaw]``."""
    if isinstance(guess, pin.SE3):
        return guess
    g = np.asarray(guess, float)
    if g.shape != (6,) or not np.all(np.isfinite(g)):
        raise ModelError(f"a plane pose is [x y z roll pitch yaw] (6 finite numbers), "
                         f"got {np.asarray(guess).tolist()}")
    return pin.SE3(pin.rpy.rpyToMatrix(*g[3:]), g[:3])


def as_planes(planes) -> list[Plane]:
    """``Plane`` objects from planes, names (unknown) or ``{"name", "pose"}`` mappings."""
    out = []
    for p in planes:
        if isinstance(p, str):
            p = Plane(p)
        elif isinstance(p, dict):
            p = Plane(p.get("name"), p.get("pose"))
        if not isinstance(p, Plane) or not isinstance(p.name, str) or not p.name:
            raise ModelError(f"planes: expected named planes, got {p!r}")
        out.append(p)
    names = [p.name for p in out]
    dup = sorted({n for n in names if names.count(n) > 1})
    if not out or dup:
        raise ModelError(f"planes: expected distinct plane names, got {names}")
    return out


def contact_indices(planes: list[Plane], contacts, what: str = "contacts") -> np.ndarray:
    """Index of the plane each posture touches, from names or indices."""
    names = [p.name for p in planes]
    out = np.empty(len(contacts), int)
    for i, c in enumerate(contacts):
        if isinstance(c, (int, np.integer)) and not isinstance(c, bool) \
                and 0 <= c < len(names):
            out[i] = c
        elif isinstance(c, str) and c in names:
            out[i] = names.index(c)
        else:
            raise DataError(f"{what}[{i}]: plane {c!r} is not declared (planes: {names})")
    return out


def declared_indices(index, n_planes: int, where: str = "") -> np.ndarray:
    """``index`` as integers, each one of the ``n_planes`` declared planes; DataError
    naming the first that is not."""
    index = np.asarray(index, int)
    bad = index[(index < 0) | (index >= n_planes)]
    if len(bad):
        raise DataError(f"{where}plane index {int(bad[0])} of a posture is not a declared "
                        f"plane (0 to {n_planes - 1})")
    return index


def check_touched(planes: list[Plane], index: np.ndarray, n_points: int,
                  field_name: str = "planes") -> None:
    """Every declared plane touched; an unknown one by enough distances to be estimated."""
    index = declared_indices(index, len(planes), f"{field_name}: ")
    counts = np.bincount(index, minlength=len(planes))
    summary = ", ".join(f"{p.name}: {c}" for p, c in zip(planes, counts))
    for p, c in zip(planes, counts):
        if c == 0:
            raise DataError(f"{field_name}: plane '{p.name}' is touched by no posture "
                            f"(postures per plane: {summary}); remove it or measure on it")
        if not p.known and c * n_points < MIN_DISTANCES:
            raise DataError(
                f"{field_name}: unknown plane '{p.name}' is touched by {c} postures x "
                f"{n_points} points = {c * n_points} distances; its normal and offset (3 "
                f"parameters) need at least {MIN_DISTANCES} (postures per plane: {summary})")


def plane_rows(index: np.ndarray, n_points: int, distances=None) -> np.ndarray:
    """``PostureSet.Y`` of plane contacts: the plane index in ``x1``, distances in ``z<k>``."""
    Y = np.zeros((len(index), 3 * n_points))
    if distances is not None:
        Y[:, 2::3] = np.asarray(distances, float).reshape(len(index), n_points)
    Y[:, 0] = index
    return Y


def contact_index(Y: np.ndarray) -> np.ndarray:
    return np.rint(np.atleast_2d(Y)[:, 0]).astype(int)


@dataclass
class PlaneContactModel(KinematicModel):
    """A chain whose tool points touch the planes ``planes`` (see the module)."""

    planes: list = field(default_factory=list)

    def __post_init__(self):
        self.planes = as_planes(self.planes)
        m = self.measurement
        if m.kind != "points" or m.mask.reshape(-1, 3)[:, :2].any():
            raise ModelError("plane contacts measure the distance of tool points to a plane "
                             "(points kind, z axes only)")
        self.estimate_base = False        # the planes are the measurement frames
        super().__post_init__()
        self.plane0 = [pose_of(p.pose) if p.known else pin.SE3.Identity()
                       for p in self.planes]

    def _build_names(self):
        super()._build_names()
        cols = []
        for p in self.planes:
            if not p.known:
                start = len(self.names)
                self.names += [f"plane_{p.name}_{a}" for a in PLANE_PARAMS]
                self.groups[f"plane_{p.name}"] = slice(start, len(self.names))
                cols += range(start, len(self.names))
        self.plane_columns = np.array(cols, int)

    def plane_pose(self, k: int, x: np.ndarray) -> pin.SE3:
        """Frame of plane ``k`` (z = normal) in the start frame."""
        p = self.planes[k]
        if p.known:
            return self.plane0[k]
        a, b, z = x[self.groups[f"plane_{p.name}"]]
        return self.plane0[k] * pin.SE3(pin.exp3(np.array([a, b, 0.0])),
                                        np.array([0.0, 0.0, z]))

    def normal_offset(self, k: int, x: np.ndarray) -> tuple[np.ndarray, float]:
        """Unit normal ``n`` and offset ``d`` of plane ``k``: ``n . p = d`` on it."""
        T = self.plane_pose(k, x)
        n = T.rotation[:, 2].copy()
        return n, float(n @ T.translation)

    def residuals(self, Q: np.ndarray, Y: np.ndarray, x: np.ndarray,
                  jacobian: bool = False):
        """Signed distance of every tool point to its posture's plane minus the measured
        one, in the ``z<k>`` columns (the others zero), and its Jacobian."""
        Q = np.atleast_2d(np.asarray(Q, float))
        Y = np.atleast_2d(np.asarray(Y, float))
        idx = declared_indices(contact_index(Y), len(self.planes))
        n, k = len(Q), self.measurement.n_points
        P, Jp = self._point_residuals(Q, np.zeros((n, 3 * k)), x, self._chain(Q, x),
                                      jacobian)
        P = P.reshape(n, k, 3)                              # points in the start frame
        F = np.zeros((n, 3 * k))
        J = np.zeros((n, 3 * k, self.n_params)) if jacobian else None
        for j in range(len(self.planes)):
            rows = np.flatnonzero(idx == j)
            if not len(rows):
                continue
            T = self.plane_pose(j, x)
            local = (P[rows] - T.translation) @ T.rotation    # R^T (p - t), rows x k x 3
            F[rows, 2::3] = local[..., 2] - Y[rows, 2::3]
            if not jacobian:
                continue
            Jr = Jp[rows].reshape(len(rows), k, 3, self.n_params)
            J[rows, 2::3] = np.einsum("i,nkip->nkp", T.rotation[:, 2], Jr)
            if not self.planes[j].known:
                g = self.groups[f"plane_{self.planes[j].name}"]
                a, b, _ = x[g]
                V = pin.exp3(np.array([a, b, 0.0]))
                Jexp = pin.Jexp3(np.array([a, b, 0.0]))
                # d(V^T w) / dphi = [V^T w]x Jexp3, z row; d/dpz = -(V^T e3)_z
                for i in range(k):
                    z_row = np.cross(local[:, i, None, :], Jexp[:, :2].T[None, :, :])[..., 2]
                    J[rows, 3 * i + 2, g.start:g.start + 2] = z_row
                    J[rows, 3 * i + 2, g.start + 2] = -V[2, 2]
        return F, J


def plane_parameters(km: PlaneContactModel, k: int, normal, offset: float) -> np.ndarray:
    """``[phix, phiy, pz]`` of the unknown plane ``k`` that make it the plane
    ``normal . p = offset`` (either side: the normal closest to the frame's own)."""
    R0, t0 = km.plane0[k].rotation, km.plane0[k].translation
    n = np.asarray(normal, float) / np.linalg.norm(normal)
    m = R0.T @ n
    if m[2] < 0:
        n, m, offset = -n, -m, -offset
    theta = np.arccos(np.clip(m[2], -1.0, 1.0))
    s = theta / np.sin(theta) if theta > 1e-12 else 1.0
    return np.array([-s * m[1], s * m[0], (offset - n @ t0) / m[2]])


def initial_planes(km: PlaneContactModel, data: PostureSet, x: np.ndarray) -> np.ndarray:
    """Frames ``P0`` of the unknown planes fitted to their contacts on the model ``x``
    (normal towards the start frame's origin), the planes' parameters zero."""
    x = x.copy()
    x[km.plane_columns] = 0.0
    idx = contact_index(data.Y)
    for j, p in enumerate(km.planes):
        rows = np.flatnonzero(idx == j)
        if p.known or not len(rows):
            continue
        pts = km.predict_points(data.Q[rows], x).reshape(-1, 3)
        F = plane_frame(pts)
        R = F.rotation.copy()
        if R[:, 2] @ (np.zeros(3) - F.translation) < 0:
            R[:, [0, 2]] *= -1
        km.plane0[j] = pin.SE3(R, F.translation)
    return x


def plane_postures(km: PlaneContactModel, Q: np.ndarray, contacts, ids=None,
                   distances=None, what: str = "contacts") -> PostureSet:
    """Postures touching the named planes (``contacts``: a plane name or index each)."""
    idx = contact_indices(km.planes, list(contacts), what)
    if len(idx) != len(np.atleast_2d(Q)):
        raise DataError(f"{what}: {len(idx)} planes named for {len(np.atleast_2d(Q))} "
                        "postures")
    Y = plane_rows(idx, km.measurement.n_points, distances)
    return PostureSet(Q, Y, list(ids) if ids is not None else [])


def parameter_covariance(res) -> tuple[np.ndarray, np.ndarray]:
    """(free parameter indices, their covariance ``s^2 (J^T J)^-1``) of a result."""
    km, est = res.kinematic_model, res.estimate
    f, J = whitened(km, res.train.subset(est.kept), est.x)
    Jf = J[:, est.free]
    s2 = float(f @ f) / max(len(f) - len(est.free), 1)
    return est.free, s2 * np.linalg.pinv(Jf.T @ Jf)


def plane_function_std(res, fun) -> tuple[float, float]:
    """Value and standard deviation (delta method) of ``fun(x)``, a scalar function of the
    planes and parameters of the result ``res`` (e.g. the offset between two planes)."""
    free, C = parameter_covariance(res)
    x = res.estimate.x
    v = float(fun(x))
    g = np.empty(len(free))
    for i, k in enumerate(free):
        dx = np.zeros_like(x)
        dx[k] = 1e-7
        g[i] = (fun(x + dx) - fun(x - dx)) / 2e-7
    return v, float(np.sqrt(max(g @ C @ g, 0.0)))


def plane_table(res) -> list[dict]:
    """Each plane: name, known, unit normal and offset (start frame, ``n . p = d``) with
    the offset's standard deviation and the normal's tilt std (rad) about the plane's
    in-plane axes."""
    km = res.kinematic_model
    out = []
    for k, p in enumerate(km.planes):
        n, d = km.normal_offset(k, res.estimate.x)
        row = {"name": p.name, "known": p.known, "normal": n.tolist(), "offset": d}
        if not p.known:
            R = km.plane_pose(k, res.estimate.x).rotation
            row["offset_std"] = plane_function_std(
                res, lambda x, k=k: km.normal_offset(k, x)[1])[1]
            row["normal_std"] = [plane_function_std(
                res, lambda x, k=k, a=a: R[:, a] @ km.normal_offset(k, x)[0])[1]
                for a in (0, 1)]
        out.append(row)
    return out

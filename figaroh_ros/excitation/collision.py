"""Self-collision distance constraints for the trajectory optimiser (pinocchio + coal).

Exact mesh distances cost about 10 ms per posture for a UR10, too much at every grid
sample of every IPOPT iteration.  The optimiser therefore works by active set: the dense
check finds the samples in collision, and a constraint ``d_pair(q(t_c)) >= margin`` is
added for each colliding pair at those times, with its exact gradient
``n . (J_p2 - J_p1)`` (``n`` the unit vector between the nearest points, ``J_p`` the
Jacobians of the nearest points on the two bodies).
"""
from __future__ import annotations

import numpy as np
import pinocchio as pin


class PairDistances:
    def __init__(self, collision, joints: list[str]):
        self.sc = collision
        m = collision.model
        self.joints = joints
        self.idx_q = [m.joints[m.getJointId(j)].idx_q for j in joints]
        self.idx_v = [m.joints[m.getJointId(j)].idx_v for j in joints]

    def _q(self, q_active):
        q = pin.neutral(self.sc.model)
        q[self.idx_q] = q_active
        return q

    def colliding_pairs(self, q_active) -> list[int]:
        sc = self.sc
        pin.computeCollisions(sc.model, sc.data, sc.geom, sc.gdata, self._q(q_active), False)
        return [k for k in range(len(sc.geom.collisionPairs))
                if sc.gdata.collisionResults[k].isCollision()]

    def distance(self, q_active, pair: int) -> tuple[float, np.ndarray]:
        """Signed distance of a collision pair and its gradient w.r.t. the active joints."""
        sc, m = self.sc, self.sc.model
        q = self._q(q_active)
        pin.computeJointJacobians(m, sc.data, q)
        pin.updateGeometryPlacements(m, sc.data, sc.geom, sc.gdata, q)
        d = float(pin.computeDistance(sc.geom, sc.gdata, pair).min_distance)
        res = sc.gdata.distanceResults[pair]
        p1, p2 = np.asarray(res.getNearestPoint1()), np.asarray(res.getNearestPoint2())
        n = p2 - p1
        norm = np.linalg.norm(n)
        n = n / norm if norm > 1e-9 else np.asarray(res.normal)
        if d < 0:
            n = -n if np.dot(n, np.asarray(res.normal)) < 0 else n
        cp = sc.geom.collisionPairs[pair]
        grad = np.zeros(len(self.joints))
        for obj, p, sign in ((cp.first, p1, -1.0), (cp.second, p2, 1.0)):
            jid = sc.geom.geometryObjects[obj].parentJoint
            J = pin.getJointJacobian(m, sc.data, jid, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
            o = sc.data.oMi[jid].translation
            r = p - o
            Jp = J[:3] + np.cross(J[3:].T, r).T      # velocity of the point p
            grad += sign * (n @ Jp)[self.idx_v]
        return d, grad

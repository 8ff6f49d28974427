"""What the trajectory planner returns: the trajectory at the control rate, its criterion
and the constraint checks (Nguyen et al. 2023 Eq. 14; Tröbinger et al. Eq. 11-13)."""
from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np


@dataclass
class PlannedTrajectory:
    t: np.ndarray              # s, at the control rate
    q: np.ndarray              # samples x joints
    dq: np.ndarray
    ddq: np.ndarray
    condition_number: float    # of the weighted base regressor along the trajectory
    criterion: float           # the optimised criterion's value
    iterations: int            # IPOPT iterations over every start
    seconds: float
    starts: int
    base_size: int             # base parameters the trajectory excites
    checks: dict = field(default_factory=dict)   # worst use of each limit (1 = at it)
    joints: list[str] = field(default_factory=list)

    @property
    def duration(self) -> float:
        return float(self.t[-1])

    def to_dict(self) -> dict:
        return {"condition_number": float(self.condition_number),
                "criterion": float(self.criterion), "iterations": int(self.iterations),
                "duration_s": self.duration, "samples": int(len(self.t)),
                "base_size": int(self.base_size), "starts": int(self.starts),
                "seconds": float(self.seconds), "joints": list(self.joints),
                "checks": {k: (v if isinstance(v, (bool, list)) else float(v))
                           for k, v in self.checks.items()}}

    def to_csv(self, path: str) -> str:
        """``t`` and one column per joint: the trajectory file the executor plays."""
        tmp = path + ".tmp"
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        np.savetxt(tmp, np.column_stack([self.t, self.q]), delimiter=",",
                   header=",".join(["t"] + list(self.joints)), comments="", fmt="%.9g")
        os.replace(tmp, path)
        return path

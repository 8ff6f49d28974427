"""Iteration progress of the trajectory optimiser: the latest IPOPT iterate (its number,
criterion and constraint violation) reported at most every ``period`` seconds.

The optimiser calls :meth:`Ticker.iteration` once per iterate and :meth:`Ticker.beat`
from its evaluations and checks, so a line goes out even while one iteration is slow.
The clock only decides *when* a line is printed, never what is computed.
"""
from __future__ import annotations

import time

from figaroh_ros.progress import Stage, reporter


class Ticker:
    def __init__(self, progress=None, starts: int = 1, max_iter: int = 1,
                 period: float = 1.0):
        self.say = reporter(progress)
        self.active = progress is not None
        self.starts, self.max_iter, self.period = starts, max(1, max_iter), period
        self.start, self.used, self.iter = 0, 0, 0
        self.value, self.violation, self.phase = float("nan"), float("nan"), "starting"
        self.last = time.monotonic()

    def begin(self, start: int, phase: str, used: int = 0):
        """A new solve (``phase``) of start ``start`` (0-based), ``used`` iterations
        of that start already spent."""
        self.start, self.phase, self.used, self.iter = start, phase, used, 0
        self.beat(force=True)

    def iteration(self, k: int, value: float, violation: float):
        self.iter, self.value, self.violation = int(k), float(value), float(violation)
        self.beat()

    def beat(self, force: bool = False):
        if not self.active:
            return
        now = time.monotonic()
        if not force and now - self.last < self.period:
            return
        self.last = now
        done = min(1.0, (self.used + self.iter) / self.max_iter)
        self.say(Stage.PLANNING, 0.9 * (self.start + done) / self.starts, self.message())

    def message(self) -> str:
        it = self.used + self.iter
        if self.value != self.value:          # no iterate yet (NaN)
            return (f"start {self.start + 1}/{self.starts}, {self.phase}: starting after "
                    f"{it}/{self.max_iter} iterations")
        return (f"start {self.start + 1}/{self.starts}, {self.phase}: iteration "
                f"{it}/{self.max_iter}, criterion {self.value:.6g}, constraint "
                f"violation {self.violation:.3g}")

"""The paths of the goals a node serves, confined (``io/confine.py``), and its answers
scrubbed of the files they named.

A :class:`GoalPaths` holds a node's read roots (``bag_dir``, ``output_dir`` and
``data_roots``), its write root and its size limits; each check raises
:class:`~figaroh_ros.ros.common.GoalRefused` naming the goal's field and the folders, so a
bad path ends the goal with INVALID_GOAL before anything is read, run or moved.
:meth:`GoalPaths.answer` is the step every answer of the node goes through before it is
sent on the graph (the node's log keeps the full message).
"""
from __future__ import annotations

import os

from figaroh_ros.io.confine import (
    PathRefused, read_roots, readable, request_paths, scrub, writable
)
from figaroh_ros.ros.common import GoalRefused

# s an ended goal's result is kept for its client (every action server of the package):
# rclpy keeps 10 s (Kilted) or 900 s (Jazzy) by default; a flood of refused goals then
# holds at most a minute of them in memory, and a client asks as its goal ends
RESULT_TIMEOUT = 60

class GoalPaths:
    """Where a node's goals may read (``roots``) and write (``write_root``)."""

    def __init__(self, params, write_root: str, keep=()):
        self.roots = read_roots(params.bag_dir, params.output_dir, params.data_roots)
        self.write_root = write_root
        self.max_read = params.max_read_bytes
        self.max_bag = getattr(params, "max_bag_bytes", None)
        self.max_bags = getattr(params, "max_bags", 1)
        self.keep = set(keep)

    def file(self, field: str, path: str) -> str:
        """``path``, a file a goal makes the node read, made absolute; GoalRefused."""
        try:
            return readable(field, path, self.roots, max_bytes=self.max_read)
        except PathRefused as exc:
            raise GoalRefused(str(exc)) from None

    def bags(self, field: str, paths) -> list[str]:
        """The bag folders ``paths`` (absolute): each inside the roots, a rosbag2 folder,
        their bytes together at most ``max_bag_bytes``; GoalRefused."""
        paths = list(paths)
        if len(paths) > self.max_bags:
            raise GoalRefused(f"{field}: {len(paths)} bags, at most {self.max_bags} a goal")
        out, total = [], 0
        for b in paths:
            try:
                out.append(readable(field, b, self.roots, folder=True))
            except PathRefused as exc:
                raise GoalRefused(str(exc) if not exc.missing else
                                  f"{field}: not a rosbag2 bag: {b!r} (not found)") from None
            if not os.path.isfile(os.path.join(b, "metadata.yaml")):
                raise GoalRefused(f"{field}: not a rosbag2 bag: {b!r} (no metadata.yaml)")
            total += sum(os.path.getsize(e.path) for e in os.scandir(b) if e.is_file())
        if self.max_bag is not None and total > self.max_bag:
            raise GoalRefused(f"{field}: the bags hold {total} bytes, more than the "
                              f"{self.max_bag} a goal may make this node read (max_bag_bytes)")
        return out

    def out(self, field: str, path: str, base: str | None = None,
            exist_ok: bool = False) -> str:
        """``path`` to write (relative: under ``base``) inside the write root; GoalRefused."""
        try:
            return writable(field, path, self.write_root, base=base, exist_ok=exist_ok)
        except PathRefused as exc:
            raise GoalRefused(str(exc)) from None

    def answer(self, text: str, request) -> str:
        """``text`` as it may go back on the graph: no line or cell of the files
        ``request`` named (``io/confine.scrub``)."""
        try:
            return scrub(text, request_paths(request), self.roots, self.keep)
        except Exception:      # noqa: BLE001 - an answer is never lost to its scrubbing
            return text.split(":")[0] + ": refused (the node's log says why)"

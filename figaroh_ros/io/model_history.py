"""The models a calibration node has published, kept so that any of them can come back.

Every publication (the nominal model first, then each calibrated one, then each restore)
is one entry of a log: the sha256 of the exact URDF text, the file holding that text, the
``result.yaml`` that justified it ("" for the nominal model and for restores) and the time.
The texts live in ``<folder>/models/<sha256>.urdf`` and the log in
``<folder>/models/history.yaml``, both written atomically, so a restarted node knows what
was published before it.  No rclpy here.
"""
from __future__ import annotations

import hashlib
import os
import time
from dataclasses import asdict, dataclass

import yaml

from figaroh_ros.errors import DataError

INDEX = "history.yaml"
MIN_PREFIX = 8          # hex digits of a hash prefix that may name a model


def _write_exact(path: str, text: str) -> None:
    """``text`` byte for byte into ``path``, atomically (the hash is of the exact text)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="") as f:
        f.write(text)
    os.replace(tmp, path)


def model_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass
class KeptModel:
    sha256: str
    path: str
    result: str          # result.yaml that justified it ("" = nominal or a restore)
    note: str            # nominal | calibrated | restored
    time: str


class ModelHistory:
    """The publication log of ``<folder>/models``."""

    def __init__(self, folder: str):
        self.folder = os.path.join(os.path.abspath(folder), "models")
        self.entries: list[KeptModel] = []
        index = os.path.join(self.folder, INDEX)
        if os.path.isfile(index):
            self.entries = self._read(index)

    @staticmethod
    def _read(index: str) -> list[KeptModel]:
        try:
            with open(index, "rb") as f:
                raw = yaml.safe_load(f) or []
            return [KeptModel(**{k: str(e[k]) for k in KeptModel.__dataclass_fields__})
                    for e in raw]
        except (OSError, yaml.YAMLError, KeyError, TypeError, UnicodeDecodeError) as exc:
            raise DataError(f"{index}: not a model history ({exc})") from None

    def _write(self):
        _write_exact(os.path.join(self.folder, INDEX),
                   yaml.safe_dump([asdict(e) for e in self.entries], sort_keys=False))

    def add(self, text: str, note: str, result: str = "") -> KeptModel:
        """Keep ``text`` (once per hash) and log its publication."""
        digest = model_hash(text)
        path = os.path.join(self.folder, f"{digest}.urdf")
        if not os.path.isfile(path):
            _write_exact(path, text)
        entry = KeptModel(digest, path, os.path.abspath(result) if result else "", note,
                          time.strftime("%Y-%m-%dT%H:%M:%S%z"))
        self.entries.append(entry)
        self._write()
        return entry

    @property
    def current(self) -> KeptModel | None:
        return self.entries[-1] if self.entries else None

    @property
    def nominal(self) -> KeptModel | None:
        return next((e for e in self.entries if e.note == "nominal"), None)

    def lineage(self) -> tuple[int | None, dict[int, int | None]]:
        """The index of the entry that is live now and, for each publication (nominal or
        calibrated), the index of the one it replaced (the model it was built on), from
        a replay of the log: a restore makes live again the nearest model of that hash
        among the live one's ancestors (else the last publication of that hash)."""
        parent: dict[int, int | None] = {}
        live = None
        for i, e in enumerate(self.entries):
            if e.note != "restored":
                parent[i], live = live, i
                continue
            back = live
            while back is not None and self.entries[back].sha256 != e.sha256:
                back = parent[back]
            if back is None:
                back = max((k for k in parent if self.entries[k].sha256 == e.sha256),
                           default=live)
            live = back
        return live, parent

    def live_index(self) -> int | None:
        return self.lineage()[0]

    def previous(self) -> KeptModel | None:
        """The model the live one was built on (None: it is the first): restoring it,
        then asking again, steps back one model at a time to the nominal one."""
        live, parent = self.lineage()
        if live is None:
            return None
        back = parent[live]
        while back is not None and self.entries[back].sha256 == self.entries[live].sha256:
            back = parent[back]
        return None if back is None else self.entries[back]

    def find(self, prefix: str) -> KeptModel:
        """The kept model whose hash starts with ``prefix`` (at least MIN_PREFIX hex
        digits, naming one model)."""
        p = prefix.strip().lower()
        if len(p) < MIN_PREFIX or any(c not in "0123456789abcdef" for c in p):
            raise DataError(f"model hash {prefix!r}: expected at least {MIN_PREFIX} hex "
                            "digits of a sha256")
        found = {e.sha256: e for e in self.entries if e.sha256.startswith(p)}
        if len(found) != 1:
            raise DataError(f"model hash {prefix!r}: " + (
                "no kept model has it" if not found else f"{len(found)} models match"))
        return next(iter(found.values()))

    def text(self, entry: KeptModel) -> str:
        """The kept text of ``entry``, checked against its hash."""
        try:
            with open(entry.path, encoding="utf-8", newline="") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as exc:
            raise DataError(f"kept model {entry.path}: {exc}") from None
        if model_hash(text) != entry.sha256:
            raise DataError(f"kept model {entry.path} does not match its hash {entry.sha256}")
        return text

"""All of a task's outputs or none: results are written into a staging folder and moved
into ``out`` only once the task has succeeded.

The rule for an ``out`` that already exists as a folder: the files the task writes
replace the files of the same name, every other file is kept (users point several runs
at one folder).  An ``out`` that does not exist appears in one atomic rename, and not at
all when the task fails.  A staging folder carries the id of its process; one left by
a process that no longer exists (killed before it could clean up) is removed by the next
task writing into the same place.
"""
from __future__ import annotations

import os
import shutil
import uuid
from contextlib import contextmanager
from dataclasses import dataclass

from figaroh_ros.errors import DataError

STAGE_PREFIX = ".figaroh-partial-"


@dataclass(frozen=True)
class Staging:
    """Where a task writes (``dir``) and where its files end up (``out``)."""
    dir: str
    out: str

    def path(self, name: str) -> str:
        """Where to write the output ``name`` now (a :class:`DataError` if ``name`` would
        leave the output folder, e.g. a robot name holding ``../``)."""
        folder = os.path.abspath(self.dir)
        path = os.path.abspath(os.path.join(folder, name))
        if path == folder or os.path.commonpath([path, folder]) != folder:
            raise DataError(f"output file name {name!r} leaves the output folder {self.out}")
        return path

    def final(self, name: str) -> str:
        """Where the output ``name`` is once the task has succeeded."""
        return os.path.join(self.out, name)


def check_output_folder(out: str) -> None:
    """A :class:`DataError` naming ``out`` unless results can be written into it: it must
    not be a file, and the nearest existing folder on its path must be writable."""
    if os.path.exists(out) and not os.path.isdir(out):
        raise DataError(f"output folder {out}: is an existing file")
    existing = os.path.abspath(out)
    while not os.path.exists(existing):
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise DataError(f"output folder {out}: {existing} is a file, not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise DataError(f"output folder {out}: {existing} is not writable")


def _make_parents(folder: str, made: list[str]) -> None:
    """Create the missing folders above ``folder`` (not ``folder``), each appended to
    ``made`` before it is created: a signal raising in between still finds it there."""
    missing, p = [], os.path.dirname(os.path.abspath(folder))
    while not os.path.exists(p):
        missing.append(p)
        p = os.path.dirname(p)
    for d in reversed(missing):
        made.append(d)
        os.mkdir(d)


def _merge(stage: str, out: str) -> None:
    """Move every file of ``stage`` into ``out`` (same relative path), replacing files of
    the same name one by one (``os.replace``, atomic per file)."""
    for root, _, files in os.walk(stage):
        target = os.path.join(out, os.path.relpath(root, stage))
        os.makedirs(target, exist_ok=True)
        for f in files:
            os.replace(os.path.join(root, f), os.path.join(target, f))


def _publish(stage: str, out: str) -> None:
    """A new ``out`` by one rename; an existing one by merging (module docstring)."""
    try:
        if not os.path.isdir(out):
            try:
                os.rename(stage, out)
                return
            except OSError:
                if not os.path.isdir(out):    # not a folder made meanwhile by someone else
                    raise
        _merge(stage, out)
    except OSError as exc:
        raise DataError(f"output folder {out}: {exc.strerror} ({exc.filename})") from exc


def _stage_name(out: str) -> str:
    """The path of a new staging folder (not made yet): inside ``out`` when it exists (a
    file rename then never crosses a file system), else beside it; stale ones there are
    removed first."""
    parent = out if os.path.isdir(out) else os.path.dirname(os.path.abspath(out))
    remove_stale_stages(parent)
    return os.path.join(parent, f"{STAGE_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:12]}")


def remove_stale_stages(parent: str) -> list[str]:
    """Remove the staging folders in ``parent`` whose process has ended; their paths."""
    removed = []
    for name in os.listdir(parent):
        pid = name[len(STAGE_PREFIX):].split("-", 1)[0]
        if name.startswith(STAGE_PREFIX) and pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(os.path.join(parent, name), ignore_errors=True)
            removed.append(os.path.join(parent, name))
    return removed


def _alive(pid: int) -> bool:
    """Whether the process ``pid`` exists (on this machine)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:             # it exists, owned by another user
        return True
    return True


@contextmanager
def staged_output(out: str):
    """Yield a :class:`Staging` whose ``dir`` the task writes into; on success its files
    are moved into ``out``, on any exception the staging folder (and the parent folders
    made for it) are removed and the exception goes on: nothing partial is left.  ``out``
    is checked before any work (:func:`check_output_folder`)."""
    check_output_folder(out)
    # every folder is recorded before it is made: SIGTERM's handler (cli.main: SystemExit)
    # may raise between any two steps, and the `finally` must know what exists by then
    made, stage = [], None
    try:
        try:
            if not os.path.isdir(out):
                _make_parents(out, made)
            stage = _stage_name(out)
            os.mkdir(stage)
        except OSError as exc:
            raise DataError(f"output folder {out}: {exc.strerror}") from exc
        yield Staging(stage, out)
        _publish(stage, out)
    finally:
        if stage is not None:
            shutil.rmtree(stage, ignore_errors=True)
        if not os.path.exists(out):
            for d in reversed(made):
                _remove_if_empty(d)


def _remove_if_empty(folder: str) -> None:
    try:
        os.rmdir(folder)
    except OSError:
        pass


def csv_output(out: str, default_name: str) -> tuple[str, str]:
    """(folder, file name) of a planner's ``out``: a ``.csv`` path names the file itself
    (result.yaml goes beside it), anything else is a folder receiving ``default_name``."""
    if not out.endswith(".csv"):
        return out, default_name
    if os.path.isdir(out):
        raise DataError(f"output file {out}: is an existing folder")
    return os.path.dirname(out) or ".", os.path.basename(out)

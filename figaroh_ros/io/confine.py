"""Paths that come from the ROS graph, confined to the folders a node serves.

A goal or a service request is written by whoever can reach the robot's DDS domain.  Every
path it carries goes through this module before a node opens, creates or even tests it:

* :func:`readable`: a file (or a bag folder) to read must resolve, symbolic links followed
  (``os.path.realpath``), inside one of the node's read roots, be a regular file (a folder
  for a bag: every entry in it regular or a folder, none escaping), never a device, FIFO,
  socket or a file of ``/proc``, ``/sys``, ``/dev``, and hold at most ``max_bytes``;
* :func:`writable`: a file or folder to create must resolve inside the node's write root
  (``bag_dir``, ``output_dir``) and not exist yet;
* :func:`check_name`: before anything else, a name is at most ``MAX_PATH_BYTES`` of UTF-8
  with components of at most ``MAX_NAME_BYTES``, without NUL or control characters.

A refusal (:class:`PathRefused`) names the request's field and the root, never anything
read from a file.  What is checked is the path as resolved now: whoever can create
symbolic links inside a root between the check and the use is a local user, outside this
module's threat (docs/security.md).

:func:`scrub` is the last step before an answer goes back on the graph: any line or cell of
the files a goal named that an error message quotes is replaced by a mention of the file,
so that what a node read never travels back to the client (the node's log keeps the full
message).
"""
from __future__ import annotations

import os
import re
import stat
from typing import Iterable, Sequence

from figaroh_ros.io.share import share_directory
from figaroh_ros.model.robot import example_robot_shares

MAX_PATH_BYTES = 4096           # PATH_MAX of Linux
MAX_NAME_BYTES = 255            # NAME_MAX of Linux
MAX_BAG_ENTRIES = 10_000        # files in a bag folder (a bag has a few split files)
SPECIAL = ("/proc", "/sys", "/dev")     # file systems of the kernel, never data
SCRUB_BYTES = 4_000_000         # bytes of a goal's file looked at when scrubbing an answer
SCRUB_MIN = 8                   # shorter lines and cells are words of our own messages
SHOWN = 160                     # characters of a refused name repeated in a refusal
BARE_KEY = re.compile(r"-?\s*[\w.-]+:")    # a YAML line that opens a mapping


class PathRefused(ValueError):
    """A path of a request refused; the message names the field, the path and the root.
    ``missing``: the path is inside the roots but nothing is there."""

    def __init__(self, message: str, missing: bool = False):
        super().__init__(message)
        self.missing = missing


def shown(path: object) -> str:
    """``path`` as a refusal repeats it: its repr, cut after ``SHOWN`` characters."""
    text = repr(path)
    return text if len(text) <= SHOWN else text[:SHOWN] + f"... ({len(text)} characters)"


def check_name(field: str, path: object) -> str:
    """``path`` when it is a usable name; PathRefused naming ``field`` otherwise."""
    if not isinstance(path, str) or not path:
        raise PathRefused(f"{field}: expected a path, got {shown(path)}")
    try:
        raw = path.encode("utf-8")
    except UnicodeEncodeError:
        raise PathRefused(f"{field}: {shown(path)} is not UTF-8") from None
    if "\ufffd" in path:      # what rclpy makes of bytes that are not UTF-8 on the wire
        raise PathRefused(f"{field}: {shown(path)} was not UTF-8 (U+FFFD in its place)")
    if len(raw) > MAX_PATH_BYTES:
        raise PathRefused(f"{field}: a name of {len(raw)} bytes (at most {MAX_PATH_BYTES})")
    if any(ord(c) < 32 or ord(c) == 127 for c in path):
        raise PathRefused(f"{field}: {shown(path)} holds a NUL or control character")
    longest = max(len(p.encode("utf-8")) for p in path.split("/"))
    if longest > MAX_NAME_BYTES:
        raise PathRefused(f"{field}: a path component of {longest} bytes (at most "
                          f"{MAX_NAME_BYTES})")
    return path


def _real(path: str) -> str:
    return os.path.realpath(os.path.abspath(path))


def inside(path: str, root: str) -> bool:
    """Whether the resolved ``path`` is ``root`` or under it (both resolved)."""
    real, top = _real(path), _real(root)
    return os.path.commonpath([real, top]) == top


def _special(real: str) -> bool:
    return any(real == s or real.startswith(s + "/") for s in SPECIAL)


def _within(field: str, path: str, roots: Sequence[str], what: str) -> str:
    """The resolved ``path``; PathRefused when it is under none of ``roots``."""
    real = _real(path)
    if _special(real) or not any(inside(real, r) for r in roots):
        where = ", ".join(_real(r) for r in roots) or "no folder"
        raise PathRefused(f"{field}: {shown(path)} escapes the folders this node "
                          f"{what} ({where})")
    return real


def _folder_bytes(field: str, path: str, real: str, roots: Sequence[str]) -> int:
    """Bytes of the regular files directly in the folder ``real``; PathRefused for an
    entry that is special or escapes ``roots``."""
    total = 0
    with os.scandir(real) as it:
        for k, entry in enumerate(it):
            if k >= MAX_BAG_ENTRIES:
                raise PathRefused(f"{field}: {shown(path)} holds more than "
                                  f"{MAX_BAG_ENTRIES} entries")
            target = _real(entry.path)
            if _special(target) or not any(inside(target, r) for r in roots):
                raise PathRefused(f"{field}: {shown(path)} holds {entry.name!r}, a link "
                                  "out of the readable folders")
            st = os.stat(target)
            if stat.S_ISREG(st.st_mode):
                total += st.st_size
            elif not stat.S_ISDIR(st.st_mode):
                raise PathRefused(f"{field}: {shown(path)} holds {entry.name!r}, not a "
                                  "regular file (a device, FIFO or socket)")
    return total


def readable(field: str, path: str, roots: Sequence[str], *, folder: bool = False,
             max_bytes: int | None = None) -> str:
    """``path`` (made absolute) when it may be read: inside ``roots`` once resolved, a
    regular file (``folder``: a folder of regular files) of at most ``max_bytes``;
    PathRefused naming ``field`` and the roots otherwise.  A path outside the roots is
    refused before its existence is looked at."""
    check_name(field, path)
    real = _within(field, path, roots, "reads from")
    try:
        st = os.stat(real)
    except OSError:
        raise PathRefused(f"{field}: {shown(path)} not found", missing=True) from None
    want = "folder" if folder else "regular file"
    ok = stat.S_ISDIR(st.st_mode) if folder else stat.S_ISREG(st.st_mode)
    if not ok:
        kind = "a folder" if stat.S_ISDIR(st.st_mode) else "a regular file" if \
            stat.S_ISREG(st.st_mode) else "a device, FIFO or socket"
        raise PathRefused(f"{field}: {shown(path)} is {kind}, expected a {want}")
    size = _folder_bytes(field, path, real, roots) if folder else st.st_size
    if max_bytes is not None and size > max_bytes:
        raise PathRefused(f"{field}: {shown(path)} holds {size} bytes, more than the "
                          f"{max_bytes} a request may make this node read")
    return os.path.abspath(path)


def writable(field: str, path: str, root: str, base: str | None = None,
             exist_ok: bool = False) -> str:
    """The absolute path to create for ``path`` (relative: under ``base``, default the
    working directory) when it resolves inside ``root`` and does not exist yet (or
    ``exist_ok``); PathRefused naming ``field`` and ``root`` otherwise (``..`` or a
    symbolic link that leaves ``root``, an absolute path elsewhere, an existing file)."""
    check_name(field, path)
    full = os.path.abspath(os.path.join(base or os.getcwd(), path))
    _within(field, full, [root], "writes into")
    if _real(full) == _real(root):
        raise PathRefused(f"{field}: {shown(path)} is the folder {_real(root)} itself")
    if os.path.lexists(full) and not exist_ok:
        raise PathRefused(f"{field}: {shown(path)} exists already")
    return full


def read_roots(bag_dir: str, output_dir: str, data_roots: str) -> list[str]:
    """The folders a node reads requests' files from: ``bag_dir``, ``output_dir``, the
    package's shared config folder, the robot models of example-robot-data (what configs
    name as ``example-robot-data:``) and each of ``data_roots`` (``os.pathsep``-separated)."""
    share = share_directory()
    models = [os.path.join(s, "example-robot-data", "robots") for s in example_robot_shares()]
    extra = ([os.path.join(share, "config")] if share else []) + \
        [m for m in models if os.path.isdir(m)] + [r for r in data_roots.split(os.pathsep) if r]
    return [os.path.abspath(r) for r in [bag_dir, output_dir, *extra] if r]


def _fragments(path: str, keep: set[str]) -> set[str]:
    """The lines and the cells (split at , ; tab) of the file ``path`` that an answer must
    not quote: at least ``SCRUB_MIN`` characters with a letter, not in ``keep``, not a
    bare YAML key (``acceptance:``: a word of the config's schema, which answers use)."""
    with open(path, "rb") as f:
        text = f.read(SCRUB_BYTES).decode("utf-8", "replace")
    found = set()
    for line in text.splitlines():
        for piece in [line, *re.split(r"[,;\t]", line)]:
            piece = piece.strip().strip("'\"")
            if len(piece) >= SCRUB_MIN and re.search(r"[^\W\d]", piece) and \
                    piece not in keep and not BARE_KEY.fullmatch(piece):
                found.add(piece)
    return found


def scrub(text: str, files: Iterable[str], roots: Sequence[str],
          keep: Iterable[str] = ()) -> str:
    """``text`` (an answer about to go on the graph) without any line or cell of the
    ``files`` a request named (those a node may read: inside ``roots``, regular; a bag
    folder's ``metadata.yaml``), each replaced by ``<text of NAME>``; ``keep``: words the
    node may say (its robot's joint names)."""
    keep = set(keep)
    for path in files:
        if not isinstance(path, str) or not path:
            continue
        keep.add(path)
        try:
            check_name("file", path)
            target = os.path.join(path, "metadata.yaml") if os.path.isdir(path) else path
            readable("file", target, roots, max_bytes=None)
            pieces = _fragments(target, keep)
        except (PathRefused, OSError):
            continue
        mention = f"<text of {os.path.basename(target)}>"
        for piece in sorted(pieces, key=len, reverse=True):
            for form in dict.fromkeys([piece, repr(piece)[1:-1]]):
                if form in text:          # where it is not part of a longer word
                    text = re.sub(rf"(?<!\w){re.escape(form)}(?!\w)", mention, text)
    return text


def request_paths(request) -> list[str]:
    """Every string (and string of a list) of a ROS request message: what :func:`scrub`
    looks at (fields that are no path are skipped there)."""
    out = []
    for name, kind in request.get_fields_and_field_types().items():
        value = getattr(request, name)
        if kind == "string":
            out.append(value)
        elif kind.startswith("sequence<string"):
            out += list(value)
    return out

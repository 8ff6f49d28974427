"""A calibration image set on disk: a folder of images and a CSV of the robot's joint
readings when each was taken.

The poses CSV has a header row ``image,<joint>,<joint>,...`` and one row per image: the image's
file name (relative to the images folder) then the joint readings (rad, or m for a prismatic
joint) in the header's order.  Blank lines and lines starting with ``#`` are skipped.
"""
from __future__ import annotations

import csv
import math
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from figaroh_ros.camera.detect import Dropped, detect_images
from figaroh_ros.camera.targets import Board
from figaroh_ros.errors import DataError

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".pgm", ".ppm")
MAX_IMAGES = 10_000


@dataclass(frozen=True)
class ImageSet:
    """Images and the joint readings of each (``q``: one row per image, ``joints`` order)."""

    folder: str
    images: tuple
    joints: tuple
    q: np.ndarray

    def paths(self) -> list:
        return [str(Path(self.folder) / name) for name in self.images]


def read_poses_csv(path, folder) -> ImageSet:
    """The image set of the poses CSV ``path`` whose images are in ``folder``; every problem
    (missing file, unknown image, a reading that is not a number, a repeated image) is a
    :class:`DataError` naming the file and the line."""
    path, folder = Path(path), Path(folder)
    if not folder.is_dir():
        raise DataError(f"camera.images: {folder} is not a folder")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"camera.poses: cannot read {path} ({exc})") from None
    rows = [(n, r) for n, r in enumerate(csv.reader(text.splitlines()), 1)
            if r and not r[0].lstrip().startswith("#") and any(c.strip() for c in r)]
    if not rows:
        raise DataError(f"{path}: empty, expected a header 'image,<joint>,...' and rows")
    header = [c.strip() for c in rows[0][1]]
    if len(header) < 2 or header[0] != "image":
        raise DataError(f"{path}:{rows[0][0]}: the header must be 'image' then the joint "
                        f"names, got {','.join(header)!r}")
    joints = header[1:]
    if len(set(joints)) != len(joints) or any(not j for j in joints):
        raise DataError(f"{path}:{rows[0][0]}: joint names must be distinct and non-empty")
    if len(rows) - 1 > MAX_IMAGES:
        raise DataError(f"{path}: {len(rows) - 1} images, at most {MAX_IMAGES}")
    names, q = [], []
    for line, row in rows[1:]:
        where = f"{path}:{line}"
        if len(row) != len(header):
            raise DataError(f"{where}: {len(row)} columns, the header has {len(header)}")
        name = row[0].strip()
        if not name or Path(name).is_absolute() or ".." in Path(name).parts:
            raise DataError(f"{where}: image {name!r} must be a file name inside "
                            f"{folder}")
        if Path(name).suffix.lower() not in IMAGE_SUFFIXES:
            raise DataError(f"{where}: {name!r} is not an image file name "
                            f"({', '.join(IMAGE_SUFFIXES)})")
        if name in names:
            raise DataError(f"{where}: image {name} listed twice")
        if not (folder / name).is_file():
            raise DataError(f"{where}: image {name} not found in {folder}")
        values = []
        for joint, cell in zip(joints, row[1:]):
            try:
                value = float(cell)
            except ValueError:
                value = math.nan
            if not math.isfinite(value):
                raise DataError(f"{where}: {joint} = {cell.strip()!r} is not a finite number")
            values.append(value)
        names.append(name)
        q.append(values)
    if not names:
        raise DataError(f"{path}: no image rows after the header")
    return ImageSet(str(folder), tuple(names), tuple(joints), np.array(q, float))


def detect_set(images: ImageSet, board: Board, intrinsics=None, **options):
    """``(detections, q, dropped)``: the views where ``board`` was found, their joint
    readings, and the images left out with the reason (:class:`Dropped`)."""
    detections, dropped = detect_images(images.paths(), board, intrinsics, **options)
    index = {p: k for k, p in enumerate(images.paths())}
    rows = [index[d.image] for d in detections]
    short = [Dropped(Path(d.image).name, d.reason) for d in dropped]
    detections = [replace(d, image=Path(d.image).name) for d in detections]
    return detections, images.q[rows], short


__all__ = ["ImageSet", "read_poses_csv", "detect_set", "IMAGE_SUFFIXES"]

"""What a calibration looks like posture by posture: the measured marker position against
the nominal and the calibrated models' predictions, for a 3D view (RViz).

``posture_fit(result)`` gives, for every posture of the training and validation sets, the
measured position of each marker point and its prediction by the nominal model (joints
nominal, measurement frames fitted: ``x_nominal``) and by the calibrated one (``x``), all
in the measurement frame; ``write_posture_fit`` / ``read_posture_fit`` keep it as
``postures_fit.csv`` beside result.yaml.  ``marker_specs`` turns it into plain marker
descriptions (spheres, error lines, one text) coloured by the error: green at or below
``good_m``, red at or beyond ``3 good_m``, linear in between.  No rclpy here.
"""
from __future__ import annotations

import csv
import io
import os
from dataclasses import dataclass

import numpy as np

from figaroh_ros.errors import DataError

AXES = ("x", "y", "z")
SETS = ("measured", "nominal", "calibrated")


@dataclass
class PostureFit:
    ids: list[str]
    split: list[str]               # train | validation
    measured: np.ndarray           # N x k x 3, m, measurement frame
    nominal: np.ndarray
    calibrated: np.ndarray

    def errors(self, which: str = "calibrated") -> np.ndarray:
        """N x k distances (m) of a model's predictions to the measurements."""
        return np.linalg.norm(getattr(self, which) - self.measured, axis=2)


def _measured_points(km, Y: np.ndarray) -> np.ndarray:
    if km.measurement.kind == "pose":
        return Y[:, None, :3]
    return Y.reshape(len(Y), km.measurement.n_points, 3)


def posture_fit(result) -> PostureFit:
    """The per-posture measured and predicted positions of a CalibrationResult."""
    km = result.kinematic_model
    sets = [("train", result.train)] + (
        [("validation", result.validation)] if result.validation is not None else [])
    parts = [(name, ps, _measured_points(km, ps.Y), km.predict_points(ps.Q, result.x_nominal),
              km.predict_points(ps.Q, result.x)) for name, ps in sets]
    return PostureFit([i for _, ps, *_ in parts for i in ps.ids],
                      [name for name, ps, *_ in parts for _ in range(len(ps.Q))],
                      *(np.concatenate([p[k] for p in parts]) for k in (2, 3, 4)))


def write_posture_fit(fit: PostureFit, path: str) -> None:
    """``postures_fit.csv``: id, split, point, then x y z of each set (m)."""
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["id", "split", "point"] + [f"{s}_{a}" for s in SETS for a in AXES])
    for i, (pid, split) in enumerate(zip(fit.ids, fit.split)):
        for k in range(fit.measured.shape[1]):
            w.writerow([pid, split, k + 1] + [repr(float(v)) for s in SETS
                                              for v in getattr(fit, s)[i, k]])
    tmp = path + ".tmp"
    with open(tmp, "w", newline="") as f:
        f.write(buf.getvalue())
    os.replace(tmp, path)


def read_posture_fit(path: str) -> PostureFit:
    """The table written by :func:`write_posture_fit`; DataError naming the row."""
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: {exc}") from None
    if not rows:
        raise DataError(f"{path}: no posture")
    ids, split, values = [], [], []
    for n, row in enumerate(rows, start=2):
        try:
            v = [float(row[f"{s}_{a}"]) for s in SETS for a in AXES]
        except (KeyError, TypeError, ValueError) as exc:
            raise DataError(f"{path}, row {n}: {exc}") from None
        if not np.all(np.isfinite(v)):
            raise DataError(f"{path}, row {n}: a position is not finite")
        if row["point"] == "1":
            ids.append(row["id"])
            split.append(row["split"])
        values.append(v)
    V = np.array(values).reshape(len(ids), -1, 3, 3)
    return PostureFit(ids, split, V[:, :, 0], V[:, :, 1], V[:, :, 2])


def error_colour(error_m: float, good_m: float) -> tuple[float, float, float, float]:
    """RGBA: green at or below ``good_m``, red at or beyond ``3 good_m``."""
    s = float(np.clip((error_m - good_m) / (2.0 * good_m), 0.0, 1.0))
    return (s, 1.0 - s, 0.0, 1.0)


GREY, BLUE = (0.6, 0.6, 0.6, 1.0), (0.2, 0.4, 1.0, 1.0)


def marker_specs(fit: PostureFit, good_m: float, diameter_m: float = 0.01) -> list[dict]:
    """Marker descriptions: per posture and point a sphere of each set (namespaces
    ``measured``, ``nominal``, ``calibrated``), a line from the measured point to each
    prediction (``error``), and one text with the RMSEs (``summary``); ids stable per
    posture and point so that a new calibration replaces the old markers."""
    if not good_m > 0 or not np.isfinite(good_m):
        raise DataError(f"marker colour scale: expected a positive error in m, got {good_m!r}")
    specs = []
    N, k = fit.measured.shape[:2]
    e_nom, e_cal = fit.errors("nominal"), fit.errors("calibrated")
    for i in range(N):
        for p in range(k):
            mid = i * k + p
            specs.append(dict(ns="measured", id=mid, kind="sphere", points=[fit.measured[i, p]],
                              colour=BLUE, scale=diameter_m))
            for s, err in (("nominal", e_nom), ("calibrated", e_cal)):
                colour = GREY if s == "nominal" else error_colour(err[i, p], good_m)
                specs.append(dict(ns=s, id=mid, kind="sphere", points=[getattr(fit, s)[i, p]],
                                  colour=colour, scale=diameter_m))
            specs.append(dict(ns="error", id=mid, kind="lines",
                              points=[fit.measured[i, p], fit.calibrated[i, p],
                                      fit.measured[i, p], fit.nominal[i, p]],
                              colour=error_colour(e_cal[i, p], good_m), scale=diameter_m / 5))
    rms = lambda e: 1e3 * float(np.sqrt(np.mean(e ** 2)))   # noqa: E731
    specs.append(dict(ns="summary", id=0, kind="text", points=[fit.measured.mean(axis=(0, 1))],
                      colour=(1.0, 1.0, 1.0, 1.0), scale=0.05,
                      text=f"{N} postures: nominal {rms(e_nom):.2f} mm -> calibrated "
                           f"{rms(e_cal):.2f} mm RMS"))
    return specs

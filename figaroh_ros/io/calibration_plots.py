"""Error plots per posture: nominal vs calibrated, training and validation."""
from __future__ import annotations

import os

import numpy as np

from figaroh_ros.calibration import CalibrationResult
from figaroh_ros.io.plotting import pyplot


def plot_posture_errors(result: CalibrationResult, out_dir: str) -> list[str]:
    """One PNG per posture set: largest point error of each posture (mm), nominal model
    (frames fitted) next to the calibrated one."""
    sets = ["train"] + (["validation"] if result.validation is not None else [])
    return [_plot(result, label, out_dir) for label in sets]


def _plot(result: CalibrationResult, label: str, out_dir: str) -> str:
    plt = pyplot()
    nom = 1e3 * result.posture_errors(label, nominal=True)
    cal = 1e3 * result.posture_errors(label)
    idx = np.arange(len(cal))
    fig, ax = plt.subplots(figsize=(max(6, 0.18 * len(cal)), 3.2))
    ax.bar(idx - 0.2, nom, 0.4, label=f"nominal (RMS {np.sqrt(np.mean(nom**2)):.2f} mm)",
           color="0.6")
    ax.bar(idx + 0.2, cal, 0.4, label=f"calibrated (RMS {np.sqrt(np.mean(cal**2)):.2f} mm)",
           color="tab:blue")
    ax.set_xlabel("posture")
    ax.set_ylabel("position error [mm]")
    ax.set_title(f"{result.name}: {label} postures")
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    path = os.path.join(out_dir, f"errors_{label}.png")
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path

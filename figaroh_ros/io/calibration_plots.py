"""Error plots per posture: nominal vs calibrated, training and validation."""
from __future__ import annotations

import os

import numpy as np

from figaroh_ros.calibration.solve import posture_errors
from figaroh_ros.io.plotting import pyplot


def plot_posture_errors(rep, out_dir: str) -> list[str]:
    """One PNG per posture set: largest point error of each posture (mm), nominal model
    (frames fitted) next to the calibrated one."""
    plt = pyplot()
    sets = [("train", rep.train)]
    if rep.validation is not None:
        sets.append(("validation", rep.validation))
    paths = []
    for label, data in sets:
        nom = 1e3 * posture_errors(rep.km, data, rep.x_nominal).max(axis=1)
        cal = 1e3 * posture_errors(rep.km, data, rep.result.x).max(axis=1)
        idx = np.arange(len(data))
        fig, ax = plt.subplots(figsize=(max(6, 0.18 * len(data)), 3.2))
        ax.bar(idx - 0.2, nom, 0.4, label=f"nominal (RMS {np.sqrt(np.mean(nom**2)):.2f} mm)",
               color="0.6")
        ax.bar(idx + 0.2, cal, 0.4, label=f"calibrated (RMS {np.sqrt(np.mean(cal**2)):.2f} mm)",
               color="tab:blue")
        ax.set_xlabel("posture")
        ax.set_ylabel("position error [mm]")
        ax.set_title(f"{rep.summary.get('robot', '')}: {label} postures")
        ax.legend(loc="upper right", fontsize=8)
        fig.tight_layout()
        path = os.path.join(out_dir, f"errors_{label}.png")
        fig.savefig(path, dpi=90)
        plt.close(fig)
        paths.append(path)
    return paths

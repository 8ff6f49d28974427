"""Writing identification results: ``result.yaml`` and torque plots."""
from __future__ import annotations

import os

import numpy as np
import yaml


def write_result(result_dict: dict, out_dir: str) -> str:
    """Write ``result.yaml`` atomically (a temporary file renamed into place)."""
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "result.yaml")
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        yaml.safe_dump(result_dict, f, sort_keys=False, width=1000)
    os.replace(tmp, path)
    return path


def plot_torques(Y, Y_hat, row_joint, joints, out_dir: str, title: str) -> list[str]:
    """One PNG per joint: measured vs estimated torque over the decimated samples."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for j, name in enumerate(joints):
        rows = row_joint == j
        fig, ax = plt.subplots(figsize=(8, 3))
        ax.plot(Y[rows], lw=1.0, label="measured")
        ax.plot(Y_hat[rows], lw=1.0, ls="--", label="estimated")
        err = Y[rows] - Y_hat[rows]
        ax.set_title(f"{title}: {name} (RMSE {np.sqrt(np.mean(err ** 2)):.3g} N.m)")
        ax.set_xlabel("sample (decimated)")
        ax.set_ylabel("torque [N.m]")
        ax.legend(loc="upper right")
        fig.tight_layout()
        p = os.path.join(out_dir, f"torque_{name}.png")
        fig.savefig(p, dpi=90)
        plt.close(fig)
        paths.append(p)
    return paths


def format_table(result_dict: dict) -> str:
    """The base-parameter table as printed by the CLI."""
    rows = result_dict["base_parameters"]
    w = min(max(len(r["name"]) for r in rows), 90)
    lines = [f"{'#':>3}  {'base parameter':<{w}}  {'value':>12}  {'std %':>8}"]
    for i, r in enumerate(rows, 1):
        name = r["name"] if len(r["name"]) <= w else r["name"][:w - 3] + "..."
        lines.append(f"{i:>3}  {name:<{w}}  {r['value']:>12.6g}  {r['std_percent']:>8.2f}")
    return "\n".join(lines)

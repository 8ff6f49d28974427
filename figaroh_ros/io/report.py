"""Writing identification results: ``result.yaml`` and torque plots."""
from __future__ import annotations

import os

import numpy as np
import yaml

from figaroh_ros.io.plotting import pyplot

# libyaml's emitter when PyYAML was built with it (the same YAML, several times faster
# than the pure-Python one on a result of a hundred parameters)
DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def dump_yaml(data, f) -> None:
    yaml.dump(data, f, Dumper=DUMPER, sort_keys=False, width=1000)


def write_result(result_dict: dict, out_dir: str) -> str:
    """Write ``result.yaml`` atomically (a temporary file renamed into place)."""
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "result.yaml")
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        dump_yaml(result_dict, f)
    os.replace(tmp, path)
    return path


def prediction_band(Wb: np.ndarray, cov: np.ndarray | None, k: float = 2.0):
    """``k`` standard deviations of each predicted torque due to the parameters'
    uncertainty: ``sqrt(diag(W C W^T))`` (row by row, never forming W C W^T)."""
    if cov is None:
        return None
    return k * np.sqrt(np.maximum(np.einsum("ij,jk,ik->i", Wb, cov, Wb), 0.0))


def write_covariance(result, out_dir: str) -> str:
    """``covariance.yaml`` beside the identified URDF: the covariance of the base
    parameters (least squares) and of the consistent standard parameters (Laplace)."""
    doc = {"base_parameters": {"method": result.method, "names": list(result.base.names),
                               "value": [float(v) for v in result.estimate.phi],
                               "covariance": np.asarray(result.estimate.cov).tolist()}}
    if result.physical is not None and result.physical.cov is not None:
        doc["standard_parameters"] = {
            "method": result.physical.method, "names": list(result.standard_names),
            "value": [float(v) for v in result.physical.phi],
            "covariance": np.asarray(result.physical.cov).tolist()}
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "covariance.yaml")
    with open(path + ".tmp", "w") as f:
        dump_yaml(doc, f)
    os.replace(path + ".tmp", path)
    return path


def plot_torques(Y, Y_hat, row_joint, joints, out_dir: str, title: str,
                 band: np.ndarray | None = None) -> list[str]:
    """One PNG per joint: measured vs estimated torque over the decimated samples, with
    the +-2 sigma band of the prediction when ``band`` is given."""
    plt = pyplot()
    os.makedirs(out_dir, exist_ok=True)
    paths = []
    for j, name in enumerate(joints):
        rows = row_joint == j
        fig, ax = plt.subplots(figsize=(8, 3))
        ax.plot(Y[rows], lw=1.0, label="measured")
        ax.plot(Y_hat[rows], lw=1.0, ls="--", label="estimated")
        if band is not None:
            x = np.arange(int(rows.sum()))
            ax.fill_between(x, Y_hat[rows] - band[rows], Y_hat[rows] + band[rows],
                            alpha=0.3, color="C1", lw=0, label="2 sigma (parameters)")
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


def format_table(result_dict: dict, key: str = "base_parameters") -> str:
    """The base-parameter table (or the essential parameters') as printed by the CLI."""
    rows = result_dict[key]
    w = min(max(len(r["name"]) for r in rows), 90)
    lines = [f"{'#':>3}  {'base parameter':<{w}}  {'value':>12}  {'std %':>8}"]
    for i, r in enumerate(rows, 1):
        name = r["name"] if len(r["name"]) <= w else r["name"][:w - 3] + "..."
        lines.append(f"{i:>3}  {name:<{w}}  {r['value']:>12.6g}  {r['std_percent']:>8.2f}")
    return "\n".join(lines)


def format_cross_validation(result_dict: dict) -> str:
    """The cross-validation table printed by the CLI: hold-out RMSE per fold and joint,
    the nominal model's beside it."""
    cv = result_dict["cross_validation"]
    joints = [k for k in cv["rmse"][0] if k != "fold"]
    w = max(8, *(len(j) for j in joints))
    lines = [f"cross-validation ({cv['folds']} time blocks, {cv['method'].upper()}), "
             "hold-out RMSE [N.m] (nominal model in brackets):",
             "fold  " + "  ".join(f"{j:>{w + 11}}" for j in joints)]
    nominal = {r["fold"]: r for r in cv.get("nominal_rmse", [])}
    for r in cv["rmse"]:
        cells = []
        for j in joints:
            nom = nominal.get(r["fold"], {}).get(j)
            cells.append(f"{r[j]:>{w}.4g} ({nom:7.3g})" if nom is not None
                         else f"{r[j]:>{w + 10}.4g}")
        lines.append(f"{r['fold']:>4}  " + "  ".join(cells))
    return "\n".join(lines)


def physical_summary(ph: dict, nominal_rmse: dict | None) -> str:
    """The CLI's lines about the consistent estimate."""
    bad = [l for l in ph["links"] if not l["ok"]]
    lines = [f"physically consistent parameters ({ph['method']}, {ph['solver']}, "
             f"{ph['seconds']:.2f} s): " + ("every link consistent" if not bad else
                                           f"{len(bad)} link(s) NOT consistent")]
    if "validation_rmse" in ph and nominal_rmse:
        lines.append("  hold-out RMSE [N.m]: " + ", ".join(
            f"{k} {v:.4g} (nominal {nominal_rmse[k]:.4g})"
            for k, v in ph["validation_rmse"].items()))
    return "\n".join(lines)

"""Identification from long 1 kHz bags of a 7-joint arm (KUKA iiwa 14, simulated with
hidden parameters): wall time, CPU time, peak RSS and the longest silence between
progress lines, for a 1-minute and a 10-minute bag (`python bench/bench_long_bag.py`;
`--minutes 1 10`, `--decimation 20`).

Each bag (one /joint_states topic with positions and efforts, as a driver publishes,
written with rosbags into a temporary folder) is identified by `figaroh-ros identify` in a
child process of its own: its peak RSS is that run's alone (VmHWM, which fork and exec
do not carry over from this parent; getrusage's maximum printed beside it).  The
ratios 10-minute / 1-minute of wall and CPU time show how the time scales with the
recording's length, and the peak RSS that the memory does not grow with it beyond the
recording's own arrays and the decimated observation matrix.  Goal: peak RSS
<= 1 GB and a progress line at least every 2 s.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np
import yaml
from results import record, row

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from figaroh_ros.cli.output import say  # noqa: E402  (after the path)
from figaroh_ros.excitation.fourier import fourier_trajectory  # noqa: E402
from figaroh_ros.identification.parameters import DriveOptions, parameter_layout  # noqa: E402
from figaroh_ros.io.bags import typestore  # noqa: E402
from figaroh_ros.io.segmented_bag import SegmentedBagWriter  # noqa: E402
from figaroh_ros.model.robot import load_urdf_model  # noqa: E402
from figaroh_ros.sim.dynamics import measured_torques, perturbed_parameters  # noqa: E402
from figaroh_ros.tasks import identify  # noqa: E402

URDF = os.path.join(ROOT, "test", "data", "iiwa14.urdf")
RATE = 1000.0
BLOCK = 60_000           # samples simulated at once


def write_bag(folder: str, minutes: float) -> int:
    """A ``minutes`` long 1 kHz bag of the simulated arm; returns its samples."""
    robot = load_urdf_model(URDF, None)
    drive = DriveOptions(viscous_friction=True, coulomb_friction=True, rotor_inertia=False,
                         torque_offset=False)
    layout = parameter_layout(robot, drive)
    phi = perturbed_parameters(robot, layout, seed=3)
    traj = fourier_trajectory(robot, 60.0 * minutes, RATE, harmonics=5, base_freq_hz=0.05,
                              amplitude=0.7, seed=8)
    store = typestore()
    T, JS = store.types, "sensor_msgs/msg/JointState"
    w = SegmentedBagWriter(folder, {"/joint_states": JS}, store, "mcap", 0.0)
    for a in range(0, len(traj.t), BLOCK):
        part = type(traj)(**{k: (v[a:a + BLOCK] if isinstance(v, np.ndarray) and
                                 v.shape[:1] == traj.t.shape else v)
                             for k, v in vars(traj).items()})
        tau = measured_torques(robot, layout, drive, phi, part, 0.3, seed=a)
        for k in range(len(part.t)):
            ns = int(1_700_000_000 * 10**9 + round(part.t[k] * 1e9))
            hdr = T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](
                sec=ns // 10**9, nanosec=ns % 10**9), frame_id="")
            msg = T[JS](header=hdr, name=robot.active_joints, position=part.q[k],
                        velocity=np.zeros(0), effort=tau[k])
            w.write("/joint_states", ns, store.serialize_cdr(msg, JS))
    w.close()
    return len(traj.t)


def write_config(folder: str, bag: str, decimation: int) -> str:
    joints = load_urdf_model(URDF, None).active_joints
    path = os.path.join(folder, "identify.yaml")
    with open(path, "w") as f:
        yaml.safe_dump({
            "robot": {"name": "iiwa14", "urdf": URDF, "joints": joints},
            "model": {"viscous_friction": True, "coulomb_friction": True,
                      "rotor_inertia": False, "torque_offset": False},
            "data": {"format": "bag", "path": bag, "joint_topic": "/joint_states",
                     "torque_topic": "/joint_states", "events_topic": ""},
            "processing": {"position_cutoff_hz": 8.0, "decimation": decimation,
                           "min_velocity": 0.05},
            "estimation": {"method": "wls", "validation_fraction": 0.2},
            "output": {"plots": False}}, f)
    return path


def vm_hwm_mb() -> float | None:
    """This process's own peak RSS (VmHWM: unlike getrusage's maximum, not carried over
    from the parent through fork and exec), MB."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


def child(config: str, out: str) -> None:
    """One identification, as the command line runs it; its numbers as JSON on stdout."""
    stamps = [time.monotonic()]

    def progress(msg):
        stamps.append(time.monotonic())
        say(msg)
    t0, c0 = time.perf_counter(), time.process_time()
    summary = identify.run(config, out=out, progress=progress).summary
    stamps.append(time.monotonic())
    ru = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0,
                      "peak_rss_mb": ru.ru_maxrss / 1024.0, "vm_hwm_mb": vm_hwm_mb(),
                      "longest_silence_s": float(np.max(np.diff(stamps))),
                      "progress_lines": len(stamps) - 2,
                      "validation_rmse": summary.get("validation_rmse")}))


def measure(minutes: float, decimation: int, tmp: str) -> dict:
    folder = os.path.join(tmp, f"{minutes:g}min")
    os.makedirs(folder)
    t0 = time.perf_counter()
    n = write_bag(os.path.join(folder, "bag"), minutes)
    print(f"{minutes:g} min bag: {n} samples written in {time.perf_counter() - t0:.0f} s",
          flush=True)
    config = write_config(folder, os.path.join(folder, "bag"), decimation)
    proc = subprocess.run([sys.executable, __file__, "--child", config,
                           os.path.join(folder, "out")], capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(proc.stderr)
    row = json.loads(proc.stdout.strip().splitlines()[-1])
    row.update(minutes=minutes, samples=n)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, nargs="+", default=[1.0, 10.0])
    ap.add_argument("--decimation", type=int, default=20)
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(*args.child)
    with tempfile.TemporaryDirectory() as tmp:
        rows = [measure(m, args.decimation, tmp) for m in args.minutes]
    print(f"\n{'minutes':>7} {'samples':>8} {'wall s':>7} {'CPU s':>7} {'peak RSS MB':>11} "
          f"{'VmHWM MB':>8} {'longest silence s':>17}")
    for r in rows:
        print(f"{r['minutes']:>7g} {r['samples']:>8} {r['wall_s']:>7.1f} {r['cpu_s']:>7.1f} "
              f"{r['peak_rss_mb']:>11.0f} {r['vm_hwm_mb'] or float('nan'):>8.0f} "
              f"{r['longest_silence_s']:>17.2f}")
    record("long_bag", "Identification from long 1 kHz bags (KUKA iiwa 14, simulated)", "",
           [r for x in rows for r in (
               row(f"{x['minutes']:g} min bag ({x['samples']} samples): wall", "s", x["wall_s"]),
               row(f"{x['minutes']:g} min bag: CPU", "s", x["cpu_s"]),
               row(f"{x['minutes']:g} min bag: peak RSS", "MB", x["peak_rss_mb"]),
               row(f"{x['minutes']:g} min bag: longest silence between progress lines", "s",
                   x["longest_silence_s"]))])
    if len(rows) > 1:
        a, b = rows[0], rows[-1]
        print(f"ratios {b['minutes']:g} / {a['minutes']:g} min: samples "
              f"{b['samples'] / a['samples']:.1f}, wall {b['wall_s'] / a['wall_s']:.1f}, "
              f"CPU {b['cpu_s'] / a['cpu_s']:.1f}, peak RSS "
              f"{b['peak_rss_mb'] / a['peak_rss_mb']:.2f}")


if __name__ == "__main__":
    main()

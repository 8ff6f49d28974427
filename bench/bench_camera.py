"""Camera calibration from 50 views: figaroh_ros against OpenCV's own hand-eye on the same
data.

Data: a simulated UR10 with a wrist camera (eye-in-hand, 1280x720, a 7x10 checkerboard
0.5 m away), 50 training and 30 held-out views, 0.3 px of pixel noise; two robots: the
nominal one (only the hand-eye transform is unknown) and one with hidden joint offsets
of up to 3 mrad.  Ours: ``figaroh_ros.camera.calibrate_camera`` (closed-form start,
base parameters, Levenberg-Marquardt on the pixel residuals, std devs, outlier check),
the robot model in memory.  OpenCV: ``cv2.solvePnP`` on every view, then
``cv2.calibrateHandEye`` (Park & Martin) and ``cv2.calibrateRobotWorldHandEye`` (Shah),
the board's pose in the world the mean of the views'.  OpenCV 5.0's Python wheels lack
both functions: OpenCV 4.x runs in a subprocess from the folder ``--opencv4`` (default
``build/opencv4``; ``pip install --target build/opencv4 "opencv-python-headless<4.12"``),
and when it is absent its rows are left out.  Accuracy: the camera's pose in the board's
frame on the held-out postures (mm, mrad) against the truth, and the held-out
reprojection RMSE (px) beside the true model's own.  Times: median of ``--runs``.
Run: ``python bench/bench_camera.py [--runs N]``.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def worker(path: str) -> None:
    """OpenCV 4.x side (numpy and cv2 only): solvePnP + hand-eye, timed."""
    import cv2

    d = np.load(path)
    out = {}
    for method, name in ((cv2.CALIB_HAND_EYE_PARK, "park"),
                         (cv2.CALIB_ROBOT_WORLD_HAND_EYE_SHAH, "shah")):
        times = []
        for _ in range(int(d["runs"])):
            t = time.perf_counter()
            Rc, tc = [], []
            for k in range(int(d["n"])):
                sel = d["view"] == k
                _, rv, tv = cv2.solvePnP(d["points"][sel], d["pixels"][sel], d["K"], d["dist"])
                Rc.append(cv2.Rodrigues(rv)[0])
                tc.append(tv)
            G = d["G"]
            if name == "park":
                R, tx = cv2.calibrateHandEye(list(G[:, :3, :3]), list(G[:, :3, 3]), Rc, tc,
                                             method=method)
                X = np.eye(4)
                X[:3, :3], X[:3, 3] = R, tx.ravel()
                C = np.array([np.r_[np.c_[r, v.ravel()], [[0, 0, 0, 1]]] for r, v in zip(Rc, tc)])
                W = G @ X @ C
                U, _, Vt = np.linalg.svd(W[:, :3, :3].sum(0))
                Y = np.eye(4)
                Y[:3, :3] = U @ np.diag([1, 1, np.linalg.det(U @ Vt)]) @ Vt
                Y[:3, 3] = W[:, :3, 3].mean(0)
            else:
                # OpenCV's names: world = the board, base = the robot's base, gripper =
                # the flange; it returns base2world and gripper2cam
                Gi = np.linalg.inv(G)
                Rw, tw, Rg, tg = cv2.calibrateRobotWorldHandEye(
                    Rc, tc, list(Gi[:, :3, :3]), list(Gi[:, :3, 3]), method=method)
                T_board_base, T_cam_flange = np.eye(4), np.eye(4)
                T_board_base[:3, :3], T_board_base[:3, 3] = Rw, np.ravel(tw)
                T_cam_flange[:3, :3], T_cam_flange[:3, 3] = Rg, np.ravel(tg)
                X, Y = np.linalg.inv(T_cam_flange), np.linalg.inv(T_board_base)
            times.append(time.perf_counter() - t)
        out[name] = {"X": X.tolist(), "Y": Y.tolist(), "times": times}
    json.dump(out, sys.stdout)


def opencv_side(folder, scene, Q, det, runs):
    """OpenCV's (X, Y, times) per method, from the subprocess, or ``None``."""
    if not os.path.isdir(folder):
        return None
    p = scene.problem
    board_pts = scene.board.object_points()
    view = np.concatenate([np.full(len(i), k) for k, (i, _) in enumerate(det)])
    pts = np.concatenate([board_pts[i] for i, _ in det])
    pix = np.concatenate([u for _, u in det])
    Ta = p.poses(__import__("figaroh_ros.camera.synthetic", fromlist=["x"]).all_features(
        p, scene.board, Q), p.initial())[0]
    G = Ta @ np.linalg.inv(p.cam.T0.homogeneous)         # nominal flange poses
    with tempfile.TemporaryDirectory() as tmp:
        f = os.path.join(tmp, "data.npz")
        np.savez(f, view=view, points=pts, pixels=pix, K=p.intrinsics.K,
                 dist=np.asarray(p.intrinsics.dist), G=G, n=len(det), runs=runs)
        env = dict(os.environ, PYTHONPATH=os.path.abspath(folder))
        out = subprocess.run([sys.executable, __file__, "--worker", f], env=env,
                             capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--opencv4", default=os.path.join(ROOT, "build", "opencv4"))
    ap.add_argument("--worker")
    a = ap.parse_args()
    if a.worker:
        return worker(a.worker)
    sys.path.insert(0, ROOT)
    import pinocchio as pin
    from results import record, row

    from figaroh_ros.camera import Board, Intrinsics, calibrate_camera
    from figaroh_ros.camera.synthetic import Scene
    from figaroh_ros.model.robot import example_robot_urdf
    from figaroh_ros.threads import limited_threads

    pm = pin.buildModelFromUrdf(example_robot_urdf("ur_description/urdf/ur10_robot.urdf"))
    K = Intrinsics(np.array([[900.0, 0, 640], [0, 900, 360], [0, 0, 1]]),
                   [0.05, -0.1, 0.0, 0.0, 0.02], 1280, 720)
    board = Board("checkerboard", 7, 10, 0.03)
    mount = pin.SE3(pin.rpy.rpyToMatrix(0.02, -0.03, 0.01), np.array([0.0, 0.07, 0.05]))
    rows = []
    for label, offset in (("nominal robot", 0.0), ("joint offsets 3 mrad", 3e-3)):
        scene = Scene(pm, "eye_in_hand", "tool0", K, board, [0.3, -1.2, 1.6, -1.9, -1.57, 0.2],
                      mount, offset=offset, seed=11)
        Q = scene.postures(80)
        det = scene.detections(Q, 0.3)
        times, cpu, result = [], [], None
        with limited_threads(1):
            for _ in range(a.runs):
                t, c = time.perf_counter(), time.process_time()
                result = calibrate_camera(pm, Q[:50], det[:50], board=board, intrinsics=K,
                                          setup="eye_in_hand", tool_frame="tool0",
                                          pixel_noise=0.3, validation=(Q[50:], det[50:]))
                times.append(time.perf_counter() - t)
                cpu.append(time.process_time() - c)
        truth = camera_in_board(scene.problem, scene, Q[50:], scene.x)
        ours = camera_in_board(result.problem, scene, Q[50:], result.x)
        err_p, err_r = pose_errors(ours, truth)
        floor = reprojection(scene.problem, scene, Q[50:], det[50:], scene.x)
        print(f"{label}: ours {1e3 * np.median(times):.0f} ms ({1e3 * np.median(cpu):.0f} ms "
              f"CPU), camera pose {err_p:.3f} mm "
              f"{err_r:.3f} mrad, held-out {result.validation_rmse:.3f} px (true model "
              f"{floor:.3f} px)")
        rows += [row(f"{label}: 50 views, wall time", "ms", 1e3 * np.array(times), None, a.runs),
                 row(f"{label}: 50 views, CPU time", "ms", 1e3 * np.array(cpu), None, a.runs),
                 row(f"{label}: camera position error (held-out)", "mm", err_p),
                 row(f"{label}: camera rotation error (held-out)", "mrad", err_r),
                 row(f"{label}: held-out reprojection RMSE (true model {floor:.3g} px)",
                     "px", result.validation_rmse)]
        cv = opencv_side(a.opencv4, scene, Q[:50], det[:50], a.runs)
        if cv is None:
            print(f"OpenCV 4.x not found in {a.opencv4}: its rows are left out")
            continue
        for name, what in (("park", "cv2.calibrateHandEye (Park)"),
                           ("shah", "cv2.calibrateRobotWorldHandEye (Shah)")):
            X, Y = np.array(cv[name]["X"]), np.array(cv[name]["Y"])
            est = camera_in_board_xy(scene, Q[50:], X, Y)
            p_err, r_err = pose_errors(est, truth)
            rms = reprojection_xy(scene, Q[50:], det[50:], X, Y)
            print(f"  {what}: {1e3 * np.median(cv[name]['times']):.1f} ms, camera pose "
                  f"{p_err:.3f} mm {r_err:.3f} mrad, held-out {rms:.3f} px")
            rows += [row(f"{label}: time, ours vs {what}", "ms", 1e3 * np.array(times),
                         1e3 * np.array(cv[name]["times"]), a.runs),
                     row(f"{label}: camera position error, ours vs {what}", "mm", err_p,
                         p_err),
                     row(f"{label}: camera rotation error, ours vs {what}", "mrad", err_r,
                         r_err),
                     row(f"{label}: held-out reprojection, ours vs {what}", "px",
                         result.validation_rmse, rms)]
    print(record("camera", "Camera calibration, 50 views (UR10 eye-in-hand, simulated)",
                 "OpenCV 4.x hand-eye on solvePnP poses (nominal robot)", rows))


def camera_in_board(problem, scene, Q, x):
    from figaroh_ros.camera.synthetic import all_features

    Ta, Tb = problem.poses(all_features(problem, scene.board, Q), x)
    return np.linalg.inv(Tb) @ Ta


def camera_in_board_xy(scene, Q, X, Y):
    from figaroh_ros.camera.synthetic import all_features

    p = scene.problem
    Ta = p.poses(all_features(p, scene.board, Q), p.initial())[0]
    G = Ta @ np.linalg.inv(p.cam.T0.homogeneous)
    return np.linalg.inv(Y) @ G @ X


def pose_errors(A, B):
    import pinocchio as pin

    dp = np.linalg.norm(A[:, :3, 3] - B[:, :3, 3], axis=1)
    dr = [np.linalg.norm(pin.log3(a[:3, :3].T @ b[:3, :3])) for a, b in zip(A, B)]
    return 1e3 * float(np.sqrt(np.mean(dp ** 2))), 1e3 * float(np.sqrt(np.mean(np.square(dr))))


def reprojection(problem, scene, Q, det, x):
    T = camera_in_board(problem, scene, Q, x)
    return _rms(scene, T, det)


def reprojection_xy(scene, Q, det, X, Y):
    return _rms(scene, camera_in_board_xy(scene, Q, X, Y), det)


def _rms(scene, T_board_cam, det):
    from figaroh_ros.camera.model import project

    P = scene.board.object_points()
    e = []
    for T, (ids, uv) in zip(T_board_cam, det):
        Tc = np.linalg.inv(T)
        pc = P[ids] @ Tc[:3, :3].T + Tc[:3, 3]
        e.append(project(scene.problem.intrinsics, pc) - uv)
    e = np.vstack(e)
    return float(np.sqrt(np.mean(np.sum(e ** 2, axis=1))))


if __name__ == "__main__":
    main()

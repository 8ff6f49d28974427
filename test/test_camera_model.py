"""The camera model: the pinhole projection with OpenCV's distortion against its equations,
its derivatives against finite differences, CameraInfo YAML both ways, the closed-form
hand-eye transform on exact data, the pixel Jacobian of the calibration against finite
differences, and the ``camera:`` config section's refusals."""
from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from figaroh_ros.camera.handeye import hand_eye, park_martin
from figaroh_ros.camera.model import Intrinsics, project, project_jacobian
from figaroh_ros.config.base import parse
from figaroh_ros.config.camera import Camera
from figaroh_ros.errors import ConfigError

finite = st.floats(-0.2, 0.2, allow_nan=False)


def intrinsics(k1=0.05, k2=-0.1, p1=0.001, p2=-0.002, k3=0.02):
    return Intrinsics(np.array([[900.0, 0, 640], [0, 880, 360], [0, 0, 1]]),
                      [k1, k2, p1, p2, k3], 1280, 720)


@settings(max_examples=30, deadline=None)
@given(st.tuples(finite, finite, finite, finite, finite),
       st.lists(st.tuples(st.floats(-0.3, 0.3), st.floats(-0.3, 0.3), st.floats(0.3, 2.0)),
                min_size=1, max_size=8))
def test_projection_is_the_distorted_pinhole(coeffs, points):
    cam = intrinsics(*coeffs)
    P = np.array(points)
    k1, k2, p1, p2, k3 = coeffs
    x, y = P[:, 0] / P[:, 2], P[:, 1] / P[:, 2]
    r2 = x ** 2 + y ** 2
    radial = 1 + k1 * r2 + k2 * r2 ** 2 + k3 * r2 ** 3
    xd = x * radial + 2 * p1 * x * y + p2 * (r2 + 2 * x ** 2)
    yd = y * radial + p1 * (r2 + 2 * y ** 2) + 2 * p2 * x * y
    expected = np.column_stack([900 * xd + 640, 880 * yd + 360])
    assert np.allclose(project(cam, P), expected, atol=1e-6)
    # derivatives against central differences
    uv, Jp, Ji = project_jacobian(cam, P)
    h = 1e-6
    for k in range(3):
        d = np.zeros(3)
        d[k] = h
        num = (project(cam, P + d) - project(cam, P - d)) / (2 * h)
        assert np.allclose(Jp[:, :, k], num, rtol=1e-4, atol=1e-3)
    v = cam.vector()
    for k in range(len(v)):
        e = np.zeros(len(v))
        e[k] = h * max(1.0, abs(v[k]))
        num = (project(cam.with_vector(v + e), P) - project(cam.with_vector(v - e), P)) \
            / (2 * e[k])
        assert np.allclose(Ji[:, :, k], num, rtol=1e-4, atol=1e-3)


@settings(max_examples=20, deadline=None)
@given(st.floats(100, 3000), st.floats(100, 3000), st.integers(16, 4000),
       st.integers(16, 4000), st.tuples(finite, finite, finite, finite, finite))
def test_camera_info_yaml_round_trip(fx, fy, w, h, d):
    cam = Intrinsics(np.array([[fx, 0, w / 2], [0, fy, h / 2], [0, 0, 1]]), d, w, h)
    text = cam.to_camera_info_yaml("head")
    info = yaml.safe_load(text)
    assert info["camera_name"] == "head" and info["distortion_model"] == "plumb_bob"
    assert info["projection_matrix"]["data"][:3] == [fx, 0.0, w / 2]
    back = Intrinsics.from_camera_info(info)
    assert (back.width, back.height) == (w, h)
    assert np.array_equal(back.vector(), cam.vector())


def test_camera_info_file_and_bad_values(tmp_path):
    f = tmp_path / "cam.yaml"
    f.write_text(intrinsics().to_camera_info_yaml())
    assert np.allclose(Intrinsics.from_camera_info(str(f)).K, intrinsics().K)
    with pytest.raises(ConfigError, match="CameraInfo file .*missing"):
        Intrinsics.from_camera_info(str(tmp_path / "missing.yaml"))
    with pytest.raises(ConfigError, match="missing or malformed field 'image_width'"):
        Intrinsics.from_camera_info({"camera_matrix": {"data": [1] * 9}})
    with pytest.raises(ConfigError, match="not OpenCV's pinhole model"):
        Intrinsics.from_camera_info(dict(intrinsics().camera_info(),
                                         distortion_model="equidistant"))
    with pytest.raises(ConfigError, match="intrinsics.K"):
        Intrinsics(np.eye(3) * -1, [], 640, 480)
    with pytest.raises(ConfigError, match="intrinsics.dist: 3 coefficients"):
        Intrinsics(np.eye(3), [0.1, 0.2, 0.3], 640, 480)
    with pytest.raises(ConfigError, match="intrinsics.width"):
        Intrinsics(np.eye(3), [], 0, 480)


def random_pose(rng, scale=1.0):
    return pin.SE3(pin.exp3(rng.normal(size=3)), scale * rng.normal(size=3)).homogeneous


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2 ** 31), st.sampled_from([True, False]))
def test_closed_form_hand_eye_is_exact_on_exact_data(seed, eye_in_hand):
    rng = np.random.default_rng(seed)
    X, Y = random_pose(rng, 0.1), random_pose(rng)
    G = np.array([random_pose(rng) for _ in range(6)])
    if eye_in_hand:     # G X C = Y
        C = np.linalg.inv(X) @ np.linalg.inv(G) @ Y
    else:               # camera X in the world, board Y on G: X C = G Y
        C = np.linalg.inv(X) @ G @ Y
    Xe, Ye = hand_eye(G, C, eye_in_hand, use_opencv=False)
    assert np.allclose(Xe, X, atol=1e-8) and np.allclose(Ye, Y, atol=1e-8)


def test_hand_eye_needs_rotations_about_two_axes():
    G = np.array([pin.SE3(pin.exp3(np.array([0, 0, a])), np.array([a, 0, 0])).homogeneous
                  for a in (0.1, 0.5, 0.9)])
    with pytest.raises(Exception, match="rotate the mount about two different axes"):
        park_martin(G, np.linalg.inv(G))


def test_pixel_jacobian_matches_finite_differences():
    from figaroh_ros.camera.problem import CameraProblem
    from figaroh_ros.camera.solve import set_mounts, sides
    from figaroh_ros.camera.synthetic import all_features, board_facing
    from figaroh_ros.camera.targets import Board
    from figaroh_ros.model.robot import example_robot_urdf

    pm = pin.buildModelFromUrdf(example_robot_urdf("ur_description/urdf/ur10_robot.urdf"))
    rng = np.random.default_rng(0)
    board = Board("checkerboard", 3, 4, 0.05)
    for setup in ("eye_in_hand", "eye_to_hand"):
        cam, brd = sides(pm, setup, "tool0", None, "full", None)
        p = CameraProblem(cam, brd, intrinsics(), 0.5, True, np.full(9, 2.0))
        set_mounts(p, random_pose(rng, 0.1), random_pose(rng, 0.1))
        Q = rng.uniform(-1, 1, 6) + rng.uniform(-0.05, 0.05, (3, 6))
        views = all_features(p, board, Q)
        x = p.initial() + np.r_[1e-2 * rng.normal(size=p.si.start), np.zeros(9)]
        # the fixed side placed so that the board faces the camera 0.4 m away
        Ta, Tb = p.poses(views, x)
        seen = board_facing(pin.SE3.Identity(), board, 0.4, [0.2, -0.1, 0.0])
        if setup == "eye_in_hand":
            p.board.T0 = pin.SE3(Ta[0]) * seen
        else:
            p.cam.T0 = pin.SE3(Tb[0]) * seen.inverse()
        pc, _ = p.camera_points(views, x)
        front = np.r_[np.repeat(pc[:, 2] > 0.05, 2), np.ones(9, bool)]   # + prior rows
        assert front.sum() > 20
        f, J = p.residuals(views, x)
        h = 1e-7
        for k in range(p.n_params):
            e = np.zeros(p.n_params)
            e[k] = h
            num = (p.residuals(views, x + e, False)[0] - p.residuals(views, x - e, False)[0]) \
                / (2 * h)
            ok = front
            scale = max(1.0, np.abs(num[ok]).max())
            assert np.allclose(J[ok, k], num[ok], atol=2e-4 * scale), p.names[k]


CAMERA = {"setup": "on_chain", "camera_frame": "xtion_rgb_optical_frame",
          "board": {"kind": "checkerboard", "rows": 7, "cols": 10, "square": 0.03},
          "intrinsics": {"width": 640, "height": 480, "fx": 500.0, "fy": 500.0, "cx": 320.0,
                         "cy": 240.0, "dist": [0.0, 0.0, 0.0, 0.0, 0.0]}}


def test_camera_config_section(tmp_path):
    cfg = parse(Camera, CAMERA, str(tmp_path / "c.yaml"))
    assert cfg.board.board().feature_count == 70
    assert cfg.camera_intrinsics().K[0, 0] == 500.0
    with pytest.raises(ConfigError, match="camera_frame"):
        parse(Camera, dict(CAMERA, camera_frame=None), str(tmp_path / "c.yaml"))
    with pytest.raises(ConfigError, match="camera_info"):
        parse(Camera, dict(CAMERA, intrinsics=None), str(tmp_path / "c.yaml"))
    with pytest.raises(ConfigError, match="setup"):
        parse(Camera, dict(CAMERA, setup="on_head"), str(tmp_path / "c.yaml"))
    with pytest.raises(ConfigError, match="rows"):
        parse(Camera, dict(CAMERA, board=dict(CAMERA["board"], rows=1)),
              str(tmp_path / "c.yaml"))
    f = tmp_path / "info.yaml"
    f.write_text(intrinsics().to_camera_info_yaml())
    cfg = parse(Camera, dict(CAMERA, intrinsics=None, camera_info="info.yaml"),
                str(tmp_path / "c.yaml"))
    assert cfg.camera_intrinsics().width == 1280

"""rd.impact: the velocity jump of a frictionless point impact (Handbook sec. 3.3.4).

- A hand-worked two-link case (point masses, elbow at 90 degrees): the
  impulse, qd+ and the effective mass written out below.
- Restitution 1 keeps the kinetic energy, restitution 0 stops the contact
  point along the normal, the tangential velocity of a frictionless contact
  is what the impulse's effective mass says; a separating point gets no
  impulse.
- A free system (the Panda on a floating base): the impulse changes the
  linear momentum by p and the angular momentum about the centre of mass by
  (x - c) x p.
- With loops (the four-bar): qd+ stays on the loops, and matches a KKT solve
  of the impulse equations on the loop's independent rows.
"""
import warnings
from pathlib import Path

import numpy as np
import pytest

import robot_dynamics as rd

ROOT = Path(__file__).resolve().parents[1]
TWO_LINK = str(ROOT / "urdf" / "textbook" / "point_mass_two_link.urdf")
PANDA = str(ROOT / "urdf" / "panda_arm.urdf")
FOUR_BAR = str(ROOT / "urdf" / "examples" / "four_bar.urdf")
FOUR_BAR_LOOPS = str(ROOT / "urdf" / "examples" / "four_bar.loops.yaml")
M1, L1, M2, L2 = 1.9, 0.62, 0.85, 0.37       # the two-link arm's URDF: point masses at the link tips


@pytest.fixture(scope="module")
def two_link():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rd.InertiaWarning)        # point masses: zero inertias, as intended
        return rd.load_urdf(TWO_LINK)


@pytest.fixture(scope="module")
def panda():
    return rd.load_urdf(PANDA)


def kinetic(model, q, qd):
    return 0.5 * qd @ rd.mass_matrix(model, q) @ qd


@pytest.mark.parametrize("e", [0.0, 0.5, 1.0])
def test_two_link_hand_worked_case(two_link, e):
    """q = (0, pi/2): link 1 along x, link 2 straight up (+y), the tip at (l1, l2). The tip moving
    down hits a floor with normal n = +y. Tip Jacobian rows x, y: J = [[-l2, -l2], [l1, 0]], so
    j = n^T J = [l1, 0]. M = [[l2^2 m2 + l1^2 (m1 + m2), l2^2 m2], [l2^2 m2, l2^2 m2]],
    det M = l1^2 l2^2 m2 (m1 + m2), and j M^-1 j^T = 1 / (m1 + m2): the impulse runs along link 2
    through the elbow, which moves with both masses. qd- = (-1, 0): v_tip = (l2, -l1), v_n = -l1.
    p = -(1 + e) v_n (m1 + m2) = (1 + e) l1 (m1 + m2); Delta qd = M^-1 j^T p = (1 + e) (1, -1).
    qd+ = (e, -(1 + e)): v_tip+ = (l2, e l1): the tangential l2 is kept, the normal reversed times e."""
    q, qd = np.array([0.0, np.pi / 2]), np.array([-1.0, 0.0])
    qd_plus, impulse = rd.impact(two_link, q, qd, (0, 1, 0), "tip", (0, 0, 0), e)
    np.testing.assert_allclose(qd_plus, [e, -(1 + e)], atol=1e-12)
    np.testing.assert_allclose(impulse, [0, (1 + e) * L1 * (M1 + M2), 0], atol=1e-12)
    J = rd.jacobian(two_link, q, "tip")[:2]
    np.testing.assert_allclose(J @ qd_plus, [L2, e * L1], atol=1e-12)
    if e == 1.0:
        assert kinetic(two_link, q, qd_plus) == pytest.approx(kinetic(two_link, q, qd), rel=1e-12)


def test_restitution_keeps_or_removes_the_normal_velocity(panda):
    rng = np.random.default_rng(5)
    point = np.array([0.02, -0.01, 0.1])
    for _ in range(5):
        q, qd = rng.uniform(-1.5, 1.5, 7), rng.uniform(-2, 2, 7)
        v = rd.jacobian(panda, q, "panda_link7", point)[:3] @ qd
        n = -v / np.linalg.norm(v) + rng.normal(0, 0.3, 3)       # a surface the point moves into
        n /= np.linalg.norm(n)
        assert n @ v < 0
        plastic, p0 = rd.impact(panda, q, qd, n, "panda_link7", point, 0.0)
        elastic, p1 = rd.impact(panda, q, qd, n, "panda_link7", point, 1.0)
        J = rd.jacobian(panda, q, "panda_link7", point)[:3]
        assert abs(n @ J @ plastic) < 1e-12 * np.linalg.norm(v)
        assert n @ J @ elastic == pytest.approx(-(n @ v), rel=1e-10)
        assert kinetic(panda, q, elastic) == pytest.approx(kinetic(panda, q, qd), rel=1e-12)
        assert kinetic(panda, q, plastic) < kinetic(panda, q, qd)
        np.testing.assert_allclose(p1, 2 * p0, rtol=1e-12)              # Newton: p scales with 1 + e
        assert np.cross(p0, n) == pytest.approx(np.zeros(3), abs=1e-12) and p0 @ n > 0
        # the jump itself: M (qd+ - qd-) = J^T p (Handbook eqs. 3.56, 3.57)
        np.testing.assert_allclose(rd.mass_matrix(panda, q) @ (elastic - qd), J.T @ p1, atol=1e-10)


def test_a_separating_point_gets_no_impulse(panda):
    q, qd = np.full(7, 0.3), np.linspace(-1, 1, 7)
    v = rd.jacobian(panda, q, "panda_link7")[:3] @ qd
    qd_plus, p = rd.impact(panda, q, qd, v, "panda_link7", (0, 0, 0), 0.5)
    np.testing.assert_array_equal(qd_plus, qd)
    np.testing.assert_array_equal(p, 0.0)


def test_momentum_of_a_free_system(panda):
    """The Panda floating free: the impulse p at x changes the linear momentum by p and the
    angular momentum about the centre of mass c by (x - c) x p (c does not move in an impulse)."""
    free = rd.load_urdf(PANDA, root_joint="floating")
    rng = np.random.default_rng(9)
    point = np.array([0.0, 0.03, 0.05])
    for e in (0.0, 1.0):
        q = rd.integrate(free, free.neutral(), rng.uniform(-1, 1, free.nv))
        v = rng.uniform(-1, 1, free.nv)
        x_v = rd.jacobian(free, q, "panda_link5", point)[:3] @ v
        n = -x_v / np.linalg.norm(x_v)
        v_plus, p = rd.impact(free, q, v, n, "panda_link5", point, e)
        T = rd.link_pose(free, q, "panda_link5")
        x = T[:3, :3] @ point + T[:3, 3]
        c = rd.center_of_mass(free, q)
        dh = rd.centroidal_momentum(free, q, v_plus) - rd.centroidal_momentum(free, q, v)
        np.testing.assert_allclose(dh[:3], p, atol=1e-10)
        np.testing.assert_allclose(dh[3:], np.cross(x - c, p), atol=1e-10)
        assert np.linalg.norm(p) > 0.1
        if e == 1.0:
            assert rd.kinetic_energy(free, q, v_plus) == pytest.approx(rd.kinetic_energy(free, q, v), rel=1e-12)


def test_impact_on_a_four_bar_keeps_the_loop():
    """The rocker's tip hit along -x: qd+ stays on the loop (J qd+ = 0) and equals the KKT solve of
    M (qd+ - qd-) = J2^T Lambda + j^T p, J2 qd+ = 0, j qd+ = -e j qd- with the loop's two in-plane
    rows written out (q = theta2, theta3 - theta2, theta4; mechanism in the x-z plane)."""
    model = rd.load_urdf(FOUR_BAR, loops=FOUR_BAR_LOOPS)
    a, b, c = 0.10, 0.30, 0.25
    q = rd.assemble(model, [0.0, 0.9, 1.8], keep=["crank_joint"])
    J = rd.loop_jacobian(model, q)
    K = np.linalg.svd(J)[2][2]
    qd = K * (4.0 / K[0])
    t2, t3, t4 = q[0], q[0] + q[1], q[2]
    J2 = np.array([[a * np.sin(t2) + b * np.sin(t3), b * np.sin(t3), -c * np.sin(t4)],
                   [-a * np.cos(t2) - b * np.cos(t3), -b * np.cos(t3), c * np.cos(t4)]])
    j = np.array([0.0, 0.0, -c * np.sin(t4)])                    # x velocity of the rocker tip: d/dt c cos(theta4)
    n = np.array([-1.0, 0.0, 0.0]) if j @ qd > 0 else np.array([1.0, 0.0, 0.0])
    jn = n[0] * j
    M = rd.mass_matrix(model, q)
    for e in (0.0, 0.7, 1.0):
        qd_plus, p = rd.impact(model, q, qd, n, "rocker", (0.25, 0, 0), e)
        kkt = np.block([[M, J2.T, jn[:, None]], [J2, np.zeros((2, 3))], [jn[None], np.zeros((1, 3))]])
        ref = np.linalg.solve(kkt, np.r_[M @ qd, 0.0, 0.0, -e * (jn @ qd)])
        np.testing.assert_allclose(qd_plus, ref[:3], atol=1e-10)
        assert p @ n == pytest.approx(-ref[5], rel=1e-10)
        np.testing.assert_allclose(J @ qd_plus, 0.0, atol=1e-10)
        if e == 1.0:
            assert kinetic(model, q, qd_plus) == pytest.approx(kinetic(model, q, qd), rel=1e-10)


def test_bad_impact_arguments(panda):
    q = np.zeros(7)
    with pytest.raises(rd.InputError, match="restitution must be in"):
        rd.impact(panda, q, q, (0, 0, 1), "panda_link7", (0, 0, 0), 1.5)
    with pytest.raises(rd.InputError, match="normal must be a non-zero vector"):
        rd.impact(panda, q, q, (0, 0, 0), "panda_link7", (0, 0, 0), 0.5)
    with pytest.raises(rd.InputError, match="unknown link"):
        rd.impact(panda, q, q, (0, 0, 1), "hand", (0, 0, 0), 0.5)
    qd_plus, p = rd.impact(panda, np.zeros((2, 3, 7)), np.ones(7), (0, 0, 1), "panda_link7", (0, 0, 0))
    assert qd_plus.shape == (2, 3, 7) and p.shape == (2, 3, 3)

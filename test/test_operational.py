"""Operational-space / Cartesian dynamics (robot_dynamics.analysis.operational).

- Craig examples 6.6/6.7 (two-link point-mass arm, tip frame): J, M_x,
  V_x, G_x as printed, and V_x re-derived with sympy from the worked
  example's M, V and J by Craig's definition (eq. 6.99).
- Identities on the UR5 (square J), the Panda (redundant, 7 joints) and
  random trees: Lambda^-1 = J M^-1 J^T; the Handbook's unit-force method
  (forward dynamics with a unit force at the point, qd = tau = g = 0)
  gives the same Lambda^-1; the operational-space equation
  Lambda a + mu + rho = F holds for the acceleration that rd.aba produces
  under tau = J^T F; J Jbar = 1 and Jbar is dynamically consistent;
  Jdot qd equals a finite difference of rd.jacobian; quantities rotate as
  tensors between frames; in the base frame Craig's form equals Lambda,
  mu, rho.
- Singularities: SingularityError, or a flag with finite values; never inf.
"""
import warnings
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

import robot_dynamics as rd
from robot_dynamics.analysis.operational import (SingularityError, cartesian_dynamics, dynamically_consistent_inverse,
                                        jacobian_derivative_times_qd, operational_space)
from robot_dynamics.tools.sample import random_urdf

ROOT = Path(__file__).resolve().parents[1]
P = dict(m1=1.9, l1=0.62, m2=0.85, l2=0.37, g=9.81)       # urdf/textbook/point_mass_two_link.urdf


def two_link():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rd.InertiaWarning)
        return rd.load_urdf(str(ROOT / "urdf" / "textbook" / "point_mass_two_link.urdf"), gravity=(0, -9.81, 0))


def ur5():
    return rd.load_urdf(str(ROOT / "urdf" / "ur5.urdf"))


def panda():
    return rd.load_urdf(str(ROOT / "urdf" / "panda_arm.urdf"))


def craig_6_6(q, qd):
    """Craig example 6.6, tip frame {3}: J, M_x, V_x, G_x (s2 != 0)."""
    m1, l1, m2, l2, g = P["m1"], P["l1"], P["m2"], P["l2"], P["g"]
    c1, c2, s2 = np.cos(q[0]), np.cos(q[1]), np.sin(q[1])
    s12, c12 = np.sin(q[0] + q[1]), np.cos(q[0] + q[1])
    t1, t2 = qd
    J = np.array([[l1 * s2, 0.0], [l1 * c2 + l2, l2]])
    Mx = np.array([[m2 + m1 / s2 ** 2, 0.0], [0.0, m2]])
    Vx = np.array([-(m2 * l1 * c2 + m2 * l2) * t1 ** 2 - m2 * l2 * t2 ** 2
                   - (2 * m2 * l2 + m2 * l1 * c2 + m1 * l1 * c2 / s2 ** 2) * t1 * t2,
                   m2 * l1 * s2 * t1 ** 2 + l1 * m2 * s2 * t1 * t2])
    Gx = np.array([m1 * g * c1 / s2 + m2 * g * s12, m2 * g * c12])
    return J, Mx, Vx, Gx


def states(n, seed, lo=0.2):
    """Random two-link states with |sin q2| >= lo (away from the singularity)."""
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        q, qd = rng.uniform(-np.pi, np.pi, 2), rng.uniform(-2, 2, 2)
        if abs(np.sin(q[1])) >= lo:
            out.append((q, qd))
    return out


def test_craig_example_6_6_cartesian_dynamics_in_the_tip_frame():
    model = two_link()
    for q, qd in states(40, 1):
        J, Mx, Vx, Gx = craig_6_6(q, qd)
        os_ = operational_space(model, q, qd, "tip", frame="link", rows=("x", "y"))
        np.testing.assert_allclose(os_.J, J, atol=1e-12)
        np.testing.assert_allclose(os_.Lambda, Mx, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(os_.rho, Gx, rtol=1e-10, atol=1e-10)
        Mx2, Vx2, Gx2 = cartesian_dynamics(model, q, qd, "tip", frame="link", rows=(0, 1))
        np.testing.assert_allclose(Mx2, Mx, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(Vx2, Vx, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(Gx2, Gx, rtol=1e-10, atol=1e-10)


def test_craig_V_x_follows_from_his_definition():
    """V_x = J^-T (V - M J^-1 Jdot qd) (eq. 6.99) with sympy from the worked example's M, V and the
    tip-frame J, Jdot = dJ/dt: equals the printed V_x (the OCR of Craig's text lost most of it)."""
    m1, l1, m2, l2 = sp.symbols("m1 l1 m2 l2", positive=True)
    q1, q2, t1, t2 = sp.symbols("q1 q2 t1 t2")
    c2, s2 = sp.cos(q2), sp.sin(q2)
    M = sp.Matrix([[l2 ** 2 * m2 + 2 * l1 * l2 * m2 * c2 + l1 ** 2 * (m1 + m2), l2 ** 2 * m2 + l1 * l2 * m2 * c2],
                   [l2 ** 2 * m2 + l1 * l2 * m2 * c2, l2 ** 2 * m2]])
    V = sp.Matrix([-m2 * l1 * l2 * s2 * t2 ** 2 - 2 * m2 * l1 * l2 * s2 * t1 * t2, m2 * l1 * l2 * s2 * t1 ** 2])
    J = sp.Matrix([[l1 * s2, 0], [l1 * c2 + l2, l2]])
    Jdot = J.diff(q1) * t1 + J.diff(q2) * t2
    qd = sp.Matrix([t1, t2])
    Vx = J.inv().T * (V - M * J.inv() * Jdot * qd)
    printed = sp.Matrix([-(m2 * l1 * c2 + m2 * l2) * t1 ** 2 - m2 * l2 * t2 ** 2
                         - (2 * m2 * l2 + m2 * l1 * c2 + m1 * l1 * c2 / s2 ** 2) * t1 * t2,
                         m2 * l1 * s2 * t1 ** 2 + l1 * m2 * s2 * t1 * t2])
    assert sp.simplify(Vx - printed) == sp.zeros(2, 1)


def test_cartesian_mass_grows_without_bound_at_the_singularity():
    """M_x11 = m2 + m1 / s2^2 (Craig: 'the effective Cartesian mass ... becomes infinite')."""
    model = two_link()
    q1 = 0.4
    prev = None
    for s in (0.3, 0.1, 0.03, 0.01):
        L = operational_space(model, [q1, np.arcsin(s)], None, "tip", frame="link", rows=(0, 1)).Lambda
        assert L[0, 0] == pytest.approx(P["m2"] + P["m1"] / s ** 2, rel=1e-9)
        assert prev is None or L[0, 0] > 8 * prev
        prev = L[0, 0]


@pytest.mark.parametrize("q2", [0.0, 1e-6, np.pi])
def test_singular_pose_raises_or_flags_never_infinite(q2):
    model = two_link()
    q, qd = np.array([0.3, q2]), np.array([0.5, -0.4])
    with pytest.raises(SingularityError, match=r"cond\(J M\^-1 J\^T\) = .* > max_condition"):
        operational_space(model, q, qd, "tip", frame="link", rows=(0, 1))
    with pytest.raises(SingularityError):
        cartesian_dynamics(model, q, qd, "tip", frame="link", rows=(0, 1))
    flagged = operational_space(model, q, qd, "tip", frame="link", rows=(0, 1), on_singular="flag")
    assert flagged.singular and flagged.condition > 1e8
    for name in ("Lambda", "mu", "rho", "Jbar"):
        assert np.all(np.isfinite(getattr(flagged, name))), name
    # Along the direction the arm can still move (y of the tip frame) Lambda is the true inertia m2.
    assert flagged.Lambda[1, 1] == pytest.approx(P["m2"], rel=1e-6)
    assert not operational_space(model, [0.3, 0.5], None, "tip", frame="link", rows=(0, 1)).singular


def test_max_condition_is_the_documented_threshold():
    model = two_link()
    q = np.array([0.3, 0.02])
    cond = operational_space(model, q, None, "tip", frame="link", rows=(0, 1)).condition
    assert operational_space(model, q, None, "tip", frame="link", rows=(0, 1), max_condition=cond * 1.01).condition == cond
    with pytest.raises(SingularityError):
        operational_space(model, q, None, "tip", frame="link", rows=(0, 1), max_condition=cond * 0.99)


# ---------------------------------------------------------------------------
# Identities
# ---------------------------------------------------------------------------

def _tree(seed):
    with warnings.catch_warnings():
        warnings.simplefilter("error", rd.InertiaWarning)
        return rd.load_urdf(random_urdf(seed, n_links=9, p_fixed=0.1))


CASES = [("ur5", ur5, "tool0", (0.0, 0.0, 0.1), "all"),
         ("panda", panda, "panda_link8", (0.0, 0.0, 0.1), "all"),
         ("panda_linear", panda, "panda_link8", (0.02, 0.0, 0.05), "linear"),
         ("tree5", lambda: _tree(5), "link9", (0.1, -0.2, 0.05), (0, 1, 5))]


def _case(i):
    name, make, link, point, rows = CASES[i]
    model = make()
    if model.nq < (6 if rows == "all" else 3):
        pytest.skip("too few joints")
    return model, link, np.array(point), rows


@pytest.mark.parametrize("i", range(len(CASES)), ids=[c[0] for c in CASES])
def test_lambda_inverse_is_J_Minv_JT_and_unit_force_method_agrees(i):
    """Handbook eq. 3.52 and the unit-force method (sec. 3.5.4, eq. 3.90): with qd = tau = g = 0, a unit
    force e_k at the point gives the task acceleration = column k of Lambda^-1."""
    model, link, point, rows = _case(i)
    model = model.with_gravity((0.0, 0.0, 0.0))
    rng = np.random.default_rng(i)
    for frame in ("base", "link"):
        q = rng.uniform(-1.5, 1.5, model.nq)
        os_ = operational_space(model, q, None, link, point, frame=frame, rows=rows)
        J = os_.J
        Minv = np.linalg.inv(rd.mass_matrix(model, q))
        np.testing.assert_allclose(os_.Lambda_inv, J @ Minv @ J.T, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(os_.Lambda @ os_.Lambda_inv, np.eye(len(J)), atol=1e-8)
        Rl = rd.link_pose(model, q, link)[:3, :3]
        Rf = np.eye(3) if frame == "base" else Rl
        all_rows = {"all": range(6), "linear": range(3)}.get(rows, rows) if isinstance(rows, str) else rows
        cols = []
        for k in all_rows:
            d = Rf[:, k % 3]                                      # unit direction in the base frame
            f = Rl.T @ d if k < 3 else np.zeros(3)               # in the link frame
            n = np.cross(point, f) if k < 3 else Rl.T @ d       # moment about the link origin
            qdd = rd.aba(model, q, np.zeros(model.nq), np.zeros(model.nq), {link: np.concatenate([f, n])})
            cols.append(J @ qdd)                                 # Jdot qd = 0 at rest
        np.testing.assert_allclose(np.array(cols).T, os_.Lambda_inv, rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("i", range(len(CASES)), ids=[c[0] for c in CASES])
def test_operational_space_equation_holds_under_forward_dynamics(i):
    """tau = J^T F -> qdd = aba(q, qd, tau) -> a = J qdd + Jdot qd satisfies Lambda a + mu + rho = F."""
    model, link, point, rows = _case(i)
    rng = np.random.default_rng(20 + i)
    for frame in ("base", "link"):
        q, qd = rng.uniform(-1.5, 1.5, (2, model.nq))
        os_ = operational_space(model, q, qd, link, point, frame=frame, rows=rows)
        F = rng.normal(size=len(os_.J)) * 10
        tau = os_.torques(F)
        np.testing.assert_allclose(tau, os_.J.T @ F)
        a = os_.J @ rd.aba(model, q, qd, tau) + os_.Jdot_qd
        np.testing.assert_allclose(os_.Lambda @ a + os_.mu + os_.rho, F, rtol=1e-8, atol=1e-8 * np.abs(F).max())


@pytest.mark.parametrize("i", range(len(CASES)), ids=[c[0] for c in CASES])
def test_dynamically_consistent_inverse(i):
    model, link, point, rows = _case(i)
    q = np.random.default_rng(30 + i).uniform(-1.5, 1.5, model.nq)
    os_ = operational_space(model, q, None, link, point, rows=rows)
    Jbar = dynamically_consistent_inverse(model, q, link, point, rows=rows)
    np.testing.assert_allclose(Jbar, os_.Jbar)
    J, M = os_.J, rd.mass_matrix(model, q)
    np.testing.assert_allclose(J @ Jbar, np.eye(len(J)), atol=1e-9)
    N = np.eye(model.nq) - Jbar @ J                      # null-space projector
    # Dynamic consistency (Handbook sec. 3.3.4, [3.21]): null-space torques N^T tau0 cause no task acceleration.
    np.testing.assert_allclose(J @ np.linalg.solve(M, N.T), 0.0, atol=1e-9)
    # Jbar is the M-weighted pseudo-inverse: the least-kinetic-energy joint velocity for a task velocity.
    v = np.random.default_rng(1).normal(size=len(J))
    qd_min = Jbar @ v
    other = qd_min + N @ np.random.default_rng(2).normal(size=model.nq)
    np.testing.assert_allclose(J @ other, v, atol=1e-9)
    assert qd_min @ M @ qd_min <= other @ M @ other + 1e-12


def _fd_jdot_qd(model, q, qd, link, point, h=1e-6):
    J = lambda x: rd.jacobian(model, x, link, point)
    return ((J(q + h * qd) - J(q - h * qd)) / (2 * h)) @ qd


@pytest.mark.parametrize("make, link", [(ur5, "tool0"), (panda, "panda_link8"), (lambda: _tree(5), "link9"),
                                        (lambda: _tree(9), "link4"), (two_link, "tip")],
                         ids=["ur5", "panda", "tree5", "tree9", "two_link"])
def test_jdot_qd_is_the_derivative_of_the_jacobian(make, link):
    model = make()
    rng = np.random.default_rng(3)
    for _ in range(5):
        q, qd = rng.uniform(-1.5, 1.5, (2, model.nq))
        point = rng.uniform(-0.2, 0.2, 3)
        got = jacobian_derivative_times_qd(model, q, qd, link, point)
        np.testing.assert_allclose(got, _fd_jdot_qd(model, q, qd, link, point), rtol=1e-6, atol=1e-7)
        R = rd.link_pose(model, q, link)[:3, :3]
        in_link = jacobian_derivative_times_qd(model, q, qd, link, point, frame="link")
        np.testing.assert_allclose(in_link, np.concatenate([R.T @ got[:3], R.T @ got[3:]]), atol=1e-12)
    batch = jacobian_derivative_times_qd(model, np.stack([q, q]), np.stack([qd, -qd]), link, point)
    np.testing.assert_allclose(batch[0], got, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(batch[1], got, rtol=1e-12, atol=1e-14)   # quadratic in qd


def test_frames_rotate_lambda_mu_rho_as_tensors():
    model = ur5()
    q, qd = np.random.default_rng(8).uniform(-1.5, 1.5, (2, 6))
    base = operational_space(model, q, qd, "tool0", (0, 0, 0.1))
    for frame in ("link", "forearm_link"):
        other = operational_space(model, q, qd, "tool0", (0, 0, 0.1), frame=frame)
        R = rd.link_pose(model, q, "tool0" if frame == "link" else frame)[:3, :3]
        X = np.kron(np.eye(2), R)                       # blockdiag(R, R): frame -> base
        np.testing.assert_allclose(other.Lambda, X.T @ base.Lambda @ X, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(other.mu, X.T @ base.mu, rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(other.rho, X.T @ base.rho, rtol=1e-9, atol=1e-9)
        assert other.frame == ("tool0" if frame == "link" else frame)


def test_craig_form_equals_handbook_terms_in_the_base_frame():
    """For a square J in the fixed base frame, M_x = Lambda, V_x = mu, G_x = rho (Jbar^T = J^-T)."""
    model = ur5()
    q, qd = np.random.default_rng(9).uniform(-1.5, 1.5, (2, 6))
    os_ = operational_space(model, q, qd, "tool0")
    Mx, Vx, Gx = cartesian_dynamics(model, q, qd, "tool0")
    np.testing.assert_allclose(Mx, os_.Lambda, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(Vx, os_.mu, rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(Gx, os_.rho, rtol=1e-8, atol=1e-8)


def test_static_wrench_transmission_is_rd_static_torques():
    model = panda()
    q = model.neutral() + 0.3
    F = np.array([1.0, -2.0, 3.0, 0.1, 0.2, -0.3])
    os_ = operational_space(model, q, None, "panda_link8", (0, 0, 0.1))
    np.testing.assert_allclose(os_.torques(F), rd.static_torques(model, q, F, "panda_link8", (0, 0, 0.1)),
                               rtol=1e-12, atol=1e-12)


def test_batch_of_states():
    model = ur5()
    q, qd = np.random.default_rng(10).uniform(-1.5, 1.5, (2, 4, 6))
    batch = operational_space(model, q, qd, "tool0")
    assert batch.Lambda.shape == (4, 6, 6) and batch.mu.shape == (4, 6) and batch.singular.shape == (4,)
    for k in range(4):
        one = operational_space(model, q[k], qd[k], "tool0")
        np.testing.assert_allclose(batch.Lambda[k], one.Lambda, rtol=1e-12)
        np.testing.assert_allclose(batch.mu[k], one.mu, rtol=1e-12, atol=1e-12)


def test_bad_arguments():
    model = two_link()
    q = np.array([0.3, 0.5])
    with pytest.raises(ValueError, match=r"6 task rows .* 2 joints: .* rows=\('x', 'y'\)"):
        operational_space(model, q, None, "tip")
    with pytest.raises(ValueError, match="rows must be"):
        operational_space(model, q, None, "tip", rows="planar")
    with pytest.raises(ValueError, match="distinct indices"):
        operational_space(model, q, None, "tip", rows=(0, 0))
    with pytest.raises(ValueError, match="unknown link 'hand'"):
        operational_space(model, q, None, "hand", rows=(0, 1))
    with pytest.raises(ValueError, match="unknown link 'nowhere'"):
        operational_space(model, q, None, "tip", rows=(0, 1), frame="nowhere")
    with pytest.raises(ValueError, match="on_singular"):
        operational_space(model, q, None, "tip", rows=(0, 1), on_singular="ignore")
    with pytest.raises(ValueError, match="square Jacobian"):
        cartesian_dynamics(model, q, [0.0, 0.0], "tip", rows=(0,))
    with pytest.raises(ValueError, match="must be finite"):
        operational_space(model, [0.3, np.inf], None, "tip", rows=(0, 1))
    with pytest.raises(ValueError, match="F must have 2 values"):
        operational_space(model, q, None, "tip", rows=(0, 1)).torques([1.0, 2.0, 3.0])


def test_craig_example_6_7_cartesian_configuration_space_form():
    """Craig eq. 6.105 for the two-link arm in the tip frame: B_x and C_x are the coefficients of
    J^T V_x = V - M J^-1 Jdot qd (derived here with sympy from the worked example's M, V and J);
    C_x is the joint-space C of worked example 4, B_x gains the m1 l1^2 cot(q2) term."""
    from robot_dynamics.analysis.operational import cartesian_configuration_space_form
    model = two_link()
    m1, l1, m2, l2 = P["m1"], P["l1"], P["m2"], P["l2"]
    for q, qd in states(20, 4):
        s2, c2 = np.sin(q[1]), np.cos(q[1])
        Mx, Bx, Cx, G = cartesian_configuration_space_form(model, q, "tip", frame="link", rows=(0, 1))
        np.testing.assert_allclose(Bx, [[-m1 * l1 ** 2 * c2 / s2 - m2 * l1 * l2 * s2], [m2 * l1 * l2 * s2]],
                                   rtol=1e-9, atol=1e-10)
        np.testing.assert_allclose(Cx, [[0.0, -m2 * l1 * l2 * s2], [m2 * l1 * l2 * s2, 0.0]], rtol=1e-9, atol=1e-10)
        np.testing.assert_allclose(G, rd.gravity_torques(model, q))
        np.testing.assert_allclose(Mx, craig_6_6(q, qd)[1], rtol=1e-10, atol=1e-10)
    # the closed form used above, from Craig's definitions
    m1s, l1s, m2s, l2s = sp.symbols("m1 l1 m2 l2", positive=True)
    q1, q2, t1, t2 = sp.symbols("q1 q2 t1 t2")
    C2, S2 = sp.cos(q2), sp.sin(q2)
    k = m2s * l1s * l2s
    M = sp.Matrix([[l2s ** 2 * m2s + 2 * k * C2 + l1s ** 2 * (m1s + m2s), l2s ** 2 * m2s + k * C2],
                   [l2s ** 2 * m2s + k * C2, l2s ** 2 * m2s]])
    V = sp.Matrix([-k * S2 * t2 ** 2 - 2 * k * S2 * t1 * t2, k * S2 * t1 ** 2])
    J = sp.Matrix([[l1s * S2, 0], [l1s * C2 + l2s, l2s]])
    W = V - M * J.inv() * (J.diff(q1) * t1 + J.diff(q2) * t2) * sp.Matrix([t1, t2])
    Bx = sp.Matrix([-m1s * l1s ** 2 * C2 / S2 - k * S2, k * S2])
    Cx = sp.Matrix([[0, -k * S2], [k * S2, 0]])
    assert sp.simplify(W - Bx * t1 * t2 - Cx * sp.Matrix([t1 ** 2, t2 ** 2])) == sp.zeros(2, 1)


def test_cartesian_configuration_space_form_reproduces_rnea():
    """tau = J^T M_x xdd + B_x [qd qd] + C_x [qd^2] + G with xdd = J qdd + Jdot qd (UR5, base frame)."""
    from robot_dynamics.analysis.config_space import velocity_products
    from robot_dynamics.analysis.operational import cartesian_configuration_space_form
    model = ur5()
    rng = np.random.default_rng(12)
    q, qd, qdd = rng.uniform(-1.5, 1.5, (3, 6))
    Mx, Bx, Cx, G = cartesian_configuration_space_form(model, q, "tool0", (0, 0, 0.1))
    os_ = operational_space(model, q, qd, "tool0", (0, 0, 0.1))
    xdd = os_.J @ qdd + os_.Jdot_qd
    prods, squares = velocity_products(qd)
    tau = os_.J.T @ Mx @ xdd + Bx @ prods + Cx @ squares + G
    np.testing.assert_allclose(tau, rd.rnea(model, q, qd, qdd), rtol=1e-7, atol=1e-7)

"""Configuration-space form tau = M qdd + B [qd qd] + C [qd^2] + G (Craig eq. 6.63).

- Numeric (rd.configuration_space_form) and symbolic (symbolic=True) forms
  against the worked examples: the two-link point-mass arm (Craig 6.7,
  worked-examples.md 4) and the PRR robot (worked-examples.md 7).
- Identities on any robot: M qdd + B [qd qd] + C [qd^2] + G equals rnea;
  B and C equal the Christoffel formulas of worked-examples.md 8 applied
  to finite differences of M; C has a zero diagonal; symbolic and numeric
  agree; batches match single states.
"""
import warnings
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

import robot_dynamics as rd
from robot_dynamics.analysis.config_space import configuration_space_form, velocity_pairs, velocity_products
from robot_dynamics.tools.sample import random_urdf

ROOT = Path(__file__).resolve().parents[1]
TEXTBOOK = ROOT / "urdf" / "textbook"
POINT_MASS = dict(m1=1.9, l1=0.62, m2=0.85, l2=0.37, g=9.81)
PRR = dict(m1=4.2, l1=0.16, m2=1.6, l2=0.47, m3=0.9, l3=0.33, g=9.81, Izz2=0.031, Izz3=0.0089)


def load(name, gravity):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rd.InertiaWarning)
        return rd.load_urdf(str(TEXTBOOK / (name + ".urdf")), gravity=gravity)


def point_mass_BC(q):
    """worked-examples.md 4: B = [-2 m2 l1 l2 s2; 0], C = [[0, -m2 l1 l2 s2], [m2 l1 l2 s2, 0]]."""
    p = POINT_MASS
    k = p["m2"] * p["l1"] * p["l2"] * np.sin(q[1])
    return np.array([[-2 * k], [0.0]]), np.array([[0.0, -k], [k, 0.0]])


def prr_BC(q):
    """worked-examples.md 7: only B23 = -m3 l2 l3 s3; C23 = -m3 l2 l3 s3 / 2, C32 = +m3 l2 l3 s3 / 2."""
    p = PRR
    k = p["m3"] * p["l2"] * p["l3"] * np.sin(q[2])
    B = np.zeros((3, 3))
    B[1, 2] = -k                                   # row 2, column of the pair (2, 3)
    C = np.zeros((3, 3))
    C[1, 2], C[2, 1] = -k / 2, k / 2
    return B, C


CASES = {
    "point_mass_two_link": ((0, -9.81, 0), point_mass_BC),
    "prr_homework": ((0, 0, -9.81), prr_BC),
}


@pytest.mark.parametrize("name", list(CASES))
def test_numeric_B_and_C_match_the_worked_examples(name):
    gravity, closed = CASES[name]
    model = load(name, gravity)
    rng = np.random.default_rng(7)
    for _ in range(30):
        q = rng.uniform(-np.pi, np.pi, model.nq)
        M, B, C, G = configuration_space_form(model, q)
        Bc, Cc = closed(q)
        np.testing.assert_allclose(B, Bc, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(C, Cc, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(M, rd.mass_matrix(model, q), rtol=0, atol=0)
        np.testing.assert_allclose(G, rd.gravity_torques(model, q), rtol=0, atol=0)


def _symbols(name):
    return {
        "point_mass_two_link": {"m1": "link1.mass", "m2": "tip.mass", "l1": ["joint2.x", "link1.com_x"],
                                "l2": "tip_joint.x", "g": "gravity"},
        "prr_homework": {"m1": "link1.mass", "m2": "link2.mass", "l2": ["link2.com_x*0.5", "joint3.x"],
                         "m3": "link3.mass", "l3": ["link3.com_x*0.5", "tool_joint.x"], "Izz2": "link2.izz",
                         "Izz3": "link3.izz", "g": "gravity"},
    }[name]


def test_symbolic_B_and_C_of_the_two_link_arm_are_craigs():
    model = load("point_mass_two_link", (0, -9.81, 0))
    M, B, C, G = configuration_space_form(model, None, symbolic=True, symbols=_symbols("point_mass_two_link"))
    m2, l1, l2 = sp.symbols("m2 l1 l2")
    s2 = sp.sin(sp.Symbol("q2"))
    assert sp.simplify(B - sp.Matrix([[-2 * m2 * l1 * l2 * s2], [0]])) == sp.zeros(2, 1)
    assert sp.simplify(C - sp.Matrix([[0, -m2 * l1 * l2 * s2], [m2 * l1 * l2 * s2, 0]])) == sp.zeros(2, 2)


def test_symbolic_B_and_C_of_the_prr_robot():
    model = load("prr_homework", (0, 0, -9.81))
    M, B, C, G = configuration_space_form(model, None, symbolic=True, symbols=_symbols("prr_homework"))
    m3, l2, l3 = sp.symbols("m3 l2 l3")
    s3 = sp.sin(sp.Symbol("q3"))
    Bc = sp.zeros(3, 3)
    Bc[1, 2] = -m3 * l2 * l3 * s3
    Cc = sp.zeros(3, 3)
    Cc[1, 2], Cc[2, 1] = -m3 * l2 * l3 * s3 / 2, m3 * l2 * l3 * s3 / 2
    assert B.shape == (3, 3) and C.shape == (3, 3)
    assert sp.simplify(B - Bc) == sp.zeros(3, 3)
    assert sp.simplify(C - Cc) == sp.zeros(3, 3)


def _tree(seed, n_links=7, mimic=False):
    with warnings.catch_warnings():
        warnings.simplefilter("error", rd.InertiaWarning)
        return rd.load_urdf(random_urdf(seed, n_links=n_links, mimic=mimic))


MODELS = [("ur5", lambda: rd.load_urdf(str(ROOT / "urdf" / "ur5.urdf"))),
          ("panda", lambda: rd.load_urdf(str(ROOT / "urdf" / "panda_arm.urdf"))),
          ("tree3", lambda: _tree(3)), ("mimic_tree11", lambda: _tree(11, mimic=True))]


@pytest.mark.parametrize("make", [m for _, m in MODELS], ids=[n for n, _ in MODELS])
def test_form_reproduces_rnea(make):
    model = make()
    rng = np.random.default_rng(11)
    q, qd, qdd = rng.uniform(-2, 2, (3, 8, model.nq))
    M, B, C, G = configuration_space_form(model, q)
    n = model.nq
    assert M.shape == (8, n, n) and B.shape == (8, n, n * (n - 1) // 2) and C.shape == (8, n, n)
    prods, squares = velocity_products(qd)
    tau = (np.einsum("bij,bj->bi", M, qdd) + np.einsum("bij,bj->bi", B, prods)
           + np.einsum("bij,bj->bi", C, squares) + G)
    want = rd.rnea(model, q, qd, qdd)
    np.testing.assert_allclose(tau, want, rtol=1e-9, atol=1e-9 * np.max(np.abs(want)))


@pytest.mark.parametrize("make", [m for _, m in MODELS], ids=[n for n, _ in MODELS])
def test_B_and_C_are_the_christoffel_formulas_of_M(make):
    """worked-examples.md 8: C_ij = dM_ij/dq_j - 1/2 dM_jj/dq_i, B_i,jk = dM_ij/dq_k + dM_ik/dq_j - dM_jk/dq_i,
    with dM/dq by central differences (h = 1e-6)."""
    model = make()
    q = np.random.default_rng(2).uniform(-2, 2, model.nq)
    n, h = model.nq, 1e-6
    dM = np.array([(rd.mass_matrix(model, q + h * e) - rd.mass_matrix(model, q - h * e)) / (2 * h)
                   for e in np.eye(n)])                        # dM[k] = dM/dq_k
    _, B, C, _ = configuration_space_form(model, q)
    Cfd = np.array([[dM[j][i, j] - 0.5 * dM[i][j, j] for j in range(n)] for i in range(n)])
    Bfd = np.array([[dM[k][i, j] + dM[j][i, k] - dM[i][j, k] for j, k in velocity_pairs(n)] for i in range(n)])
    scale = max(1.0, np.max(np.abs(dM)))
    np.testing.assert_allclose(C, Cfd, atol=1e-6 * scale)
    np.testing.assert_allclose(B, Bfd, atol=1e-6 * scale)
    if not model.has_mimic:
        # C_ii = 1/2 dM_ii/dq_i = 0: turning a joint does not change the inertia about its own axis
        # (with a mimic joint in its own subtree it can).
        np.testing.assert_allclose(np.diag(C), 0.0, atol=1e-9 * scale)


def test_symbolic_and_numeric_forms_agree():
    model = load("prr_homework", (0, 0, -9.81))
    Ms, Bs, Cs, Gs = configuration_space_form(model, None, symbolic=True)
    q1, q2, q3 = sp.symbols("q1 q2 q3")
    f = sp.lambdify([(q1, q2, q3)], [Ms, Bs, Cs, Gs])
    for q in np.random.default_rng(4).uniform(-2, 2, (10, 3)):
        for got, want in zip(f(q), configuration_space_form(model, q)):
            np.testing.assert_allclose(np.array(got, dtype=float).reshape(np.shape(want)), want,
                                       rtol=1e-9, atol=1e-12)


def test_batch_shapes_and_single_states():
    model = rd.load_urdf(str(ROOT / "urdf" / "ur5.urdf"))
    q = np.random.default_rng(0).uniform(-2, 2, (2, 3, 6))
    M, B, C, G = configuration_space_form(model, q)
    assert M.shape == (2, 3, 6, 6) and B.shape == (2, 3, 6, 15) and C.shape == (2, 3, 6, 6) and G.shape == (2, 3, 6)
    for idx in np.ndindex(2, 3):
        for a, b in zip((M, B, C, G), configuration_space_form(model, q[idx])):
            np.testing.assert_allclose(a[idx], b, rtol=1e-13, atol=1e-13)


def test_velocity_products_order_is_craigs():
    prods, squares = velocity_products([2.0, 3.0, 5.0])
    np.testing.assert_array_equal(prods, [6.0, 10.0, 15.0])        # qd1 qd2, qd1 qd3, qd2 qd3 (Craig 6.64)
    np.testing.assert_array_equal(squares, [4.0, 9.0, 25.0])
    assert velocity_pairs(3) == [(0, 1), (0, 2), (1, 2)]


def test_bad_arguments():
    model = load("prr_homework", (0, 0, -9.81))
    with pytest.raises(ValueError, match="q has 2 values, model nq is 3"):
        configuration_space_form(model, [0.1, 0.2])
    with pytest.raises(ValueError, match="takes q=None"):
        configuration_space_form(model, [0.1, 0.2, 0.3], symbolic=True)
    with pytest.raises(ValueError, match="only with symbolic=True"):
        configuration_space_form(model, [0.1, 0.2, 0.3], symbols={"m": "link1.mass"})
    with pytest.raises(ValueError, match="must be finite"):
        configuration_space_form(model, [0.1, np.nan, 0.3])


def test_package_level_names_are_the_module_functions():
    """The issue's spelling ``rd.configuration_space_form`` and the operational-space helpers."""
    from robot_dynamics.analysis import operational
    assert rd.configuration_space_form is configuration_space_form
    for name in ("operational_space", "cartesian_dynamics", "jacobian_derivative_times_qd",
                 "dynamically_consistent_inverse", "SingularityError"):
        assert getattr(rd, name) is getattr(operational, name)
        assert name in rd.__all__

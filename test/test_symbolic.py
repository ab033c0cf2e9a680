"""Closed-form equations (robot_dynamics.symbolic) against the worked examples and the numeric library.

- Every textbook robot of docs/worked-examples.md sections 1-7 is derived
  with its parameters as symbols (masses, lengths, inertias, g); the
  difference with the closed form of the worked example simplifies to 0
  (sympy.simplify after expand_trig), for tau and, where the example gives
  them, M, V and G.
- The Christoffel route is checked against a literal Euler-Lagrange
  differentiation of L = T - U with q(t) as sympy functions of time.
- The generated numpy code equals rd.rnea / mass_matrix / gravity_torques /
  nonlinear_effects at seeded random states for every textbook robot, the
  UR5 (6 joints) and random trees with mimic joints and skewed axes; with a
  parameter changed it equals the numeric model changed the same way
  (payload added, URDF edited).
- Energies: U equals rd.potential_energy and 1/2 qd^T M qd rd.kinetic_energy.
- The limits and errors: more than max_dof joints, unknown names, values
  that disagree, links fixed to the base, reserved symbol names.
"""
import re
import types
import warnings
import zlib
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

import robot_dynamics as rd
from robot_dynamics import symbolic
from robot_dynamics.tools.sample import random_urdf

ROOT = Path(__file__).resolve().parents[1]
TEXTBOOK = ROOT / "urdf" / "textbook"
S = sp.Symbol


def load(name, gravity):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rd.InertiaWarning)     # rods and point masses
        return rd.load_urdf(str(TEXTBOOK / (name + ".urdf")), gravity=gravity)


def is_zero(expr):
    """True when expr simplifies to 0 (sympy only: expand_trig, expand, simplify)."""
    return sp.simplify(sp.expand(sp.expand_trig(expr))) == 0


def assert_zero(mat, what):
    mat = sp.Matrix(mat)
    bad = [(i, sp.simplify(sp.expand_trig(e))) for i, e in enumerate(mat) if not is_zero(e)]
    assert not bad, "%s differs from the closed form: %s" % (what, bad)


# ---------------------------------------------------------------------------
# Closed forms of docs/worked-examples.md, in sympy, with symbolic parameters
# ---------------------------------------------------------------------------

def _cs(x):
    return sp.cos(x), sp.sin(x)


def one_axis(eq):
    m1, a1, g0 = S("m1"), S("a1"), S("g0")
    (q1,), (qdd1,) = eq.q, eq.qdd
    tau = sp.Matrix([m1 * a1 ** 2 / 3 * qdd1 + g0 * m1 * a1 * sp.cos(q1) / 2])
    return dict(tau=tau), {S("I1"): m1 * a1 ** 2 / 12}


def two_rod(eq):
    m1, a1, m2, a2, g0 = S("m1"), S("a1"), S("m2"), S("a2"), S("g0")
    q1, q2 = eq.q
    qd1, qd2 = eq.qd
    qdd1, qdd2 = eq.qdd
    c1, c2, s2, c12 = sp.cos(q1), sp.cos(q2), sp.sin(q2), sp.cos(q1 + q2)
    tau1 = (((m1 / 3 + m2) * a1 ** 2 + m2 * a1 * a2 * c2 + m2 * a2 ** 2 / 3) * qdd1
            + (m2 * a1 * a2 * c2 / 2 + m2 * a2 ** 2 / 3) * qdd2
            - m2 * a1 * a2 * s2 * (qd1 * qd2 + qd2 ** 2 / 2)
            + g0 * ((m1 / 2 + m2) * a1 * c1 + m2 * a2 * c12 / 2))
    tau2 = ((m2 * a1 * a2 * c2 / 2 + m2 * a2 ** 2 / 3) * qdd1 + m2 * a2 ** 2 * qdd2 / 3
            + m2 * a1 * a2 * s2 * qd1 ** 2 / 2 + g0 * m2 * a2 * c12 / 2)
    return dict(tau=sp.Matrix([tau1, tau2])), {S("I1"): m1 * a1 ** 2 / 12, S("I2"): m2 * a2 ** 2 / 12}


def scara(eq):
    m1, m2, m3, a1, a2, g0 = S("m1"), S("m2"), S("m3"), S("a1"), S("a2"), S("g0")
    q1, q2, q3 = eq.q
    qd1, qd2, qd3 = eq.qd
    qdd1, qdd2, qdd3 = eq.qdd
    c2, s2 = sp.cos(q2), sp.sin(q2)
    tau1 = (((m1 / 3 + m2 + m3) * a1 ** 2 + (m2 + 2 * m3) * a1 * a2 * c2 + (m2 / 3 + m3) * a2 ** 2) * qdd1
            - ((m2 / 2 + m3) * a1 * a2 * c2 + (m2 / 3 + m3) * a2 ** 2) * qdd2
            - a1 * a2 * s2 * ((m2 + 2 * m3) * qd1 * qd2 - (m2 / 2 + m3) * qd2 ** 2))
    tau2 = (-((m2 / 2 + m3) * a1 * a2 * c2 + (m2 / 3 + m3) * a2 ** 2) * qdd1
            + (m2 / 3 + m3) * a2 ** 2 * qdd2 + (m2 / 2 + m3) * a1 * a2 * s2 * qd1 ** 2)
    tau3 = m3 * qdd3 - g0 * m3
    return (dict(tau=sp.Matrix([tau1, tau2, tau3])),
            {S("I1"): m1 * a1 ** 2 / 12, S("I2"): m2 * a2 ** 2 / 12, S("I3"): m3 * S("l3") ** 2 / 12})


def point_mass(eq):
    m1, m2, l1, l2, g = S("m1"), S("m2"), S("l1"), S("l2"), S("g")
    q1, q2 = eq.q
    qd1, qd2 = eq.qd
    c1, c2, s2, c12 = sp.cos(q1), sp.cos(q2), sp.sin(q2), sp.cos(q1 + q2)
    M = sp.Matrix([[l2 ** 2 * m2 + 2 * l1 * l2 * m2 * c2 + l1 ** 2 * (m1 + m2), l2 ** 2 * m2 + l1 * l2 * m2 * c2],
                   [l2 ** 2 * m2 + l1 * l2 * m2 * c2, l2 ** 2 * m2]])
    V = sp.Matrix([-m2 * l1 * l2 * s2 * qd2 ** 2 - 2 * m2 * l1 * l2 * s2 * qd1 * qd2, m2 * l1 * l2 * s2 * qd1 ** 2])
    G = sp.Matrix([m2 * l2 * g * c12 + (m1 + m2) * l1 * g * c1, m2 * l2 * g * c12])
    return dict(M=M, V=V, G=G), {}


def rp_craig(eq):
    m1, l1, m2, g, Izz1, Iyy2 = S("m1"), S("l1"), S("m2"), S("g"), S("Izz1"), S("Iyy2")
    th, d2 = eq.q
    thd, d2d = eq.qd
    M = sp.diag(m1 * l1 ** 2 + Izz1 + Iyy2 + m2 * d2 ** 2, m2)
    V = sp.Matrix([2 * m2 * d2 * thd * d2d, -m2 * d2 * thd ** 2])
    G = sp.Matrix([(m1 * l1 + m2 * d2) * g * sp.cos(th), m2 * g * sp.sin(th)])
    return dict(M=M, V=V, G=G), {}


def rp_homework(eq):
    m1, l1, m2, l2, g, Izz1, Iyy2 = S("m1"), S("l1"), S("m2"), S("l2"), S("g"), S("Izz1"), S("Iyy2")
    th, d2 = eq.q
    thd, d2d = eq.qd
    c1, s1 = sp.cos(th), sp.sin(th)
    M = sp.Matrix([[Izz1 + Iyy2 + m1 * l1 ** 2 / 4 + m2 * (l1 ** 2 + (d2 + l2) ** 2), m2 * l1], [m2 * l1, m2]])
    V = sp.Matrix([2 * m2 * (d2 + l2) * thd * d2d, -m2 * (d2 + l2) * thd ** 2])
    G = sp.Matrix([-g * (m2 * c1 * (d2 + l2) + l1 * s1 * (m1 / 2 + m2)), -g * m2 * s1])
    return dict(M=M, V=V, G=G), {}


def prr(eq):
    m1, m2, m3, l2, l3, g, Izz2, Izz3 = (S(n) for n in ("m1", "m2", "m3", "l2", "l3", "g", "Izz2", "Izz3"))
    _, _, q3 = eq.q
    _, qd2, qd3 = eq.qd
    c3, s3 = sp.cos(q3), sp.sin(q3)
    m22 = Izz2 + Izz3 + m2 * l2 ** 2 / 4 + m3 * (l2 ** 2 + l2 * l3 * c3 + l3 ** 2 / 4)
    m23 = Izz3 + m3 * (l2 * l3 * c3 / 2 + l3 ** 2 / 4)
    m33 = Izz3 + m3 * l3 ** 2 / 4
    M = sp.Matrix([[m1 + m2 + m3, 0, 0], [0, m22, m23], [0, m23, m33]])
    V = sp.Matrix([0, -m3 * l2 * l3 * s3 * qd3 * (qd2 + qd3 / 2), m3 * l2 * l3 * s3 * qd2 ** 2 / 2])
    G = sp.Matrix([(m1 + m2 + m3) * g, 0, 0])
    return dict(M=M, V=V, G=G), {}


# name: (gravity passed to load_urdf, symbols for derive, closed form)
ROBOTS = {
    "one_axis_arm": ((0, -9.81, 0), {
        "m1": "link1.mass", "a1": ["tip_joint.x", "link1.com_x*0.5"], "I1": ["link1.iyy", "link1.izz"],
        "g0": "gravity"}, one_axis),
    "two_rod_planar": ((0, -9.81, 0), {
        "m1": "link1_rod.mass", "a1": ["joint2.x", "link1_rod_joint.x*0.5"], "I1": ["link1_rod.ixx", "link1_rod.iyy"],
        "m2": "link2.mass", "a2": ["tip_joint.x", "link2.com_x*0.5"], "I2": ["link2.iyy", "link2.izz"],
        "g0": "gravity"}, two_rod),
    "scara": ((0, 0, -9.81), {
        "m1": "link1.mass", "m2": "link2.mass", "m3": "link3.mass",
        "a1": ["frame1_joint.x", "link1.com_x*0.5"], "d1": ["frame1_joint.z", "link1.com_z"],
        "a2": ["joint3.x", "link2.com_x*0.5"], "l3": "link3.com_z*-0.5",
        "I1": ["link1.iyy", "link1.izz"], "I2": ["link2.iyy", "link2.izz"], "I3": ["link3.ixx", "link3.iyy"],
        "g0": "gravity"}, scara),
    "point_mass_two_link": ((0, -9.81, 0), {
        "m1": "link1.mass", "m2": "tip.mass", "l1": ["joint2.x", "link1.com_x"], "l2": "tip_joint.x",
        "g": "gravity"}, point_mass),
    "rp_craig_6_5": ((0, -9.81, 0), {
        "m1": "link1.mass", "l1": "link1.com_x", "Ixx1": "link1.ixx", "Iyy1": "link1.iyy", "Izz1": "link1.izz",
        "m2": "link2.mass", "Ixx2": "link2.ixx", "Iyy2": "link2.iyy", "Izz2": "link2.izz",
        "g": "gravity"}, rp_craig),
    "rp_homework": ((-9.81, 0, 0), {
        "m1": "link1.mass", "l1": ["link1.com_x*0.5", "joint2.x"], "Izz1": "link1.izz", "Ixx1": "link1.ixx",
        "Iyy1": "link1.iyy", "m2": "link2_com.mass", "l2": "link2_com_joint.z", "Ixx2": "link2_com.ixx",
        "Iyy2": "link2_com.iyy", "Izz2": "link2_com.izz", "g": "gravity"}, rp_homework),
    "prr_homework": ((0, 0, -9.81), {
        "m1": "link1.mass", "l1": "link1.com_z*-1", "m2": "link2.mass", "l2": ["link2.com_x*0.5", "joint3.x"],
        "m3": "link3.mass", "l3": ["link3.com_x*0.5", "tool_joint.x"], "Izz2": "link2.izz", "Izz3": "link3.izz",
        "g": "gravity"}, prr),
}
EACH = pytest.mark.parametrize("name", list(ROBOTS))


@pytest.fixture(scope="module")
def derived():
    """{(name, with_urdf): (model, Equations)}, derived once."""
    out = {}
    for name, (gravity, symbols, _) in ROBOTS.items():
        model = load(name, gravity)
        out[(name, False)] = (model, symbolic.derive(model, symbols))
        out[(name, True)] = (model, symbolic.derive(model, symbols, urdf=TEXTBOOK / (name + ".urdf")))
    return out


@pytest.mark.parametrize("with_urdf", [False, True], ids=["inertials from the model", "inertials from the URDF"])
@EACH
def test_derived_equations_equal_the_worked_example(derived, name, with_urdf):
    model, eq = derived[(name, with_urdf)]
    parts, rods = ROBOTS[name][2](eq)
    assert set(eq.params) == {S(n) for n in ROBOTS[name][1]}
    if "tau" not in parts:
        parts["tau"] = parts["M"] * sp.Matrix(eq.qdd) + parts["V"] + parts["G"]
    for what, closed in parts.items():
        mine = getattr(eq, what).subs(rods)
        assert mine.shape == closed.shape, what
        assert_zero(mine - closed, "%s of %s" % (what, name))


@EACH
def test_parameter_values_are_the_urdf_numbers(derived, name):
    """eq.params holds each symbol's value; substituting them gives the numeric dynamics."""
    model, eq = derived[(name, False)]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    f = sp.lambdify([eq.q, eq.qd, eq.qdd], eq.tau.subs(eq.params))
    for _ in range(5):
        q, qd, qdd = rng.uniform(-1, 1, (3, model.nq))
        np.testing.assert_allclose(np.ravel(f(q, qd, qdd)), rd.rnea(model, q, qd, qdd), rtol=1e-9, atol=1e-9)


def test_symbols_from_the_urdf_and_from_the_model_agree(derived):
    for name in ROBOTS:
        a, b = derived[(name, False)][1], derived[(name, True)][1]
        assert_zero(a.tau - b.tau, name)


def test_euler_lagrange_by_differentiation_in_time(derived):
    """d/dt dL/dqd - dL/dq with q_i(t) sympy functions equals M qdd + V + G."""
    for name in ("point_mass_two_link", "rp_homework"):
        _, eq = derived[(name, False)]
        t = sp.Symbol("t")
        f = [sp.Function("f%d" % i)(t) for i in range(eq.n)]
        to_t = {eq.q[i]: f[i] for i in range(eq.n)}
        to_t.update({eq.qd[i]: f[i].diff(t) for i in range(eq.n)})
        L = (eq.kinetic_energy - eq.U).subs(to_t, simultaneous=True)
        back = {}
        for i in range(eq.n):
            back[f[i].diff(t, 2)] = eq.qdd[i]
        for i in range(eq.n):
            back[f[i].diff(t)] = eq.qd[i]
        for i in range(eq.n):
            back[f[i]] = eq.q[i]
        for i in range(eq.n):
            el = (L.diff(f[i].diff(t)).diff(t) - L.diff(f[i]))
            for k in sorted(back, key=lambda e: -sp.count_ops(e)):   # second derivatives first
                el = el.subs(k, back[k])
            assert is_zero(el - eq.tau[i]), (name, i)


def test_gravity_is_the_gradient_of_the_potential(derived):
    _, eq = derived[("prr_homework", False)]
    assert_zero(sp.Matrix([eq.U.diff(qk) for qk in eq.q]) - eq.G, "dU/dq - G")


# ---------------------------------------------------------------------------
# Generated code against the numeric library
# ---------------------------------------------------------------------------

def _check_generated(model, eq, n=20, seed=0, rtol=1e-9):
    mod = eq.compile()
    rng = np.random.default_rng(seed)
    q, qd, qdd = rng.uniform(-2.5, 2.5, (3, n, model.nq))
    scale = lambda x: 1e-9 * max(1.0, float(np.max(np.abs(x))))
    for got, want in ((mod.inverse_dynamics(q, qd, qdd), rd.rnea(model, q, qd, qdd)),
                      (mod.mass_matrix(q), rd.mass_matrix(model, q)),
                      (mod.gravity(q), rd.gravity_torques(model, q)),
                      (mod.velocity_terms(q, qd) + mod.gravity(q), rd.nonlinear_effects(model, q, qd))):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=rtol, atol=scale(want))
    # one state in, one state out
    assert mod.inverse_dynamics(q[0], qd[0], qdd[0]).shape == (model.nq,)
    np.testing.assert_allclose(mod.mass_matrix(q[0]), rd.mass_matrix(model, q[0]), rtol=rtol, atol=scale(q))
    return mod


@EACH
def test_generated_code_matches_numeric_dynamics(name):
    model = load(name, ROBOTS[name][0])
    eq = symbolic.derive(model)
    assert eq.params == {}
    _check_generated(model, eq, seed=zlib.crc32(name.encode()))


def test_generated_code_of_a_6_joint_arm(tmp_path):
    """UR5: the 6-joint case the module docstring times (about 5 s)."""
    model = rd.load_urdf(str(ROOT / "urdf" / "ur5.urdf"))
    eq = symbolic.derive(model)
    assert eq.seconds < 300
    mod = _check_generated(model, eq, rtol=1e-8)
    source = tmp_path / "ur5_dynamics.py"
    source.write_text(eq.python())
    ns = {}
    exec(compile(source.read_text(), str(source), "exec"), ns)      # the written file runs on its own
    q = np.linspace(-1, 1, 6)
    np.testing.assert_allclose(ns["gravity"](q), mod.gravity(q), rtol=0, atol=0)
    assert ns["JOINT_NAMES"] == model.joint_names


def test_generated_code_refuses_a_wrong_length_input_with_a_value_error(tmp_path):
    """docs/CLI.md: a wrong-length q raises ValueError naming the argument, in the compiled module and
    in the source written on its own (numpy its only import: nothing from robot_dynamics)."""
    eq = symbolic.derive(load("point_mass_two_link", (0, -9.81, 0)), {"m2": "tip.mass"})
    source = tmp_path / "two_link_dynamics.py"
    source.write_text(eq.python())
    written = {}
    exec(compile(source.read_text(), str(source), "exec"), written)
    assert "robot_dynamics" not in source.read_text().split('"""')[2]         # after the docstring
    for mod in (eq.compile(), types.SimpleNamespace(**written)):
        for call, name, shape in ((lambda: mod.gravity([0.1, 0.2, 0.3]), "q", r"\(3,\)"),
                                  (lambda: mod.mass_matrix(0.5), "q", r"\(\)"),
                                  (lambda: mod.velocity_terms([0.1, 0.2], np.zeros((4, 1))), "qd", r"\(4, 1\)"),
                                  (lambda: mod.inverse_dynamics([0.1], [0, 0], [0, 0], m2=1.0), "q", r"\(1,\)")):
            with pytest.raises(ValueError) as info:
                call()
            assert type(info.value) is ValueError                     # the plain built-in, no NameError
            assert re.fullmatch(r"%s must have 2 values \(one per joint\), got shape %s" % (name, shape),
                                str(info.value)), str(info.value)
        assert mod.gravity([0.1, 0.2]).shape == (2,)


@pytest.mark.parametrize("seed", [4, 8])
def test_generated_code_of_random_trees_with_mimic_joints(seed):
    """Skewed axes, rotated inertial frames, branches, fixed-merged links and a mimic joint."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", rd.InertiaWarning)
        model = rd.load_urdf(random_urdf(seed, n_links=5, mimic=True))
    assert model.has_mimic and model.nq == 3
    _check_generated(model, symbolic.derive(model), seed=seed, rtol=1e-7)


def test_changed_mass_parameter_equals_a_payload():
    """m2 is the tip's mass: the generated code at m2 + 0.5 equals the model with a 0.5 kg payload at the tip."""
    model = load("point_mass_two_link", (0, -9.81, 0))
    eq = symbolic.derive(model, {"m2": "tip.mass"})
    mod = eq.compile()
    heavier = model.with_payload("tip", 0.5)
    rng = np.random.default_rng(3)
    q, qd, qdd = rng.uniform(-2, 2, (3, 10, 2))
    m2 = eq.params[S("m2")]
    assert m2 == pytest.approx(0.85)
    np.testing.assert_allclose(mod.inverse_dynamics(q, qd, qdd, m2=m2 + 0.5), rd.rnea(heavier, q, qd, qdd),
                               rtol=1e-10, atol=1e-10)
    assert not np.allclose(mod.inverse_dynamics(q, qd, qdd), rd.rnea(heavier, q, qd, qdd))


def test_changed_length_parameter_equals_an_edited_urdf():
    """l2 (joint 3's offset and link 2's centre of mass) set to 0.6 equals the URDF edited that way."""
    text = (TEXTBOOK / "prr_homework.urdf").read_text()
    model = rd.load_urdf(text)
    eq = symbolic.derive(model, {"l2": ["joint3.x", "link2.com_x*0.5"]})
    edited = text.replace('<origin xyz="0.47 0 0" rpy="0 0 0"/>', '<origin xyz="0.6 0 0" rpy="0 0 0"/>')
    edited = edited.replace('<origin xyz="0.235 0 0"', '<origin xyz="0.3 0 0"')
    assert edited.count("0.6 0 0") == 1 and edited.count("0.3 0 0") == 1
    other = rd.load_urdf(edited)
    rng = np.random.default_rng(4)
    q, qd, qdd = rng.uniform(-2, 2, (3, 10, 3))
    np.testing.assert_allclose(eq.compile().inverse_dynamics(q, qd, qdd, l2=0.6), rd.rnea(other, q, qd, qdd),
                               rtol=1e-10, atol=1e-10)


def test_links_sharing_a_body_need_the_urdf():
    """Two massive links fixed together: a symbol on one of them needs urdf= to know its own inertial."""
    text = """<robot name="shared">
      <link name="base"/>
      <joint name="j1" type="revolute"><parent link="base"/><child link="arm"/>
        <axis xyz="0 0 1"/><limit effort="10" velocity="1" lower="-3" upper="3"/></joint>
      <link name="arm"><inertial><origin xyz="0.2 0 0"/><mass value="1.5"/>
        <inertia ixx="0.01" iyy="0.02" izz="0.025" ixy="0" ixz="0" iyz="0"/></inertial></link>
      <joint name="fix" type="fixed"><parent link="arm"/><child link="motor"/><origin xyz="0.4 0 0"/></joint>
      <link name="motor"><inertial><mass value="0.7"/>
        <inertia ixx="0.001" iyy="0.001" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial></link>
    </robot>"""
    model = rd.load_urdf(text, gravity=(0, -9.81, 0))
    with pytest.raises(ValueError, match="urdf="):
        symbolic.derive(model, {"mm": "motor.mass"})
    eq = symbolic.derive(model, {"mm": "motor.mass"}, urdf=text)
    q, qd, qdd = np.array([0.4]), np.array([1.3]), np.array([-0.7])
    np.testing.assert_allclose(eq.compile().inverse_dynamics(q, qd, qdd, mm=1.0),
                               rd.rnea(model.with_payload("motor", 0.3), q, qd, qdd), rtol=1e-12)


# ---------------------------------------------------------------------------
# Energies, output formats
# ---------------------------------------------------------------------------

@EACH
def test_energies_match_the_numeric_ones(derived, name):
    model, eq = derived[(name, False)]
    U = sp.lambdify([eq.q], eq.U.subs(eq.params))
    T = sp.lambdify([eq.q, eq.qd], eq.kinetic_energy.subs(eq.params))
    rng = np.random.default_rng(1)
    for _ in range(5):
        q, qd = rng.uniform(-1, 1, (2, model.nq))
        assert U(q) == pytest.approx(rd.potential_energy(model, q), rel=1e-9, abs=1e-9)
        assert T(q, qd) == pytest.approx(rd.kinetic_energy(model, q, qd), rel=1e-9, abs=1e-9)


def _parse_text(eq, text):
    """Read the M, V, G lines of Equations.text() back into sympy (shorthand expanded)."""
    legend = re.search(r"^Shorthand: (.*)$", text, re.M)
    short = {}
    if legend:
        for item in legend.group(1).split(", "):
            k, v = item.split(" = ", 1)
            short[S(k)] = sp.sympify(v, locals={str(s): s for s in eq.q})
    table = {}
    for line in text.splitlines():
        m = re.match(r"^([MVG]\d+)(?: = [MVG]\d+)? = (.*)$", line)
        if m:
            table[m.group(1)] = sp.sympify(m.group(2)).subs(short)
    return table


def test_text_output_reads_back_as_the_equations(derived):
    _, eq = derived[("point_mass_two_link", False)]
    text = eq.text(digits=17)
    assert "c12 = cos(q1 + q2)" in text and "q2 = joint2" in text and "m2 = 0.85" in text
    assert "tau1 = " in text and "tau2 = " in text
    table = _parse_text(eq, text)
    for i in range(2):
        assert is_zero(table["V%d" % (i + 1)] - eq.V[i]) and is_zero(table["G%d" % (i + 1)] - eq.G[i])
        for j in range(i, 2):
            assert is_zero(table["M%d%d" % (i + 1, j + 1)] - eq.M[i, j])


def test_numeric_text_output_rounds_to_the_requested_digits():
    model = load("prr_homework", (0, 0, -9.81))
    eq = symbolic.derive(model)
    text = eq.text(digits=4)
    table = _parse_text(eq, text)
    rng = np.random.default_rng(5)
    for _ in range(5):
        q = rng.uniform(-2, 2, 3)
        subs = dict(zip(eq.q, q))
        M = np.array([[float(table["M%d%d" % (min(i, j) + 1, max(i, j) + 1)].subs(subs)) for j in range(3)]
                      for i in range(3)])
        np.testing.assert_allclose(M, rd.mass_matrix(model, q), rtol=5e-4, atol=1e-4)
    assert "G1 = 65.73" in text                          # (4.2 + 1.6 + 0.9) kg x 9.81 m/s^2


def test_latex_output():
    model = load("two_rod_planar", (0, -9.81, 0))
    eq = symbolic.derive(model, {"m2": "link2.mass", "g0": "gravity"})
    tex = eq.latex()
    assert tex.count(r"\begin{align*}") == 1 and tex.count(r"\end{align*}") == 1
    for needle in (r"\tau_{1} &=", r"\tau_{2} &=", r"\ddot{q}_{1}", r"\dot{q}_{1}", "c_{12}", "m_{2}", "g_{0}",
                   "M_{12} &="):
        assert needle in tex, needle
    body = tex.split(r"\begin{align*}")[1].split(r"\end{align*}")[0]
    assert body.count(r"\\") == 2 + 3 + 2 + 2 - 1          # tau, M (upper triangle), V, G rows
    assert body.count("{") == body.count("}") and body.count(r"\left(") == body.count(r"\right)")


# ---------------------------------------------------------------------------
# Limits and errors
# ---------------------------------------------------------------------------

def test_more_joints_than_max_dof_is_refused_with_the_reason():
    panda = rd.load_urdf(str(ROOT / "urdf" / "panda_arm.urdf"))
    with pytest.raises(ValueError, match=r"limited to 6 joints .* has 7.*max_dof=7"):
        symbolic.derive(panda)
    two = load("point_mass_two_link", (0, -9.81, 0))
    with pytest.raises(ValueError, match="limited to 1 joints"):
        symbolic.derive(two, max_dof=1)


@pytest.mark.parametrize("symbols, message", [
    ({"m9": "link9.mass"}, "unknown link 'link9'"),
    ({"x": "joint9.x"}, "'joint9' is not a joint"),
    ({"m2": "tip.weight"}, "unknown attribute 'weight'"),
    ({"q1": "tip.mass"}, "symbol name 'q1'"),
    ({"c12": "tip.mass"}, "symbol name 'c12'"),
    ({"l1": ["joint2.x", "link1.com_x*0.5"]}, "symbol 'l1' stands for .* the values differ"),
    ({"a": "tip.mass", "b": "tip.mass"}, "named twice"),
    ({"m0": "base_link.mass"}, "fixed to the base"),
    ({"l": "tip.mass*zero"}, "factor must be a number"),
    ({"l": "mass"}, "'element.attribute'"),
])
def test_bad_symbols_raise_value_errors_naming_the_problem(symbols, message):
    model = load("point_mass_two_link", (0, -9.81, 0))
    with pytest.raises(ValueError, match=message):
        symbolic.derive(model, symbols)


def test_urdf_that_is_not_the_models_is_refused():
    model = load("point_mass_two_link", (0, -9.81, 0))
    other = (TEXTBOOK / "point_mass_two_link.urdf").read_text().replace('value="0.85"', 'value="0.95"')
    with pytest.raises(ValueError, match="does not match the numeric one"):
        symbolic.derive(model, {"m2": "tip.mass"}, urdf=other)


def test_exact_conversion_recovers_short_decimals_and_fractions():
    assert symbolic.exact(0.62) == sp.Rational(31, 50)
    assert symbolic.exact(1.7 * 0.43 ** 2 / 12) == sp.Rational(31433, 1200000)
    assert symbolic.exact(0.1 + 0.2) == sp.Rational(3, 10)
    assert symbolic.exact_unit(np.cos(1.57079632679)) == 0
    assert symbolic.exact_unit(-0.9999999999999) == -1
    x = 0.7071067811865476
    assert abs(float(symbolic.exact(x)) - x) <= 1e-12 * x


def test_coriolis_matrix_times_qd_is_V_and_mdot_minus_2c_is_skew(derived):
    for name in ("point_mass_two_link", "prr_homework", "rp_craig_6_5"):
        _, eq = derived[(name, False)]
        C = eq.coriolis_matrix()
        assert_zero(C * sp.Matrix(eq.qd) - eq.V, "C qd - V of " + name)
        Mdot = sum((eq.M.diff(qk) * qdk for qk, qdk in zip(eq.q, eq.qd)), sp.zeros(eq.n, eq.n))
        N = Mdot - 2 * C
        assert_zero(N + N.T, "Mdot - 2C + (Mdot - 2C)^T of " + name)

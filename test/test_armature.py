"""The actuator model (docs/ACTUATORS.md): the rotors' armature in every
algorithm (the declaration that sets it: test_actuators.py).

References: Pinocchio with ``pin_model.armature`` set to the same values (its
convention: the armature on the joints' velocity coordinates; CRBA, ABA,
RNEA and the kinetic energy include it), MuJoCo's ``dof_armature`` (its
``mj_fullM``), and the identities on random trees. With mimic joints
Pinocchio's models have every joint independent: each of its joints gets its
body's armature and, with G the constant map of our velocities to its,
``M = G^T M_pin G`` (as test_pinocchio.py). By hand: Craig's two-link arm
with point masses plus ``diag(rotor_inertia * gear_ratio**2)``. No reference
is built from ``rd.mass_matrix`` itself (issue 33).
"""
import os
import re
import warnings

import numpy as np
import pytest
import sympy

import robot_dynamics as rd
from robot_dynamics import symbolic
from robot_dynamics.simulation import RK4
from robot_dynamics.tools.sample import example_robot_data_dir, random_urdf
from pinocchio_map import pinocchio_q
from reporting import require

if os.environ.get("CI"):            # in CI a missing reference is a failure, not a skip
    import pinocchio as pin  # noqa: E402
else:
    try:
        import pinocchio as pin
    except ImportError:              # pragma: no cover
        pin = None

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir)
URDF = os.path.join(ROOT, "urdf")
ERD = example_robot_data_dir()
ARMS = {"panda_arm": os.path.join(URDF, "panda_arm.urdf"), "ur5": os.path.join(URDF, "ur5.urdf"),
        "erd_panda_mimic": ERD and ERD / "panda_description" / "urdf" / "panda.urdf",
        "erd_xarm7": ERD and ERD / "xarm_description" / "urdf" / "xarm7.urdf",
        "erd_z1": ERD and ERD / "z1_description" / "urdf" / "z1.urdf"}
TOL = 1e-10
BASE_INERTIAL = ('<link name="base"><inertial><origin xyz="0.05 -0.02 0.03" rpy="0.3 0.2 0.1"/><mass value="3.0"/>'
                 '<inertia ixx="0.05" ixy="0" ixz="0" iyy="0.07" iyz="0" izz="0.09"/></inertial></link>')


def close(actual, desired, tol=TOL):
    desired = np.asarray(desired, dtype=float)
    scale = max(float(np.abs(desired).max()) if desired.size else 0.0, 1.0)
    np.testing.assert_allclose(actual, desired, rtol=tol, atol=tol * scale)


def armature_spec(model, seed):
    """A random positive armature on every moving joint, mimic joints included."""
    rng = np.random.default_rng(seed)
    return {name: {"armature": float(rng.uniform(0.05, 0.5))} for name in model.actuators}


def quiet_load(source, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return rd.load_urdf(source, **kw)


def random_tree(seed, root=None, mimic=False):
    text = random_urdf(seed, n_links=4 + seed % 6, mimic=mimic)
    if root is not None:
        text = text.replace('<link name="base"/>', BASE_INERTIAL)
    model = rd.load_urdf(text, root_joint=root)
    return text, model.with_actuators(armature_spec(model, seed))


def random_state(model, rng):
    q = model.neutral()
    q[model.root_nq:] = rng.uniform(-1.5, 1.5, len(model.joint_names))
    if model.root_joint == "floating":
        q[:3] = rng.normal(size=3)
        u = rng.normal(size=4)
        q[3:7] = u / np.linalg.norm(u)
    elif model.root_joint == "planar":
        q[:3] = rng.normal(size=3)
    qd, qdd, tau = rng.uniform(-2, 2, (3, model.nv))
    return q, qd, qdd, tau


class Reference:
    """Pinocchio with the same armature, in our coordinates (fixed, floating or planar root)."""

    def __init__(self, xml, model):
        if model.root_joint is None:
            self.pm = pin.buildModelFromXML(xml)
        else:
            root = pin.JointModelFreeFlyer() if model.root_joint == "floating" else pin.JointModelPlanar()
            self.pm = pin.buildModelFromXML(xml, root)
        self.pd = self.pm.createData()
        self.model, nr = model, model.root_nv
        self.G = np.zeros((self.pm.nv, model.nv))
        self.G[:nr, :nr] = np.eye(nr)
        self.off = np.zeros(self.pm.nv)
        body = {name: b for b, name in enumerate(model.body_joint) if b >= nr}
        armature = np.zeros(self.pm.nv)
        for jid in range(2 if nr else 1, self.pm.njoints):
            b, jm = body[self.pm.names[jid]], self.pm.joints[jid]
            self.G[jm.idx_v, model.body_coordinate[b]] = model.body_multiplier[b]
            self.off[jm.idx_v] = model.body_offset[b]
            armature[jm.idx_v] = model.body_armature[b]
        self.pm.armature = armature
        self.pd = self.pm.createData()
        self.mimic = model.has_mimic

    def q(self, q):
        return pinocchio_q(self.model, self.pm, self.G, self.off, q)

    def mass_matrix(self, q):
        M = np.array(pin.crba(self.pm, self.pd, self.q(q)))
        return self.G.T @ (np.triu(M) + np.triu(M, 1).T) @ self.G

    def rnea(self, q, qd, qdd):
        return self.G.T @ pin.rnea(self.pm, self.pd, self.q(q), self.G @ qd, self.G @ qdd)

    def aba(self, q, qd, tau):
        if not self.mimic:                         # G is a permutation
            return self.G.T @ pin.aba(self.pm, self.pd, self.q(q), self.G @ qd, self.G @ tau)
        h = self.G.T @ pin.nonLinearEffects(self.pm, self.pd, self.q(q), self.G @ qd)
        return np.linalg.solve(self.mass_matrix(q), tau - h)

    def kinetic(self, q, qd):
        """1/2 v^T M v with Pinocchio's M (armature included). Its computeKineticEnergy
        (4.1) adds the armature for RZ, RUBZ, PZ and PrismaticUnaligned joints but
        not for RevoluteUnaligned ones (test_kinetic_energy_is_pinocchios_on_the_panda)."""
        return 0.5 * qd @ self.mass_matrix(q) @ qd


def agree_with_pinocchio(xml, model, seed, n=5):
    assert np.any(model.armature > 0)
    ref = Reference(xml, model)
    rng = np.random.default_rng(seed)
    for _ in range(n):
        q, qd, qdd, tau = random_state(model, rng)
        M = rd.mass_matrix(model, q)
        h = rd.nonlinear_effects(model, q, qd)
        close(M, ref.mass_matrix(q))
        close(rd.rnea(model, q, qd, qdd), ref.rnea(q, qd, qdd))
        close(rd.rnea(model, q, qd, qdd), M @ qdd + h)
        close(rd.aba(model, q, qd, tau), ref.aba(q, qd, tau))          # TOL, 1e-10 (issue 23)
        close(rd.kinetic_energy(model, q, qd), ref.kinetic(q, qd))


# --- against Pinocchio ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(ARMS))
def test_arms_with_armature_agree_with_pinocchio(name):
    require("Pinocchio", pin is not None)
    path = ARMS[name]
    require("example-robot-data", path is not None and os.path.exists(path))
    plain = quiet_load(str(path))
    model = plain.with_actuators(armature_spec(plain, 7))
    with open(path) as fh:
        xml = fh.read()
    agree_with_pinocchio(xml, model, 7)


def test_kinetic_energy_is_pinocchios_on_the_panda():
    """Every Panda joint is a JointModelRZ, for which computeKineticEnergy adds 1/2 armature v^2."""
    require("Pinocchio", pin is not None)
    plain = rd.load_urdf(ARMS["panda_arm"])
    model = plain.with_actuators(armature_spec(plain, 3))
    with open(ARMS["panda_arm"]) as fh:
        ref = Reference(fh.read(), model)
    assert {ref.pm.joints[j].shortname() for j in range(1, ref.pm.njoints)} == {"JointModelRZ"}
    rng = np.random.default_rng(3)
    for _ in range(3):
        q, qd, _, _ = random_state(model, rng)
        close(rd.kinetic_energy(model, q, qd), pin.computeKineticEnergy(ref.pm, ref.pd, ref.q(q), ref.G @ qd))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("root", [None, "floating", "planar"])
def test_random_trees_with_armature_agree_with_pinocchio(seed, root):
    require("Pinocchio", pin is not None)
    xml, model = random_tree(seed, root)
    agree_with_pinocchio(xml, model, seed)


@pytest.mark.parametrize("seed", [3, 7])
def test_random_mimic_trees_with_armature_agree_with_pinocchio(seed):
    require("Pinocchio", pin is not None)
    xml, model = random_tree(seed, mimic=True)
    assert model.has_mimic
    mimic = [n for n, j in model.joints.items() if j.mimic is not None][0]
    assert model.actuators[mimic].armature > 0           # the mimic body has its own rotor
    agree_with_pinocchio(xml, model, seed)


def test_mass_matrix_with_armature_equals_mujocos():
    mujoco = pytest.importorskip("mujoco") if not os.environ.get("CI") else __import__("mujoco")
    text = open(os.path.join(URDF, "panda_arm.urdf")).read()
    text = re.sub(r"<\?xml[^>]*\?>", "", text)
    text = re.sub(r"(<robot[^>]*>)", lambda m: m.group(1) + '<mujoco><compiler discardvisual="true" '
                  'balanceinertia="false" fusestatic="false"/></mujoco>', text, count=1)
    m = mujoco.MjModel.from_xml_string(text)
    plain = rd.load_urdf(os.path.join(URDF, "panda_arm.urdf"))
    model = plain.with_actuators(armature_spec(plain, 2))
    names = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, k) for k in range(m.njnt)]
    order = [names.index(n) for n in model.joint_names]
    m.dof_armature[:] = 0.0
    m.dof_armature[order] = model.armature
    d = mujoco.MjData(m)
    rng = np.random.default_rng(2)
    for _ in range(3):
        q = rng.uniform(-1.5, 1.5, 7)
        d.qpos[order] = q
        mujoco.mj_forward(m, d)
        M = np.zeros((m.nv, m.nv))
        try:
            mujoco.mj_fullM(m, d, M)                     # MuJoCo >= 3.4
        except TypeError:
            mujoco.mj_fullM(m, M, d.qM)                  # older releases
        close(rd.mass_matrix(model, q), M[np.ix_(order, order)], 1e-9)


# --- identities on random trees --------------------------------------------------------------------

@pytest.fixture(params=[(s, r, mimic) for s in range(4) for r in (None, "floating", "planar") for mimic in (False,)]
                + [(3, None, True), (7, None, True)], ids=lambda p: "tree%d-%s%s" % (p[0], p[1], "-mimic" * p[2]))
def tree(request):
    seed, root, mimic = request.param
    return random_tree(seed, root, mimic)[1], np.random.default_rng(100 + seed)


def test_rnea_is_mass_matrix_times_qdd_plus_h_and_aba_inverts_it(tree):
    model, rng = tree
    for _ in range(4):
        q, qd, qdd, _ = random_state(model, rng)
        tau = rd.rnea(model, q, qd, qdd)
        close(tau, rd.mass_matrix(model, q) @ qdd + rd.nonlinear_effects(model, q, qd))
        close(rd.aba(model, q, qd, tau), qdd, 1e-8)


def test_armature_adds_its_diagonal_and_nothing_else(tree):
    model, rng = tree
    plain = model.with_actuators({n: {"armature": 0.0} for n in model.actuators})
    G = model.coupling
    np.testing.assert_allclose(model.armature, np.diag(G.T @ np.diag(model.body_armature) @ G), rtol=1e-15, atol=0)
    assert np.all(model.armature[:model.root_nv] == 0.0) and np.all(model.armature[model.root_nv:] > 0)
    q, qd, qdd, _ = random_state(model, rng)
    close(rd.mass_matrix(model, q) - rd.mass_matrix(plain, q), np.diag(model.armature))
    close(rd.rnea(model, q, qd, qdd) - rd.rnea(plain, q, qd, qdd), model.armature * qdd)
    close(rd.coriolis_matrix(model, q, qd), rd.coriolis_matrix(plain, q, qd))
    close(rd.gravity_torques(model, q), rd.gravity_torques(plain, q))
    close(rd.kinetic_energy(model, q, qd) - rd.kinetic_energy(plain, q, qd), 0.5 * model.armature @ qd ** 2)


def test_two_link_arm_with_geared_rotors_by_hand():
    """Craig's two-link arm with point masses (urdf/textbook/point_mass_two_link.urdf, his eq. 6.60) with
    a geared rotor on each joint: M = M_Craig + diag(rotor_inertia * gear_ratio^2) and
    tau = tau_Craig + that diagonal times qdd; gravity and Coriolis terms unchanged."""
    m1, l1, m2, l2, g = 1.9, 0.62, 0.85, 0.37, 9.81
    plain = quiet_load(os.path.join(URDF, "textbook", "point_mass_two_link.urdf"), gravity=(0.0, -g, 0.0))
    model = plain.with_actuators({"joint1": {"rotor_inertia": 3.0e-5, "gear_ratio": 120.0},
                                  "joint2": {"rotor_inertia": 2.0e-5, "gear_ratio": 80.0}})
    Ia = np.array([3.0e-5 * 120.0 ** 2, 2.0e-5 * 80.0 ** 2])             # 0.432 and 0.128 kg m^2
    np.testing.assert_allclose(model.armature, Ia, rtol=1e-15)
    rng = np.random.default_rng(12)
    for _ in range(3):
        q, qd, qdd = rng.uniform(-2.0, 2.0, (3, 2))
        c1, c2, s2, c12 = np.cos(q[0]), np.cos(q[1]), np.sin(q[1]), np.cos(q[0] + q[1])
        M = np.array([[m2 * l2 ** 2 + 2 * m2 * l1 * l2 * c2 + (m1 + m2) * l1 ** 2, m2 * l2 ** 2 + m2 * l1 * l2 * c2],
                      [m2 * l2 ** 2 + m2 * l1 * l2 * c2, m2 * l2 ** 2]]) + np.diag(Ia)
        h = np.array([-m2 * l1 * l2 * s2 * qd[1] ** 2 - 2 * m2 * l1 * l2 * s2 * qd[0] * qd[1]
                      + m2 * l2 * g * c12 + (m1 + m2) * l1 * g * c1,
                      m2 * l1 * l2 * s2 * qd[0] ** 2 + m2 * l2 * g * c12])
        close(rd.mass_matrix(model, q), M, 1e-12)
        close(rd.rnea(model, q, qd, qdd), M @ qdd + h, 1e-12)
        close(rd.aba(model, q, qd, M @ qdd + h), qdd, 1e-10)
        close(rd.gravity_torques(model, q), rd.gravity_torques(plain, q), 1e-15)


def test_energy_balance_with_armature(tree):
    """dT/dt = qd^T (tau - g) along the motion tau produces (Handbook sec. 3.4), by central differences."""
    model, rng = tree
    q, qd, qdd, _ = random_state(model, rng)
    tau = rd.rnea(model, q, qd, qdd)
    close(rd.kinetic_energy(model, q, qd), 0.5 * qd @ rd.mass_matrix(model, q) @ qd)
    h = 1e-5
    T = []
    for s in (-h, h):                                    # the state at t = s, to second order in s
        qs = rd.integrate(model, q, s * qd + 0.5 * s * s * qdd) if model.root_joint else q + s * qd + 0.5 * s * s * qdd
        T.append(rd.kinetic_energy(model, qs, qd + s * qdd))
    dT = (T[1] - T[0]) / (2 * h)
    power = qd @ (tau - rd.gravity_torques(model, q))
    assert abs(dT - power) <= 1e-6 * max(1.0, abs(power)), (dT, power)


def test_batches_and_the_control_loop_path_take_the_armature(tree):
    model, rng = tree
    states = [random_state(model, rng) for _ in range(3)]
    Q, QD, QDD, TAU = (np.array(x) for x in zip(*states))
    close(rd.rnea(model, Q, QD, QDD), [rd.mass_matrix(model, q) @ a + rd.nonlinear_effects(model, q, v)
                                       for q, v, a in zip(Q, QD, QDD)])
    close(rd.mass_matrix(model, Q), [rd.mass_matrix(model, q) for q in Q])
    close(rd.aba(model, Q, QD, TAU), [np.linalg.solve(rd.mass_matrix(model, q), t - rd.nonlinear_effects(model, q, v))
                                      for q, v, t in zip(Q, QD, TAU)], 1e-8)
    close(rd.kinetic_energy(model, Q, QD), [0.5 * v @ rd.mass_matrix(model, q) @ v for q, v in zip(Q, QD)])
    data, out = rd.Data(model), np.empty(model.nv)
    q, qd, qdd, tau = states[0]
    assert rd.rnea(model, q, qd, qdd, data=data, out=out) is out
    close(out, rd.mass_matrix(model, q) @ qdd + rd.nonlinear_effects(model, q, qd))
    close(rd.aba(model, q, qd, tau, data=data, out=out), rd.aba(model, q, qd, tau), 1e-12)


TREES = [(s, r, False) for s in range(4) for r in (None, "floating", "planar")] + [(3, None, True), (7, None, True)]


@pytest.mark.parametrize("seed, root, mimic", TREES, ids=lambda p: str(p))
def test_derivatives_take_the_armature(seed, root, mimic):
    """dtau/dqdd and the inverse of the mass matrix against Pinocchio's M with the same armature."""
    require("Pinocchio", pin is not None)
    text, model = random_tree(seed, root, mimic)
    q, qd, qdd, tau = random_state(model, np.random.default_rng(100 + seed))
    M = Reference(text, model).mass_matrix(q)                       # Pinocchio, pin_model.armature set
    close(rd.rnea_derivatives(model, q, qd, qdd)[2], M)
    dq, dv, Minv = rd.aba_derivatives(model, q, qd, tau)
    close(Minv, np.linalg.inv(M), 1e-8)
    e = 1e-6                                             # dqdd/dqd by central differences
    num = np.array([(rd.aba(model, q, qd + e * u, tau) - rd.aba(model, q, qd - e * u, tau)) / (2 * e)
                    for u in np.eye(model.nv)]).T
    close(dv, num, 1e-5)


def test_operational_space_inertia_uses_the_armature():
    """Lambda = (J M^-1 J^T)^-1 with Pinocchio's M, its armature set (the Jacobian, which the armature
    does not change, is ours: test_pinocchio.py checks it)."""
    require("Pinocchio", pin is not None)
    path = os.path.join(URDF, "panda_arm.urdf")
    plain = rd.load_urdf(path)
    model = plain.with_actuators(armature_spec(plain, 4))
    q = np.array([0.1, -0.6, 0.2, -2.0, 0.3, 1.4, 0.5])
    J = rd.jacobian(model, q, "panda_link8")
    with open(path) as fh:
        M = Reference(fh.read(), model).mass_matrix(q)
    Lambda = np.linalg.inv(J @ np.linalg.solve(M, J.T))
    os_ = rd.operational_space(model, q, None, "panda_link8")
    close(os_.Lambda, Lambda, 1e-8)
    assert not np.allclose(os_.Lambda, rd.operational_space(plain, q, None, "panda_link8").Lambda, rtol=1e-3)


def test_constrained_dynamics_of_a_loop_take_the_armature():
    """The four-bar: M qdd + h - tau, with Pinocchio's M and h of the tree (its armature set), is a
    constraint force only (in the row space of the loop Jacobian)."""
    require("Pinocchio", pin is not None)
    path = os.path.join(URDF, "examples", "four_bar.urdf")
    loops = os.path.join(URDF, "examples", "four_bar.loops.yaml")
    plain = rd.load_urdf(path, loops=loops)
    model = plain.with_actuators(armature_spec(plain, 5))
    assert model.loops == plain.loops
    q = rd.assemble(model, model.neutral())
    qd, tau = np.zeros(model.nq), np.full(model.nq, 0.3)
    qdd, lam = rd.constrained_forward_dynamics(model, q, qd, tau)
    J = rd.loop_jacobian(model, q)
    N = np.linalg.svd(J)[2][np.linalg.matrix_rank(J):].T            # the loops' free directions
    with open(path) as fh:
        ref = Reference(fh.read(), model)
    r = ref.rnea(q, qd, qdd) - tau                                    # Pinocchio: M qdd + h
    close(N.T @ r, np.zeros(N.shape[1]), 1e-9)                       # constraint forces only
    close(J @ qdd, np.zeros(J.shape[0]), 1e-9)
    assert not np.allclose(qdd, rd.constrained_forward_dynamics(plain, q, qd, tau)[0], rtol=1e-3)


# --- simulator, symbolic, codegen -------------------------------------------------------------------

def test_the_simulator_steps_with_the_armature_and_conserves_energy():
    plain = rd.load_urdf(os.path.join(URDF, "panda_arm.urdf"))
    model = plain.with_actuators(armature_spec(plain, 6))
    q0 = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])
    sim = rd.Simulator(model, dt=1e-3, integrator="rk4", forces=[], constraints=[], q0=q0)
    sim.set_command(np.zeros(7))
    q, qd = sim.state[1:]
    step = RK4().step(lambda t, x, v: rd.aba(model, x, v, np.zeros(7)), 0.0, q, qd, 1e-3)
    sim.step()
    close(sim.state[1], step[0], 1e-12)                  # the compiled step is the library's RK4
    close(sim.state[2], step[1], 1e-12)
    E0 = sim.energy()
    for _ in range(500):
        sim.step()
    assert abs(sim.energy() - E0) < 1e-6 * max(1.0, abs(E0))
    other = rd.Simulator(plain, dt=1e-3, integrator="rk4", forces=[], constraints=[], q0=q0)
    other.set_command(np.zeros(7))
    other.step(501)
    assert np.abs(other.state[1] - sim.state[1]).max() > 1e-3       # the rotors slow the fall


def test_symbolic_equations_hold_the_armature_term():
    text = random_urdf(2, n_links=2, p_fixed=0.0, p_massless=0.0)
    plain = rd.load_urdf(text)
    model = plain.with_actuators({n: {"armature": 0.25 + 0.125 * k} for k, n in enumerate(plain.joint_names)})
    eq = symbolic.derive(model)
    f = eq.compile()
    rng = np.random.default_rng(0)
    q, qd, qdd = rng.uniform(-1, 1, (3, model.nq))
    close(f.mass_matrix(q), rd.mass_matrix(model, q), 1e-9)
    close(f.inverse_dynamics(q, qd, qdd), rd.rnea(model, q, qd, qdd), 1e-9)
    sub = (eq.M - symbolic.derive(plain).M).applyfunc(sympy.simplify)
    assert sub == sympy.diag(sympy.Rational(1, 4), sympy.Rational(3, 8))             # the term I_a qdd, exactly


def test_generated_c_holds_the_armature(tmp_path):
    from robot_dynamics.codegen.compiled import find_compiler
    find_compiler()                                      # the test environment has one (test_codegen.py)
    plain = rd.load_urdf(os.path.join(URDF, "ur5.urdf"))
    model = plain.with_actuators(armature_spec(plain, 8))
    c = rd.compile(model, folder=tmp_path)
    assert c.path != rd.compile(plain, folder=tmp_path).path
    rng = np.random.default_rng(8)
    for _ in range(3):
        q, qd, qdd, tau = random_state(model, rng)
        close(c.rnea(q, qd, qdd), rd.rnea(model, q, qd, qdd))
        close(c.mass_matrix(q), rd.mass_matrix(model, q))
        close(c.aba(q, qd, tau), rd.aba(model, q, qd, tau), 1e-9)




def test_a_servoed_run_with_armature_follows_mujocos():
    """The servoed run of test_simulation_mujoco.py (1 s, RK4 at 1 kHz) with the same armature on both
    engines (MuJoCo's dof_armature): the joint positions agree to its 1e-7 rad."""
    import test_simulation_mujoco as mj                  # skips without MuJoCo (fails in CI)
    mujoco, name = mj.mujoco, "panda_arm.urdf"
    plain = rd.load_urdf(os.path.join(URDF, name))
    model = plain.with_actuators(armature_spec(plain, 9))
    q0, qd0 = np.array(mj.ARMS[name]), np.linspace(0.5, -0.5, model.nq)
    tau = mj.servo(name)
    ours = rd.simulate(model, q0, qd0, duration=1.0, integrator="rk4", tau=tau, forces=[], constraints=[])
    m = mj.load_mujoco(name, "mjINT_RK4")
    qa, va = mj.addresses(m, model)
    m.dof_armature[va] = model.armature
    d = mujoco.MjData(m)
    d.qpos[qa], d.qvel[va] = q0, qd0
    for _ in range(1000):
        u = tau(d.time, d.qpos[qa].copy(), d.qvel[va].copy())
        d.qfrc_applied[va] = np.clip(u, -model.effort_limit, model.effort_limit)
        mujoco.mj_step(m, d)
    assert np.abs(ours.q[-1] - d.qpos[qa]).max() < mj.TOLERANCE
    without = rd.simulate(plain, q0, qd0, duration=1.0, integrator="rk4", tau=tau, forces=[], constraints=[])
    assert np.abs(without.q[-1] - d.qpos[qa]).max() > 100 * mj.TOLERANCE       # the armature matters here

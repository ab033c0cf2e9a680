"""Floating and planar bases: against Pinocchio's free-flyer and planar root
joints on the legged, humanoid and mobile robots of example-robot-data, and
identities on random floating trees.

Conventions (robot_dynamics.model.configuration) are Pinocchio's, except the
planar angle: ours is theta, Pinocchio's (cos theta, sin theta).
"""
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.model import configuration as C
from robot_dynamics.tools.sample import example_robot_data_dir, random_urdf

from reporting import write_lines
from pinocchio_map import mimic_coupling, pinocchio_q
from test_example_robot_data import require

try:
    import pinocchio as pin
except ImportError:                                  # pragma: no cover - CI installs it
    pin = None

ERD = example_robot_data_dir()
FLOATING = ["solo_description/robots/solo12.urdf", "anymal_c_simple_description/urdf/anymal.urdf",
            "go1_description/urdf/go1.urdf", "go2_description/urdf/go2.urdf",
            "hyq_description/robots/hyq_no_sensors.urdf", "talos_data/robots/talos_reduced.urdf",
            "talos_data/robots/talos_full_v2.urdf", "icub_description/robots/icub.urdf",
            "romeo_description/urdf/romeo.urdf", "g1_description/urdf/g1_29dof_rev_1_0.urdf",
            "anymal_b_simple_description/robots/anymal-kinova.urdf", "b1_description/urdf/b1-z1.urdf",
            "bolt_description/robots/bolt.urdf", "a1_description/urdf/a1.urdf"]
PLANAR = ["tiago_description/robots/tiago.urdf", "tiago_description/robots/tiago_no_hand.urdf"]
RTOL = 1e-9
WORST = {}


def close(robot, name, ours, ref, rtol=RTOL):
    ours, ref = np.asarray(ours, dtype=float), np.asarray(ref, dtype=float)
    scale = max(1.0, float(np.max(np.abs(ref)))) if ref.size else 1.0
    err = float(np.max(np.abs(ours - ref))) / scale if ref.size else 0.0
    key = (robot, name)
    WORST[key] = max(WORST.get(key, 0.0), err)
    assert err <= rtol, "%s %s: relative error %.2e > %.0e" % (robot, name, err, rtol)


@pytest.fixture(scope="module", autouse=True)
def _report(request):
    yield
    if WORST:
        worst = sorted(WORST.items(), key=lambda kv: -kv[1])[:8]
        write_lines(request, ["", "floating/planar bases vs Pinocchio: %d robot-quantity pairs, worst relative errors:"
                              % len(WORST)] + ["  %-34s %-30s %.1e" % (r, n, e) for (r, n), e in worst])


class Reference:
    """Pinocchio with a free-flyer or planar root, in our coordinates."""

    def __init__(self, path, model):
        root = pin.JointModelFreeFlyer() if model.root_joint == "floating" else pin.JointModelPlanar()
        self.pm = pin.buildModelFromUrdf(str(path), root)
        self.pd = self.pm.createData()
        self.model = model
        ours = {n: i for i, n in enumerate(model.joint_names)}
        coupling = mimic_coupling(ET.parse(path).getroot())
        nr = model.root_nv
        self.G = np.zeros((self.pm.nv, model.nv))
        self.G[:nr, :nr] = np.eye(nr)
        self.off = np.zeros(self.pm.nv)
        for jid in range(2, self.pm.njoints):
            name, jm = self.pm.names[jid], self.pm.joints[jid]
            src, mul, off = coupling.get(name, (name, 1.0, 0.0))
            self.G[jm.idx_v, nr + ours[src]] = mul
            self.off[jm.idx_v] = off

    def q(self, q):
        return pinocchio_q(self.model, self.pm, self.G, self.off, q)

    def sym(self, M):
        return np.triu(M) + np.triu(M, 1).T


def random_state(model, rng):
    n = len(model.joint_names)
    lo = np.where(np.isfinite(model.lower_limit), model.lower_limit, -np.pi)
    hi = np.where(np.isfinite(model.upper_limit), model.upper_limit, np.pi)
    q = model.neutral()
    q[model.root_nq:] = rng.uniform(lo, hi, n)
    if model.root_joint == "floating":
        q[:3] = rng.normal(size=3)
        u = rng.normal(size=4)
        q[3:7] = u / np.linalg.norm(u)
    else:
        q[:3] = rng.normal(size=3)
    v, a, tau = rng.uniform(-2, 2, size=(3, model.nv))
    return q, v, a, tau


def robot_path(rel):
    require("example-robot-data", ERD)
    path = ERD / rel
    require(rel, path.exists())
    require("Pinocchio", pin is not None)
    return path


def robot_pair(rel):
    """(our model, its Pinocchio Reference, 'floating' or 'planar') of an example-robot-data robot."""
    path = robot_path(rel)
    kind = "planar" if rel in PLANAR else "floating"
    with _quiet():
        model = rd.load_urdf(str(path), root_joint=kind)
    return model, Reference(path, model), kind


@pytest.mark.parametrize("rel", FLOATING + PLANAR)
def test_agrees_with_pinocchio(rel):
    model, ref, kind = robot_pair(rel)
    pm, pd, G = ref.pm, ref.pd, ref.G
    assert (model.nq, model.nv) == ((pm.nv + 1, pm.nv) if kind == "floating" else (pm.nv, pm.nv)) or ref.G.shape[1] < pm.nv
    rng = np.random.default_rng(sum(map(ord, rel)))
    robot = rel.split("/")[-1]
    body = pin.FrameType.BODY
    leaf = [l for l in model.link_names if pm.existFrame(l, body)][-1]
    states = [random_state(model, rng) for _ in range(4)]
    for q, v, a, tau in states[:2]:
        qp = ref.q(q)
        close(robot, "rnea", rd.rnea(model, q, v, a), G.T @ pin.rnea(pm, pd, qp, G @ v, G @ a))
        close(robot, "gravity_torques", rd.gravity_torques(model, q),
              G.T @ pin.computeGeneralizedGravity(pm, pd, qp))
        close(robot, "nonlinear_effects", rd.nonlinear_effects(model, q, v),
              G.T @ pin.nonLinearEffects(pm, pd, qp, G @ v))
        M = G.T @ ref.sym(pin.crba(pm, pd, qp)) @ G
        close(robot, "mass_matrix", rd.mass_matrix(model, q), M)
        h = G.T @ pin.nonLinearEffects(pm, pd, qp, G @ v)
        if singular(M):                            # a moving joint that carries nothing (Romeo's)
            with pytest.raises(rd.SingularityError, match="carries no mass or inertia"):
                rd.aba(model, q, v, tau)
        else:
            close(robot, "aba", rd.aba(model, q, v, tau), np.linalg.solve(M, tau - h))
        pin.forwardKinematics(pm, pd, qp)
        pin.updateFramePlacements(pm, pd)
        fk = rd.forward_kinematics(model, q)
        for name in model.link_names:
            if pm.existFrame(name, body):
                close(robot, "forward_kinematics", fk[name], pd.oMf[pm.getFrameId(name, body)].homogeneous)
        J = pin.computeFrameJacobian(pm, pd, qp, pm.getFrameId(leaf, body), pin.LOCAL_WORLD_ALIGNED) @ G
        close(robot, "jacobian", rd.jacobian(model, q, leaf), J)
        close(robot, "center_of_mass", rd.center_of_mass(model, q), pin.centerOfMass(pm, pd, qp))
        close(robot, "com_jacobian", rd.com_jacobian(model, q), pin.jacobianCenterOfMass(pm, pd, qp) @ G)
        close(robot, "centroidal_momentum_matrix", rd.centroidal_momentum_matrix(model, q),
              pin.computeCentroidalMap(pm, pd, qp) @ G)
        close(robot, "coriolis_matrix", rd.coriolis_matrix(model, q, v),
              G.T @ pin.computeCoriolisMatrix(pm, pd, qp, G @ v) @ G)
        close(robot, "kinetic_energy", rd.kinetic_energy(model, q, v), pin.computeKineticEnergy(pm, pd, qp, G @ v))
        operational_terms_agree(robot, model, ref, q, v, leaf, J, M, h)
        close(robot, "potential_energy", rd.potential_energy(model, q), pin.computePotentialEnergy(pm, pd, qp))
    Q, V, A, T = (np.array(x) for x in zip(*states))
    close(robot, "rnea (batch)", rd.rnea(model, Q, V, A), [rd.rnea(model, *s[:3]) for s in states])
    close(robot, "mass_matrix (batch)", rd.mass_matrix(model, Q), [rd.mass_matrix(model, s[0]) for s in states])
    if not singular(rd.mass_matrix(model, Q[0])):
        close(robot, "aba (batch)", rd.aba(model, Q, V, T), [rd.aba(model, s[0], s[1], s[3]) for s in states])
    close(robot, "centroidal_momentum_matrix (batch)", rd.centroidal_momentum_matrix(model, Q),
          [pin.computeCentroidalMap(pm, pd, ref.q(s[0])) @ G for s in states])
    close(robot, "jacobian (batch)", rd.jacobian(model, Q, leaf), [rd.jacobian(model, s[0], leaf) for s in states])


@pytest.mark.parametrize("rel", FLOATING + PLANAR)
def test_derivatives_agree_with_pinocchio(rel):
    """rnea_derivatives and aba_derivatives in the tangent space (the root moved by a base-frame
    twist, as integrate does) against Pinocchio's computeRNEADerivatives / computeABADerivatives."""
    model, ref, _ = robot_pair(rel)
    pm, pd, G = ref.pm, ref.pd, ref.G
    robot = rel.split("/")[-1]
    rng = np.random.default_rng(sum(map(ord, rel)) + 1)
    permutation = G.shape == (pm.nv, model.nv) and np.array_equal(np.sort(np.abs(G).sum(axis=0)), np.ones(model.nv))
    for _ in range(2):
        q, v, a, tau = random_state(model, rng)
        qp = ref.q(q)
        dq, dv, M = (np.array(x) for x in pin.computeRNEADerivatives(pm, pd, qp, G @ v, G @ a))
        ours = rd.rnea_derivatives(model, q, v, a)
        close(robot, "rnea_derivatives dq", ours[0], G.T @ dq @ G)
        close(robot, "rnea_derivatives dv", ours[1], G.T @ dv @ G)
        close(robot, "rnea_derivatives M", ours[2], G.T @ ref.sym(M) @ G)
        Mr = G.T @ ref.sym(M) @ G
        if singular(Mr):
            with pytest.raises(rd.SingularityError, match="carries no mass or inertia"):
                rd.aba_derivatives(model, q, v, tau)
            continue
        dqdd = rd.aba_derivatives(model, q, v, tau)
        # Through M^-1 two libraries' rounding differs by up to about eps cond(M): iCub's M has
        # cond 5e8 to 9e8 (gram-scale links on a 30 kg robot), so 1e-9 holds only where cond(M) < 4e6.
        rtol = max(RTOL, np.finfo(float).eps * np.linalg.cond(Mr))
        if permutation and pm.nv == model.nv:
            dq, dv, Minv = (np.array(x) for x in pin.computeABADerivatives(pm, pd, qp, G @ v, G @ tau))
            close(robot, "aba_derivatives dq", dqdd[0], G.T @ dq @ G, rtol)
            close(robot, "aba_derivatives dv", dqdd[1], G.T @ dv @ G, rtol)
            close(robot, "aba_derivatives Minv", dqdd[2], G.T @ ref.sym(Minv) @ G, rtol)
        else:                     # mimic joints: the coupled system, from Pinocchio's RNEA derivatives at its qdd
            qdd = rd.aba(model, q, v, tau)
            dq, dv, _ = (np.array(x) for x in pin.computeRNEADerivatives(pm, pd, qp, G @ v, G @ qdd))
            Minv = np.linalg.inv(Mr)
            close(robot, "aba_derivatives dq", dqdd[0], -Minv @ G.T @ dq @ G, rtol)
            close(robot, "aba_derivatives dv", dqdd[1], -Minv @ G.T @ dv @ G, rtol)
            close(robot, "aba_derivatives Minv", dqdd[2], Minv, rtol)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("kind", ["floating", "planar"])
def test_derivatives_on_random_floating_trees(seed, kind):
    """Against central differences along the tangent space (integrate), with and without an external
    wrench; the identities of the derivatives; batches equal single states."""
    model = _floating_tree(seed, kind)
    rng = np.random.default_rng(10 + seed)
    q, v, a, tau = random_state(model, rng)
    link = model.link_names[-1]
    f_ext = {link: rng.normal(size=6)}
    h, E = 1e-6, np.eye(model.nv)

    def central(f):                              # columns: d f / d (q, along the tangent e_k)
        return np.array([(f(rd.integrate(model, q, h * e)) - f(rd.integrate(model, q, -h * e))) / (2 * h)
                         for e in E]).T

    def central_v(f):
        return np.array([(f(v + h * e) - f(v - h * e)) / (2 * h) for e in E]).T

    for wrench in (None, f_ext):
        dq, dv, M = rd.rnea_derivatives(model, q, v, a, wrench)
        scale = max(1.0, np.abs(dq).max(), np.abs(dv).max())
        np.testing.assert_allclose(dq, central(lambda x: rd.rnea(model, x, v, a, wrench)), atol=1e-6 * scale)
        np.testing.assert_allclose(dv, central_v(lambda y: rd.rnea(model, q, y, a, wrench)), atol=1e-6 * scale)
        np.testing.assert_allclose(M, rd.mass_matrix(model, q), rtol=1e-12, atol=1e-12)
        Aq, Av, Minv = rd.aba_derivatives(model, q, v, tau, wrench)
        scale = max(1.0, np.abs(Aq).max(), np.abs(Av).max())
        np.testing.assert_allclose(Aq, central(lambda x: rd.aba(model, x, v, tau, wrench)), atol=1e-5 * scale)
        np.testing.assert_allclose(Av, central_v(lambda y: rd.aba(model, q, y, tau, wrench)), atol=1e-5 * scale)
        # dqdd/dtau = M^-1 and dqdd/dq = -M^-1 dtau/dq at qdd = aba (Carpentier and Mansard, sec. IV)
        np.testing.assert_allclose(Minv, np.linalg.inv(M), rtol=1e-9, atol=1e-12)
        dq_at, dv_at, _ = rd.rnea_derivatives(model, q, v, rd.aba(model, q, v, tau, wrench), wrench)
        np.testing.assert_allclose(Aq, -Minv @ dq_at, rtol=1e-9, atol=1e-9 * scale)
        np.testing.assert_allclose(Av, -Minv @ dv_at, rtol=1e-9, atol=1e-9 * scale)
    zero = np.zeros(model.nv)
    assert np.abs(rd.rnea_derivatives(model, q, zero, a)[1]).max() < 1e-12       # dtau/dv is zero at v = 0
    np.testing.assert_array_equal(rd.gravity_derivatives(model, q), rd.rnea_derivatives(model, q, zero, zero)[0])
    dc_dq, dc_dv = rd.coriolis_derivatives(model, q, v)
    # one pass without gravity equals the two with it: dc/dq = dtau/dq (a = 0) - dg/dq, dc/dv = dtau/dv (a = 0)
    np.testing.assert_allclose(dc_dq, rd.rnea_derivatives(model, q, v, zero)[0] - rd.gravity_derivatives(model, q),
                               rtol=1e-10, atol=1e-10 * max(1.0, np.abs(dc_dq).max()))
    np.testing.assert_allclose(dc_dv, rd.rnea_derivatives(model, q, v, zero)[1], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dc_dq, central(lambda x: rd.nonlinear_effects(model, x, v) - rd.gravity_torques(model, x)),
                               atol=1e-6 * max(1.0, np.abs(dc_dq).max()))
    np.testing.assert_allclose(dc_dv @ v, 2 * (rd.nonlinear_effects(model, q, v) - rd.gravity_torques(model, q)),
                               rtol=1e-9, atol=1e-9)
    # a translation of the base changes nothing; batches equal their single states
    assert np.abs(rd.rnea_derivatives(model, q, v, a)[0][:, :model.root_nv - (3 if kind == "floating" else 1)]).max() == 0
    states = [random_state(model, rng) for _ in range(3)]
    Q, V, A, T = (np.array(x) for x in zip(*states))
    for got, one in ((rd.rnea_derivatives(model, Q, V, A), lambda s: rd.rnea_derivatives(model, *s[:3])),
                     (rd.aba_derivatives(model, Q, V, T), lambda s: rd.aba_derivatives(model, s[0], s[1], s[3]))):
        for k in range(3):
            np.testing.assert_allclose(got[k], [one(s)[k] for s in states], rtol=1e-12, atol=1e-12)


def test_derivative_of_a_free_body_held_against_gravity_by_hand():
    """One free body (mass m, centre of mass c in its frame), at rest: the wrench that holds it is
    I a_0 with the base acceleration a_0 = (-g_b, 0), g_b = R^T g, so tau = (-m g_b, -m c x g_b).
    A base rotation delta turns g_b into g_b + g_b x delta, hence
    dtau/d(delta) = (-m [g_b x], -m [c x] [g_b x]); a translation changes nothing."""
    m, c = 2.5, np.array([0.1, -0.05, 0.2])
    model = rd.load_urdf('<robot name="b"><link name="base"><inertial><origin xyz="%g %g %g"/><mass value="%g"/>'
                         '<inertia ixx="0.1" ixy="0" ixz="0" iyy="0.2" iyz="0" izz="0.3"/></inertial></link></robot>'
                         % (*c, m), root_joint="floating")
    quat = np.array([0.3, -0.2, 0.5, 0.8]) / np.linalg.norm([0.3, -0.2, 0.5, 0.8])
    q = np.r_[1.0, 2.0, 3.0, quat]
    gb = C.quaternion_matrix(quat).T @ model.gravity

    def skew(w):
        return np.array([[0, -w[2], w[1]], [w[2], 0, -w[0]], [-w[1], w[0], 0]])

    np.testing.assert_allclose(rd.gravity_torques(model, q), np.r_[-m * gb, -m * np.cross(c, gb)], rtol=1e-12)
    dq = rd.rnea_derivatives(model, q, np.zeros(6), np.zeros(6))[0]
    expected = np.zeros((6, 6))
    expected[:3, 3:] = -m * skew(gb)
    expected[3:, 3:] = -m * skew(c) @ skew(gb)
    np.testing.assert_allclose(dq, expected, rtol=1e-12, atol=1e-12)


def operational_terms_agree(robot, model, ref, q, v, leaf, J, M, h):
    """Jdot v against Pinocchio's classical acceleration at a = 0 (world-aligned);
    Lambda, mu, rho (Handbook eqs. 3.52-3.54) from Pinocchio's J, M, h and g."""
    pm, pd, G = ref.pm, ref.pd, ref.G
    fid = pm.getFrameId(leaf, pin.FrameType.BODY)
    pin.forwardKinematics(pm, pd, ref.q(q), G @ v, np.zeros(pm.nv))
    acc = pin.getFrameClassicalAcceleration(pm, pd, fid, pin.LOCAL_WORLD_ALIGNED).vector
    close(robot, "jacobian_derivative_times_qd", rd.jacobian_derivative_times_qd(model, q, v, leaf), acc)
    if singular(M):
        return
    rows = [0, 1, 2, 3, 4, 5] if model.root_joint == "floating" else [0, 1, 5]   # what the base alone can move
    os_ = rd.operational_space(model, q, v, leaf, rows=rows, max_condition=1e12)
    g = G.T @ pin.computeGeneralizedGravity(pm, pd, ref.q(q))
    J, acc = J[rows], acc[rows]
    Lambda = np.linalg.inv(J @ np.linalg.solve(M, J.T))
    Jbar = np.linalg.solve(M, J.T) @ Lambda
    scale = max(1.0, np.abs(Lambda).max())
    close(robot, "operational Lambda", os_.Lambda / scale, Lambda / scale)
    close(robot, "operational mu", os_.mu, Jbar.T @ (h - g) - Lambda @ acc)
    close(robot, "operational rho", os_.rho, Jbar.T @ g)


def singular(M):
    return not np.all(np.diag(M) > 0)


class _quiet:
    def __enter__(self):
        import warnings
        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("ignore")

    def __exit__(self, *exc):
        self._w.__exit__(*exc)


@pytest.mark.parametrize("kind", ["floating", "planar"])
def test_integrate_and_difference_are_pinocchios(kind):
    require("Pinocchio", pin is not None)
    model = rd.load_urdf("urdf/panda_arm.urdf", root_joint=kind)
    pm = pin.buildModelFromUrdf("urdf/panda_arm.urdf",
                                pin.JointModelFreeFlyer() if kind == "floating" else pin.JointModelPlanar())
    ref = Reference("urdf/panda_arm.urdf", model)
    rng = np.random.default_rng(3)
    for scale in (1e-9, 0.3, 3.0):
        q0, v, _, _ = random_state(model, rng)
        v *= scale
        q1 = rd.integrate(model, q0, v, 0.5)
        q1p = pin.integrate(pm, ref.q(q0), 0.5 * v)
        np.testing.assert_allclose(ref.q(q1), q1p, atol=1e-12, err_msg="scale %g" % scale)
        assert abs(np.linalg.norm(q1[3:7]) - 1) < 1e-14 if kind == "floating" else True
        q2, _, _, _ = random_state(model, rng)
        d = rd.difference(model, q0, q2)
        np.testing.assert_allclose(d, pin.difference(pm, ref.q(q0), ref.q(q2)), atol=1e-10)
        back = rd.integrate(model, q0, d)
        if kind == "floating" and back[3:7] @ q2[3:7] < 0:      # q and -q: the same rotation
            back[3:7] *= -1
        np.testing.assert_allclose(back, q2, atol=1e-10)


BASE_INERTIAL = ('<link name="base"><inertial><origin xyz="0.05 -0.02 0.03" rpy="0.3 0.2 0.1"/><mass value="3.0"/>'
                 '<inertia ixx="0.05" ixy="0" ixz="0" iyy="0.07" iyz="0" izz="0.09"/></inertial></link>')


def _floating_tree(seed, kind="floating"):
    """A random tree whose base carries mass (a massless floating base with a
    moving joint at its root has a singular mass matrix, here and in Pinocchio)."""
    text = random_urdf(seed, n_links=4 + seed % 7).replace('<link name="base"/>', BASE_INERTIAL)
    return rd.load_urdf(text, root_joint=kind)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("kind", ["floating", "planar"])
def test_identities_on_random_floating_trees(seed, kind):
    model = _floating_tree(seed, kind)
    rng = np.random.default_rng(seed)
    q, v, a, tau = random_state(model, rng)
    M = rd.mass_matrix(model, q)
    np.testing.assert_allclose(M, M.T, atol=1e-12)
    assert np.linalg.eigvalsh(M).min() > 0
    np.testing.assert_allclose(rd.aba(model, q, v, rd.rnea(model, q, v, a)), a, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(rd.rnea(model, q, v, a),
                               M @ a + rd.nonlinear_effects(model, q, v), rtol=1e-10, atol=1e-10)
    # Coriolis matrix: C v = h - g and dM/dt - 2 C skew (dM/dt along integrate).
    Cm = rd.coriolis_matrix(model, q, v)
    np.testing.assert_allclose(Cm @ v, rd.nonlinear_effects(model, q, v) - rd.gravity_torques(model, q),
                               rtol=1e-10, atol=1e-10)
    h = 1e-6
    Mdot = (rd.mass_matrix(model, rd.integrate(model, q, v, h)) - rd.mass_matrix(model, rd.integrate(model, q, v, -h))) / (2 * h)
    N = Mdot - 2 * Cm
    np.testing.assert_allclose(N + N.T, 0, atol=1e-6 * max(1.0, np.abs(Mdot).max()))
    # External wrenches: rnea(f_ext) == rnea - J^T F (F in the world frame at the link origin).
    link = model.link_names[-1]
    w = rng.normal(size=6)
    R = rd.link_pose(model, q, link)[:3, :3]
    F = np.r_[R @ w[:3], R @ w[3:]]
    np.testing.assert_allclose(rd.rnea(model, q, v, a, {link: w}),
                               rd.rnea(model, q, v, a) - rd.jacobian(model, q, link).T @ F, rtol=1e-10, atol=1e-10)
    # Kinetic energy and momentum from M; A_G v is the momentum; integrate(difference) round trip.
    np.testing.assert_allclose(rd.kinetic_energy(model, q, v), 0.5 * v @ M @ v, rtol=1e-12)
    q1, _, _, _ = random_state(model, rng)
    np.testing.assert_allclose(C.base_pose(model, rd.integrate(model, q, rd.difference(model, q, q1)))[0],
                               C.base_pose(model, q1)[0], atol=1e-10)
    # The centre of mass moves with J_com v; finite difference along integrate.
    eps = 1e-6
    dc = (rd.center_of_mass(model, rd.integrate(model, q, v, eps))
          - rd.center_of_mass(model, rd.integrate(model, q, v, -eps))) / (2 * eps)
    np.testing.assert_allclose(rd.com_jacobian(model, q) @ v, dc, rtol=1e-6, atol=1e-7)
    # Operational space: a wrench F at a point, applied as tau = J^T F (base rows included), gives the
    # point the acceleration a = J qdd + Jdot v with Lambda a + mu + rho = F (Handbook eq. 3.51-3.54).
    x = rng.normal(size=3) * 0.1
    ops = rd.operational_space(model, q, v, link, x, rows="linear", max_condition=1e12)
    F = rng.normal(size=3)
    qdd = rd.aba(model, q, v, ops.torques(F))
    acc = ops.J @ qdd + ops.Jdot_qd
    np.testing.assert_allclose(ops.Lambda @ acc + ops.mu + ops.rho, F, rtol=1e-7, atol=1e-7)
    Jv = lambda t: rd.jacobian(model, rd.integrate(model, q, v, t), link, x) @ v  # noqa: E731
    np.testing.assert_allclose(ops.Jdot_qd, ((Jv(eps) - Jv(-eps)) / (2 * eps))[:3], rtol=1e-5, atol=1e-6)
    # Gravity torques are the gradient of the potential energy along the tangent space.
    U = lambda d: rd.potential_energy(model, rd.integrate(model, q, d))  # noqa: E731
    grad = np.array([(U(eps * e) - U(-eps * e)) / (2 * eps) for e in np.eye(model.nv)])
    np.testing.assert_allclose(rd.gravity_torques(model, q), grad, rtol=1e-5, atol=1e-6)


def test_free_fall_and_base_wrench_by_hand():
    """One rigid body: in free fall a = R^T g (linear, base frame) and the base
    wrench of a body held still is -m R^T g; a spinning body has the gyroscopic
    torque w x I w."""
    urdf = """<robot name="box"><link name="base"><inertial><mass value="2.0"/>
      <inertia ixx="0.1" iyy="0.2" izz="0.3" ixy="0" ixz="0" iyz="0"/></inertial></link></robot>"""
    model = rd.load_urdf(urdf, root_joint="floating")
    assert (model.nq, model.nv, model.joint_names) == (7, 6, ())
    q = np.array([1.0, 2.0, 3.0, *C.matrix_quaternion(_rot_x(0.7)), ])
    R = _rot_x(0.7)
    g = np.array([0, 0, -9.81])
    np.testing.assert_allclose(rd.aba(model, q, np.zeros(6), np.zeros(6))[:3], R.T @ g, atol=1e-14)
    np.testing.assert_allclose(rd.gravity_torques(model, q), np.r_[-2.0 * R.T @ g, 0, 0, 0], atol=1e-13)
    w = np.array([0.3, -1.0, 2.0])
    I = np.diag([0.1, 0.2, 0.3])
    tau = rd.rnea(model, q, np.r_[0, 0, 0, w], np.zeros(6))
    np.testing.assert_allclose(tau[3:], np.cross(w, I @ w), atol=1e-14)
    # linear part: m (w x v) with v = 0 and gravity
    np.testing.assert_allclose(tau[:3], -2.0 * R.T @ g, atol=1e-13)
    np.testing.assert_allclose(rd.potential_energy(model, q), -2.0 * g @ q[:3])


def _rot_x(t):
    c, s = np.cos(t), np.sin(t)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


def test_a_urdf_floating_joint_gives_the_same_model_as_root_joint():
    text = random_urdf(5, n_links=5).replace('<link name="base"/>', BASE_INERTIAL)
    wrapped = re.sub(r'(<robot name="[^"]*">)', r'\1<link name="world"/><joint name="root" type="floating">'
                     r'<parent link="world"/><child link="base"/></joint>', text)
    a = rd.load_urdf(text, root_joint="floating")
    b = rd.load_urdf(wrapped)
    assert b.root_joint == "floating" and (a.nq, a.nv, a.joint_names) == (b.nq, b.nv, b.joint_names)
    q, v, acc, _ = random_state(a, np.random.default_rng(0))
    np.testing.assert_allclose(rd.rnea(b, q, v, acc), rd.rnea(a, q, v, acc), rtol=1e-13, atol=1e-13)
    np.testing.assert_array_equal(rd.forward_kinematics(b, q)["world"], np.eye(4))
    with pytest.raises(rd.URDFError, match="root_joint='planar'.*floating joint 'root'"):
        rd.load_urdf(wrapped, root_joint="planar")


def test_a_floating_joint_deeper_in_the_tree_is_refused_where_it_is():
    text = random_urdf(2, n_links=4)
    root = ET.fromstring(text)
    j = [e for e in root.findall("joint") if e.find("parent").get("link") != "base"][0]
    j.set("type", "floating")
    with pytest.raises(rd.URDFError, match="joint %r is floating but its parent" % j.get("name")):
        rd.load_urdf(ET.tostring(root).decode())


def test_quaternions_are_normalised_within_the_tolerance_and_refused_beyond():
    model = _floating_tree(1)
    q, v, a, _ = random_state(model, np.random.default_rng(1))
    off = q.copy()
    off[3:7] *= 1 + 0.5 * C.QUATERNION_TOLERANCE
    np.testing.assert_allclose(rd.rnea(model, off, v, a), rd.rnea(model, q, v, a), rtol=1e-13, atol=1e-12)
    np.testing.assert_allclose(rd.normalize(model, off), q, atol=1e-15)
    for bad in (0.0, 2.0, np.nan):
        wrong = q.copy()
        wrong[3:7] *= bad
        with pytest.raises(ValueError, match="unit quaternion"):
            rd.rnea(model, wrong, v, a)
    with pytest.raises(ValueError, match=r"model nq is %d \(q = \(x, y, z, qx, qy, qz, qw" % model.nq):
        rd.gravity_torques(model, q[1:])
    with pytest.raises(ValueError, match="model nv is %d" % model.nv):
        rd.rnea(model, q, q, a)


@pytest.mark.parametrize("call", [
    lambda m, q, v: rd.regressor(m, q, v, v), lambda m, q, v: rd.linearize(m, q, v, v),
    lambda m, q, v: rd.base_parameters(m),
    lambda m, q, v: rd.MomentumObserver(m, 10.0), lambda m, q, v: rd.configuration_space_form(m, q)])
def test_functions_that_need_a_fixed_base_say_so(call):
    model = _floating_tree(3)
    q, v, _, _ = random_state(model, np.random.default_rng(3))
    with pytest.raises(ValueError, match="needs a fixed-base model.*has a floating root joint"):
        call(model, q, v)


@pytest.mark.parametrize("kind", ["floating", "planar"])
def test_simulated_floating_tree_conserves_momentum_and_energy_over_10_s(kind):
    """Zero gravity, no force: RK4 on the group keeps the momentum (world frame,
    the components a planar joint leaves free) and the energy to round-off over
    10 s at 1 kHz, and the quaternion unit. Semi-implicit Euler keeps the
    quaternion unit and its energy error stays at the documented first order."""
    from robot_dynamics.simulation import Simulator
    model = _floating_tree(2, kind).with_gravity((0.0, 0.0, 0.0))
    q, v, _, _ = random_state(model, np.random.default_rng(7))
    free = [0, 1, 2, 3, 4, 5] if kind == "floating" else [0, 1, 5]
    h0, e0 = rd.centroidal_momentum(model, q, v)[free], rd.kinetic_energy(model, q, v)
    sim = Simulator(model, dt=1e-3, integrator="rk4", forces=[])
    sim.reset(q, v)
    worst_h = worst_e = 0.0
    for _ in range(10):
        sim.step(1000)
        h = rd.centroidal_momentum(model, sim.q, sim.qd)[free]
        worst_h = max(worst_h, float(np.max(np.abs(h - h0))) / float(np.max(np.abs(h0))))
        worst_e = max(worst_e, abs(rd.kinetic_energy(model, sim.q, sim.qd) - e0) / e0)
        if kind == "floating":
            assert abs(np.linalg.norm(sim.q[3:7]) - 1.0) < 1e-14
    assert sim.time == pytest.approx(10.0)
    print("\n%s tree, rk4, 10 s at 1 kHz: momentum drift %.1e, energy drift %.1e (relative)"
          % (kind, worst_h, worst_e))
    assert worst_h < 1e-10 and worst_e < 1e-10
    euler = Simulator(model, dt=1e-3, integrator="semi_implicit_euler", forces=[])
    euler.reset(q, v)
    euler.step(1000)
    drift = abs(rd.kinetic_energy(model, euler.q, euler.qd) - e0) / e0
    assert drift < 0.05 and (kind == "planar" or abs(np.linalg.norm(euler.q[3:7]) - 1.0) < 1e-14)


def test_simulated_free_fall_moves_the_centre_of_mass_on_a_parabola():
    """With gravity and no contact: l(t) = l0 + m g t and c(t) = c0 + v0 t + g t^2 / 2
    exactly (RK4 integrates a quadratic exactly), k_G constant."""
    from robot_dynamics.simulation import Simulator
    model = _floating_tree(4)
    q, v, _, _ = random_state(model, np.random.default_rng(4))
    m = float(model.packed[:model.nb, 18].sum())
    h0, c0 = rd.centroidal_momentum(model, q, v), rd.center_of_mass(model, q)
    sim = Simulator(model, dt=1e-3, integrator="rk4", forces=[])
    sim.reset(q, v)
    sim.step(1000)
    g = model.gravity
    h1 = rd.centroidal_momentum(model, sim.q, sim.qd)
    np.testing.assert_allclose(h1[:3], h0[:3] + m * g * 1.0, rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(h1[3:], h0[3:], rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(rd.center_of_mass(model, sim.q), c0 + h0[:3] / m + 0.5 * g, rtol=1e-10, atol=1e-10)


def test_simulator_actuates_the_joints_only():
    from robot_dynamics.simulation import Simulator
    model = _floating_tree(3)
    sim = Simulator(model, dt=1e-3, integrator="rk4")
    assert sim.q.shape == (model.nq,) and sim.qd.shape == (model.nv,)
    sim.set_command(np.ones(len(model.joint_names)), mode="effort")
    qdd = sim.acceleration()
    tau = np.r_[np.zeros(6), np.ones(len(model.joint_names))]
    expected = rd.aba(model, sim.q, sim.qd, tau)      # at rest and inside the limits: no friction, no stop
    np.testing.assert_allclose(qdd, expected, rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="integrator must be 'semi_implicit_euler' or 'rk4'"):
        Simulator(model, integrator="implicit_euler")


@pytest.mark.parametrize("kind", ["floating", "planar"])
def test_a_batch_of_poses_on_a_moving_base_equals_the_states_one_by_one(kind):
    """rd.forward_kinematics on a batch of distinct states of a floating or planar tree: each link's pose
    equals the single state's (the root's position once went on the wrong axis of a batch: ValueError)."""
    model = _floating_tree(1, kind)
    rng = np.random.default_rng(3)
    Q = np.array([random_state(model, rng)[0] for _ in range(5)])
    batch = rd.forward_kinematics(model, Q)
    for k, q in enumerate(Q):
        for link, T in rd.forward_kinematics(model, q).items():
            np.testing.assert_allclose(batch[link][k], T, rtol=1e-13, atol=1e-13, err_msg=link)

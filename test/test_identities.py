"""Physical identities on seeded random trees (every joint type, branches,
fixed-joint merging, massless links, mimic joints).

No expected number is hard-coded: each test checks one algorithm against
another route to the same quantity (Featherstone ch. 5-7; Handbook ch. 3).
"""
import warnings

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.tools.sample import random_urdf

SEEDS = list(range(12))


def _model(seed, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error", rd.InertiaWarning)   # sample inertias are valid
        return rd.load_urdf(random_urdf(seed, n_links=kw.pop("n_links", 4 + seed % 7), **kw))


def _state(model, rng, n=None):
    shape = (model.nq,) if n is None else (n, model.nq)
    return (rng.uniform(-2.5, 2.5, shape), rng.uniform(-2, 2, shape), rng.uniform(-3, 3, shape))


@pytest.fixture(params=SEEDS, ids=lambda s: "tree%d" % s)
def tree(request):
    return _model(request.param), np.random.default_rng(1000 + request.param)


@pytest.fixture(params=[3, 7], ids=lambda s: "mimic%d" % s)
def mimic_tree(request):
    model = _model(request.param, mimic=True, n_links=7)
    assert model.has_mimic and model.nb == model.nq + 1
    return model, np.random.default_rng(request.param)


def test_aba_inverts_rnea(tree):
    model, rng = tree
    for _ in range(5):
        q, qd, qdd = _state(model, rng)
        tau = rd.rnea(model, q, qd, qdd)
        np.testing.assert_allclose(rd.aba(model, q, qd, tau), qdd, rtol=1e-8, atol=1e-8)


def test_rnea_equals_mass_matrix_times_qdd_plus_h(tree):
    model, rng = tree
    for _ in range(5):
        q, qd, qdd = _state(model, rng)
        M = rd.mass_matrix(model, q)
        h = rd.nonlinear_effects(model, q, qd)
        np.testing.assert_allclose(rd.rnea(model, q, qd, qdd), M @ qdd + h, rtol=1e-10, atol=1e-10)


def test_mass_matrix_symmetric_positive_definite(tree):
    model, rng = tree
    q = _state(model, rng)[0]
    M = rd.mass_matrix(model, q)
    np.testing.assert_allclose(M, M.T, rtol=0, atol=1e-12)
    assert np.linalg.eigvalsh(M).min() > 0


def test_mass_matrix_columns_are_rnea_of_unit_accelerations(tree):
    model, rng = tree
    q, qd, _ = _state(model, rng)
    h = rd.nonlinear_effects(model, q, qd)
    cols = [rd.rnea(model, q, qd, e) - h for e in np.eye(model.nq)]
    np.testing.assert_allclose(rd.mass_matrix(model, q), np.array(cols).T, rtol=1e-10, atol=1e-10)


def test_gravity_is_rnea_at_rest(tree):
    model, rng = tree
    q = _state(model, rng)[0]
    z = np.zeros(model.nq)
    np.testing.assert_allclose(rd.gravity_torques(model, q), rd.rnea(model, q, z, z), rtol=1e-12, atol=1e-12)


def test_coriolis_matrix_times_qd_is_h_minus_g(tree):
    model, rng = tree
    q, qd, _ = _state(model, rng)
    C = rd.coriolis_matrix(model, q, qd)
    h, g = rd.nonlinear_effects(model, q, qd), rd.gravity_torques(model, q)
    np.testing.assert_allclose(C @ qd, h - g, rtol=1e-9, atol=1e-9)


def _mdot(model, q, qd, eps=1e-6):
    return (rd.mass_matrix(model, q + eps * qd) - rd.mass_matrix(model, q - eps * qd)) / (2 * eps)


def test_mdot_minus_2c_is_skew_symmetric(tree):
    model, rng = tree
    q, qd, _ = _state(model, rng)
    N = _mdot(model, q, qd) - 2 * rd.coriolis_matrix(model, q, qd)
    scale = max(1.0, np.abs(N).max())
    np.testing.assert_allclose(N + N.T, 0, atol=1e-6 * scale)


def test_coriolis_matrix_is_linear_in_qd(tree):
    model, rng = tree
    q, qd1, _ = _state(model, rng)
    qd2 = rng.uniform(-2, 2, model.nq)
    C = lambda v: rd.coriolis_matrix(model, q, v)
    np.testing.assert_allclose(C(2 * qd1 - 3 * qd2), 2 * C(qd1) - 3 * C(qd2), rtol=1e-9, atol=1e-9)


def test_kinetic_energy_is_half_qd_m_qd(tree):
    model, rng = tree
    q, qd, _ = _state(model, rng)
    expected = 0.5 * qd @ rd.mass_matrix(model, q) @ qd
    assert rd.kinetic_energy(model, q, qd) == pytest.approx(expected, rel=1e-10, abs=1e-12)


def test_gravity_is_gradient_of_potential_energy(tree):
    model, rng = tree
    q = _state(model, rng)[0]
    eps = 1e-6
    grad = [(rd.potential_energy(model, q + eps * e) - rd.potential_energy(model, q - eps * e)) / (2 * eps)
            for e in np.eye(model.nq)]
    np.testing.assert_allclose(rd.gravity_torques(model, q), grad, rtol=1e-6, atol=1e-6)


def test_power_balance_along_forward_dynamics(tree):
    """dE/dt = qd . (tau - friction-free): total energy changes by the input power."""
    model, rng = tree
    q, qd, _ = _state(model, rng)
    tau = rng.uniform(-5, 5, model.nq)
    qdd = rd.aba(model, q, qd, tau)
    E = lambda q_, qd_: rd.kinetic_energy(model, q_, qd_) + rd.potential_energy(model, q_)
    dt = 1e-6
    dE = (E(q + dt * qd + 0.5 * dt * dt * qdd, qd + dt * qdd)
          - E(q - dt * qd + 0.5 * dt * dt * qdd, qd - dt * qdd)) / (2 * dt)
    assert dE == pytest.approx(qd @ tau, rel=1e-5, abs=1e-5)


def test_batch_equals_loop_of_single_calls(tree):
    model, rng = tree
    Q, QD, QDD = _state(model, rng, n=6)
    Q, QD, QDD = (x.reshape(2, 3, model.nq) for x in (Q, QD, QDD))
    single = lambda f, *xs: np.array([f(model, *(x[i, j] for x in xs)) for i in range(2) for j in range(3)])
    for f, args in [(rd.rnea, (Q, QD, QDD)), (rd.gravity_torques, (Q,)), (rd.nonlinear_effects, (Q, QD)),
                    (rd.mass_matrix, (Q,)), (rd.aba, (Q, QD, QDD)), (rd.coriolis_matrix, (Q, QD)),
                    (rd.kinetic_energy, (Q, QD)), (rd.potential_energy, (Q,)),
                    (rd.friction_torques, (QD,))]:
        batch = f(model, *args)
        expected = single(f, *args)
        assert batch.shape == (2, 3) + expected.shape[1:], f.__name__
        np.testing.assert_allclose(batch.reshape(expected.shape), expected, rtol=1e-12, atol=1e-12,
                                   err_msg=f.__name__)
    link = model.link_names[-1]
    J = rd.jacobian(model, Q, link, (0.1, 0.2, 0.3))
    np.testing.assert_allclose(J[1, 2], rd.jacobian(model, Q[1, 2], link, (0.1, 0.2, 0.3)), rtol=1e-12, atol=1e-12)
    T = rd.forward_kinematics(model, Q)[link]
    np.testing.assert_allclose(T[0, 1], rd.forward_kinematics(model, Q[0, 1])[link], rtol=1e-12, atol=1e-12)


def test_states_broadcast_against_each_other(tree):
    model, rng = tree
    Q, QD, QDD = _state(model, rng, n=4)
    np.testing.assert_allclose(rd.rnea(model, Q, QD[0], QDD[0]),
                               [rd.rnea(model, q, QD[0], QDD[0]) for q in Q], rtol=1e-12, atol=1e-12)


def test_jacobian_maps_qd_to_link_velocity(tree):
    """J qd equals the finite-difference velocity of the point and of the link frame."""
    model, rng = tree
    q, qd, _ = _state(model, rng)
    link = model.link_names[-1]
    point = np.array([0.1, -0.2, 0.15])
    J = rd.jacobian(model, q, link, point)
    dt = 1e-6
    Tp, Tm = (rd.forward_kinematics(model, q + s * dt * qd)[link] for s in (1, -1))
    x = lambda T: T[:3, :3] @ point + T[:3, 3]
    v = (x(Tp) - x(Tm)) / (2 * dt)
    Rdot = (Tp[:3, :3] - Tm[:3, :3]) / (2 * dt)
    W = Rdot @ rd.forward_kinematics(model, q)[link][:3, :3].T          # [w x] = Rdot R^T
    w = np.array([W[2, 1], W[0, 2], W[1, 0]])
    np.testing.assert_allclose(J @ qd, np.r_[v, w], rtol=1e-6, atol=1e-7)


def test_external_wrench_enters_as_minus_jacobian_transpose(tree):
    """rnea(f_ext) = rnea - J_k^T F_k with F_k the link-frame wrench rotated into the base frame."""
    model, rng = tree
    q, qd, qdd = _state(model, rng)
    links = [l for l in model.link_names if l != model.base_link]
    chosen = [links[i] for i in rng.choice(len(links), size=min(2, len(links)), replace=False)]
    f_ext = {l: rng.uniform(-10, 10, 6) for l in chosen}
    expected = rd.rnea(model, q, qd, qdd)
    T = rd.forward_kinematics(model, q)
    for l, w in f_ext.items():
        R = T[l][:3, :3]
        expected = expected - rd.jacobian(model, q, l).T @ np.r_[R @ w[:3], R @ w[3:]]
    np.testing.assert_allclose(rd.rnea(model, q, qd, qdd, f_ext), expected, rtol=1e-9, atol=1e-9)
    # the array form in link_names order is the same thing
    W = np.zeros((len(model.link_names), 6))
    for l, w in f_ext.items():
        W[model.link_names.index(l)] = w
    np.testing.assert_allclose(rd.rnea(model, q, qd, qdd, W), expected, rtol=1e-9, atol=1e-9)
    # and forward dynamics sees the same wrench
    tau = rng.uniform(-5, 5, model.nq)
    np.testing.assert_allclose(rd.rnea(model, q, qd, rd.aba(model, q, qd, tau, f_ext), f_ext), tau,
                               rtol=1e-8, atol=1e-8)


def test_changed_gravity_vector(tree):
    model, rng = tree
    q = _state(model, rng)[0]
    g0 = rd.gravity_torques(model, q)
    np.testing.assert_allclose(rd.gravity_torques(model.with_gravity((0.0, 0.0, 2 * -9.81)), q), 2 * g0,
                               rtol=1e-12, atol=1e-12)
    assert np.all(rd.gravity_torques(model.with_gravity((0.0, 0.0, 0.0)), q) == 0)
    np.testing.assert_array_equal(rd.gravity_torques(model, q), g0)       # the original is unchanged


def test_mimic_model_is_the_free_model_restricted(mimic_tree):
    """M = G^T M_free G, tau = G^T tau_free(G q + o) for the same tree without the mimic tag."""
    model, rng = mimic_tree
    import re
    free = rd.load_urdf(re.sub(r"<mimic[^>]*/>", "", random_urdf(int(model.name.split("_")[1]),
                                                                  n_links=7, mimic=True)))
    assert free.nq == model.nq + 1
    mimic = next(j for j in model.joints.values() if j.mimic)
    src, mult, off = mimic.mimic
    G = np.zeros((free.nq, model.nq))
    for n in model.joint_names:
        G[free.joint_names.index(n), model.joint_names.index(n)] = 1.0
    G[free.joint_names.index(mimic.name), model.joint_names.index(src)] = mult
    o = np.zeros(free.nq)
    o[free.joint_names.index(mimic.name)] = off
    for _ in range(3):
        q, qd, qdd = _state(model, rng)
        qf, qdf, qddf = G @ q + o, G @ qd, G @ qdd
        np.testing.assert_allclose(rd.rnea(model, q, qd, qdd), G.T @ rd.rnea(free, qf, qdf, qddf), rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(rd.mass_matrix(model, q), G.T @ rd.mass_matrix(free, qf) @ G, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(rd.coriolis_matrix(model, q, qd), G.T @ rd.coriolis_matrix(free, qf, qdf) @ G,
                                   rtol=1e-9, atol=1e-9)
        tau = rd.rnea(model, q, qd, qdd)
        np.testing.assert_allclose(rd.aba(model, q, qd, tau), qdd, rtol=1e-8, atol=1e-8)
        np.testing.assert_allclose(rd.jacobian(model, q, model.link_names[-1]),
                                   rd.jacobian(free, qf, model.link_names[-1]) @ G, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(rd.friction_torques(model, qd), G.T @ rd.friction_torques(free, qdf),
                                   rtol=1e-12, atol=1e-12)

"""Base parameters, identification, payload identification and the momentum observer.

Every expected value is either derived by hand here (the planar 2R arm) or
comes from a "true" model the test builds and then hides from the method
(synthetic data with stated Gaussian torque noise, seeded).
"""
import warnings
from pathlib import Path

import numpy as np
import pytest
import yaml

import robot_dynamics as rd
from robot_dynamics.identification.inertials import (consistency_problem, log_cholesky,
                                                      log_cholesky_jacobian, model_with_parameters,
                                                      parameters_from_log_cholesky)
from robot_dynamics.model.inertia import inertia_about_com, inertia_about_origin
from robot_dynamics.tools.sample import random_urdf

ROOT = Path(__file__).resolve().parents[1]
PANDA = ROOT / "urdf" / "panda_arm.urdf"
TWO_LINK = ROOT / "urdf" / "textbook" / "point_mass_two_link.urdf"


@pytest.fixture(scope="module")
def panda():
    return rd.load_urdf(str(PANDA))


def _two_link(gravity):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rd.InertiaWarning)          # point masses
        return rd.load_urdf(str(TWO_LINK), gravity=gravity)


def _fourier(model, n, seed, dt=0.01, harmonics=5, fraction=0.15, f0=0.1):
    """A finite Fourier series trajectory (n samples at dt) inside the joint limits, with exact qd, qdd."""
    rng = np.random.default_rng(seed)
    t = np.arange(n)[:, None] * dt
    mid = 0.5 * (model.lower_limit + model.upper_limit)
    amp = 0.5 * (model.upper_limit - model.lower_limit)
    w = 2 * np.pi * f0
    q, qd, qdd = np.tile(mid, (n, 1)), np.zeros((n, model.nq)), np.zeros((n, model.nq))
    for k in range(1, harmonics + 1):
        a, b = rng.uniform(-1, 1, (2, model.nq)) * amp * fraction / k
        s, c = np.sin(k * w * t), np.cos(k * w * t)
        q += a * s + b * c
        qd += (a * c - b * s) * k * w
        qdd -= (a * s + b * c) * (k * w) ** 2
    assert np.all(q > model.lower_limit) and np.all(q < model.upper_limit)
    return q, qd, qdd


def _perturbed(model, seed, mass=0.2, shift=0.03):
    """A "true" model: every body's mass scaled by U(1 - mass, 1 + mass) (its inertia about the com
    too) and its centre of mass moved by U(-shift, shift) m per axis."""
    rng = np.random.default_rng(seed)
    pi = []
    for b in range(model.nb):
        m, c, Io = model.body_mass[b], model.body_com[b], model.body_inertia[b]
        Ic = inertia_about_com(m, c, Io)
        f = rng.uniform(1 - mass, 1 + mass)
        m2, c2 = m * f, c + rng.uniform(-shift, shift, 3)
        I2 = inertia_about_origin(m2, c2, f * Ic)
        pi.append([m2, *(m2 * c2), I2[0, 0], I2[0, 1], I2[1, 1], I2[0, 2], I2[1, 2], I2[2, 2]])
    return model_with_parameters(model, np.ravel(pi))


# --- base parameters ---------------------------------------------------------------------

def _numerical_rank(model, seed, friction=False):
    """Rank of the stacked regressor by SVD over states the base-parameter search did not use."""
    rng = np.random.default_rng(seed)
    n = 150
    lo = np.where(np.isfinite(model.lower_limit), model.lower_limit, -np.pi)
    hi = np.where(np.isfinite(model.upper_limit), model.upper_limit, np.pi)
    q, qd, qdd = rng.uniform(lo, hi, (n, model.nq)), rng.normal(size=(n, model.nq)), rng.normal(size=(n, model.nq))
    W = rd.regressor(model, q, qd, qdd)
    if friction:
        W = np.concatenate([W, rd.friction_regressor(model, qd)], axis=-1)
    W = W.reshape(n * model.nq, -1)
    s = np.linalg.svd(W, compute_uv=False)
    return int(np.sum(s > 1e-9 * s[0])), (W, q, qd, qdd)


@pytest.mark.parametrize("name", ["panda", "ur5", "tree2", "tree5", "mimic7"])
def test_base_parameter_count_is_the_numerical_rank(name):
    model = {"panda": lambda: rd.load_urdf(str(PANDA)), "ur5": lambda: rd.load_urdf(str(ROOT / "urdf" / "ur5.urdf")),
             "tree2": lambda: rd.load_urdf(random_urdf(2, 7)), "tree5": lambda: rd.load_urdf(random_urdf(5, 8)),
             "mimic7": lambda: rd.load_urdf(random_urdf(7, 7, mimic=True))}[name]()
    friction = name == "panda"
    base = rd.base_parameters(model, friction=friction)
    rank, (W, q, qd, qdd) = _numerical_rank(model, 99, friction)
    assert base.count == rank
    # the base regressor reproduces the full one on other states: Y pi == Y_b (K pi)
    pi = np.concatenate([rd.inertial_parameters(model), np.arange(3 * model.nq) * 0.1 if friction else []])
    scale = np.abs(W @ pi).max()
    np.testing.assert_allclose(base.regressor(model, q, qd, qdd) @ base.values(pi),
                               (W @ pi).reshape(q.shape), rtol=0, atol=1e-10 * scale)
    if name == "panda":
        assert base.count == 43 + 21               # 43 inertial base parameters of a Panda with a vertical joint 1


def test_base_parameters_of_the_planar_2r_arm_by_hand():
    """Planar 2R arm (urdf/textbook/point_mass_two_link.urdf): both joint axes along z, joint 2 at
    (a1, 0, 0) in link 1, a1 = 0.62 m. Body parameters pi_i = (m_i, mx_i, my_i, mz_i, I..., I_zz,i)
    about the joint frames.

    Lagrangian, with q12 = q1 + q2 and gravity g along -y of the base:
      body 1 turns about its fixed origin: T1 = I_zz1 qd1^2 / 2, U1 = g (mx1 s1 + my1 c1);
        m1, mz1 and its other inertias never appear (origin fixed, angular velocity along z).
      body 2: its origin moves on a circle of radius a1, v_O2 = a1 qd1 (perpendicular to link 1):
        T2 = m2 a1^2 qd1^2 / 2 + a1 qd1 qd12 (mx2 c2 - my2 s2) + I_zz2 qd12^2 / 2,
        U2 = g (m2 a1 s1 + mx2 s12 + my2 c12).
      m2 appears only as a1^2 m2 next to I_zz1 (kinetic) and a1 m2 next to mx1 (potential).
    So with gravity in the plane the base parameters are
      mx1 + a1 m2, my1, I_zz1 + a1^2 m2, mx2, my2, I_zz2            (6),
    and with gravity along z (a horizontal arm: U constant) only
      I_zz1 + a1^2 m2, mx2, my2, I_zz2                               (4).
    Written per parameter index (10 i + k, k in m, mx, my, mz, Ixx, Ixy, Iyy, Ixz, Iyz, Izz)."""
    a1 = 0.62
    M1, MX1, MY1, IZZ1, M2, MX2, MY2, IZZ2 = 0, 1, 2, 9, 10, 11, 12, 19

    def rows(terms):
        K = np.zeros((len(terms), 20))
        for r, combination in enumerate(terms):
            for index, coefficient in combination:
                K[r, index] = coefficient
        return K

    vertical = rows([[(MX1, 1), (M2, a1)], [(MY1, 1)], [(IZZ1, 1), (M2, a1 ** 2)], [(MX2, 1)], [(MY2, 1)],
                     [(IZZ2, 1)]])
    horizontal = rows([[(IZZ1, 1), (M2, a1 ** 2)], [(MX2, 1)], [(MY2, 1)], [(IZZ2, 1)]])
    for gravity, K in (((0.0, -9.81, 0.0), vertical), ((0.0, 0.0, -9.81), horizontal)):
        base = rd.base_parameters(_two_link(gravity))
        assert base.count == K.shape[0]
        np.testing.assert_allclose(base.K, K, rtol=1e-9, atol=1e-12)
    assert rd.base_parameters(_two_link((0.0, -9.81, 0.0))).descriptions[2] == "I_zz(link1) + 0.3844 m(link2)"


# --- identification ----------------------------------------------------------------------

SIGMA = 0.2           # N m, torque noise of the synthetic measurements (Gaussian, every joint)
N_SAMPLES = 2000      # 20 s at 100 Hz


@pytest.fixture(scope="module")
def experiment(panda):
    """A true Panda (masses +-20 %, coms moved up to 3 cm), friction, an excitation run with noise and a
    held-out run."""
    true = _perturbed(panda, seed=1)
    rng = np.random.default_rng(2)
    phi = np.column_stack([rng.uniform(0.05, 0.3, 7), rng.uniform(0.2, 1.0, 7), rng.uniform(-0.3, 0.3, 7)])
    run = _fourier(panda, N_SAMPLES, seed=0)
    held = _fourier(panda, 500, seed=5)

    def torques(q, qd, qdd, noise_rng, friction):
        tau = rd.rnea(true, q, qd, qdd) + noise_rng.normal(0.0, SIGMA, q.shape)
        if friction:
            tau = tau + rd.friction_regressor(panda, qd) @ phi.ravel()
        return tau
    return dict(true=true, phi=phi, run=run, held=held, torques=torques)


@pytest.fixture(scope="module")
def ols(panda, experiment):
    q, qd, qdd = experiment["run"]
    tau = experiment["torques"](q, qd, qdd, np.random.default_rng(3), False)
    return rd.identify(panda, q, qd, qdd, tau, method="ols")


def test_ols_recovers_the_true_base_parameters_within_their_standard_errors(panda, experiment, ols):
    true_beta = ols.base.values(rd.inertial_parameters(experiment["true"]))
    z = (ols.parameters - true_beta) / ols.standard_errors
    assert np.all(np.abs(z) < 4.0), np.abs(z).max()
    assert ols.base.count == 43 and ols.condition < 1e5
    np.testing.assert_allclose(ols.residual_rms, SIGMA, rtol=0.1)          # fits down to the noise
    # held-out run: measured (noisy) torques are predicted to the noise level
    q, qd, qdd = experiment["held"]
    tau = experiment["torques"](q, qd, qdd, np.random.default_rng(4), False)
    rms = np.sqrt(np.mean((ols.predict(q, qd, qdd) - tau) ** 2, axis=0))
    assert np.all(rms < 1.1 * SIGMA), rms
    # the nominal model is far off: this is a real test
    nominal_rms = np.sqrt(np.mean((rd.rnea(panda, q, qd, qdd) - tau) ** 2, axis=0))
    assert nominal_rms.max() > 3 * SIGMA


def test_wls_with_unequal_joint_noise(panda, experiment):
    """Per-joint noise 0.05 .. 0.5 N m: WLS estimates its weights and stays within 4 sigma."""
    q, qd, qdd = experiment["run"]
    sig = np.linspace(0.05, 0.5, 7)
    tau = rd.rnea(experiment["true"], q, qd, qdd) + np.random.default_rng(6).normal(0, 1, q.shape) * sig
    wls = rd.identify(panda, q, qd, qdd, tau, method="wls")
    z = (wls.parameters - wls.base.values(rd.inertial_parameters(experiment["true"]))) / wls.standard_errors
    assert np.all(np.abs(z) < 4.0), np.abs(z).max()
    np.testing.assert_allclose(wls.residual_rms, sig, rtol=0.1)
    ols = rd.identify(panda, q, qd, qdd, tau, method="ols", base=wls.base)
    assert np.median(wls.standard_errors / ols.standard_errors) < 1.0      # weighting helps


def test_identify_with_friction(panda, experiment):
    q, qd, qdd = experiment["run"]
    tau = experiment["torques"](q, qd, qdd, np.random.default_rng(7), True)
    res = rd.identify(panda, q, qd, qdd, tau, friction=True)
    assert res.base.count == 43 + 21
    true = res.base.values(np.concatenate([rd.inertial_parameters(experiment["true"]), experiment["phi"].ravel()]))
    z = (res.parameters - true) / res.standard_errors
    assert np.all(np.abs(z) < 4.0), np.abs(z).max()
    np.testing.assert_allclose(res.friction, experiment["phi"], atol=4 * res.standard_errors.max())


def test_consistent_identification(panda, experiment, ols, tmp_path):
    """Physically consistent bodies; held-out predictions within 5 % of OLS's error (rms)."""
    q, qd, qdd = experiment["run"]
    tau = experiment["torques"](q, qd, qdd, np.random.default_rng(3), False)     # the data OLS had
    res = rd.identify(panda, q, qd, qdd, tau, method="consistent")
    for b in range(panda.nb):
        assert consistency_problem(res.inertial[10 * b:10 * b + 10]) is None
        assert res.model.body_mass[b] > 0
    qh, qdh, qddh = experiment["held"]
    truth = rd.rnea(experiment["true"], qh, qdh, qddh)
    err_c = np.sqrt(np.mean((res.predict(qh, qdh, qddh) - truth) ** 2))
    err_o = np.sqrt(np.mean((ols.predict(qh, qdh, qddh) - truth) ** 2))
    assert err_c <= 1.05 * err_o + 0.01 * SIGMA, (err_c, err_o)
    np.testing.assert_allclose(res.residual_rms, SIGMA, rtol=0.1)
    # the corrected model is a real model with those parameters
    np.testing.assert_allclose(rd.inertial_parameters(res.model), res.inertial, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(rd.rnea(res.model, qh, qdh, qddh), res.predict(qh, qdh, qddh), rtol=1e-10, atol=1e-10)
    # YAML: every body's link with the model's mass and com
    doc = yaml.safe_load(res.to_yaml(tmp_path / "inertials.yaml"))
    assert doc == yaml.safe_load((tmp_path / "inertials.yaml").read_text())
    for b in range(panda.nb):
        entry = doc["links"][panda.link_names[panda.body_link[b]]]
        assert entry["mass"] == pytest.approx(res.model.body_mass[b], rel=1e-9)
        np.testing.assert_allclose(entry["com"], res.model.body_com[b], rtol=1e-9, atol=1e-12)
    assert rd.load_urdf(res.to_urdf()).nq == 7
    with pytest.raises(rd.InputError, match="consistent"):
        ols.to_yaml()


def test_identify_refuses_poor_data_and_bad_arguments(panda):
    q = np.tile(panda.neutral(), (50, 1))
    z = np.zeros_like(q)
    with pytest.raises(rd.InputError, match="do not excite"):
        rd.identify(panda, q, z, z, z)
    with pytest.raises(rd.InputError, match="method must be one of"):
        rd.identify(panda, q, z, z, z, method="magic")
    with pytest.raises(rd.InputError, match=r"tau has shape \(50, 6\), model nq is 7"):
        rd.identify(panda, q, z, z, z[:, :6])


# --- inertials: log-Cholesky and rebuilt models ---------------------------------------------

def test_log_cholesky_round_trip_and_jacobian(panda):
    rng = np.random.default_rng(0)
    for b in range(panda.nb):
        pi = panda.body_parameters[b]
        theta = log_cholesky(pi)
        np.testing.assert_allclose(parameters_from_log_cholesky(theta), pi, rtol=1e-10, atol=1e-13)
        th = theta + rng.normal(0, 0.3, 10)              # any theta is a consistent body
        assert consistency_problem(parameters_from_log_cholesky(th)) is None
        eps = 1e-6
        fd = np.column_stack([(parameters_from_log_cholesky(th + eps * e) - parameters_from_log_cholesky(th - eps * e))
                              / (2 * eps) for e in np.eye(10)])
        np.testing.assert_allclose(log_cholesky_jacobian(th), fd, rtol=1e-6, atol=1e-8)
    assert consistency_problem([1.0, 0, 0, 0, 1.0, 0, 1.0, 0, 0, 3.0]) is not None     # 3 > 1 + 1


def test_log_cholesky_at_its_limits_is_finite_and_warns_nothing(panda):
    """An optimiser's trial step may put theta anywhere (the Levenberg-Marquardt of method='consistent'
    once tried d1 = 1375): the chart saturates smoothly instead of overflowing e^x."""
    from robot_dynamics.identification.inertials import saturate
    rng = np.random.default_rng(1)
    extremes = [np.full(10, 1e308), np.full(10, -1e308), np.array([1e308, -1e308] * 5), np.full(10, 1375.0),
                np.array([-1e6, 1e6, 1e6, 1e6, 1e30, -1e30, 1e30, -1e300, 1e300, 0.0])]
    extremes += [rng.normal(0, s, 10) for s in (50.0, 1e3, 1e20, 1e300)]
    with warnings.catch_warnings(), np.errstate(over="raise", invalid="raise", divide="raise"):
        warnings.simplefilter("error")                              # RuntimeWarning included
        for th in extremes:
            p, D = parameters_from_log_cholesky(th), log_cholesky_jacobian(th)
            assert np.all(np.isfinite(p)) and np.all(np.isfinite(D)), th
            assert 0 < p[0] < 1e35 and np.abs(p).max() < 1e73, p               # m = e^(2 alpha) <= e^80
        # the saturation: the identity within +-30 (+-1e18), bounded, C1 and monotonic beyond
        for k, (linear, bound) in ((0, (30.0, 40.0)), (3, (30.0, 40.0)), (7, (1e18, 2e18))):
            x = np.logspace(np.log10(linear) - 4, 300, 400)
            th = np.zeros((801, 10))
            th[:, k] = np.concatenate([-x[::-1], [0.0], x])
            y, slope = np.array([saturate(t)[0][k] for t in th]), np.array([saturate(t)[1][k] for t in th])
            inside = np.abs(th[:, k]) <= linear
            np.testing.assert_array_equal(y[inside], th[inside, k])
            assert np.all(slope[inside] == 1.0) and np.all(np.abs(y) <= bound) and np.all(np.diff(y) >= 0)
            assert np.all((slope >= 0) & (slope <= 1)) and max(slope[0], slope[-1]) < 1e-80
            for a in (linear, -linear):                                   # value and slope continuous at the joint
                h = 1e-7 * linear
                t0, t1 = np.zeros(10), np.zeros(10)
                t0[k], t1[k] = a - h, a + h
                assert saturate(t1)[0][k] - saturate(t0)[0][k] == pytest.approx(2 * h, rel=1e-6)
                assert saturate(t1)[1][k] == pytest.approx(1.0, abs=1e-9)
        # the Jacobian is the derivative there too, and the chart goes back and forth out to the bounds
        th = np.array([-35.0, 33.0, -38.0, 1.0, 0.2, 1.6e18, -1.5e18, 0.1, 0.2, 0.3])
        eps = np.maximum(1e-6, 1e-9 * np.abs(th))
        fd = np.column_stack([(parameters_from_log_cholesky(th + h * e) - parameters_from_log_cholesky(th - h * e))
                              / (2 * h) for h, e in zip(eps, np.eye(10))])
        np.testing.assert_allclose(log_cholesky_jacobian(th), fd, rtol=1e-5, atol=1e-7 * np.abs(fd).max())
        for b in range(panda.nb):                                         # a real body: e^theta well inside
            pi = panda.body_parameters[b] * 1e20                        # 1e20 kg: alpha = 23
            np.testing.assert_allclose(parameters_from_log_cholesky(log_cholesky(pi)), pi, rtol=1e-9)
            assert np.all(np.abs(log_cholesky(panda.body_parameters[b])[:4]) < 30)


@pytest.mark.parametrize("seed,mimic", [(1, False), (4, False), (7, True)])
def test_model_rebuilt_with_its_own_parameters_is_the_same_model(seed, mimic):
    model = rd.load_urdf(random_urdf(seed, 8, mimic=mimic))
    copy = model_with_parameters(model, rd.inertial_parameters(model))
    assert copy.joint_names == model.joint_names and copy.link_names == model.link_names
    np.testing.assert_allclose(copy.body_parameters, model.body_parameters, rtol=1e-12, atol=1e-14)
    q, qd, qdd = np.random.default_rng(seed).uniform(-2, 2, (3, 5, model.nq))
    np.testing.assert_allclose(rd.rnea(copy, q, qd, qdd), rd.rnea(model, q, qd, qdd), rtol=1e-10, atol=1e-10)


# --- payload -------------------------------------------------------------------------------

PAYLOAD = dict(mass=2.0, com=np.array([0.03, -0.02, 0.08]), inertia=np.diag([4e-3, 5e-3, 3e-3]))
PAYLOAD_SIGMA = 0.1   # N m


def test_payload_identified_from_a_trajectory(panda):
    """2 kg at (3, -2, 8) cm on the Panda flange (panda_link8), noise 0.1 N m, 20 s at 100 Hz:
    mass within 1 %, com within 5 mm."""
    loaded = panda.with_payload("panda_link8", PAYLOAD["mass"], PAYLOAD["com"], PAYLOAD["inertia"])
    q, qd, qdd = _fourier(panda, 2000, seed=1)
    tau = rd.rnea(loaded, q, qd, qdd) + np.random.default_rng(8).normal(0, PAYLOAD_SIGMA, q.shape)
    est = rd.identify_payload(panda, q, qd, qdd, tau, "panda_link8")
    assert not est.static
    assert abs(est.mass - 2.0) < 0.02
    assert np.linalg.norm(est.com - PAYLOAD["com"]) < 0.005
    assert abs(est.mass - 2.0) < 4 * est.mass_std and np.all(np.abs(est.com - PAYLOAD["com"]) < 4 * est.com_std)
    assert np.all(np.abs(est.inertia - PAYLOAD["inertia"]) < 4 * est.inertia_std + 1e-12)
    np.testing.assert_allclose(est.residual_rms, PAYLOAD_SIGMA, rtol=0.1)
    again = est.apply(panda)
    assert again.total_mass == pytest.approx(panda.total_mass + est.mass)


def test_payload_identified_from_static_poses(panda):
    """Same payload, 60 poses at rest, noise 0.1 N m: mass within 1 %, com within 5 mm."""
    loaded = panda.with_payload("panda_link8", PAYLOAD["mass"], PAYLOAD["com"], PAYLOAD["inertia"])
    q = _fourier(panda, 3000, seed=2)[0][::50]
    z = np.zeros_like(q)
    tau = rd.gravity_torques(loaded, q) + np.random.default_rng(9).normal(0, PAYLOAD_SIGMA, q.shape)
    est = rd.identify_payload(panda, q, z, z, tau, "panda_link8")
    assert est.static and est.inertia is None
    assert abs(est.mass - 2.0) < 0.02
    assert np.linalg.norm(est.com - PAYLOAD["com"]) < 0.005
    with pytest.raises(rd.InputError, match="fixed to the base"):
        rd.identify_payload(panda, q, z, z, tau, "panda_link0")
    with pytest.raises(rd.InputError, match="do not determine"):          # one pose cannot give the com
        rd.identify_payload(panda, q[:1], z[:1], z[:1], tau[:1], "panda_link8")


# --- momentum observer ------------------------------------------------------------------------

def test_momentum_observer_estimates_an_external_push(panda):
    """The arm tracks a sine under a PD law sampled at 1 kHz (torque held between samples); the
    simulation runs rd.aba with 5 semi-implicit Euler substeps per sample, so the data are not the
    observer's own discretisation. From 0.1 s a constant 20 N force, fixed in the flange frame
    (panda_link8, along its -z, at its origin), pushes: its joint torque J^T F is applied, held per
    sample. Gain K_O = 100 1/s (time constant 10 ms): no collision before the push (threshold
    1 N m), one flagged within 20 ms, and after 0.25 s of push the residual equals J^T F within 3 %
    of its largest entry and the wrench estimate is within 5 % of 20 N."""
    dt, K, sub = 1e-3, 100.0, 5
    obs = rd.MomentumObserver(panda, K, thresholds=1.0)
    q0 = np.array([0.0, -0.5, 0.0, -2.0, 0.0, 1.6, 0.8])
    q, qd = q0.copy(), np.zeros(7)
    f_link = np.array([0.0, 0.0, -20.0])
    detected, quiet = None, 0.0
    for k in range(350):
        t = k * dt
        target = q0 + 0.3 * np.sin(2 * np.pi * 0.5 * t)
        tau = rd.gravity_torques(panda, q) + 50.0 * (target - q) - 5.0 * qd
        r = obs.update(q, qd, tau, dt)
        tau_ext = np.zeros(7)
        if k < 100:
            assert not obs.collision, (k, r)
            quiet = max(quiet, np.abs(r).max())
        else:
            if detected is None and obs.collision:
                detected = t - 0.1
            R = rd.link_pose(panda, q, "panda_link8")[:3, :3]
            F = np.concatenate([R @ f_link, np.zeros(3)])                  # base frame, at the link origin
            tau_ext = rd.jacobian(panda, q, "panda_link8").T @ F
        for _ in range(sub):
            qd = qd + dt / sub * rd.aba(panda, q, qd, tau + tau_ext)
            q = q + dt / sub * qd
    assert quiet < 0.1, quiet                                               # N m before the push
    assert detected is not None and detected <= 0.02
    R = rd.link_pose(panda, q, "panda_link8")[:3, :3]
    F = np.concatenate([R @ f_link, np.zeros(3)])
    expected = rd.jacobian(panda, q, "panda_link8").T @ F
    assert np.abs(obs.residual - expected).max() < 0.03 * np.abs(expected).max()
    np.testing.assert_allclose(obs.wrench(q, "panda_link8"), F, atol=0.05 * 20.0)


# --- layering ----------------------------------------------------------------------------------

def test_identification_layer_uses_only_the_layers_above_it():
    """identification/ builds on model/ and algorithms/ (and errors); nothing below it imports it
    from the kernel layers, and it defines no compiled kernel (the numba cache is not keyed on it)."""
    import ast
    import re
    pkg = ROOT / "robot_dynamics"
    for path in (pkg / "identification").glob("*.py"):
        text = path.read_text()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom) and node.level:
                top = (node.module or "").split(".")[0] if node.level == 2 else "identification"
                assert top in ("model", "algorithms", "errors", "identification", ""), (path.name, node.module)
        assert not re.search(r"^\s*@(?:nb\.|numba\.)?(?:njit|jit|inline|parallel|entry)\b", text, re.M), path.name
    for layer in ("model", "algorithms", "analysis", "symbolic", "simulation"):
        for path in (pkg / layer).rglob("*.py"):
            assert not re.search(r"^\s*(?:from|import)\s+\S*identification", path.read_text(), re.M), path

"""Identification with the actuator (issue 23, item 4): armature columns, friction laws.

The friction laws' torques and derivatives against hand values; the regressor with armature
columns against rnea of a model with armature (random trees, the Panda); the base parameters
(the Panda's first two armatures regroup with I_zz of their bodies); and the "done when": a
simulated Panda with armature 0.1-0.4 kg m^2 and sigmoid (Gaz et al. 2019's Panda values) or
Stribeck friction, 10 s of an excitation trajectory at 500 Hz, torques from inverse dynamics
+ armature qdd + friction + N(0, 0.05 N m): the armature within 5 % on every joint whose armature
is a base parameter of its own (joints 3-7; joints 1 and 2: the base parameter holding it,
within 5 % of the armature), the friction law within 5 % of its torque
(``max_v |tau_fit(v) - tau_true(v)| / max_v |tau_true(v)|``, v on 2001 points spanning the data).
``pytest -s`` prints the figures.
"""
from pathlib import Path

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.identification.base import armature_regressor, full_regressor
from robot_dynamics.identification.friction_laws import gradient, make_law, relative_torque_error, torque
from robot_dynamics.tools.sample import random_urdf

ROOT = Path(__file__).resolve().parents[1]
PANDA = ROOT / "urdf" / "panda_arm.urdf"
ARMATURE = np.array([0.4, 0.35, 0.3, 0.25, 0.2, 0.15, 0.1])                  # kg m^2, true arm
PHI1 = np.array([0.54615, 0.87224, 0.64068, 1.2794, 0.83904, 0.30301, 0.56489])       # Gaz et al. 2019
PHI2 = np.array([5.1181, 9.0657, 10.136, 5.5903, 8.3469, 17.133, 10.336])
PHI3 = np.array([0.039533, 0.025882, -0.04607, 0.036194, 0.026226, -0.021047, 0.0035526])
SIGMA_TAU = 0.05                                                               # N m
RATE, PERIOD = 500.0, 10.0                                                     # Hz, s


# --- the laws -------------------------------------------------------------------------------

def test_friction_laws_by_hand():
    sig = make_law("sigmoid", dict(phi1=1.0, phi2=2.0, phi3=0.0))
    assert torque(sig, 0.5) == pytest.approx(1 / (1 + np.exp(-1.0)) - 0.5, rel=1e-14)      # 0.23105857863
    assert torque(sig, 0.0) == 0.0
    g = gradient(sig, np.array([0.5]))[0]                                      # phi1, phi2, phi3
    s1 = 1 / (1 + np.exp(-1.0))
    np.testing.assert_allclose(g, [s1 - 0.5, s1 * (1 - s1) * 0.5, 2.0 * (s1 * (1 - s1) - 0.25)], rtol=1e-12)
    stri = make_law("stribeck", dict(static=2.0, coulomb=1.0, stribeck_velocity=0.5, viscous=0.1))
    assert torque(stri, 0.5) == pytest.approx(1.0 + np.exp(-1.0) + 0.05, rel=1e-14)        # 1.41787944117
    assert torque(stri, -0.5) == pytest.approx(-(1.0 + np.exp(-1.0) + 0.05), rel=1e-14)
    np.testing.assert_allclose(gradient(stri, np.array([0.5]))[0],               # static, coulomb, vs, viscous
                               [np.exp(-1.0), 1 - np.exp(-1.0), 4 * np.exp(-1.0), 0.5], rtol=1e-12)
    # at v / vs = 0.5 and -2, where exp(-(v / vs)^2) and a wrong exponent or sign show (at v = vs they cannot)
    assert torque(stri, 0.25) == pytest.approx(1.0 + np.exp(-0.25) + 0.025, rel=1e-14)
    assert torque(stri, -1.0) == pytest.approx(-(1.0 + np.exp(-4.0)) - 0.1, rel=1e-14)
    np.testing.assert_allclose(gradient(stri, np.array([0.25]))[0],              # d/dvs = (fs - fc) g 2 v^2 / vs^3
                               [np.exp(-0.25), 1 - np.exp(-0.25), np.exp(-0.25), 0.25], rtol=1e-12)
    cou = make_law("coulomb", dict(coulomb=0.8, viscous=0.05, smoothing=0.01))
    assert torque(cou, 0.01) == pytest.approx(0.8 * np.tanh(1.0) + 0.0005, rel=1e-14)
    assert torque(make_law("coulomb", dict(coulomb=0.8)), -0.2) == -0.8
    assert torque(make_law("viscous", dict(viscous=0.3)), 2.0) == pytest.approx(0.6)


@pytest.mark.parametrize("law", [make_law("sigmoid", dict(phi1=0.7, phi2=8.0, phi3=-0.03)),
                                 make_law("stribeck", dict(static=1.1, coulomb=0.6, stribeck_velocity=0.08,
                                                           viscous=0.2)),
                                 make_law("coulomb", dict(coulomb=0.8, viscous=0.05, smoothing=0.1))])
def test_friction_law_gradients_are_the_central_differences(law):
    v = np.linspace(-1.0, 1.0, 41)
    G = gradient(law, v)
    for k, (name, value) in enumerate(law.parameters):
        h = 1e-6 * max(1.0, abs(value))
        up = make_law(law.law, {**law.params, name: value + h})
        down = make_law(law.law, {**law.params, name: value - h})
        np.testing.assert_allclose(G[:, k], (torque(up, v) - torque(down, v)) / (2 * h), atol=1e-7)


# --- the regressor with armature -------------------------------------------------------------

def _with_armature(model, rng):
    return model.with_actuators({name: {"armature": float(a)} for name, a in
                                 zip(model.joint_names, rng.uniform(0.05, 0.5, model.nq))})


@pytest.mark.parametrize("seed", range(5))
def test_regressor_with_armature_columns_is_rnea(seed):
    rng = np.random.default_rng(seed)
    model = rd.load_urdf(str(PANDA)) if seed == 0 else rd.load_urdf(random_urdf(seed, n_links=4 + seed))
    arm = _with_armature(model, rng)
    n = 5
    q, qd, qdd = (rng.uniform(-2, 2, (n, model.nq)) for _ in range(3))
    Y = full_regressor(arm, q, qd, qdd, armature=True)
    assert Y.shape == (n, model.nq, 10 * model.nb + model.nq)
    x = np.concatenate([rd.inertial_parameters(arm), arm.armature])
    tau = rd.rnea(arm, q, qd, qdd)
    np.testing.assert_allclose(Y @ x, tau, rtol=0, atol=1e-12 * max(1.0, np.abs(tau).max()))
    assert np.abs(tau - rd.rnea(model, q, qd, qdd)).max() > 0.01                # the armature shows
    np.testing.assert_array_equal(armature_regressor(model, qdd[0]), np.diag(qdd[0]))


def test_base_parameters_count_the_armature():
    panda = rd.load_urdf(str(PANDA))
    base = rd.base_parameters(panda, friction=True, armature=True)
    assert base.count == 43 + 5 + 21 and base.armature
    kept = [base.names[c] for c in base.independent]
    for j, name in enumerate(panda.joint_names):
        assert ("armature(%s)" % name in kept) == (j >= 2)
    assert "armature(panda_joint1)" in base.descriptions[kept.index("I_zz(panda_link1)")]
    assert "armature(panda_joint2)" in base.descriptions[kept.index("I_zz(panda_link2)")]


def test_identify_refuses_unknown_laws_and_a_mismatched_base():
    panda = rd.load_urdf(str(PANDA))
    z = np.zeros((20, 7))
    with pytest.raises(rd.InputError, match="unknown friction law 'dahl'"):
        rd.identify(panda, z, z, z, z, friction="dahl")
    with pytest.raises(rd.InputError, match="unknown joint"):
        rd.identify(panda, z, z, z, z, friction={"elbow": "sigmoid"})
    base = rd.base_parameters(panda)
    with pytest.raises(rd.InputError, match="armature=False; identify was called with friction=False, armature=True"):
        rd.identify(panda, z, z, z, z, armature=True, base=base)


# --- done when ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def panda():
    return rd.load_urdf(str(PANDA))


@pytest.fixture(scope="module")
def run(panda):
    base = rd.base_parameters(panda, friction=True, armature=True)
    ex = rd.excitation_trajectory(panda, period=PERIOD, harmonics=5, max_iterations=1, friction=True, base=base,
                                  progress=False)
    q, qd, qdd = ex.sample(np.arange(0.0, PERIOD, 1.0 / RATE))
    return dict(base=base, q=q, qd=qd, qdd=qdd)


LAWS = {"sigmoid": [make_law("sigmoid", dict(phi1=a, phi2=b, phi3=c)) for a, b, c in zip(PHI1, PHI2, PHI3)],
        "stribeck": [make_law("stribeck", dict(static=1.4 * c, coulomb=c, stribeck_velocity=0.05 + 0.01 * j,
                                               viscous=0.1 + 0.05 * j)) for j, c in enumerate(PHI1)]}


@pytest.mark.parametrize("law", ["sigmoid", "stribeck"])
def test_identify_recovers_armature_and_friction_law(panda, run, law, capsys):
    q, qd, qdd = run["q"], run["qd"], run["qdd"]
    true = LAWS[law]
    rng = np.random.default_rng(11 if law == "sigmoid" else 12)
    tau = (rd.rnea(panda, q, qd, qdd) + ARMATURE * qdd + np.column_stack([torque(l, qd[:, j]) for j, l in
                                                                          enumerate(true)])
           + rng.normal(0.0, SIGMA_TAU, q.shape))
    res = rd.identify(panda, q, qd, qdd, tau, friction=law, armature=True, base=run["base"])
    arm_error = np.abs(res.armature - ARMATURE) / ARMATURE
    # joints 1 and 2: the base parameter that holds the armature, against its true value
    pi = np.concatenate([rd.inertial_parameters(panda), ARMATURE, np.zeros(21)])
    kept = [res.base.names[c] for c in res.base.independent]
    for j, link in ((0, "panda_link1"), (1, "panda_link2")):
        k = kept.index("I_zz(%s)" % link)
        arm_error[j] = abs(res.parameters[k] - res.base.values(pi)[k]) / ARMATURE[j]
    v = np.linspace(qd.min(axis=0), qd.max(axis=0), 2001)
    law_error = np.array([relative_torque_error(res.friction_laws[j], true[j], v[:, j]) for j in range(7)])
    with capsys.disabled():
        print("\n%s friction, %d samples, noise %g N m: armature error %s %% (joints 1-2: their base parameters); "
              "friction law torque error %s %%; residual rms %s N m"
              % (law, len(q), SIGMA_TAU, np.round(100 * arm_error, 2), np.round(100 * law_error, 2),
                 np.round(res.residual_rms, 4)))
    assert np.isnan(res.armature[:2]).all() and np.isfinite(res.armature[2:]).all()
    assert np.all(arm_error < 0.05), arm_error
    assert np.all(law_error < 0.05), law_error
    assert all(l.law == law for l in res.friction_laws)
    # the prediction includes the nonlinear laws: residual at the noise level
    np.testing.assert_allclose(res.residual_rms, SIGMA_TAU, rtol=0.1)
    np.testing.assert_allclose(tau - res.predict(q, qd, qdd), 0.0, atol=6 * SIGMA_TAU)


def test_consistent_fit_with_laws_per_joint_builds_a_model_that_predicts_it():
    """A planar arm with Stribeck friction on joint 1 and sigmoid on joint 2, friction={joint: law},
    method='consistent': the laws within 1 % of their parameters (0.01 N m noise), and the corrected
    model (armature, friction_laws through with_actuators) reproduces result.predict."""
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rd.InertiaWarning)                     # the textbook rods
        arm = rd.load_urdf(str(ROOT / "urdf" / "textbook" / "two_rod_planar.urdf"), gravity=(0.0, -9.81, 0.0))
    spec = {"joint1": {"armature": 0.3, "friction": {"law": "stribeck", "static": 0.8, "coulomb": 0.5,
                                                     "stribeck_velocity": 0.05, "viscous": 0.1}},
            "joint2": {"armature": 0.2, "friction": {"law": "sigmoid", "phi1": 0.4, "phi2": 10.0, "phi3": -0.02}}}
    true = arm.with_actuators(spec)
    t = np.linspace(0.0, 10.0, 4001)
    q = np.column_stack([np.sin(0.9 * t) + 0.3 * np.sin(2.3 * t), 0.8 * np.sin(1.4 * t + 0.5) + 0.2 * np.sin(3.1 * t)])
    qd = np.gradient(q, t, axis=0)
    qdd = np.gradient(qd, t, axis=0)
    friction = np.column_stack([torque(l, qd[:, j]) for j, l in enumerate(true.friction_laws)])
    tau = rd.rnea(true, q, qd, qdd) + friction + np.random.default_rng(0).normal(0.0, 0.01, q.shape)
    res = rd.identify(arm, q, qd, qdd, tau, friction={"joint1": "stribeck", "joint2": "sigmoid"}, armature=True,
                      method="consistent")
    for fit, name in zip(res.friction_laws, ("joint1", "joint2")):
        want = spec[name]["friction"]
        assert fit.law == want["law"]
        for key, value in fit.parameters:
            assert value == pytest.approx(want[key], rel=0.01, abs=1e-3), (name, key)
    assert res.armature[1] == pytest.approx(0.2, rel=0.01)
    assert np.isnan(res.friction[:, :2]).all()                                # replaced by the laws
    model = res.model
    assert model.friction_laws == res.friction_laws
    np.testing.assert_allclose(model.armature, res.armature, rtol=1e-12)
    laws = np.column_stack([torque(l, qd[:, j]) for j, l in enumerate(model.friction_laws)])
    np.testing.assert_allclose(rd.rnea(model, q, qd, qdd) + laws + res.friction[:, 2], res.predict(q, qd, qdd),
                               atol=1e-9)

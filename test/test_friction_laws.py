"""The friction laws evaluated (docs/ACTUATORS.md): rd.friction_torques on a
model with each law, against values worked out by hand from the formulas;
rd.friction_law_torque / friction_law_gradient, whose parameter derivatives
are checked against central differences."""
import math

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.model.actuators import FrictionLaw

from test_actuators import TWO

STRIBECK = {"law": "stribeck", "static": 1.0, "coulomb": 0.6, "stribeck_velocity": 0.1, "viscous": 0.2}
SIGMOID = {"law": "sigmoid", "phi1": 0.5, "phi2": 4.0, "phi3": 0.25}


def _model(law1, law2=None):
    spec = {"j1": {"friction": law1}}
    if law2 is not None:
        spec["j2"] = {"friction": law2}
    return rd.load_urdf(TWO % "", actuators=spec)


def test_stribeck_by_hand():
    model = _model(STRIBECK)
    # v = 0.1 = vs: (0.6 + 0.4 e^-1) + 0.2 * 0.1; v = -0.2: -(0.6 + 0.4 e^-4) - 0.04; v = 0: 0;
    # v = 0.05 and -0.25 (v / vs = 0.5, -2.5), where the exponent shows: e^-0.25 and e^-6.25 (e^-0.5 and
    # e^-2.5 with exp(-|v / vs|)), and the sign: + and -
    got = rd.friction_torques(model, [[0.1, 0.0], [-0.2, 0.0], [0.0, 0.0], [0.05, 0.0], [-0.25, 0.0]])[:, 0]
    np.testing.assert_allclose(got, [0.6 + 0.4 / math.e + 0.02, -(0.6 + 0.4 * math.exp(-4.0)) - 0.04, 0.0,
                                     0.6 + 0.4 * math.exp(-0.25) + 0.01, -(0.6 + 0.4 * math.exp(-6.25)) - 0.05],
                               rtol=1e-14)
    # the joint j2 keeps its URDF viscous law (0.4)
    assert rd.friction_torques(model, [0.3, 2.0])[1] == pytest.approx(0.8, rel=1e-14)


def test_stribeck_smoothed_by_the_call():
    model = _model(STRIBECK)
    v, s = 0.05, 0.1
    want = (0.6 + 0.4 * math.exp(-0.25)) * math.tanh(0.5) + 0.2 * v
    assert rd.friction_torques(model, [v, 0.0], smoothing=s)[0] == pytest.approx(want, rel=1e-14)


def test_sigmoid_by_hand():
    model = _model(SIGMOID)
    sig = lambda x: 1.0 / (1.0 + math.exp(-x))                  # noqa: E731
    for v in (-1.0, -0.25, 0.0, 0.1, 2.0):
        want = 0.5 * sig(4.0 * (v + 0.25)) - 0.5 * sig(1.0)
        assert rd.friction_torques(model, [v, 0.0])[0] == pytest.approx(want, rel=1e-13, abs=1e-16), v
    # v = -0.25: 0.5 * 1/2 - 0.5 / (1 + e^-1)
    assert rd.friction_torques(model, [-0.25, 0.0])[0] == pytest.approx(0.25 - 0.5 / (1 + math.exp(-1)), rel=1e-13)
    assert rd.friction_torques(model, [0.0, 0.0])[0] == 0.0
    # the smoothing of the call does not touch the sigmoid (continuous already)
    assert rd.friction_torques(model, [0.1, 0.0], smoothing=0.5)[0] == rd.friction_torques(model, [0.1, 0.0])[0]


def test_coulomb_with_its_own_smoothing_over_the_calls():
    model = _model({"law": "coulomb", "coulomb": 0.8, "viscous": 0.05, "smoothing": 0.01})
    want = 0.8 * math.tanh(0.5) + 0.05 * 0.005
    for s in (0.0, 0.2):
        assert rd.friction_torques(model, [0.005, 0.0], smoothing=s)[0] == pytest.approx(want, rel=1e-14)


def test_viscous_law_and_urdf_coulomb_unchanged():
    model = rd.load_urdf(TWO % "")          # j1: coulomb 0.2 + viscous 0.7 (URDF); j2: viscous 0.4
    np.testing.assert_allclose(rd.friction_torques(model, [-0.5, 1.0]), [-0.2 - 0.35, 0.4], rtol=1e-15)
    np.testing.assert_allclose(rd.friction_torques(model, [0.01, 1.0], smoothing=0.01),
                               [0.2 * math.tanh(1.0) + 0.007, 0.4], rtol=1e-15)


def test_batches_and_the_per_joint_function_agree():
    model = _model(STRIBECK, SIGMOID)
    QD = np.random.default_rng(3).uniform(-1, 1, (4, 3, 2))
    tau = rd.friction_torques(model, QD, smoothing=0.02)
    assert tau.shape == (4, 3, 2)
    for j, law in enumerate(model.friction_laws):
        np.testing.assert_allclose(tau[..., j], rd.friction_law_torque(law, QD[..., j], smoothing=0.02),
                                   rtol=1e-13, atol=1e-15)


def test_friction_opposes_the_motion_for_every_law():
    v = np.linspace(-2, 2, 41)
    for spec in (STRIBECK, SIGMOID, {"law": "coulomb", "coulomb": 0.3}, {"law": "viscous", "viscous": 0.3}):
        tau = rd.friction_torques(_model(spec), np.stack([v, 0 * v], axis=-1))[:, 0]
        assert np.all(tau * v >= 0.0), spec
        if spec["law"] != "stribeck":                # the Stribeck dip: falls from static to coulomb
            assert np.all(np.diff(tau) >= 0.0), spec


LAWS = [FrictionLaw("viscous", (("viscous", 0.3),)),
        FrictionLaw("coulomb", (("coulomb", 0.8), ("viscous", 0.05), ("smoothing", 0.02))),
        FrictionLaw("stribeck", (("static", 1.0), ("coulomb", 0.6), ("stribeck_velocity", 0.1), ("viscous", 0.2))),
        FrictionLaw("sigmoid", (("phi1", 0.5), ("phi2", 4.0), ("phi3", 0.25)))]


@pytest.mark.parametrize("law", LAWS, ids=lambda law: law.law)
def test_parameter_gradient_is_the_derivative(law):
    v = np.array([-0.7, -0.05, 0.03, 0.2, 1.5])
    tau, J = rd.friction_law_gradient(law, v)
    assert tau.shape == (5,) and J.shape == (5, len(law.parameters))
    np.testing.assert_array_equal(tau, rd.friction_law_torque(law, v))
    for k, (name, value) in enumerate(law.parameters):
        h = 1e-6 * max(1.0, abs(value))
        up = FrictionLaw(law.law, tuple((n, x + h if n == name else x) for n, x in law.parameters))
        down = FrictionLaw(law.law, tuple((n, x - h if n == name else x) for n, x in law.parameters))
        fd = (rd.friction_law_torque(up, v) - rd.friction_law_torque(down, v)) / (2 * h)
        np.testing.assert_allclose(J[:, k], fd, rtol=1e-6, atol=1e-8, err_msg=name)


def test_gradient_is_linear_in_the_linear_parameters():
    """tau = J theta for the laws linear in their parameters (viscous, coulomb at fixed smoothing)."""
    v = np.linspace(-1, 1, 9)
    for law in LAWS[:2]:
        tau, J = rd.friction_law_gradient(law, v)
        theta = np.array([x for n, x in law.parameters if n != "smoothing"])
        np.testing.assert_allclose(J[:, :len(theta)] @ theta, tau, rtol=1e-14)


def test_bad_velocities_are_named():
    with pytest.raises(rd.InputError, match="qd must be finite"):
        rd.friction_law_torque(LAWS[0], [0.0, np.nan])
    with pytest.raises(rd.InputError, match="smoothing must be"):
        rd.friction_law_torque(LAWS[0], 0.0, smoothing=-1.0)


def test_a_floating_root_has_no_friction_and_its_joints_their_laws():
    fixed = rd.load_urdf(PANDA := "urdf/panda_arm.urdf")
    spec = {"panda_joint2": {"friction": STRIBECK}, "panda_joint5": {"friction": SIGMOID}}
    floating = rd.load_urdf(PANDA, root_joint="floating", actuators=spec)
    v = np.linspace(-0.5, 0.7, floating.nv)
    tau = rd.friction_torques(floating, v)
    assert not tau[:6].any()
    np.testing.assert_allclose(tau[6:], rd.friction_torques(fixed.with_actuators(spec), v[6:]), rtol=1e-15)


def test_gradient_columns_follow_the_parameters_order_given():
    law = LAWS[2]
    shuffled = FrictionLaw(law.law, tuple(reversed(law.parameters)))
    v = np.array([-0.3, 0.02, 0.4])
    np.testing.assert_array_equal(rd.friction_law_gradient(shuffled, v)[1],
                                  rd.friction_law_gradient(law, v)[1][:, ::-1])

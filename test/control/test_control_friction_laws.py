"""dynamics_node's modes with friction laws, without DDS: gravity_coriolis_friction
compensates each joint's law, feedforward and computed_torque add it with
tracking_friction (at the desired velocity, at the measured one), and the momentum
observer subtracts it (observer_friction). The Panda with a stribeck law on joints 1-4
and a sigmoid law on 5-7; the friction torques by hand from the laws' formulas."""
import math
import pathlib

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.control.compensation import (COMPUTED_TORQUE, FEEDFORWARD, GRAVITY_CORIOLIS_FRICTION,
                                                 Compensation)
from robot_dynamics.control.external_torque import ExternalTorqueMonitor
from robot_dynamics.control.laws import gains, laws_of

PANDA = pathlib.Path(__file__).resolve().parents[2] / 'urdf' / 'panda_arm.urdf'
PLAIN = rd.load_urdf(str(PANDA))
NAMES = PLAIN.joint_names
STRIBECK = dict(static=1.2, coulomb=0.7, stribeck_velocity=0.1, viscous=0.3)
SIGMOID = dict(phi1=0.6, phi2=5.0, phi3=0.05)
MODEL = PLAIN.with_actuators({n: {'friction': dict(law='stribeck', **STRIBECK) if i < 4 else
                                  dict(law='sigmoid', **SIGMOID)} for i, n in enumerate(NAMES)})
Q = np.array([0.1, -0.6, 0.2, -2.0, 0.3, 1.6, 0.7])
QD = np.array([0.2, -0.05, 0.4, -0.3, 0.25, -0.6, 0.1])


def by_hand(qd, s):
    """The laws' formulas, joint by joint: stribeck with tanh(v / s), sigmoid as it is."""
    out = []
    for i, v in enumerate(qd):
        if i < 4:
            p = STRIBECK
            level = p['coulomb'] + (p['static'] - p['coulomb']) * math.exp(-(v / p['stribeck_velocity']) ** 2)
            out.append(level * (math.tanh(v / s) if s > 0 else math.copysign(1.0, v) if v else 0.0)
                       + p['viscous'] * v)
        else:
            p = SIGMOID
            sig = lambda x: 1.0 / (1.0 + math.exp(-x))                     # noqa: E731
            out.append(p['phi1'] * sig(p['phi2'] * (v + p['phi3'])) - p['phi1'] * sig(p['phi2'] * p['phi3']))
    return np.array(out)


def test_gravity_coriolis_friction_compensates_the_laws():
    comp = Compensation(MODEL, GRAVITY_CORIOLIS_FRICTION, friction_smoothing=0.01)
    total = comp.compute(Q, QD).copy()
    np.testing.assert_allclose(comp.friction, by_hand(QD, 0.01), rtol=1e-12)
    np.testing.assert_allclose(total, rd.nonlinear_effects(MODEL, Q, QD) + by_hand(QD, 0.01), rtol=1e-12)


@pytest.mark.parametrize('tracking', (False, True))
def test_feedforward_adds_the_laws_at_the_desired_velocity(tracking):
    k = gains([], NAMES, list(NAMES))
    ff = laws_of(MODEL, NAMES, FEEDFORWARD, 0.01, k, k, int(0.1e9), tracking_friction=tracking).feedforward
    q_d, qd_d, qdd_d = Q + 0.05, QD[::-1].copy(), np.linspace(-1, 1, 7)
    want = rd.rnea(MODEL, q_d, qd_d, qdd_d) + (by_hand(qd_d, 0.01) if tracking else 0.0)
    np.testing.assert_allclose(ff(Q, QD, q_d, qd_d, qdd_d), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize('tracking', (False, True))
def test_computed_torque_adds_the_laws_at_the_measured_velocity(tracking):
    kp, kd = np.full(7, 100.0), np.full(7, 20.0)
    ct = laws_of(MODEL, NAMES, COMPUTED_TORQUE, 0.0, kp, kd, int(0.1e9), tracking_friction=tracking).computed_torque
    q_d, qd_d, qdd_d = Q + 0.05, QD[::-1].copy(), np.linspace(-1, 1, 7)
    a = qdd_d + kd * (qd_d - QD) + kp * (q_d - Q)
    want = rd.rnea(MODEL, Q, QD, a) + (by_hand(QD, 0.0) if tracking else 0.0)
    np.testing.assert_allclose(ct(Q, QD, q_d, qd_d, qdd_d), want, rtol=1e-12, atol=1e-12)


def test_the_observer_subtracts_the_laws():
    """Joint 1 turning at constant speed (M, g constant about the vertical): the motor torque
    h + tau_f is no external torque with observer_friction, and -tau_f without it."""
    qd = np.zeros(7)
    qd[0] = 0.5
    fr = by_hand(qd, 0.01)
    assert fr[0] > 0.7                                           # coulomb + viscous, past the Stribeck peak
    runs = {}
    for smoothing in (None, 0.01):
        mon = ExternalTorqueMonitor(MODEL, 50.0, max_gap=0.1, friction_smoothing=smoothing)
        q = Q.copy()
        for k in range(400):
            mon.update(k * 10**6, q, qd, rd.nonlinear_effects(MODEL, q, qd) + fr)
            q = q + 1e-3 * qd
        runs[smoothing] = mon.residual.copy()
    assert np.abs(runs[0.01]).max() < 1e-3 * fr[0]
    assert abs(runs[None][0] + fr[0]) < 0.01 * fr[0]

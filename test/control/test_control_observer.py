"""dynamics_node's observer and payload helpers without DDS: efforts merged by name,
ExternalTorqueMonitor and the payload fit of joint-state samples (the answer of
~/identify_payload from the node's thread: test_ros_service_thread_units.py).

The observer's sampled form (robot_dynamics/identification/observer.py) is exact for
data from a semi-implicit Euler step with the torque held over the step: then
``r_{k+1} = r_k + K dt (tau_ext - r_k)``, a discrete first-order filter. The tests
generate such data with rd.aba and check the residual against that recursion. A joint
state's effort is the torque that acted UP TO it (what simulator_node publishes: the
torque of its last step), so sample k carries the torque held from k-1.
"""
import array
import pathlib
import threading
import time

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.control.external_torque import ExternalTorqueMonitor
from robot_dynamics.control.joint_map import JointMapError, JointStateMerger
from robot_dynamics.control.payload_fit import SampleBuffer, fit_payload, payload_entry, samples_from_messages

PANDA = pathlib.Path(__file__).resolve().parents[2] / 'urdf' / 'panda_arm.urdf'

MODEL = rd.load_urdf(str(PANDA))
Q0 = np.array([0.1, -0.6, 0.2, -2.0, 0.3, 1.6, 0.7])
LINK = 'panda_link8'
F_LINK = np.array([2.0, -3.0, 6.0, 0.2, 0.1, -0.3])     # [f; n] at the link origin, link axes
PAYLOAD = dict(mass=1.5, com=np.array([0.01, -0.02, 0.06]), inertia=np.diag([0.004, 0.005, 0.003]))


def external_torque(model, q, f=F_LINK, link=LINK):
    """J_link^T F of a wrench in link axes: what rnea's f_ext takes away, ``g - rnea(q, 0, 0, f_ext)``."""
    return rd.gravity_torques(model, q) - rd.rnea(model, q, np.zeros(model.nq), np.zeros(model.nq), f_ext={link: f})


def euler_run(model, n, dt, push_from=None, q0=Q0):
    """Semi-implicit Euler of rd.aba under a PD law around a sine, a push J^T F from sample ``push_from``.

    Returns (q, qd, tau_motor, tau_ext), (n, nq): the sample k and the torques held from it on."""
    q, qd = q0.copy(), np.zeros(model.nq)
    Q, QD, TAU, EXT = (np.empty((n, model.nq)) for _ in range(4))
    for k in range(n):
        target = q0 + 0.2 * np.sin(2 * np.pi * 0.8 * k * dt + np.arange(model.nq))
        tau = rd.gravity_torques(model, q) + 40.0 * (target - q) - 4.0 * qd
        ext = external_torque(model, q) if push_from is not None and k >= push_from else np.zeros(model.nq)
        Q[k], QD[k], TAU[k], EXT[k] = q, qd, tau, ext
        qd = qd + dt * rd.aba(model, q, qd, tau + ext)
        q = q + dt * qd
    return Q, QD, TAU, EXT


# --- efforts in the merger ----------------------------------------------------------------------

def d(values):
    return array.array('d', values)


def test_efforts_merge_by_name_and_are_ready_when_every_joint_has_one():
    m = JointStateMerger(('j1', 'j2', 'j3'))
    with pytest.raises(JointMapError, match='no joint state accepted yet'):
        m.update_effort(d([1.0]))
    m.update(['j2', 'gripper'], d([0.2, 0.0]))
    assert not m.update_effort(d([20.0, 99.0]))                 # the gripper's effort is not ours
    m.update(['j3', 'j1'], d([0.3, 0.1]))
    assert m.update_effort(d([30.0, 10.0])) and m.efforts_ready
    np.testing.assert_array_equal(m.effort, [10, 20, 30])
    m.update(['j1', 'j2', 'j3'], d([0, 0, 0]))
    with pytest.raises(JointMapError, match='effort has 2 values for 3 names'):
        m.update_effort(d([1.0, 2.0]))
    with pytest.raises(JointMapError, match='non-finite effort for joint.*j2'):
        m.update_effort(d([1.0, float('nan'), 3.0]))
    np.testing.assert_array_equal(m.effort, [10, 20, 30])       # unchanged by the rejected ones
    with pytest.raises(JointMapError):
        m.update(['j1'], d([float('nan')]))
    assert m.update_effort(d([1.0, 2.0, 3.0]))                  # the last ACCEPTED message's names
    np.testing.assert_array_equal(m.effort, [1, 2, 3])
    m.reset()
    assert not m.efforts_ready and not m.effort.any()


# --- ExternalTorqueMonitor ----------------------------------------------------------------------

def test_monitor_follows_the_discrete_filter_of_a_push_and_gives_the_wrench():
    dt, K, n, k0 = 1e-3, 40.0, 500, 100
    Q, QD, TAU, EXT = euler_run(MODEL, n, dt, push_from=k0)
    mon = ExternalTorqueMonitor(MODEL, K, np.full(7, 1.0), LINK, max_gap=0.1)
    t0 = 1_700_000_000 * 10**9                    # a wall-clock stamp: dt must come out exact
    r = np.zeros(7)                               # the recursion the observer must follow
    events = []
    for k in range(n):
        assert mon.update(t0 + k * 1_000_000, Q[k], QD[k], TAU[k - 1] if k else np.full(7, np.pi))
        np.testing.assert_allclose(mon.residual, r, rtol=0, atol=1e-9)
        r = r + (1 - np.exp(-K * dt)) * (EXT[k] - r)
        if mon.event is not None:
            events.append((k, mon.event, list(mon.over()), mon.residual.copy()))
    # Pushed for 0.4 s (16 time constants): the estimate is the push, the wrench the applied one.
    np.testing.assert_allclose(mon.residual, EXT[-1], rtol=0, atol=0.02 * np.abs(EXT[-1]).max())
    np.testing.assert_allclose(mon.wrench(Q[-1]), F_LINK, rtol=0, atol=0.05 * np.abs(F_LINK).max())
    # One event: the rising edge, after the push began, naming the joints over 1 N m then.
    assert [e[1] for e in events] == [True] and events[0][0] > k0
    k, _, over, r_k = events[0]
    assert over and over == list(np.flatnonzero(np.abs(r_k) > 1.0))


def test_observer_torque_at_start_and_end_are_the_same_data_shifted():
    """The library's two conventions on one run: the held torque given with the sample that starts
    its interval ('start') or with the one that ends it ('end') gives the same residual; 'end' fed
    the held torque instead is off by the torque's change over one sample, low-passed:
    e_k = a e_{k-1} - (1 - a) (tau_k - tau_{k-1}), a = exp(-K dt), as the observer module says."""
    dt, K, n = 1e-3, 50.0, 300
    Q, QD, TAU, EXT = euler_run(MODEL, n, dt, push_from=50)
    start, end, wrong = (rd.MomentumObserver(MODEL, K, torque_at=w) for w in ('start', 'end', 'end'))
    e = np.zeros(7)
    for k in range(n):
        start.update(Q[k], QD[k], TAU[k], dt)
        end.update(Q[k], QD[k], TAU[k - 1] if k else TAU[0], dt)
        wrong.update(Q[k], QD[k], TAU[k], dt)
        if k:
            e = np.exp(-K * dt) * e - (1 - np.exp(-K * dt)) * (TAU[k] - TAU[k - 1])
        np.testing.assert_allclose(end.residual, start.residual, rtol=0, atol=1e-10)
        np.testing.assert_allclose(wrong.residual - start.residual, e, rtol=0, atol=1e-10)
    assert np.abs(e).max() > 1e-3
    with pytest.raises(ValueError, match="torque_at must be 'start' or 'end'"):
        rd.MomentumObserver(MODEL, K, torque_at='middle')


def test_observer_is_the_exact_first_order_filter_even_across_a_late_sample():
    """The arm held still at Q0 against an external torque: the motors give g - ext, qd = 0, so each interval's
    external torque is ext exactly and the residual is the continuous filter's step response ext (1 - exp(-K t)).
    Then the push ends and the next sample comes 150 ms late (K dt = 7.5): the residual decays by exp(-7.5).
    Euler's step of the filter (r += K dt (ext - r)) would have made it -6.5 times the last estimate."""
    K, dt = 50.0, 1e-3
    g, ext, qd = rd.gravity_torques(MODEL, Q0), external_torque(MODEL, Q0), np.zeros(7)
    obs = rd.MomentumObserver(MODEL, K)
    for k in range(100):
        r = obs.update(Q0, qd, g - ext, dt)
        np.testing.assert_allclose(r, ext * (1 - np.exp(-K * k * dt)), rtol=0, atol=1e-9)
    r_before = obs.update(Q0, qd, g, dt)          # held from here on: g alone (the push ends)
    np.testing.assert_allclose(r_before, ext * (1 - np.exp(-K * 0.1)), rtol=0, atol=1e-9)
    late = obs.update(Q0, qd, g, 0.150)
    np.testing.assert_allclose(late, np.exp(-K * 0.150) * r_before, rtol=0, atol=1e-9)
    assert np.abs(late).max() < 1e-3 * np.abs(ext).max()
    assert obs.time == pytest.approx(0.1 + 0.150)


def test_monitor_skips_old_stamps_restarts_after_a_gap_and_clears_with_an_event():
    g = rd.gravity_torques(MODEL, Q0)
    ext = external_torque(MODEL, Q0)
    z = np.zeros(7)
    mon = ExternalTorqueMonitor(MODEL, 50.0, np.full(7, 0.5), max_gap=0.1)
    t = 5 * 10**9
    for k in range(300):                                       # at rest, pushed: r -> ext
        mon.update(t + k * 10**6, Q0, z, g - ext)
    assert mon.in_collision
    np.testing.assert_allclose(mon.residual, ext, atol=1e-6 * np.abs(ext).max())
    before = mon.residual.copy()
    assert not mon.update(t + 299 * 10**6, Q0, z, g)           # same stamp: skipped
    assert not mon.update(t + 100 * 10**6, Q0, z, g)           # older: skipped
    assert mon.skipped == 2 and np.array_equal(mon.residual, before)
    assert mon.update(t + 500 * 10**6, Q0, z, g)               # 0.2 s later: restarted at zero
    assert mon.restarts == 1 and not mon.residual.any()
    assert mon.event is False and not mon.in_collision          # the collision cleared, once
    mon.update(t + 501 * 10**6, Q0, z, g)
    assert mon.event is None


def test_monitor_removes_urdf_friction_when_asked():
    """A joint moving at constant speed against URDF friction: the motor torque g + friction
    is no external torque with friction_smoothing given, and -friction without it."""
    model = rd.load_urdf(str(PANDA))
    qd = np.zeros(7)
    qd[0] = 0.5                                                 # joint 1 turns about the vertical: M, g constant
    fr = rd.friction_torques(model, qd, smoothing=0.01)
    assert fr[0] > 0
    runs = {}
    for smoothing in (None, 0.01):
        mon = ExternalTorqueMonitor(model, 50.0, max_gap=0.1, friction_smoothing=smoothing)
        q = Q0.copy()
        for k in range(400):
            tau = rd.nonlinear_effects(model, q, qd) + fr
            mon.update(k * 10**6, q, qd, tau)
            q = q + 1e-3 * qd
        runs[smoothing] = mon.residual.copy()
    assert abs(runs[0.01][0]) < 1e-3 * fr[0]
    assert abs(runs[None][0] + fr[0]) < 0.01 * fr[0]


def test_monitor_refuses_a_base_link_and_bad_gains():
    with pytest.raises(ValueError, match='fixed to the base'):
        ExternalTorqueMonitor(MODEL, 10.0, link='panda_link0', max_gap=0.1)
    with pytest.raises(ValueError, match='gains must be positive'):
        ExternalTorqueMonitor(MODEL, [10.0] * 6 + [0.0], max_gap=0.1)


# --- payload fit ------------------------------------------------------------------------------

def loaded_model():
    return MODEL.with_payload(LINK, PAYLOAD['mass'], PAYLOAD['com'], PAYLOAD['inertia'])


def test_static_fit_uses_only_the_samples_at_rest():
    loaded = loaded_model()
    rng = np.random.default_rng(3)
    poses = Q0 + rng.uniform(-0.6, 0.6, (12, 7))
    q = np.repeat(poses, 20, axis=0)
    qd = np.zeros_like(q)
    qd[10::20] = 0.5                                           # moving samples between the poses
    tau = rd.gravity_torques(loaded, q) + np.where(qd != 0, 30.0, 0.0)   # and what moving them took
    t = np.arange(len(q)) * 0.005
    est, used = fit_payload(MODEL, LINK, t, q, qd, tau, static=True, rest_velocity=0.01)
    assert used == len(q) - 12 and est.static
    assert abs(est.mass - PAYLOAD['mass']) < 1e-6 and np.abs(est.com - PAYLOAD['com']).max() < 1e-6
    with pytest.raises(ValueError, match='0 of 3 samples are at rest'):
        fit_payload(MODEL, LINK, t[:3], q[:3], np.ones((3, 7)), tau[:3], static=True, rest_velocity=0.01)


def test_dynamic_fit_differentiates_irregular_samples():
    """A smooth motion sampled at 200 Hz with 5 % of the samples missing and shuffled: the
    accelerations come from the filter, the payload within 1 % / 5 mm of the true one."""
    loaded = loaded_model()
    t = np.arange(0, 4.0, 0.005)
    w = 2 * np.pi * np.array([0.3, 0.4, 0.5, 0.35, 0.6, 0.45, 0.55])
    q = Q0 + 0.4 * np.sin(np.outer(t, w))
    qd = 0.4 * w * np.cos(np.outer(t, w))
    qdd = -0.4 * w ** 2 * np.sin(np.outer(t, w))
    tau = rd.rnea(loaded, q, qd, qdd)
    rng = np.random.default_rng(5)
    keep = rng.permutation(np.flatnonzero(rng.random(len(t)) > 0.05))
    est, used = fit_payload(MODEL, LINK, t[keep], q[keep], qd[keep], tau[keep], static=False, rest_velocity=0.01)
    span = t[keep].max() - t[keep].min()
    assert not est.static and used == int(round(span / 0.005)) + 1          # back on the 5 ms grid
    assert abs(est.mass - PAYLOAD['mass']) < 0.01 * PAYLOAD['mass']
    assert np.linalg.norm(est.com - PAYLOAD['com']) < 0.005
    mass, com, inertia = payload_entry(est)
    assert mass == est.mass and np.array_equal(inertia, inertia.T)


def test_samples_from_messages_name_the_bad_one():
    JointState = pytest.importorskip('sensor_msgs.msg').JointState      # the request's message type
    names = list(MODEL.joint_names)
    good = JointState(name=names[::-1], position=list(Q0[::-1]), velocity=[0.0] * 7, effort=list(range(7)))
    good.header.stamp.sec, good.header.stamp.nanosec = 3, 500_000_000
    t, q, qd, tau = samples_from_messages(names, [good])
    assert t[0] == 3.5 and np.array_equal(q[0], Q0) and np.array_equal(tau[0], np.arange(7)[::-1])
    with pytest.raises(ValueError, match=r'samples\[1\] has no efforts'):
        samples_from_messages(names, [good, JointState(name=names, position=list(Q0))])
    bad = JointState(name=names, position=list(Q0), effort=[0.0] * 6)
    with pytest.raises(ValueError, match=r'samples\[0\]: effort has 6 values'):
        samples_from_messages(names, [bad])


def test_sample_buffer_keeps_copies():
    buf = SampleBuffer()
    q = np.zeros(7)
    for k in range(3):
        q[:] = k
        buf.add(10**9 + k * 2_000_000, q, -q, 2 * q)
    t, Q, QD, TAU = buf.arrays()
    np.testing.assert_allclose(t, [0, 0.002, 0.004], atol=1e-15)
    assert np.array_equal(Q[:, 0], [0, 1, 2]) and np.array_equal(QD[:, 3], [0, -1, -2])
    assert np.array_equal(TAU[2], np.full(7, 4.0))

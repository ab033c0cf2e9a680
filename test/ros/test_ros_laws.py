"""robot_dynamics.control.compensation and .trajectory without DDS."""
import numpy as np
import pytest
from builtin_interfaces.msg import Duration
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

import robot_dynamics as rd
from robot_dynamics.control.compensation import (MODES, Compensation, TorqueLimiter, computed_torque,
                                             feedforward)
from robot_dynamics.control.joint_map import JointMapError
from robot_dynamics.control.trajectory import (TrajectorySampler, fill_trajectory_efforts,
                                           trajectory_efforts)

from conftest import PANDA

MODEL = rd.load_urdf(str(PANDA))
NAMES = list(MODEL.joint_names)
rng = np.random.default_rng(7)
Q, QD, QDD = rng.uniform(-1, 1, (3, 7))


@pytest.mark.parametrize('mode', MODES)
def test_compensation_modes(mode):
    comp = Compensation(MODEL, mode, friction_smoothing=0.05)
    total = comp.compute(Q, QD)
    g = rd.gravity_torques(MODEL, Q)
    np.testing.assert_allclose(comp.gravity, g, atol=1e-12)
    want = g
    if mode != 'gravity':
        want = rd.nonlinear_effects(MODEL, Q, QD)
        np.testing.assert_allclose(comp.coriolis, want - g, atol=1e-12)
    if mode == 'gravity_coriolis_friction':
        want = want + rd.friction_torques(MODEL, QD, smoothing=0.05)
    np.testing.assert_allclose(total, want, atol=1e-12)
    with pytest.raises(ValueError, match='mode must be one of'):
        Compensation(MODEL, 'antigravity')


def test_feedforward_and_computed_torque_laws():
    M, h = rd.mass_matrix(MODEL, Q), rd.nonlinear_effects(MODEL, Q, QD)
    q_d, qd_d, qdd_d = Q + 0.1, QD - 0.2, QDD
    kp, kd = np.linspace(10, 70, 7), np.linspace(1, 7, 7)
    want = M @ (qdd_d + kd * (qd_d - QD) + kp * (q_d - Q)) + h
    np.testing.assert_allclose(computed_torque(MODEL, Q, QD, q_d, qd_d, qdd_d, kp, kd), want, atol=1e-9)
    Md = rd.mass_matrix(MODEL, q_d)
    want = Md @ qdd_d + rd.coriolis_matrix(MODEL, q_d, qd_d) @ qd_d + rd.gravity_torques(MODEL, q_d)
    np.testing.assert_allclose(feedforward(MODEL, q_d, qd_d, qdd_d), want, atol=1e-9)


def test_limiter_clamps_counts_and_refuses_non_finite():
    lim = TorqueLimiter(np.array([10.0, 5.0, np.inf]), scale=0.5)
    tau = np.array([7.0, -1.0, 1e6])
    assert lim.apply(tau) and lim.clamped and lim.clamp_events == 1
    np.testing.assert_array_equal(tau, [5.0, -1.0, 1e6])
    tau = np.array([1.0, -3.0, 0.0])
    assert lim.apply(tau) and lim.clamped and lim.clamp_events == 2
    np.testing.assert_array_equal(tau, [1.0, -2.5, 0.0])
    tau = np.array([1.0, -2.0, 0.0])
    assert lim.apply(tau) and not lim.clamped and lim.clamp_events == 2
    assert lim.apply(np.array([9.0, 0, 0]), count=False) and lim.clamp_events == 2
    tau = np.array([1.0, np.nan, 0.0])
    assert not lim.apply(tau)
    assert not lim.bounded
    with pytest.raises(ValueError, match=r'\(0, 1\]'):
        TorqueLimiter([1.0], scale=0.0)


def traj(points, names=NAMES, **kw):
    t = JointTrajectory(joint_names=list(names))
    for time, pos, *rest in points:
        p = JointTrajectoryPoint(positions=list(map(float, pos)),
                                 time_from_start=Duration(sec=int(time), nanosec=int(round((time % 1) * 1e9))))
        if rest:
            p.velocities = list(map(float, rest[0]))
        if len(rest) > 1:
            p.accelerations = list(map(float, rest[1]))
        t.points.append(p)
    return t


def _consistent(s, t0, t1):
    """Sampled qd / qdd agree with finite differences of q / qd inside (t0, t1)."""
    for t in np.linspace(t0, t1, 9)[1:-1]:
        eps = 1e-6
        qa, qda, _ = [x.copy() for x in s.sample(t - eps)]
        qb, qdb, _ = [x.copy() for x in s.sample(t + eps)]
        _, qd, qdd = [x.copy() for x in s.sample(t)]
        np.testing.assert_allclose((qb - qa) / (2 * eps), qd, atol=1e-5)
        np.testing.assert_allclose((qdb - qda) / (2 * eps), qdd, atol=1e-4)


def test_sampler_linear_cubic_quintic():
    p0, p1 = Q, Q + 0.5
    s = TrajectorySampler(NAMES, traj([(1.0, p0), (3.0, p1)]))
    assert s.order == 1
    q, qd, qdd = s.sample(2.0)
    np.testing.assert_allclose(q, (p0 + p1) / 2)
    np.testing.assert_allclose(qd, (p1 - p0) / 2)
    np.testing.assert_allclose(qdd, 0)
    q, qd, _ = s.sample(0.5)                       # before the first point: hold it, at rest
    np.testing.assert_allclose(q, p0) and np.testing.assert_allclose(qd, 0)
    q, qd, qdd = s.sample(10.0)                    # after the end: hold the last, at rest
    np.testing.assert_allclose(q, p1)
    assert not qd.any() and not qdd.any()

    v0, v1 = QD, -QD
    s = TrajectorySampler(NAMES, traj([(0.0, p0, v0), (2.0, p1, v1)]))
    assert s.order == 3
    q, qd, _ = s.sample(0.0)
    np.testing.assert_allclose(q, p0) and np.testing.assert_allclose(qd, v0)
    q, qd, _ = s.sample(2.0 - 1e-12)
    np.testing.assert_allclose(q, p1, atol=1e-9) and np.testing.assert_allclose(qd, v1, atol=1e-9)
    _consistent(s, 0.0, 2.0)

    a0, a1 = QDD, 2 * QDD
    s = TrajectorySampler(NAMES, traj([(0.0, p0, v0, a0), (1.5, p1, v1, a1), (2.0, p0, v0, a0)]))
    assert s.order == 5
    _, _, qdd = s.sample(0.0)
    np.testing.assert_allclose(qdd, a0)
    q, qd, qdd = s.sample(1.5 - 1e-12)
    np.testing.assert_allclose(q, p1, atol=1e-8)
    np.testing.assert_allclose(qd, v1, atol=1e-8)
    np.testing.assert_allclose(qdd, a1, atol=1e-6)
    _consistent(s, 0.0, 1.5)
    _consistent(s, 1.5, 2.0)


def test_sampler_maps_names_and_holds_a_set_point():
    perm = [6, 5, 4, 3, 2, 1, 0]
    t = traj([(0.0, Q[perm], QD[perm], QDD[perm])], names=[NAMES[i] for i in perm] + [])
    s = TrajectorySampler(NAMES, t, hold_first=True)
    q, qd, qdd = s.sample(123.0)
    np.testing.assert_allclose(q, Q) and np.testing.assert_allclose(qd, QD)
    np.testing.assert_allclose(qdd, QDD)


def test_sampler_errors_say_what_is_wrong():
    with pytest.raises(JointMapError, match='misses model joint.*panda_joint7'):
        TrajectorySampler(NAMES, traj([(0, Q[:6])], names=NAMES[:6]))
    with pytest.raises(JointMapError, match='no points'):
        TrajectorySampler(NAMES, traj([]))
    with pytest.raises(JointMapError, match='point 1: positions has 3 values'):
        TrajectorySampler(NAMES, traj([(0, Q), (1, Q[:3])]))
    with pytest.raises(JointMapError, match='increase strictly'):
        TrajectorySampler(NAMES, traj([(1, Q), (1, Q)]))
    with pytest.raises(JointMapError, match='point 0: non-finite'):
        TrajectorySampler(NAMES, traj([(0, [np.nan] * 7)]))


def test_fill_trajectory_efforts_batch():
    K = 6
    Qs, QDs, QDDs = rng.uniform(-1, 1, (3, K, 7))
    t = traj([(0.1 * k, Qs[k], QDs[k], QDDs[k]) for k in range(K)])
    out = fill_trajectory_efforts(MODEL, t)
    got = np.array([p.effort for p in out.points])
    want = np.array([rd.rnea(MODEL, Qs[k], QDs[k], QDDs[k]) for k in range(K)])
    np.testing.assert_allclose(got, want, atol=1e-10)
    assert all(len(p.effort) == 0 for p in t.points), 'the input must stay unchanged'
    np.testing.assert_allclose(trajectory_efforts(MODEL, Qs, QDs, QDDs), want, atol=1e-10)
    # Positions only: zero velocities and accelerations -> gravity.
    out = fill_trajectory_efforts(MODEL, traj([(0.1 * k, Qs[k]) for k in range(K)]), include_friction=True)
    np.testing.assert_allclose([p.effort for p in out.points], rd.gravity_torques(MODEL, Qs), atol=1e-10)

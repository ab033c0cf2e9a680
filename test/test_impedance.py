"""Joint and Cartesian impedance (robot_dynamics.analysis.impedance) on the simulated Panda.

The physics the laws promise (Ott 2008 ch. 3; Handbook sec. 7.4-7.5), checked
in the library's simulator at 1 kHz with RK4 on the model the law uses:

- at rest under a constant external force F (moment tau) at the flange, the
  displacement is K^-1 F (the angle K^-1 tau), within 0.5 %, and along the
  other axes less than 0.1 % of it (docs/IMPEDANCE.md: 0.9985 to 1.0000, and
  0.017 %); in joint space q - q_d = K^-1 J^T F at rest, to 1e-7 of its largest;
- a 5 cm step of the target settles to 1 mm in the time the closed loop
  Lambda e'' + D e' + K e = 0 predicts at the start (its modes, each
  critically damped), within 2 %, overshooting by less than 0.5 %;
- the null-space posture term moves the elbow and not the flange;
- a one-joint pendulum by hand, the modal damping's ratio, the quaternion
  error, the safety limits, batches, and bad input.
"""
import math
from pathlib import Path

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.analysis.impedance import (matrix_quaternion, modal_damping, quaternion_log,
                                              quaternion_multiply)

ROOT = Path(__file__).resolve().parents[1]
PANDA = rd.load_urdf(str(ROOT / "urdf" / "panda_arm.urdf"))
TCP = "panda_hand_tcp"
Q0 = np.array([0.0, -0.3, 0.0, -2.0, 0.0, 1.8, 0.8])          # elbow bent, away from singularities
K = np.array([500.0, 500.0, 500.0, 30.0, 30.0, 30.0])
COMPLIANCE = 0.005      # displacement / K^-1 F within 1 +- 0.5 % (measured 0.9985 to 1.0000, docs/IMPEDANCE.md)
CROSSTALK = 0.001       # along the other axes, of K^-1 F (measured <= 0.00017)


def run(law, target, seconds, wrench=None, q0=Q0, record=None):
    """Simulate the Panda under ``law`` towards ``target`` (position, quaternion) for ``seconds``;
    the final simulator. ``record(sim)`` is called after each step."""
    sim = rd.Simulator(PANDA, dt=0.001, integrator="rk4", q0=q0)
    if wrench is not None:
        sim.apply_wrench(TCP, wrench, frame="base")
    for _ in range(int(round(seconds / 0.001))):
        sim.set_command(law.torque(sim.q, sim.qd, *target), "effort")
        sim.step()
        if record is not None:
            record(sim)
    return sim


def law(**kw):
    kw.setdefault("nullspace_stiffness", 5.0)
    return rd.CartesianImpedance(PANDA, TCP, kw.pop("stiffness", K), **kw)


@pytest.mark.parametrize("axis, force", [(0, 12.0), (1, -5.0), (2, 20.0)])
def test_a_force_at_the_flange_displaces_it_by_the_compliance(axis, force):
    imp = law()
    target = imp.pose(Q0)
    F = np.zeros(6)
    F[axis] = force
    sim = run(imp, target, 1.5, wrench=F)
    p, _ = imp.pose(sim.q)
    want = force / K[axis]
    assert abs(p[axis] - target[0][axis] - want) <= COMPLIANCE * abs(want), (p - target[0], want)
    others = np.delete(p - target[0], axis)
    assert np.all(np.abs(others) <= CROSSTALK * abs(want)), (others, want)
    assert np.abs(sim.qd).max() < 5e-3                        # at rest (rad/s)


@pytest.mark.parametrize("axis, moment", [(0, 1.5), (2, -2.0)])
def test_a_moment_at_the_flange_turns_it_by_the_rotational_compliance(axis, moment):
    imp = law()
    target = imp.pose(Q0)
    W = np.zeros(6)
    W[3 + axis] = moment
    sim = run(imp, target, 1.5, wrench=W)
    _, Q = imp.pose(sim.q)
    rotation = quaternion_log(quaternion_multiply(Q, target[1] * [-1, -1, -1, 1]))   # Q Q_d^-1, base frame
    want = moment / K[3 + axis]
    assert abs(rotation[axis] - want) <= COMPLIANCE * abs(want), (rotation, want)
    assert np.all(np.abs(np.delete(rotation, axis)) <= CROSSTALK * abs(want)), (rotation, want)


def predicted_settling(Lambda, Kmat, e0, tol, zeta=1.0):
    """First time the position part of e(t) of Lambda e'' + D e' + K e = 0 (D: modal_damping, e'(0) = 0)
    stays within ``tol``, from the closed form of each critically damped mode: (1 + w t) exp(-w t)."""
    L = np.linalg.cholesky(Lambda)
    w2, U = np.linalg.eigh(np.linalg.inv(L) @ Kmat @ np.linalg.inv(L).T)
    w = np.sqrt(w2)
    z0 = U.T @ L.T @ e0                               # modal coordinates: e = L^-T U z
    t = np.arange(0.0, 5.0, 1e-4)
    z = z0 * (1 + np.outer(t, w)) * np.exp(-np.outer(t, w))
    e = z @ (np.linalg.inv(L).T @ U).T
    outside = np.flatnonzero(np.linalg.norm(e[:, :3], axis=1) > tol)
    return t[outside[-1] + 1]


def test_a_5_cm_step_settles_in_the_time_the_damping_ratio_predicts_without_overshoot():
    imp = law(q_nullspace=Q0)
    p0, Q = imp.pose(Q0)
    step = np.array([0.03, -0.03, 0.0288])
    step *= 0.05 / np.linalg.norm(step)
    os_ = rd.operational_space(PANDA, Q0, None, TCP)
    t_pred = predicted_settling(os_.Lambda, np.diag(K), np.r_[step, 0, 0, 0], 1e-3)
    trace = []
    run(imp, (p0 + step, Q), 1.2, record=lambda sim: trace.append((sim.time, imp.pose(sim.q)[0])))
    t = np.array([x[0] for x in trace]) - 0.001
    err = np.array([np.linalg.norm(x[1] - p0 - step) for x in trace])
    outside = np.flatnonzero(err > 1e-3)
    t_sim = t[outside[-1] + 1]
    assert abs(t_sim / t_pred - 1) <= 0.02, (t_sim, t_pred)              # measured 0.871 s / 0.872 s
    along = np.array([(x[1] - p0) @ step / 0.05 for x in trace])       # progress along the step [m]
    assert along.max() <= 0.05 * 1.005, along.max()                     # measured: none (-0.3 %)


def test_the_nullspace_posture_moves_the_elbow_and_not_the_flange():
    target = law().pose(Q0)
    finals = []
    for elbow in (Q0, Q0 + [0.4, 0, -0.4, 0, 0, 0, 0]):
        imp = law(nullspace_stiffness=10.0, q_nullspace=elbow)
        finals.append(run(imp, target, 3.0).q)
    elbow_pose = [rd.link_pose(PANDA, q, "panda_link4")[:3, 3] for q in finals]
    assert np.linalg.norm(elbow_pose[1] - elbow_pose[0]) > 0.02
    for q in finals:
        p, _ = law().pose(q)
        assert np.linalg.norm(p - target[0]) < 1e-4


def test_joint_impedance_of_a_pendulum_by_hand():
    """One revolute joint about y with a point mass m at distance l along z (above the joint at q = 0):
    the mass is at (l sin q, 0, l cos q), its potential V = m g l cos q, so g(q) = dV/dq = -m g l sin q
    and the law is k (q_d - q) - d qd - m g l sin q."""
    m, l, g, i = 2.0, 0.5, 9.81, 1e-3          # i: the mass's own inertia about its centre
    urdf = ('<robot name="p"><link name="base"/><link name="arm"><inertial><origin xyz="0 0 %g"/>'
            '<mass value="%g"/><inertia ixx="%g" iyy="%g" izz="%g" ixy="0" ixz="0" iyz="0"/></inertial></link>'
            '<joint name="j" type="revolute"><parent link="base"/><child link="arm"/><axis xyz="0 1 0"/>'
            '<limit effort="100" lower="-3" upper="3" velocity="5"/></joint></robot>' % (l, m, i, i, i))
    model = rd.load_urdf(urdf)
    law_ = rd.JointImpedance(model, [40.0], [3.0])
    q, qd = np.array([0.3]), np.array([-0.2])
    want = 40.0 * (0.1 - 0.3) - 3.0 * (-0.2) - m * g * l * math.sin(0.3)
    np.testing.assert_allclose(law_.torque(q, qd, [0.1]), [want], rtol=1e-12)
    # Critical damping of the single mode: d = 2 sqrt(k M), M = m l^2 + i about the joint.
    auto = rd.JointImpedance(model, [40.0])
    np.testing.assert_allclose(auto.damping(q), [[2 * math.sqrt(40.0 * (m * l * l + i))]], rtol=1e-12)


def test_joint_impedance_yields_to_an_external_torque_by_its_compliance():
    k = np.array([200.0, 300.0, 150.0, 250.0, 60.0, 40.0, 20.0])
    imp = rd.JointImpedance(PANDA, k)
    sim = rd.Simulator(PANDA, dt=0.001, integrator="rk4", q0=Q0)
    F = np.array([5.0, 0.0, -8.0, 0, 0, 0])
    sim.apply_wrench(TCP, F, frame="base")
    for _ in range(2000):
        sim.set_command(imp.torque(sim.q, sim.qd, Q0), "effort")
        sim.step()
    tau_ext = rd.jacobian(PANDA, sim.q, TCP).T @ F
    np.testing.assert_allclose(sim.q - Q0, tau_ext / k, rtol=0, atol=1e-7 * np.abs(tau_ext / k).max())  # 4e-9


def test_modal_damping_gives_the_ratio_in_every_mode():
    rng = np.random.default_rng(3)
    A = rng.normal(size=(6, 6))
    Lam = A @ A.T + 6 * np.eye(6)
    Kmat = np.diag(K)
    for zeta in (0.7, 1.0):
        D = modal_damping(Lam, Kmat, zeta)
        np.testing.assert_allclose(D, D.T, atol=1e-9)
        # Each eigenvalue of the closed loop's companion matrix is a root of s^2 + 2 zeta w s + w^2.
        A_cl = np.block([[np.zeros((6, 6)), np.eye(6)], [-np.linalg.solve(Lam, Kmat), -np.linalg.solve(Lam, D)]])
        s = np.linalg.eigvals(A_cl)
        w = np.abs(s)
        np.testing.assert_allclose(-s.real / w, zeta, atol=1e-5 if zeta < 1 else 2e-3)


def test_the_orientation_error_is_the_rotation_vector_the_shorter_way_round():
    axis = np.array([1.0, -2.0, 0.5]) / np.linalg.norm([1.0, -2.0, 0.5])
    for angle in (1e-9, 0.3, 2.5, math.pi - 1e-6):
        q = np.r_[axis * math.sin(angle / 2), math.cos(angle / 2)]
        np.testing.assert_allclose(quaternion_log(q), axis * angle, atol=1e-12)
        np.testing.assert_allclose(quaternion_log(-q), axis * angle, atol=1e-12)      # the same rotation
    R = rd.link_pose(PANDA, Q0, TCP)[:3, :3]
    x, y, z, w = matrix_quaternion(R)
    want = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
    np.testing.assert_allclose(want, R, atol=1e-12)


def test_safety_limits_clip_the_error_and_the_torque_step_and_refuse_a_singularity():
    imp = law(max_pose_error=(0.02, 0.1), nullspace_stiffness=0.0)
    p, Q = imp.pose(Q0)
    e, _ = imp.errors(Q0, np.zeros(7), rd.jacobian(PANDA, Q0, TCP), p + [0.5, 0, 0], Q)
    np.testing.assert_allclose(e, [0.02, 0, 0, 0, 0, 0], atol=1e-12)      # the error clipped, not the torque
    far = imp.torque(Q0, np.zeros(7), p + [0.5, 0, 0], Q)
    near = imp.torque(Q0, np.zeros(7), p + [0.02, 0, 0], Q)
    np.testing.assert_allclose(far, near, atol=1e-9)
    stepped = law(max_torque_rate=1000.0)                                  # 1 N m per 1 ms call
    first = stepped.torque(Q0, np.zeros(7), p, Q)
    second = stepped.torque(Q0, np.zeros(7), p + [0.05, 0, 0], Q)
    free = law().torque(Q0, np.zeros(7), p + [0.05, 0, 0], Q)
    assert np.abs(second - first).max() <= 1.0 + 1e-12 and np.abs(free - first).max() > 1.0
    with pytest.raises(rd.SingularityError, match="cond\\(J\\)"):
        law().torque(np.zeros(7), np.zeros(7), p, Q)                       # the stretched arm


def test_a_batch_equals_its_states_one_by_one():
    imp = law(q_nullspace=Q0)
    rng = np.random.default_rng(0)
    q = Q0 + 0.1 * rng.normal(size=(4, 7))
    qd = 0.2 * rng.normal(size=(4, 7))
    p, Q = imp.pose(Q0)
    batch = imp.torque(q, qd, p, Q)
    for k in range(4):
        np.testing.assert_allclose(batch[k], imp.torque(q[k], qd[k], p, Q), rtol=1e-12, atol=1e-12)


def test_bad_input_says_what_was_expected():
    imp = law()
    p, Q = imp.pose(Q0)
    with pytest.raises(rd.InputError, match="unit norm"):
        imp.torque(Q0, np.zeros(7), p, 1.01 * Q)
    with pytest.raises(rd.InputError, match="position must have 3 values"):
        imp.torque(Q0, np.zeros(7), p[:2], Q)
    with pytest.raises(rd.InputError, match="not finite|finite"):
        imp.torque(Q0, np.zeros(7), p + [math.nan, 0, 0], Q)
    with pytest.raises(rd.InputError, match="positive definite"):
        rd.CartesianImpedance(PANDA, TCP, [500, 500, -1, 30, 30, 30])
    with pytest.raises(rd.InputError, match="unknown link 'flange'"):
        rd.CartesianImpedance(PANDA, "flange", K)
    with pytest.raises(rd.InputError, match="7 values"):
        rd.JointImpedance(PANDA, [1.0, 2.0])


def test_the_laws_jdot_qd_by_central_difference_equals_the_exact_one():
    """analysis.impedance.jdot_qd_by_difference (two Jacobians) against the library's exact
    column-derivative formula, on random states with speeds from 1e-3 to 6 rad/s."""
    from robot_dynamics.analysis.impedance import jdot_qd_by_difference
    rng = np.random.default_rng(1)
    for _ in range(30):
        q = rng.uniform(-2, 2, 7)
        qd = rng.uniform(-2, 2, 7) * 10 ** rng.uniform(-3, 0.5)
        exact = rd.jacobian_derivative_times_qd(PANDA, q, qd, TCP, (0.01, 0.0, 0.02))
        got = jdot_qd_by_difference(PANDA, q, qd, TCP, np.array([0.01, 0.0, 0.02]))
        np.testing.assert_allclose(got, exact, rtol=0, atol=1e-8 * np.abs(exact).max())
    assert not jdot_qd_by_difference(PANDA, Q0, np.zeros(7), TCP, np.zeros(3)).any()


def test_inertia_shaping_gives_the_point_the_desired_inertia():
    """At rest on target, a measured push W: the flange accelerates by Lambda_d^-1 W with inertia
    shaping (closed loop Lambda_d e'' + D e' + K e = -F_ext at e = de = 0), by Lambda(q)^-1 W without."""
    W = np.array([4.0, -2.0, 6.0, 0.3, 0.1, -0.2])
    Lambda_d = np.array([3.0, 3.0, 3.0, 0.1, 0.1, 0.1])
    J = rd.jacobian(PANDA, Q0, TCP)
    for shaping in (True, False):
        kw = dict(inertia_shaping=True, inertia=Lambda_d) if shaping else {}
        imp = law(nullspace_stiffness=0.0, **kw)
        sim = rd.Simulator(PANDA, dt=0.001, integrator="rk4", q0=Q0)
        sim.apply_wrench(TCP, W, frame="base")
        sim.set_command(imp.torque(Q0, np.zeros(7), *imp.pose(Q0), wrench=W), "effort")
        xdd = J @ sim.acceleration()
        want = W / Lambda_d if shaping else np.linalg.solve(rd.operational_space(PANDA, Q0, None, TCP).Lambda, W)
        np.testing.assert_allclose(xdd, want, rtol=1e-6, atol=1e-9 * np.abs(want).max())
    with pytest.raises(rd.InputError, match="measured external wrench"):
        law(inertia_shaping=True, inertia=Lambda_d).torque(Q0, np.zeros(7), *law().pose(Q0))
    with pytest.raises(rd.InputError, match="desired inertia"):
        law(inertia_shaping=True)

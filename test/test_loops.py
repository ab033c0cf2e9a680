"""Closed-loop mechanisms (robot_dynamics.constraints) against closed forms, hand calculations and MuJoCo.

- Four-bar (urdf/examples/four_bar.urdf, a Grashof crank-rocker): assemble
  against the closed-form position equations (Freudenstein's, as Norton
  writes them); the static crank torque against virtual work (dU/dtheta2
  along the closed mechanism); the loop force at one pose against a
  free-body calculation; forward dynamics against an independent KKT solve
  (the two in-plane loop rows and their Jdot qd written out here, M and h
  from the tree algorithms) and against MuJoCo with an equality constraint
  over 1 s.
- Palletiser (urdf/examples/palletiser.urdf, a parallelogram arm): gravity
  compensation against the serial equivalent with the linkage's masses
  moved onto the two motors, by hand.
- Loop kinematics on a spatial arm (every kind of loop): the Jacobian and
  Jdot qd against finite differences of the residual and of J.
- Errors: bad declarations, a closure that cannot be assembled, singular
  and under-actuated configurations.
"""
import os
from pathlib import Path

import numpy as np
import pytest

import robot_dynamics as rd

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "urdf" / "examples"
FOUR_BAR = str(EXAMPLES / "four_bar.urdf")
FOUR_BAR_LOOPS = str(EXAMPLES / "four_bar.loops.yaml")
PALLETISER = str(EXAMPLES / "palletiser.urdf")
PALLETISER_LOOPS = str(EXAMPLES / "palletiser.loops.yaml")
PANDA = str(ROOT / "urdf" / "panda_arm.urdf")
G = 9.81

# The four-bar, as its URDF states it: link lengths [m], masses [kg] (centres at mid-length).
A, B, C, D = 0.10, 0.30, 0.25, 0.35         # crank, coupler, rocker, ground
M2, M3, M4 = 0.3, 0.8, 0.6                  # crank, coupler, rocker


@pytest.fixture(scope="module")
def four_bar():
    return rd.load_urdf(FOUR_BAR, loops=FOUR_BAR_LOOPS)


@pytest.fixture(scope="module")
def palletiser():
    return rd.load_urdf(PALLETISER, loops=PALLETISER_LOOPS)


def wrap(x):
    return (np.asarray(x) + np.pi) % (2 * np.pi) - np.pi


def closed_form(theta2):
    """Open-circuit coupler and rocker angles (theta3, theta4) of the four-bar at crank angle theta2:
    Norton, Design of Machinery, eqs. 4.10 and 4.13 (Freudenstein's equation), minus root = open."""
    K1, K2, K3 = D / A, D / C, (A * A - B * B + C * C + D * D) / (2 * A * C)
    K4, K5 = D / B, (C * C - D * D - A * A - B * B) / (2 * A * B)
    c, s = np.cos(theta2), np.sin(theta2)
    AA, BB, CC = c - K1 - K2 * c + K3, -2 * s, K1 - (K2 + 1) * c + K3
    DD, EE, FF = c - K1 + K4 * c + K5, -2 * s, K1 + (K4 - 1) * c + K5
    theta4 = 2 * np.arctan2(-BB - np.sqrt(BB * BB - 4 * AA * CC), 2 * AA)
    theta3 = 2 * np.arctan2(-EE - np.sqrt(EE * EE - 4 * DD * FF), 2 * DD)
    return theta3, theta4


def closed_q(theta2):
    theta3, theta4 = closed_form(theta2)
    return np.array([theta2, wrap(theta3 - theta2), wrap(theta4)])


def free_velocity(model, q, scale=1.0):
    """A qd on the loops (J qd = 0): the mechanism's free direction(s) times scale."""
    J = rd.loop_jacobian(model, q)
    _, s, Vt = np.linalg.svd(J)
    r = int(np.sum(s > 1e-9 * s[0]))
    K = Vt[r:].T
    return K @ (scale * np.ones(K.shape[1]))


# --- four-bar: positions --------------------------------------------------------------------

def test_the_four_bar_loads_with_its_loop_and_one_degree_of_freedom(four_bar):
    assert [l.name for l in four_bar.loops] == ["coupler_to_rocker"]
    assert four_bar.joint_names == ("crank_joint", "coupler_joint", "rocker_joint")
    assert rd.mobility(four_bar) == 1                         # 3 joints, 5 rows of rank 2
    assert rd.loop_residual(four_bar, np.zeros(3)).shape == (5,)
    assert rd.loop_jacobian(four_bar, np.zeros((4, 3))).shape == (4, 5, 3)


def test_assemble_matches_the_closed_form_position_equations(four_bar):
    """theta3 and theta4 of the closed loop, crank held, from a guess 0.3 rad off: to 1e-9 rad."""
    worst = 0.0
    for theta2 in np.linspace(0.0, 2 * np.pi, 12, endpoint=False):
        expected = closed_q(theta2)
        guess = expected + np.array([0.0, 0.3, -0.3])
        q = rd.assemble(four_bar, guess, keep=["crank_joint"])
        assert q[0] == guess[0]                               # the kept joint does not move
        worst = max(worst, np.max(np.abs(wrap(q - expected))))
        assert np.max(np.abs(rd.loop_residual(four_bar, q))) < 1e-10
    assert worst < 1e-9, worst
    # the 3-4-5 pose the URDF comment states: theta3 = atan2(0.24, 0.18), theta4 = atan2(0.24, -0.07)
    np.testing.assert_allclose(wrap(np.array(closed_form(0.0)) - (np.arctan2(0.24, 0.18), np.arctan2(0.24, -0.07))),
                               0.0, atol=1e-14)


def test_assemble_batches_and_refuses_what_it_cannot_close(four_bar):
    guesses = np.array([closed_q(t) + 0.2 for t in (0.5, 1.5, 2.5)])
    guesses[:, 0] -= 0.2
    Q = rd.assemble(four_bar, guesses.reshape(3, 1, 3), keep="crank_joint")
    assert Q.shape == (3, 1, 3)
    np.testing.assert_allclose(wrap(Q[:, 0] - np.array([closed_q(t) for t in (0.5, 1.5, 2.5)])), 0, atol=1e-9)
    # the rocker held at 0.3 rad (out of its swing, 1.71-2.55 rad): no closure exists
    with pytest.raises(rd.AssemblyError, match="coupler_to_rocker"):
        rd.assemble(four_bar, [0.0, 0.9, 0.3], keep=["rocker_joint"])
    with pytest.raises(rd.InputError, match="keep: 'crank' is not a joint"):
        rd.assemble(four_bar, [0.0, 0.9, 1.8], keep=["crank"])


# --- four-bar: statics ----------------------------------------------------------------------

def potential_energy(theta2):
    """U [J] of the closed four-bar at crank angle theta2 (mechanism in the x-z plane, gravity -z)."""
    theta3, theta4 = closed_form(theta2)
    z2 = A / 2 * np.sin(theta2)
    z3 = A * np.sin(theta2) + B / 2 * np.sin(theta3)
    z4 = C / 2 * np.sin(theta4)
    return G * (M2 * z2 + M3 * z3 + M4 * z4)


def test_static_crank_torque_is_the_virtual_work_of_gravity(four_bar):
    """tau_crank = dU/dtheta2 along the mechanism's one degree of freedom (central difference
    of the closed-form U, h = 1e-5: truncation ~1e-11 N m)."""
    h, worst = 1e-5, 0.0
    for theta2 in np.linspace(0.1, 2 * np.pi, 9, endpoint=False):
        q = closed_q(theta2)
        tau, lam = rd.constrained_inverse_dynamics(four_bar, q, np.zeros(3), np.zeros(3), ["crank_joint"])
        dU = (potential_energy(theta2 + h) - potential_energy(theta2 - h)) / (2 * h)
        assert tau[1] == 0.0 and tau[2] == 0.0                 # passive joints
        worst = max(worst, abs(tau[0] - dU))
    assert worst < 1e-8, worst


def test_the_rocker_can_hold_the_four_bar_except_at_a_dead_centre(four_bar):
    """Driven by the rocker instead, the static torque is the virtual work per rocker angle,
    tau_rocker = tau_crank dtheta2/dtheta4; at a dead-centre (crank and coupler in line) the
    rocker cannot move the crank and the solve says so."""
    theta2 = 1.0
    q = closed_q(theta2)
    tau_c, _ = rd.constrained_inverse_dynamics(four_bar, q, np.zeros(3), np.zeros(3), ["crank_joint"])
    tau_r, _ = rd.constrained_inverse_dynamics(four_bar, q, np.zeros(3), np.zeros(3), ["rocker_joint"])
    h = 1e-6
    dtheta4 = (closed_form(theta2 + h)[1] - closed_form(theta2 - h)[1]) / (2 * h)
    assert tau_r[2] == pytest.approx(tau_c[0] / dtheta4, rel=1e-7)
    # dead-centre: crank and coupler in line (extended), theta2 from the triangle O2-O4-P with O2P = A + B
    cos_t2 = (D * D + (A + B) ** 2 - C * C) / (2 * D * (A + B))
    dead = rd.assemble(four_bar, closed_q(np.arccos(cos_t2)), keep=["crank_joint"])
    assert abs(wrap(dead[1])) < 1e-9                           # the coupler is in line with the crank
    with pytest.raises(rd.SingularityError, match="rocker_joint.*cannot balance"):
        rd.constrained_inverse_dynamics(four_bar, dead, np.zeros(3), np.zeros(3), ["rocker_joint"])
    tau, _ = rd.constrained_inverse_dynamics(four_bar, dead, np.zeros(3), np.zeros(3), ["crank_joint"])
    assert np.isfinite(tau).all()                               # the crank still can


def test_loop_force_against_a_free_body_calculation(four_bar):
    """At theta2 = 0 (the 3-4-5 pose: B = (0.1, 0), P = (0.28, 0.24), O4 = (0.35, 0) in x-z),
    at rest. f = force of the coupler on the rocker at P. Moments about the y axis
    (r x f)_y = r_z f_x - r_x f_z, every joint but the crank passive:

    rocker about O4:   0.24 fx + 0.07 fz + (0.12 * 0 - (-0.035)(-m4 g)) = 0
    coupler about B:  -0.24 fx + 0.18 fz + 0.09 m3 g = 0
    crank about O2, axis -y: tau = 0.1 (fz + m3 g) + 0.05 m2 g
    """
    fz = (0.035 * M4 - 0.09 * M3) * G / 0.25
    fx = (0.035 * M4 * G - 0.07 * fz) / 0.24
    tau_hand = 0.1 * (fz + M3 * G) + 0.05 * M2 * G
    q = closed_q(0.0)
    tau, lam = rd.constrained_inverse_dynamics(four_bar, q, np.zeros(3), np.zeros(3), ["crank_joint"])
    assert tau[0] == pytest.approx(tau_hand, rel=1e-12)
    np.testing.assert_allclose(lam, [fx, 0.0, fz, 0.0, 0.0], atol=1e-12)
    wrench = rd.loop_wrenches(four_bar, q, lam)["coupler_to_rocker"]
    np.testing.assert_allclose(wrench, [fx, 0, fz, 0, 0, 0], atol=1e-12)
    # the same torque held in forward dynamics: at rest, and the same loop force
    qdd, lam_fd = rd.constrained_forward_dynamics(four_bar, q, np.zeros(3), tau)
    np.testing.assert_allclose(qdd, 0.0, atol=1e-10)
    np.testing.assert_allclose(lam_fd, lam, atol=1e-10)


# --- four-bar: forward dynamics ---------------------------------------------------------------

def planar_loop(q, qd):
    """The two in-plane loop rows of the four-bar written out: phi = P_rocker - P_coupler in (x, z),
    J = d phi/dq, and Jdot qd (q = theta2, theta3 - theta2, theta4)."""
    t2, t3, t4 = q[0], q[0] + q[1], q[2]
    w2, w3, w4 = qd[0], qd[0] + qd[1], qd[2]
    J = np.array([[A * np.sin(t2) + B * np.sin(t3), B * np.sin(t3), -C * np.sin(t4)],
                  [-A * np.cos(t2) - B * np.cos(t3), -B * np.cos(t3), C * np.cos(t4)]])
    Jdqd = np.array([A * np.cos(t2) * w2 ** 2 + B * np.cos(t3) * w3 ** 2 - C * np.cos(t4) * w4 ** 2,
                     A * np.sin(t2) * w2 ** 2 + B * np.sin(t3) * w3 ** 2 - C * np.sin(t4) * w4 ** 2])
    return J, Jdqd


def test_forward_dynamics_against_an_independent_kkt_solve(four_bar):
    """Handbook eq. 3.97 on the 2 independent rows only (the out-of-plane rows deleted, as the
    Handbook advises for a planar loop): a nonsingular KKT system, solved directly."""
    rng = np.random.default_rng(7)
    worst_qdd = worst_lam = 0.0
    for theta2 in rng.uniform(0, 2 * np.pi, 6):
        q = closed_q(theta2)
        qd = free_velocity(four_bar, q, rng.uniform(-8, 8))
        tau = rng.uniform(-1, 1, 3)
        M, h = rd.mass_matrix(four_bar, q), rd.nonlinear_effects(four_bar, q, qd)
        J, Jdqd = planar_loop(q, qd)
        kkt = np.block([[M, J.T], [J, np.zeros((2, 2))]])
        x = np.linalg.solve(kkt, np.r_[tau - h, -Jdqd])
        qdd_ref, lam_ref = x[:3], -x[3:]                     # M qdd + h = tau + J^T lam
        qdd, lam = rd.constrained_forward_dynamics(four_bar, q, qd, tau)
        worst_qdd = max(worst_qdd, np.max(np.abs(qdd - qdd_ref)) / max(1.0, np.max(np.abs(qdd_ref))))
        worst_lam = max(worst_lam, np.max(np.abs(lam[[0, 2]] - lam_ref)) / max(1.0, np.max(np.abs(lam_ref))))
        np.testing.assert_allclose(lam[[1, 3, 4]], 0.0, atol=1e-12)   # the indeterminate rows: minimum norm
    assert worst_qdd < 1e-10 and worst_lam < 1e-10, (worst_qdd, worst_lam)


def test_a_point_loop_and_a_revolute_loop_move_a_planar_four_bar_alike(four_bar):
    """3 of the revolute loop's 5 rows are redundant, 1 of the point loop's 3: same qdd, same force."""
    loop = four_bar.loops[0]
    point = four_bar.with_loops([rd.Loop("p", "point", loop.parent, loop.child, loop.parent_placement,
                                         loop.child_placement)])
    q = closed_q(2.0)
    qd = free_velocity(four_bar, q, 3.0)
    tau = np.array([0.4, 0.0, 0.0])
    qdd_r, lam_r = rd.constrained_forward_dynamics(four_bar, q, qd, tau)
    qdd_p, lam_p = rd.constrained_forward_dynamics(point, q, qd, tau)
    np.testing.assert_allclose(qdd_p, qdd_r, rtol=1e-11, atol=1e-11)
    np.testing.assert_allclose(lam_p, lam_r[:3], rtol=1e-11, atol=1e-11)


def test_forward_and_inverse_dynamics_agree_and_batch(four_bar):
    rng = np.random.default_rng(3)
    Q = np.array([closed_q(t) for t in rng.uniform(0, 2 * np.pi, 4)])
    QD = np.array([free_velocity(four_bar, q, s) for q, s in zip(Q, rng.uniform(-5, 5, 4))])
    TAU = np.zeros((4, 3))
    TAU[:, 0] = rng.uniform(-1, 1, 4)
    qdd, lam = rd.constrained_forward_dynamics(four_bar, Q.reshape(2, 2, 3), QD.reshape(2, 2, 3),
                                               TAU.reshape(2, 2, 3))
    assert qdd.shape == (2, 2, 3) and lam.shape == (2, 2, 5)
    one = [rd.constrained_forward_dynamics(four_bar, Q[k], QD[k], TAU[k]) for k in range(4)]
    np.testing.assert_array_equal(qdd.reshape(4, 3), [o[0] for o in one])
    tau, lam_id = rd.constrained_inverse_dynamics(four_bar, Q, QD, qdd.reshape(4, 3), ["crank_joint"])
    np.testing.assert_allclose(tau, TAU, atol=1e-9)
    np.testing.assert_allclose(lam_id, lam.reshape(4, 5), atol=1e-8)


def test_a_tree_without_loops_gives_the_tree_algorithms():
    panda = rd.load_urdf(PANDA)
    rng = np.random.default_rng(8)
    q, qd, tau = rng.uniform(-1, 1, (3, 7))
    qdd, lam = rd.constrained_forward_dynamics(panda, q, qd, tau)
    assert lam.shape == (0,) and rd.mobility(panda) == 7
    np.testing.assert_allclose(qdd, rd.aba(panda, q, qd, tau), rtol=1e-10, atol=1e-10)
    tau_id, _ = rd.constrained_inverse_dynamics(panda, q, qd, qdd, panda.joint_names)
    np.testing.assert_allclose(tau_id, tau, rtol=1e-10, atol=1e-10)
    with pytest.raises(rd.InputError, match="closed-loop .*needs a fixed-base model"):
        rd.constrained_forward_dynamics(rd.load_urdf(PANDA, root_joint="floating"), np.r_[np.zeros(6), 1.0, q],
                                        np.zeros(13), np.zeros(13))


def rk4(f, x, dt, steps):
    for _ in range(steps):
        k1 = f(x)
        k2 = f(x + dt / 2 * k1)
        k3 = f(x + dt / 2 * k2)
        k4 = f(x + dt * k3)
        x = x + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return x


def test_baumgarte_pulls_a_drifted_state_back_onto_the_loop(four_bar):
    """Start 10 mrad off the loop, at rest relative to it (J qd = 0). J is the exact derivative of
    the residual, so phi'' + Kv phi' + Kp phi = 0 holds exactly: without stabilisation the error
    stays; with the Handbook's gains for t_c = 0.05 s (Kv = 2/t_c, Kp = 1/t_c^2, critically
    damped) it is phi0 (1 + t/t_c) exp(-t/t_c) = 5.0e-4 phi0 at t = 0.5 s."""
    q0 = closed_q(0.7) + np.array([0.0, 0.01, 0.0])
    qd0 = free_velocity(four_bar, q0, 2.0)
    phi0 = np.max(np.abs(rd.loop_residual(four_bar, q0)))
    tc = 0.05

    def run(gains):
        def f(x):
            qdd, _ = rd.constrained_forward_dynamics(four_bar, x[:3], x[3:], np.zeros(3), baumgarte=gains)
            return np.r_[x[3:], qdd]
        x = rk4(f, np.r_[q0, qd0], 2e-3, 250)
        return np.max(np.abs(rd.loop_residual(four_bar, x[:3])))

    assert 1e-3 < phi0 < 1e-2
    assert run((0.0, 0.0)) / phi0 == pytest.approx(1.0, abs=1e-3)
    assert run((2 / tc, 1 / tc ** 2)) / phi0 == pytest.approx((1 + 0.5 / tc) * np.exp(-0.5 / tc), rel=0.02)
    with pytest.raises(rd.InputError, match="baumgarte"):
        rd.constrained_forward_dynamics(four_bar, q0, qd0, np.zeros(3), baumgarte=(-1.0, 0.0))


# --- MuJoCo -----------------------------------------------------------------------------------

if os.environ.get("CI"):            # in CI a missing reference is a failure, not a skip
    import mujoco  # noqa: E402
else:
    try:
        import mujoco  # noqa: E402
    except ImportError:
        mujoco = None


FOUR_BAR_MJCF = """
<mujoco model="four_bar">
  <option timestep="1e-4" integrator="RK4" gravity="0 0 -9.81">
    <flag contact="disable" limit="disable"/>
  </option>
  <worldbody>
    <body name="crank">
      <joint name="crank_joint" type="hinge" axis="0 -1 0"/>
      <inertial pos="0.05 0 0" mass="0.3" diaginertia="2.0e-05 2.6e-04 2.6e-04"/>
      <body name="coupler" pos="0.10 0 0">
        <joint name="coupler_joint" type="hinge" axis="0 -1 0"/>
        <inertial pos="0.15 0 0" mass="0.8"
                  diaginertia="5.3333333333333335e-05 6.026666666666667e-03 6.026666666666667e-03"/>
        <site name="coupler_tip" pos="0.30 0 0"/>
      </body>
    </body>
    <body name="rocker" pos="0.35 0 0">
      <joint name="rocker_joint" type="hinge" axis="0 -1 0"/>
      <inertial pos="0.125 0 0" mass="0.6" diaginertia="4.0e-05 3.145e-03 3.145e-03"/>
      <site name="rocker_tip" pos="0.25 0 0"/>
    </body>
  </worldbody>
  <equality>
    <connect site1="coupler_tip" site2="rocker_tip" solref="2e-4 1" solimp="0.9999 0.9999 0.001"/>
  </equality>
</mujoco>
"""


def test_four_bar_trajectory_against_mujoco(four_bar):
    """1 s from the 3-4-5 pose, crank at 6 rad/s, 0.3 N m on the crank, gravity: the crank swings
    through 3.4 rad. MuJoCo: a connect equality (a point loop, equivalent for this planar
    mechanism), RK4 at 0.1 ms, solref 0.2 ms; ours: RK4 at 1 ms, no stabilisation.
    Measured: largest joint difference 2.6e-8 rad (unchanged with MuJoCo at 20 us: our step's
    error); the test allows 1e-6 rad."""
    if not mujoco:
        pytest.skip("mujoco is not installed")
    q0 = closed_q(0.0)
    qd0 = free_velocity(four_bar, q0)
    qd0 *= 6.0 / qd0[0]
    tau = np.array([0.3, 0.0, 0.0])
    m = mujoco.MjModel.from_xml_string(FOUR_BAR_MJCF)
    d = mujoco.MjData(m)
    assert [m.joint(k).name for k in range(m.njnt)] == list(four_bar.joint_names)
    d.qpos[:], d.qvel[:] = q0, qd0
    mj = []
    for k in range(10000):
        d.qfrc_applied[:] = tau
        mujoco.mj_step(m, d)
        if (k + 1) % 1000 == 0:
            mj.append(d.qpos.copy())

    def f(x):
        qdd, _ = rd.constrained_forward_dynamics(four_bar, x[:3], x[3:], tau)
        return np.r_[x[3:], qdd]

    ours, x = [], np.r_[q0, qd0]
    for _ in range(10):
        x = rk4(f, x, 1e-3, 100)
        ours.append(x[:3])
    assert np.ptp([o[0] for o in ours]) > 1.0                  # a real swing, not a rest
    err = np.max(np.abs(np.array(ours) - np.array(mj)))
    assert err < 1e-6, err
    assert np.max(np.abs(rd.loop_residual(four_bar, x[:3]))) < 1e-7


# --- palletiser -------------------------------------------------------------------------------

def test_palletiser_gravity_compensation_is_the_serial_equivalent(palletiser):
    """The parallelogram keeps the tie rod parallel to the lower arm (pitch a = q_shoulder) and
    the upper arm parallel to the drive crank (pitch b = q_drive). So each motor holds a serial
    pendulum: the shoulder the lower arm, the tie rod (moved onto the lower arm) and the upper arm
    and flange lumped at the elbow; the drive the upper arm and flange (moved onto the shoulder
    axis), the crank and the tie rod lumped at the crank pin. Heights (pitch t about +y takes the
    body vector (x, z) to z' = -x sin t + z cos t), masses from the URDF:

    U = g [55 (0.55 ca) + 9 (0.35 sb + 0.55 ca) + 40 (1.1 ca - 0.45 sb)
           + 6 (1.1 ca - 1.3 sb - 0.1 cb) + 8 (0.175 sb)]
    tau_shoulder = dU/da = -g sa (55 * 0.55 + 9 * 0.55 + 40 * 1.1 + 6 * 1.1)
    tau_drive    = dU/db = g [cb (9 * 0.35 - 40 * 0.45 - 6 * 1.3 + 8 * 0.175) + 6 * 0.1 sb]
    """
    assert rd.mobility(palletiser) == 3
    actuated = ["turntable_joint", "shoulder_joint", "drive_joint"]
    rng = np.random.default_rng(11)
    for _ in range(5):
        turn, a = rng.uniform(-3, 3), rng.uniform(-0.6, 1.0)
        b = a + rng.uniform(-1.27, 1.27)                       # within the passive joints' limits
        q = np.array([turn, a, b - a, b, a - b])               # closed: elbow = b - a, tie rod = a - b
        assert np.max(np.abs(rd.loop_residual(palletiser, q))) < 1e-14
        tau, lam = rd.constrained_inverse_dynamics(palletiser, q, np.zeros(5), np.zeros(5), actuated)
        shoulder = -G * np.sin(a) * (55 * 0.55 + 9 * 0.55 + 40 * 1.1 + 6 * 1.1)
        drive = G * (np.cos(b) * (9 * 0.35 - 40 * 0.45 - 6 * 1.3 + 8 * 0.175) + 6 * 0.1 * np.sin(b))
        np.testing.assert_allclose(tau, [0.0, shoulder, 0.0, drive, 0.0], rtol=1e-12, atol=1e-10)
        # held by those torques the arm stays at rest
        qdd, _ = rd.constrained_forward_dynamics(palletiser, q, np.zeros(5), tau)
        np.testing.assert_allclose(qdd, 0.0, atol=1e-9)


def test_palletiser_flattened_parallelogram_is_a_singular_configuration(palletiser):
    a = 0.2
    q = np.array([0.0, a, np.pi / 2, a + np.pi / 2, -np.pi / 2])   # crank in line with the lower arm
    assert np.max(np.abs(rd.loop_residual(palletiser, q))) < 1e-14
    with pytest.raises(rd.SingularityError, match="lost 1 of its 2 independent constraints"):
        rd.constrained_forward_dynamics(palletiser, q, np.zeros(5), np.zeros(5))


# --- loop kinematics on a spatial arm ----------------------------------------------------------

def _spatial_loops(pairs):
    return [dict(name=kind, kind=kind, parent=parent, child=child, parent_xyz=[0.1, -0.05, 0.2],
                 parent_rpy=[0.3, -0.2, 1.1], child_xyz=[-0.03, 0.08, 0.1], child_rpy=[-0.7, 0.4, 0.2])
            for kind, (parent, child) in zip(("point", "revolute", "weld"), pairs)]


@pytest.fixture(scope="module", params=["panda", "mimic_tree"])
def spatial(request):
    """One loop of each kind between non-adjacent links, at odd frames: on the Panda, and on a
    random tree with a mimic joint and prismatic joints. Loaded by the model layer, without the
    assembly check (these loops cannot close)."""
    if request.param == "panda":
        return rd.load_urdf(PANDA, check_assembly=False, loops=_spatial_loops(
            [("panda_link2", "panda_link5"), ("panda_link1", "panda_link4"), ("panda_link3", "panda_link7")]))
    from robot_dynamics.tools.sample import random_urdf
    tree = rd.load_urdf(random_urdf(11, 9, mimic=True, p_massless=0.0))
    assert tree.has_mimic
    body = tree.link_body
    pairs = [(a, b) for a in range(len(body)) for b in range(a + 1, len(body))
             if body[a] != body[b] and body[b] >= 0 and tree.parent[body[b]] != body[a]
             and not (body[a] >= 0 and tree.parent[body[a]] == body[b])]
    names = tree.link_names
    return tree.with_loops(_spatial_loops([(names[a], names[b]) for a, b in pairs[-3:]]))


def test_loop_jacobian_is_the_derivative_of_the_residual(spatial):
    rng = np.random.default_rng(1)
    h = 1e-6
    n = spatial.nq
    for _ in range(3):
        q = rng.uniform(-1.5, 1.5, n)
        J = rd.loop_jacobian(spatial, q)
        assert J.shape == (3 + 5 + 6, n)
        assert np.sum(np.abs(J).sum(axis=0) > 1e-6) >= 3            # the loops span several joints
        fd = np.array([(rd.loop_residual(spatial, q + h * e) - rd.loop_residual(spatial, q - h * e)) / (2 * h)
                       for e in np.eye(n)]).T
        np.testing.assert_allclose(J, fd, atol=1e-8)


def test_loop_bias_is_the_derivative_of_the_jacobian_along_qd(spatial):
    """Jdot qd against a central difference of J along qd: (J(q + h qd) - J(q - h qd)) qd / 2h."""
    from robot_dynamics.constraints import loop_bias
    rng = np.random.default_rng(2)
    h = 1e-6
    for _ in range(3):
        q, qd = rng.uniform(-1.5, 1.5, spatial.nq), rng.uniform(-2, 2, spatial.nq)
        fd = (rd.loop_jacobian(spatial, q + h * qd) - rd.loop_jacobian(spatial, q - h * qd)) @ qd / (2 * h)
        np.testing.assert_allclose(loop_bias(spatial, q, qd), fd, atol=1e-7)


def test_loop_wrenches_are_the_constraint_forces_as_joint_torques(spatial):
    """J^T lam equals the joint torques of the wrenches, w on the child at B and -w on the parent
    at A (base-frame point Jacobians, sum over loops), even with the loops open as here."""
    rng = np.random.default_rng(4)
    q, lam = rng.uniform(-1, 1, spatial.nq), rng.uniform(-5, 5, 14)
    W = rd.loop_wrenches(spatial, q, lam)
    total = np.zeros(spatial.nq)
    for loop in spatial.loops:
        JB = rd.jacobian(spatial, q, loop.child, loop.child_placement[:3, 3])
        JA = rd.jacobian(spatial, q, loop.parent, loop.parent_placement[:3, 3])
        total += (JB - JA).T @ W[loop.name]
    np.testing.assert_allclose(total, rd.loop_jacobian(spatial, q).T @ lam, atol=1e-10)


# --- declarations and errors -------------------------------------------------------------------

LOOP = dict(name="l", kind="revolute", parent="coupler", child="rocker", parent_xyz=[0.3, 0, 0],
            parent_rpy=[np.pi / 2, 0, 0], child_xyz=[0.25, 0, 0], child_rpy=[np.pi / 2, 0, 0])


@pytest.mark.parametrize("change, message", [
    (dict(child="rocket"), "loop 'l': child link 'rocket' is not a link of the URDF"),
    (dict(child="coupler"), "loop 'l': parent and child are the same link 'coupler'"),
    (dict(parent="crank", child="coupler"), "loop 'l': .*single tree joint 'coupler_joint'"),
    (dict(kind="ball"), "loop 'l': kind must be one of point, revolute, weld"),
    (dict(parent_xyz=[0.3, 0]), "loop 'l': parent_xyz must be 3 finite numbers"),
    (dict(child_xyz=[1.0, 0, 0]), "a closure that cannot be assembled: .*loop 'l'"),
])
def test_bad_declarations_raise_a_urdf_error_naming_the_loop(change, message):
    with pytest.raises(rd.URDFError, match=message):
        rd.load_urdf(FOUR_BAR, loops=[dict(LOOP, **change)])


def test_yaml_text_lists_and_the_model_layer_agree(four_bar):
    text = Path(FOUR_BAR_LOOPS).read_text()
    for loops in (text, [dict(LOOP, name="coupler_to_rocker")], Path(FOUR_BAR_LOOPS)):
        model = rd.load_urdf(FOUR_BAR, loops=loops)
        (loop,) = model.loops
        np.testing.assert_allclose(loop.parent_placement, four_bar.loops[0].parent_placement, atol=1e-15)
        np.testing.assert_allclose(loop.child_placement, four_bar.loops[0].child_placement, atol=1e-15)
    assert four_bar.with_gravity((0, 0, -1.0)).loops == four_bar.loops           # copies keep them
    assert four_bar.with_payload("rocker", 0.1).loops == four_bar.loops
    assert four_bar.with_loops(None).loops == ()
    with pytest.raises(rd.URDFError, match="malformed YAML"):
        rd.load_urdf(FOUR_BAR, loops="loops: [")
    with pytest.raises(rd.URDFError, match="declared twice"):
        rd.load_urdf(FOUR_BAR, loops=[LOOP, LOOP])


def test_loops_on_a_floating_base_are_refused():
    with pytest.raises(rd.URDFError, match="loop 'l': loops on a floating base are not supported"):
        rd.load_urdf(FOUR_BAR, loops=[LOOP], root_joint="floating")


def test_singular_and_under_actuated_configurations_raise(four_bar):
    with pytest.raises(rd.SingularityError, match="singular configuration of the closed loops"):
        rd.constrained_forward_dynamics(four_bar, np.zeros(3), np.zeros(3), np.zeros(3))   # all in line
    q = closed_q(1.0)
    with pytest.raises(rd.InputError, match="0 actuated joint.*1 degrees of freedom"):
        rd.constrained_inverse_dynamics(four_bar, q, np.zeros(3), np.zeros(3), [])
    with pytest.raises(rd.InputError, match="actuated: 'crank' is not a joint"):
        rd.constrained_inverse_dynamics(four_bar, q, np.zeros(3), np.zeros(3), ["crank"])
    with pytest.raises(rd.InputError, match="q has 2 values"):
        rd.loop_residual(four_bar, np.zeros(2))


def test_redundant_actuation_gives_the_minimum_norm_torques(four_bar):
    """Crank and rocker both driven: one degree of freedom, two motors; the torques are the
    least-squares pair (tau_c, tau_r) with tau_c + tau_r r = tau_crank_alone, r = dtheta4/dtheta2."""
    q = closed_q(0.8)
    tau1, _ = rd.constrained_inverse_dynamics(four_bar, q, np.zeros(3), np.zeros(3), ["crank_joint"])
    tau2, _ = rd.constrained_inverse_dynamics(four_bar, q, np.zeros(3), np.zeros(3),
                                              ["crank_joint", "rocker_joint"])
    h = 1e-6
    r = (closed_form(0.8 + h)[1] - closed_form(0.8 - h)[1]) / (2 * h)
    expected = tau1[0] * np.array([1.0, r]) / (1 + r * r)
    np.testing.assert_allclose(tau2[[0, 2]], expected, rtol=1e-7)

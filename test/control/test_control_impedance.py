"""dynamics_node's impedance modes without DDS: the target holder, the torque rate, the torque loop.

The torque of each mode is compared with the library's law (rd.JointImpedance, rd.CartesianImpedance)
built here with the same parameters and called with the target the test expects to be held.
"""
import pathlib

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.control import profiles
from robot_dynamics.control.compensation import CARTESIAN_IMPEDANCE, JOINT_IMPEDANCE, TorqueLimiter
from robot_dynamics.control.impedance_target import (ImpedanceControl, ImpedanceTarget, TorqueRate, build_impedance,
                                                     carry_target)
from robot_dynamics.control.joint_map import JointStateMerger
from robot_dynamics.control.settings import PipelineSettings
from robot_dynamics.control.staleness import JointStaleness
from robot_dynamics.control.laws import gains, laws_of
from robot_dynamics.control.torque_loop import IMPEDANCE_OUT, DiagnosticThrottle, NoTorque, TorqueLoop

ROOT = pathlib.Path(__file__).resolve().parents[2]
PANDA = rd.load_urdf(str(ROOT / 'urdf' / 'panda_arm.urdf'))
NAMES = tuple(PANDA.joint_names)
Q0 = np.array([0.0, -0.3, 0.0, -2.0, 0.0, 1.8, 0.8])
QD = np.array([0.1, -0.2, 0.05, 0.3, -0.1, 0.2, 0.15])
TCP = 'panda_hand_tcp'
K6 = [400.0, 500.0, 600.0, 20.0, 30.0, 40.0]
S = 1_000_000_000                  # [ns]
NOW = 100 * S
UNIT = (0.0, 0.0, 0.0, 1.0)


def target(kind='pose', timeout=0.5):
    return ImpedanceTarget(NAMES, PANDA.base_link, int(timeout * S), kind)


def pipeline(mode, *, stiffness=(), robot_gravity=False, rate=0.0, control=None, **law):
    """A TorqueLoop of the Panda in ``mode`` with its ImpedanceControl (built as dynamics_node does)."""
    cmd = list(NAMES)
    laws = laws_of(PANDA, NAMES, mode, 0.0, gains([], NAMES, cmd), gains([], NAMES, cmd), int(0.1e9))
    holder = target('pose' if mode == CARTESIAN_IMPEDANCE else 'joints')
    if control is None:
        control = build_impedance(PANDA, mode, holder, link=TCP if mode == CARTESIAN_IMPEDANCE else '',
                                  stiffness=stiffness, max_torque_rate=rate, **law)
    return TorqueLoop(PipelineSettings(mode=mode, diagnostic_torque_rate=-1), JointStateMerger(NAMES),
                      JointStaleness(NAMES, int(1e9)), laws,
                      TorqueLimiter(PANDA.effort_limit), profiles.CommandTerms(robot_gravity, False, 7),
                      list(range(7)), impedance=control, target=control.target)


# --- the target holder ---------------------------------------------------------------------------

def test_a_valid_pose_target_is_held_and_counted():
    t = target()
    assert t.offer_pose('', (0.3, 0.1, 0.5), (0.0, 0.0, 0.6, 0.8), NOW - S // 10, NOW) is None
    assert t.offer_pose('panda_link0', (0.4, 0.1, 0.5), UNIT, NOW, NOW) is None
    np.testing.assert_array_equal(t.position, [0.4, 0.1, 0.5])
    assert (t.accepted, t.rejected, t.problem) == (2, 0, '')


@pytest.mark.parametrize('frame, position, quaternion, stamp, expected', [
    ('', (0.3, 0.1, 0.5), UNIT, NOW - S, 'stamped 1.000 s ago, more than target_timeout (0.500 s)'),
    ('', (0.3, 0.1, 0.5), UNIT, NOW + S, 'ahead of this node\'s clock, more than target_timeout'),
    ('', (0.3, 0.1, 0.5), UNIT, 0, 'it has no stamp'),
    ('', (0.3, np.nan, 0.5), UNIT, NOW, 'non-finite pose'),
    ('', (0.3, 0.1, 0.5), (0.0, np.inf, 0.0, 1.0), NOW, 'non-finite pose'),
    ('', (0.3, 0.1, 0.5), (0.0, 0.0, 0.0, 1.01), NOW, 'not a unit quaternion: norm 1.01, expected 1 within 0.001'),
    ('', (0.3, 0.1, 0.5), (0.0, 0.0, 0.0, 0.0), NOW, 'not a unit quaternion: norm 0'),
    ('world', (0.3, 0.1, 0.5), UNIT, NOW, "header.frame_id is 'world'; expected the model's base link 'panda_link0'"),
])
def test_a_bad_pose_target_is_refused_counted_and_the_last_valid_one_held(frame, position, quaternion, stamp,
                                                                           expected):
    t = target()
    assert t.offer_pose('', (0.2, 0.0, 0.6), UNIT, NOW, NOW) is None
    problem = t.offer_pose(frame, position, quaternion, stamp, NOW)
    assert expected in problem and problem.startswith('~/target_pose refused: ')
    assert (t.accepted, t.rejected, t.problem) == (1, 1, problem)
    np.testing.assert_array_equal(t.position, [0.2, 0.0, 0.6])
    np.testing.assert_array_equal(t.quaternion, UNIT)


def test_a_quaternion_within_the_tolerance_is_normalised():
    t = target()
    assert t.offer_pose('', (0.2, 0.0, 0.6), (0.0, 0.0, 0.0, 1.0005), NOW, NOW) is None
    assert np.linalg.norm(t.quaternion) == pytest.approx(1.0, abs=1e-15)


def test_timeout_zero_accepts_any_stamp():
    t = target(timeout=0.0)
    assert t.offer_pose('', (0.2, 0.0, 0.6), UNIT, 0, NOW) is None


def test_the_other_modes_target_is_refused():
    problem = target('joints').offer_pose('', (0.2, 0.0, 0.6), UNIT, NOW, NOW)
    assert 'the mode takes its target on ~/target_joints' in problem
    problem = target('pose').offer_joints(['panda_joint1'], [0.1], NOW, NOW)
    assert problem.startswith('~/target_joints refused: ') and 'on ~/target_pose' in problem
    assert 'the mode takes no target' in target(None).offer_pose('', (0.2, 0.0, 0.6), UNIT, NOW, NOW)


def test_joint_targets_merge_by_name_and_the_first_state_fills_the_rest():
    t = target('joints')
    assert t.offer_joints(['panda_joint3', 'gripper', 'panda_joint1'], [0.5, 9.0, -0.2], NOW, NOW) is None
    q = np.linspace(0.1, 0.7, 7)
    want = q.copy()
    want[[2, 0]] = [0.5, -0.2]
    np.testing.assert_array_equal(t.joints(q), want)
    np.testing.assert_array_equal(t.joints(q + 1.0), want)          # held, not the new state
    assert t.offer_joints(['panda_joint7'], [1.5], NOW, NOW) is None
    want[6] = 1.5
    np.testing.assert_array_equal(t.joints(q), want)
    for names, positions, expected in ((['panda_joint2'], [np.nan], 'non-finite position: panda_joint2=nan'),
                                       (['gripper'], [0.0], 'it names none of the joints'),
                                       (['panda_joint2', 'panda_joint2'], [0.0, 0.1], 'named twice'),
                                       (['panda_joint2'], [0.0, 0.1], '1 names and 2 positions')):
        assert expected in t.offer_joints(names, positions, NOW, NOW)
    assert t.offer_joints(['panda_joint2'], [0.0], NOW - S, NOW).endswith('more than target_timeout (0.500 s)')
    np.testing.assert_array_equal(t.joints(q), want)
    assert (t.accepted, t.rejected) == (2, 5)


def test_the_description_of_the_target_is_that_of_the_target_held_now():
    """describe() (a diagnostics value; its text is kept while the target's values stay the same) follows
    each new pose, each joint target written into the held array in place, and forget()."""
    t = target()
    assert t.describe() == 'none (the next state is held)'
    t.offer_pose('', (0.3, 0.1, 0.5), (0.0, 0.0, 0.6, 0.8), NOW, NOW)
    assert t.describe() == 'position [0.3 0.1 0.5] m, quaternion [0.  0.  0.6 0.8] (panda_link0)'
    t.offer_pose('', (0.3, 0.1, 0.51234), (0.0, 0.0, 0.6, 0.8), NOW, NOW)
    assert t.describe() == 'position [0.3    0.1    0.5123] m, quaternion [0.  0.  0.6 0.8] (panda_link0)'
    t.forget()
    assert t.describe() == 'none (the next state is held)'
    j = target('joints')
    j.offer_joints(['panda_joint2'], [0.5], NOW, NOW)
    assert j.describe() == 'joints [nan 0.5 nan nan nan nan nan]'
    j.joints(np.full(7, 0.25))
    assert j.describe() == 'joints [0.25 0.5  0.25 0.25 0.25 0.25 0.25]'
    j.offer_joints(['panda_joint7'], [-1.0], NOW, NOW)
    assert j.describe() == 'joints [ 0.25  0.5   0.25  0.25  0.25  0.25 -1.  ]'
    assert target(None).describe() == 'none (the mode takes no target)'


def test_a_rebuilt_pipeline_keeps_the_counts_and_the_target_of_the_same_law_only():
    t = target()
    t.offer_pose('', (0.2, 0.0, 0.6), UNIT, NOW, NOW)
    t.offer_pose('', (0.2, 0.0, np.nan), UNIT, NOW, NOW)
    same = carry_target(t, NAMES, PANDA.base_link, int(0.5 * S), 'pose', True)
    np.testing.assert_array_equal(same.position, [0.2, 0.0, 0.6])
    other = carry_target(t, NAMES, PANDA.base_link, int(0.5 * S), 'joints', False)
    assert other.position is None and np.isnan(other.q).all()
    assert (other.accepted, other.rejected, other.problem) == (1, 1, t.problem)


# --- the torque rate ------------------------------------------------------------------------------

def test_the_torque_rate_is_limited_against_the_clock():
    rate = TorqueRate(1000.0, 0.1 * S)                        # 1 N m per ms
    np.testing.assert_array_equal(rate.apply([0.0, 5.0], 0), [0.0, 5.0])
    np.testing.assert_allclose(rate.apply([10.0, 5.2], 2_000_000), [2.0, 5.2])      # 2 ms: 2 N m
    np.testing.assert_allclose(rate.apply([-10.0, 5.2], 2_500_000), [1.5, 5.2])     # 0.5 ms later
    np.testing.assert_allclose(rate.apply([1000.0, 0.0], 10 * S), [101.5, 0.0])     # a gap counts 0.1 s
    assert rate.limited == 3
    out = rate.apply([np.nan, 0.0], 10 * S + 1_000_000)          # refused later by the limiter; not the last
    assert np.isnan(out[0])
    np.testing.assert_allclose(rate.apply([0.0, 0.0], 10 * S + 2_000_000), [99.5, 0.0])   # 2 ms from 101.5
    np.testing.assert_array_equal(TorqueRate(0.0, S).apply([7.0], 0), [7.0])


# --- the torque loop -----------------------------------------------------------------------------

def test_cartesian_mode_holds_the_first_pose_then_follows_a_target_with_the_librarys_torque():
    loop = pipeline(CARTESIAN_IMPEDANCE, stiffness=K6, nullspace_stiffness=5.0, max_pose_error=(0.05, 0.3))
    out = loop.step(NAMES, Q0, QD, NOW, NOW).outputs
    assert out == IMPEDANCE_OUT and out[0] == 'imp'
    law = rd.CartesianImpedance(PANDA, TCP, K6, nullspace_stiffness=5.0, max_pose_error=(0.05, 0.3))
    p0, Q_0 = law.pose(Q0)
    np.testing.assert_allclose(loop.command, law.torque(Q0, QD, p0, Q_0), rtol=1e-12, atol=1e-10)
    np.testing.assert_allclose(loop.views['total'], rd.nonlinear_effects(PANDA, Q0, QD), atol=1e-10)
    # A target 2 cm up, then refused ones: the law's torque towards the first one at every state.
    p1 = p0 + [0.0, 0.0, 0.02]
    assert loop.target.offer_pose('', p1, Q_0, NOW, NOW) is None
    for offer in ((p1 + 0.01, Q_0, NOW - S), (p1 * np.nan, Q_0, NOW), (p1 + 0.01, Q_0 * 1.1, NOW)):
        assert loop.target.offer_pose('', offer[0], offer[1], offer[2], NOW) is not None
        q = Q0 + 0.01
        assert loop.step(NAMES, q, QD, NOW, NOW).outputs == IMPEDANCE_OUT
        np.testing.assert_allclose(loop.command, law.torque(q, QD, p1, Q_0), rtol=1e-12, atol=1e-10)
    assert (loop.target.accepted, loop.target.rejected) == (1, 3)


def test_cartesian_command_leaves_out_the_gravity_the_robot_adds():
    loop = pipeline(CARTESIAN_IMPEDANCE, robot_gravity=True)
    assert loop.step(NAMES, Q0, QD, NOW, NOW).outputs == IMPEDANCE_OUT
    law = rd.CartesianImpedance(PANDA, TCP, [500, 500, 500, 30, 30, 30], max_pose_error=(0.05, 0.3))
    tau = law.torque(Q0, QD, *law.pose(Q0))
    np.testing.assert_allclose(loop.views['imp'], tau, rtol=1e-12, atol=1e-10)           # the topic: the law
    np.testing.assert_allclose(loop.command, tau - rd.gravity_torques(PANDA, Q0), rtol=1e-12, atol=1e-10)


def test_the_compensation_goes_out_at_the_diagnostic_rate_computed_at_the_state_it_goes_with():
    """The law compensates gravity and Coriolis itself: the loop computes the compensation only for the joint
    states whose diagnostic torques go out, and then at that state."""
    loop = pipeline(CARTESIAN_IMPEDANCE, stiffness=K6)
    loop.throttle = DiagnosticThrottle.from_rate(50.0)
    law = rd.CartesianImpedance(PANDA, TCP, K6, max_pose_error=(0.05, 0.3))
    p0, Q_0 = law.pose(Q0)
    for k, q in enumerate((Q0, Q0 + 0.01, Q0 - 0.02, Q0 + 0.03)):
        if k == 3:
            loop.throttle.due = 0                   # the 20 ms have passed
        out = loop.step(NAMES, q, QD, NOW, NOW).outputs
        assert out == (IMPEDANCE_OUT if k in (0, 3) else ('imp',))
        np.testing.assert_allclose(loop.command, law.torque(q, QD, p0, Q_0), rtol=1e-12, atol=1e-10)
        if k in (0, 3):
            np.testing.assert_allclose(loop.views['gravity'], rd.gravity_torques(PANDA, q), atol=1e-10)
            np.testing.assert_allclose(loop.views['total'], rd.nonlinear_effects(PANDA, q, QD), atol=1e-10)


def test_joint_mode_follows_a_partial_target_with_the_librarys_torque():
    K = np.linspace(30.0, 90.0, 7)
    loop = pipeline(JOINT_IMPEDANCE, stiffness=K, max_pose_error=(0.05, 0.3))
    assert loop.target.offer_joints(['panda_joint2'], [Q0[1] + 0.2], NOW, NOW) is None
    assert loop.step(NAMES, Q0, QD, NOW, NOW).outputs == IMPEDANCE_OUT
    q_d = Q0.copy()
    q_d[1] += 0.2
    law = rd.JointImpedance(PANDA, K, max_pose_error=0.3)
    np.testing.assert_allclose(loop.command, law.torque(Q0, QD, q_d), rtol=1e-12, atol=1e-10)
    # The error is clipped at max_pose_error[1] rad: a target 1 rad away pulls like one 0.3 rad away.
    loop.target.offer_joints(['panda_joint2'], [Q0[1] + 1.0], NOW, NOW)
    loop.step(NAMES, Q0, QD, NOW, NOW)
    np.testing.assert_allclose(loop.command, law.torque(Q0, QD, q_d + [0, 0.1, 0, 0, 0, 0, 0]), rtol=1e-12,
                               atol=1e-10)


def test_the_rate_limit_ramps_a_target_step_by_the_clock():
    loop = pipeline(JOINT_IMPEDANCE, stiffness=[100.0], rate=1000.0)
    loop.step(NAMES, Q0, np.zeros(7), NOW, NOW)
    before = loop.command.copy()
    loop.target.offer_joints(['panda_joint1'], [Q0[0] + 0.2], NOW, NOW)
    loop.step(NAMES, Q0, np.zeros(7), NOW + 1_000_000, NOW + 1_000_000)   # 1 ms: 1 N m of the 20 N m step
    np.testing.assert_allclose(loop.command - before, [1.0, 0, 0, 0, 0, 0, 0], atol=1e-9)
    assert loop.impedance.rate.limited == 1


def test_near_a_singularity_no_torque_with_the_reason():
    holder = target()
    law = rd.CartesianImpedance(PANDA, TCP, K6, max_condition=1.0 + 1e-9)          # every pose is too near
    loop = pipeline(CARTESIAN_IMPEDANCE, control=ImpedanceControl(law, holder, TorqueRate(0.0, S)))
    out = loop.step(NAMES, Q0, QD, NOW, NOW).refused
    assert type(out) is NoTorque and out.kind == 'singular'
    assert 'refused near a singularity of panda_hand_tcp: cond(J)' in out.reason


def test_bad_impedance_parameters_name_the_problem():
    with pytest.raises(ValueError, match='unknown link'):
        build_impedance(PANDA, CARTESIAN_IMPEDANCE, target(), link='no_such_link')
    with pytest.raises(ValueError, match='stiffness must be 6 values'):
        build_impedance(PANDA, CARTESIAN_IMPEDANCE, target(), stiffness=[100.0, 100.0])

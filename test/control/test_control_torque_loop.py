"""robot_dynamics.control.torque_loop without DDS: one joint state to the command, or the reason.

Expectations by hand: the one-axis arm of urdf/textbook (Schilling 6-9) has the gravity torque
g0 m1 a1 cos(q) / 2 = 9.81 * 1.7 * 0.43 / 2 cos(q) = 3.585555 cos(q) N m and the effort limit 13.5 N m.
"""
import math
import pathlib

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.control import profiles
from robot_dynamics.control.compensation import GRAVITY, GRAVITY_CORIOLIS, TorqueLimiter
from robot_dynamics.control.joint_map import JointStateMerger
from robot_dynamics.control.settings import PipelineSettings
from robot_dynamics.control.staleness import JointStaleness
from robot_dynamics.control.laws import gains, laws_of, per_joint
from robot_dynamics.control.torque_loop import COMPENSATION, WAITING, DiagnosticThrottle, NoTorque, TorqueLoop
from robot_dynamics.errors import InputError

ROOT = pathlib.Path(__file__).resolve().parents[2]
G = 9.81 * 1.7 * 0.43 / 2          # [N m] gravity torque of the one-axis arm at q = 0
MS = 1_000_000                     # [ns]


@pytest.fixture(scope='module')
def arm():
    return rd.load_urdf(str(ROOT / 'urdf' / 'textbook' / 'one_axis_arm.urdf'), gravity=(0.0, -9.81, 0.0))


@pytest.fixture(scope='module')
def two():
    return rd.load_urdf(str(ROOT / 'urdf' / 'textbook' / 'point_mass_two_link.urdf'), gravity=(0.0, -9.81, 0.0))


def make(model, *, mode=GRAVITY_CORIOLIS, scale=1.0, cmd_joints=None, robot_gravity=False, joint_timeout=0.1,
         max_age=0.0):
    names = tuple(model.joint_names)
    cmd = list(cmd_joints or names)
    laws = laws_of(model, names, mode, 0.0, gains([], names, cmd), gains([], names, cmd), int(0.1e9))
    return TorqueLoop(PipelineSettings(mode=mode, max_state_age=max_age, diagnostic_torque_rate=-1),
                      JointStateMerger(names),
                      JointStaleness(names, int(joint_timeout * 1e9)), laws, TorqueLimiter(model.effort_limit, scale),
                      profiles.CommandTerms(robot_gravity, False, len(names)), [names.index(n) for n in cmd])


def test_a_joint_state_gives_the_gravity_torque_as_command(arm):
    loop = make(arm)
    out = loop.step(['joint1'], [0.0], [0.0], 0, 0).outputs
    assert out == COMPENSATION                          # the commanded torque first: the compensation
    assert loop.command == pytest.approx([G])
    assert loop.views['gravity'] == pytest.approx([G])
    assert loop.views['coriolis'] == pytest.approx([0.0])
    out = loop.step(['joint1'], [math.pi / 3], [], 0, 1).outputs
    assert out == COMPENSATION and loop.command == pytest.approx([G / 2])        # cos 60 deg = 1/2
    assert loop.fresh


def test_a_message_naming_no_model_joint_gives_nothing_and_is_not_fresh(arm):
    loop = make(arm)
    assert loop.step(['other'], [0.0], [], 0, 0).refused is WAITING
    assert not loop.fresh


def test_a_non_finite_position_is_refused_naming_it(arm):
    out = make(arm).step(['joint1'], [float('nan')], [], 0, 0).refused
    assert isinstance(out, NoTorque) and out.kind == 'bad'
    assert 'joint1' in out.reason and 'position' in out.reason


def test_the_command_is_clamped_to_the_scaled_effort_limit(arm):
    loop = make(arm, scale=0.1)                         # 0.1 x 13.5 = 1.35 N m < G
    assert loop.step(['joint1'], [0.0], [0.0], 0, 0).outputs == COMPENSATION
    assert loop.command == pytest.approx([1.35])
    assert loop.limiter.clamped and loop.limiter.clamp_events == 1


def test_a_term_the_robot_compensates_is_left_out_of_the_command_only(arm):
    loop = make(arm, mode=GRAVITY, robot_gravity=True)
    assert loop.step(['joint1'], [0.0], [0.0], 0, 0).outputs == COMPENSATION
    assert loop.command == pytest.approx([0.0])         # the robot adds g(q) itself
    assert loop.views['total'] == pytest.approx([G])    # the torque topics keep it


def test_a_stale_joint_gives_no_command_and_the_reason_names_it_and_its_age(two):
    a, b = two.joint_names
    loop = make(two, joint_timeout=0.1)
    assert loop.step([a, b], [0.0, 0.0], [0.0, 0.0], 0, 0).outputs == COMPENSATION
    assert loop.step([a], [0.1], [0.0], 0, 50 * MS).outputs == COMPENSATION         # b 50 ms old: not yet stale
    out = loop.step([a], [0.2], [0.0], 0, 200 * MS).refused
    assert isinstance(out, NoTorque) and out.kind == 'stale'
    assert b in out.reason and a not in out.reason.split(':')[1]
    assert '0.200 s old' in out.reason and '0.100 s' in out.reason


def test_the_command_follows_the_controller_joint_order(two):
    a, b = two.joint_names
    loop = make(two, cmd_joints=[b, a])
    assert loop.step([a, b], [0.3, -0.4], [0.0, 0.0], 0, 0).outputs == COMPENSATION
    assert loop.command == pytest.approx(loop.views['total'][::-1])
    assert loop.command[0] != pytest.approx(loop.command[1])


def test_a_state_older_than_max_state_age_is_not_merged(arm):
    loop = make(arm, max_age=0.05)
    out = loop.step(['joint1'], [0.0], [0.0], 1_000 * MS, 1_100 * MS).refused          # stamped 0.1 s ago
    assert isinstance(out, NoTorque) and out.kind == 'too_old'
    assert '0.100 s ago' in out.reason and '0.050 s' in out.reason
    assert not loop.merger.ready                        # never used later either
    out = loop.step(['joint1'], [0.0], [0.0], 0, 1_100 * MS).refused
    assert out.kind == 'too_old' and 'no stamp' in out.reason
    assert loop.step(['joint1'], [0.0], [0.0], 1_080 * MS, 1_100 * MS).outputs == COMPENSATION


def test_observe_needs_efforts_and_feeds_a_collection(arm):
    from robot_dynamics.control.payload_fit import SampleBuffer
    loop = make(arm)
    loop.step(['joint1'], [0.0], [0.0], 0, 0)
    out = loop.observe([], 0, None, None)
    assert isinstance(out, NoTorque) and out.kind == 'no_effort'
    buffer = SampleBuffer()
    assert loop.observe([1.5], 7, None, buffer) is False          # no monitor: no residual
    assert len(buffer) == 1
    out = loop.observe([1.0, 2.0], 8, None, buffer)
    assert isinstance(out, NoTorque) and out.kind == 'bad_effort' and len(buffer) == 1


def test_the_diagnostic_throttle_counts_from_when_it_was_due():
    t = DiagnosticThrottle(10)
    assert [t.go(x) for x in (5, 7, 10, 14, 100, 105, 110)] == [True, False, True, False, True, False, True]
    assert not any(DiagnosticThrottle.from_rate(0).go(x) for x in (0, 10 ** 12))       # off
    assert all(DiagnosticThrottle.from_rate(-1).go(x) for x in (0, 0, 1))              # every joint state
    assert DiagnosticThrottle.from_rate(50.0).period_ns == 20 * MS


def test_gains_per_joint_and_their_errors():
    assert gains([2.0], ('a', 'b'), ['a', 'b']) == pytest.approx([2.0, 2.0])
    assert gains([1.0, 3.0], ('a', 'b', 'c'), ['c', 'a']) == pytest.approx([3.0, 0.0, 1.0])
    assert per_joint('observer_gains', [1.0, 3.0], ('a', 'b'), ['b', 'a']) == pytest.approx([3.0, 1.0])
    with pytest.raises(InputError, match="misses the model joint\\(s\\) b"):
        per_joint('observer_gains', [1.0, 3.0], ('a', 'b'), ['a', 'c'])
    assert np.all(gains([], ('a',), ['a']) == 0)


def test_a_moving_base_without_a_fresh_base_state_gives_no_torque_saying_why():
    model = rd.load_urdf(str(ROOT / 'urdf' / 'panda_arm.urdf'), root_joint='floating')
    names = tuple(model.joint_names)
    laws = laws_of(model, names, GRAVITY, 0.0, gains([], names, names), gains([], names, names), int(0.1e9))
    assert laws.base is not None and laws.loop is None
    loop = TorqueLoop(PipelineSettings(mode=GRAVITY, diagnostic_torque_rate=-1, base_topic='/odom',
                                       joint_state_timeout=0.1),
                      JointStateMerger(names), JointStaleness(names, int(0.1e9)), laws,
                      TorqueLimiter(model.effort_limit), profiles.CommandTerms(False, False, len(names)),
                      list(range(len(names))))
    assert loop.base is laws.base
    out = loop.step(list(names), [0.0] * len(names), [], 0, 0).refused
    assert isinstance(out, NoTorque) and out.kind == 'no_base'
    assert out.reason.endswith('no base state on /odom yet')

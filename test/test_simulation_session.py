"""simulator_node's behaviour without ROS (robot_dynamics.simulation: session, build, inputs, pacing,
robot_emulation): the simulated arm stepped against a wall clock set by the test, its commands, timeout,
model changes, services and diagnostic values, as docs/NODES.md and docs/SIMULATION.md ("The ROS 2
node") describe them. test/ros/test_ros_simulator.py runs the node over DDS."""
import math
from pathlib import Path

import numpy as np
import pytest

import robot_dynamics as rd
from robot_dynamics.errors import CommandError
from robot_dynamics.simulation import Simulator
from robot_dynamics.simulation.build import SimulationSettings
from robot_dynamics.simulation.inputs import effort_command, joint_command, joint_state_update, stamp
from robot_dynamics.simulation.pacing import MAX_TICK, MIN_TICK, Pacer, StateStamps, clock_offset_ns, tick_period
from robot_dynamics.simulation.robot_emulation import RobotGravityCompensation
from robot_dynamics.simulation.session import SimulationSession, diagnostic_values, summary

ROOT = Path(__file__).resolve().parents[1]
PANDA = ROOT / "urdf" / "panda_arm.urdf"
MODEL = rd.load_urdf(str(PANDA))
NAMES = list(MODEL.joint_names)
INDEX = {n: i for i, n in enumerate(NAMES)}
NAN = float('nan')
Q0 = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])


# --- inputs (from ros/sim_commands.py) ----------------------------------------------------------------
def test_effort_command_checks_length_and_finiteness():
    joints = NAMES[::-1]
    v = effort_command([float(i) for i in range(7)], joints)
    np.testing.assert_array_equal(v, np.arange(7.0))
    with pytest.raises(CommandError, match='has 6 values, expected 7'):
        effort_command([0.0] * 6, joints)
    with pytest.raises(CommandError, match='not finite for %s' % joints[2]):
        effort_command([0.0, 0.0, NAN, 0.0, 0.0, 0.0, 0.0], joints)
    with pytest.raises(CommandError, match='has 100000 values'):
        effort_command(np.zeros(100000), joints)


def test_joint_command_mode_is_the_first_field_with_a_value():
    names = ['panda_joint3', 'panda_joint1', 'panda_joint7']
    joints, values, modes = joint_command(names, [0.1, NAN, NAN], [9.0, 0.2, NAN], [9.0, 9.0, 0.3], INDEX)
    assert joints == names
    assert modes == ['position', 'velocity', 'effort']
    np.testing.assert_array_equal(values, [0.1, 0.2, 0.3])
    # One field filled: every joint in that mode (what the ros2_control plugin sends).
    _, values, modes = joint_command(NAMES, [], [], list(range(7)), INDEX)
    assert modes == ['effort'] * 7
    np.testing.assert_array_equal(values, np.arange(7.0))


@pytest.mark.parametrize('names, position, velocity, effort, message', [
    ([], [], [], [], 'names no joint'),
    (['panda_joint1'], [], [], [], 'no position, velocity or effort'),
    (['panda_joint1', 'panda_joint2'], [0.0], [], [], 'position has 1 values for 2 names'),
    (['panda_joint1'], [math.inf], [], [], 'position for panda_joint1 is infinite'),
    (['panda_joint1', 'panda_joint2'], [0.0, NAN], [], [], 'no value for panda_joint2'),
    (['panda_joint1', 'gripper'], [0.0, 0.0], [], [], "'gripper', not joint"),
    (['panda_joint1', 'panda_joint1'], [0.0, 0.0], [], [], 'panda_joint1 more than once'),
    (['panda_joint1'] * 50, [0.0] * 50, [], [], 'names 50 joints, the model has 7'),
])
def test_joint_command_rejects(names, position, velocity, effort, message):
    with pytest.raises(CommandError, match=message):
        joint_command(names, position, velocity, effort, INDEX)


def test_joint_state_update_by_name():
    idx, q, qd = joint_state_update(['panda_joint4', 'panda_joint2'], [-1.0, 0.5], [], INDEX)
    np.testing.assert_array_equal(idx, [3, 1])
    np.testing.assert_array_equal(q, [-1.0, 0.5])
    np.testing.assert_array_equal(qd, [0.0, 0.0])
    for args, message in [((['x'], [0.0], []), "unknown joint"),
                          ((['panda_joint1'], [0.0], [0.0, 1.0]), 'velocity has 2 values'),
                          ((['panda_joint1'], [NAN], []), 'position is not finite for panda_joint1'),
                          ((['panda_joint1'] * 2, [0.0] * 2, []), 'named twice')]:
        with pytest.raises(CommandError, match=message):
            joint_state_update(*args, INDEX)


def test_stamp_splits_seconds():
    assert stamp(0.0) == (0, 0)
    assert stamp(12.001) == (12, 1_000_000)
    assert stamp(3 * 0.001 * 1000) == (3, 0)


# --- pacing ----------------------------------------------------------------------
def test_pacer_follows_the_wall_clock_times_the_factor():
    p = Pacer(dt=1e-3, real_time_factor=2.0, catch_up_limit=0.05)
    p.anchor(100.0, 0)
    steps = 0
    for k in range(1, 1001):                       # 1 s of wall time in 1 ms ticks
        steps += p.due(100.0 + k * 1e-3, steps)
    assert steps == 2000 and p.lag_events == 0


def test_pacer_catches_up_a_late_tick_but_bounds_the_batch():
    p = Pacer(dt=1e-3, real_time_factor=1.0, catch_up_limit=0.05)
    p.anchor(0.0, 0)
    assert p.max_batch == 50
    assert p.due(0.030, 0) == 30                   # 30 ms late: made up at once
    assert p.due(1.030, 30) == 50                  # 1 s late: 50 steps, the rest dropped
    assert p.lag_events == 1 and p.dropped_steps == 1000 - 50
    assert p.due(1.031, 80) == 1                   # then on time again
    assert p.due(1.031, 81) == 0


def test_tick_period_bounds():
    assert tick_period(1e-3, 1.0) == pytest.approx(1e-3)
    assert tick_period(1e-4, 1.0) == MIN_TICK      # 10 kHz physics: 10 steps per tick
    assert tick_period(1e-3, 0.01) == MAX_TICK     # slow motion: ticks without steps
    assert tick_period(1e-3, 0.0) == MIN_TICK


# --- the robot's own gravity (from test/ros/test_ros_profile_units.py) -----------------
def _sim(q0):
    return Simulator(MODEL, dt=1e-3, q0=q0)


def test_emulated_robot_adds_its_gravity_to_effort_commands():
    sim = _sim(Q0)
    robot = RobotGravityCompensation(sim)
    robot.step(300)                                   # zero command: the robot holds itself
    assert np.abs(sim.q - Q0).max() < 1e-9
    np.testing.assert_allclose(sim.effort, rd.gravity_torques(MODEL, sim.q), atol=1e-9)   # measured = its g
    sim.set_command(rd.gravity_torques(MODEL, Q0))   # a user who sends g as well: gravity doubled
    robot.step(300)
    free = _sim(Q0)
    free.step(300)
    moved, fell = np.abs(sim.q - Q0).max(), np.abs(free.q - Q0).max()
    assert moved > 0.5 * fell > 1e-2, (moved, fell)
    assert robot.user_command().value.tolist() == pytest.approx(rd.gravity_torques(MODEL, Q0).tolist())
    robot.restore()
    np.testing.assert_allclose(sim.command.value, rd.gravity_torques(MODEL, Q0))


# --- the session ---------------------------------------------------------------------
class Log:
    """The node's logger calls, recorded: [(level, text)]."""

    def __init__(self):
        self.lines = []

    def info(self, text, **_):
        self.lines.append(('info', text))

    def warning(self, text, **_):
        self.lines.append(('warning', text))

    def error(self, text, **_):
        self.lines.append(('error', text))


class Clock:
    """A wall clock [s] the test moves."""

    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


#: The system clock [ns] minus the test's wall clock [s] in ns (2025-11-24 against 100 s of uptime).
SYSTEM_OFFSET_NS = 1_764_000_000_000_000_000


def session(model=MODEL, **settings):
    """A started session of ``model`` with ``settings``; its published simulated times in ``.published``,
    their stamps [ns] in ``.stamped`` (the system clock is the wall clock + SYSTEM_OFFSET_NS)."""
    clock, log = Clock(), Log()
    published, stamped = [], []

    def publish():
        published.append(s.sim.time)
        stamped.append(s.state_stamp_ns())
    s = SimulationSession(SimulationSettings(**settings), publish=publish, log=log, clock=clock,
                          system_clock=lambda: round(clock.now * 1e9) + SYSTEM_OFFSET_NS)
    assert s.set_model(model, True, NAMES if model is MODEL else list(model.joint_names)) is None
    s.start()
    s.published, s.stamped, s.wall, s.logged = published, stamped, clock, log.lines
    return s


def on_time(s, ticks):
    """``ticks`` ticks of 1 ms, each on time."""
    for _ in range(ticks):
        s.wall.now += 1e-3
        s.advance(s.wall.now)


def system_ns(wall):
    """The system clock [ns] at the test's wall time ``wall`` [s]."""
    return round(wall * 1e9) + SYSTEM_OFFSET_NS


def test_steps_follow_the_wall_clock_and_publish_every_n_steps():
    s = session(publish_rate=250.0, real_time_factor=2.0)
    for k in range(1, 101):                          # 0.1 s of wall time in 1 ms ticks
        s.wall.now += 1e-3
        s.advance(s.wall.now)
    assert s.steps == 200 and s.sim.time == pytest.approx(0.2)
    assert s.published == pytest.approx(np.arange(1, 51) * 0.004)    # every 4 steps, each its own time
    values, achieved = diagnostic_values(s)
    values = dict(values)
    assert achieved == pytest.approx(2.0) and values['steps'] == 200 and values['state'] == 'running'
    assert summary(s, achieved) == (False, 'running (real-time factor 2.000)')


def test_a_stall_beyond_the_catch_up_limit_is_dropped_and_reported():
    s = session(catch_up_limit=0.05)
    s.wall.now += 1.0
    s.advance(s.wall.now)
    assert s.steps == 50
    values, achieved = diagnostic_values(s)
    values = dict(values)
    assert values['lag_events'] == 1 and float(values['dropped_time_s']) == pytest.approx(0.95)
    warn, message = summary(s, achieved)
    assert warn and message.startswith('running behind: real-time factor 0.050')


def test_as_fast_as_possible_runs_for_the_tick_budget():
    s = session(real_time_factor=0.0)
    clock = s.wall

    def later():                                     # each reading of the clock 0.5 ms later
        clock.now += 5e-4
        return clock.now
    s.clock = later
    s.advance(clock.now)
    assert s.steps == 4                              # 2 ms budget: 4 joint-state periods of 1 step
    assert len(s.published) == 4


# --- stamps: the wall time each state stands for ------------------------------------------------------
@pytest.mark.parametrize('factor', [1.0, 2.0])
def test_a_late_tick_s_batch_is_stamped_dt_apart_at_the_times_its_states_were_due(factor):
    s = session(real_time_factor=factor)              # anchored at 100 s, a state every step
    on_time(s, 10)
    per_tick = round(factor)                          # steps per 1 ms tick
    assert s.stamped[-1] == system_ns(100.010)        # step 10 * per_tick due 10 ms after the anchor
    s.stamped.clear()
    publish = s.publish

    def slow_publish():                               # each state computed and published 0.3 ms later
        s.wall.now += 3e-4
        publish()
    s.publish = slow_publish
    s.wall.now = 100.015                              # a tick 5 ms late: its steps run in one batch
    s.advance(s.wall.now)
    step_ns = round(1e6 / factor)                     # dt / real_time_factor [ns]
    assert len(s.stamped) == 5 * per_tick
    assert np.diff(s.stamped).tolist() == [step_ns] * (5 * per_tick - 1)
    assert s.stamped[-1] == system_ns(100.015)        # the last one due at the tick, all in the past


def test_a_lag_beyond_the_catch_up_limit_makes_the_stamps_jump_with_the_dropped_steps():
    s = session(catch_up_limit=0.05)                  # at most 50 steps of catch-up
    on_time(s, 10)
    s.wall.now = 101.010                              # 1 s late: 50 steps run, 950 dropped
    s.advance(s.wall.now)
    on_time(s, 1)
    t = np.array(s.stamped)
    assert s.steps == 61 and s.pacer.lag_events == 1
    # Anchored again at 101.010 s with 60 steps: step k (11..60) due at 101.010 s - (60 - k) ms, step 61 1 ms on.
    assert t[9] == system_ns(100.010) and t[10] == system_ns(100.961)     # the jump: 0.95 s dropped + dt
    assert np.diff(t[10:]).tolist() == [1_000_000] * 50
    assert t[59] == system_ns(101.010) and t[60] == system_ns(101.011)


def test_stamps_go_on_from_a_resume_and_a_reset_never_decreasing():
    s = session(publish_rate=500.0)                   # a state every 2 steps
    on_time(s, 10)
    assert s.stamped[-1] == system_ns(100.010)
    s.pause(True)
    for _ in range(3):                                 # paused: the frozen state, stamped at publication
        s.wall.now += 0.1
        s.publish()
    assert s.stamped[-3:] == [system_ns(100.110), system_ns(100.210), system_ns(100.310)]
    s.wall.now = 100.400
    s.pause(False)                                    # anchored at 100.4 s with 10 steps, no catch-up
    on_time(s, 2)
    assert s.stamped[-1] == system_ns(100.402)
    s.wall.now = 100.4025
    s.reset()                                         # anchored again: the state at once, at its time
    s.publish()
    assert s.stamped[-1] == system_ns(100.4025)
    s.wall.now = 100.4045
    s.advance(s.wall.now)
    assert s.stamped[-1] == system_ns(100.4045)
    assert (np.diff(s.stamped) >= 0).all()


def test_a_system_clock_set_back_at_an_anchor_repeats_the_last_stamp_until_passed():
    wall = Clock()
    back = [0]                                         # the system clock set back [ns]
    stamps = StateStamps(Pacer(1e-3, 1.0, 0.05), wall, lambda: system_ns(wall.now) - back[0])
    stamps.pacer.anchor(100.0, 0)
    assert stamps.at(10) == system_ns(100.010)
    back[0] = 5_000_000                                # 5 ms back, then anchored again (a resume)
    wall.now = 100.012
    stamps.pacer.anchor(wall.now, 10)
    assert stamps.at(10) == system_ns(100.010)        # 100.007 s: not before the last stamp
    assert stamps.at(14) == system_ns(100.011)        # 100.012 - 0.005 + 0.004: past it again


def test_as_fast_as_possible_stamps_at_publication():
    s = session(real_time_factor=0.0)
    s.wall.now = 123.0
    assert s.state_stamp_ns() == system_ns(123.0)


def test_the_clock_offset_takes_the_narrowest_bracket():
    wall = iter([10.0, 10.004, 20.0, 20.000002, 30.0, 30.001])    # clock reads: the first try preempted
    system = iter([5_000, 7_000, 9_000])                            # system clock reads [ns]
    # Brackets of 4 ms, 2 us, 1 ms: the second counts, its middle 20.000001 s.
    assert clock_offset_ns(lambda: next(wall), lambda: next(system)) == 7_000 - 20_000_001_000


def test_commands_are_held_superseded_counted_and_bad_ones_rejected():
    s = session()
    s.effort([1.0] * 7)
    s.effort([2.0] * 7)                              # before any step: the first is superseded
    s.wall.now += 1e-3
    s.advance(s.wall.now)
    np.testing.assert_allclose(s.sim.command.value, 2.0)
    s.effort([1.0, NAN, 0, 0, 0, 0, 0])
    s.joint_command(['panda_joint1', 'gripper'], [0.0, 0.0], [], [])
    s.wrench('no_link', _V(1, 0, 0), _V(0, 0, 0), 'link')
    np.testing.assert_allclose(s.sim.command.value, 2.0)                # nothing changed
    c = s.counts
    assert (c['effort_commands'], c['joint_commands'], c['wrenches'], c['rejected'], c['superseded']) == (3, 1, 1, 3, 1)
    assert s.last_rejection.startswith("wrench: header.frame_id 'no_link' is not a link of the model")
    assert [level for level, _ in s.logged] == ['warning'] * 3
    s.joint_command(['panda_joint2', 'panda_joint1'], [0.3, NAN], [NAN, 0.5], [], )
    assert s.sim.command.mode[:2].tolist() == [rd.simulation.VELOCITY, rd.simulation.POSITION]


def test_the_command_timeout_zeroes_the_efforts_after_the_state_is_out():
    s = session(command_timeout=0.01)
    s.effort([3.0] * 7)
    efforts = []
    s.publish = lambda: efforts.append(s.sim.effort.copy())
    s.run(12)
    # 10 steps with the command (the 10th state still shows it), then zero torque.
    assert [e[0] for e in efforts] == [3.0] * 10 + [0.0] * 2
    assert s.counts['timeouts'] == 1 and not s.commanded
    assert s.logged[-1][1].startswith('no command for 0.010 s of simulated time')
    s.effort([1.0] * 7)
    assert s.logged[-1] == ('info', 'commands resumed') and s.commanded


def test_a_failed_step_keeps_the_state_and_zeroes_commands_and_wrenches():
    # An absurd step (50 s) with a large torque: the state diverges within a few steps.
    s = session(physics_rate=0.02, publish_rate=0.02, joint_friction=False, position_limits=False,
                velocity_limits=False)
    s.effort([80.0] * 7)
    s.wrench('panda_link7', _V(0, 0, 1), _V(0, 0, 0), 'link')
    assert s.run(50) is False
    assert s.counts['simulation_errors'] == 1 and 0 <= s.steps < 50
    assert s.sim.time == pytest.approx(50.0 * s.steps) and np.isfinite(s.sim.q).all()
    np.testing.assert_array_equal(s.sim.command.value, 0.0)
    assert not s.sim.wrenches.wrenches and s.logged[-1][0] == 'error' and not s.commanded


def test_a_new_model_of_the_same_joints_carries_over_else_starts_again():
    s = session(initial_positions=list(Q0))
    s.effort([0.5] * 7)
    s.wrench('panda_link7', _V(0, 0, 2), _V(0, 0, 0), 'base')
    s.run(20)
    q, t = s.sim.q.copy(), s.sim.time
    heavier = MODEL.with_payload('panda_link7', 1.0, (0.0, 0.0, 0.1))
    assert s.set_model(heavier, False, NAMES) is None
    assert s.sim.model is heavier and s.sim.time == t
    np.testing.assert_array_equal(s.sim.q, q)
    np.testing.assert_array_equal(s.sim.command.value, 0.5)
    assert list(s.sim.wrenches.wrenches) == ['panda_link7']
    assert s.set_model(MODEL, True, NAMES) is None    # other joints: the initial state, the time going on
    np.testing.assert_array_equal(s.sim.q, Q0)
    assert s.sim.time == t and not s.commanded


def test_a_model_that_does_not_fit_leaves_the_simulation_running():
    s = session()
    sim = s.sim
    s.settings.joints = ['panda_joint1', 'panda_joint9']
    problem = s.set_model(MODEL, True, NAMES)
    assert problem == ("the model does not fit the simulator: parameter 'joints' entry(ies) 'panda_joint9' not "
                       "in the model (its joints: %s)" % ', '.join(NAMES))
    assert s.sim is sim


def test_initial_positions_outside_the_limits_are_refused():
    problem = SimulationSession(SimulationSettings(initial_positions=[0.0, 0.0, 0.0, 0.5, 0.0, 1.0, 0.0])) \
        .set_model(MODEL, True, NAMES)
    assert "'initial_positions': 0.5 for panda_joint4 is outside its limits [-3.0718, -0.0698]" in problem


def test_reset_pause_and_set_state():
    s = session(initial_positions=list(Q0))
    s.effort([1.0] * 7)
    s.run(100)
    assert s.reset() == 'reset to the initial state at t = 0.100000 s; commands and wrenches cleared'
    np.testing.assert_array_equal(s.sim.q, Q0)
    np.testing.assert_array_equal(s.sim.command.value, 0.0)
    assert s.pause(True) == 'paused at t = 0.100000 s' and s.pause(True) == 'already paused at t = 0.100000 s'
    assert summary(s, 0.0) == (False, 'paused at t = 0.100 s')
    assert s.paused_publish_due(s.wall.now) and not s.paused_publish_due(s.wall.now + 5e-4)
    s.wall.now += 10.0                                # a long pause: no catch-up after it
    assert s.pause(False) == 'running at t = 0.100000 s'
    s.wall.now += 2e-3
    s.advance(s.wall.now)
    assert s.steps == 102 and s.pacer.lag_events == 0
    ok, message = s.set_state(['panda_joint4', 'panda_joint1'], [-1.0, 0.2], [0.1, 0.0])
    assert ok and message == 'state of 2 joint(s) set at t = 0.102000 s'
    assert s.sim.q[[3, 0]].tolist() == [-1.0, 0.2] and s.sim.qd[3] == 0.1
    q = s.sim.q.copy()
    assert s.set_state(['panda_joint4'], [0.5], []) == (
        False, 'position 0.5 for panda_joint4 is outside its limits [-3.0718, -0.0698]')
    assert s.set_state(['panda_joint1'], [0.0], [10.0])[1] == 'velocity 10 for panda_joint1 exceeds its limit 2.175'
    np.testing.assert_array_equal(s.sim.q, q)


def test_a_floating_base_starts_at_its_initial_pose_and_twist():
    model = rd.load_urdf(str(ROOT / 'test' / 'data' / 'mobile_manipulator.urdf'))
    nq = model.root_nq
    assert model.root_joint == 'floating'
    pose = [1.0, 2.0, 0.0, 0.0, 0.0, 0.6, 0.8]
    twist = [0.1] * model.root_nv
    s = SimulationSession(SimulationSettings(initial_base_pose=pose, initial_base_twist=twist))
    assert s.set_model(model, True, list(model.joint_names)) is None
    np.testing.assert_allclose(s.sim.q[:nq], pose)
    np.testing.assert_allclose(s.sim.qd[:model.root_nv], twist)
    np.testing.assert_array_equal(s.sim.qd[model.root_nv:], 0.0)       # the joints at rest
    s = SimulationSession(SimulationSettings(initial_base_pose=[0, 0, 0, 0, 0, 0, 2.0]))
    assert 'has norm 2; expected a unit quaternion' in s.set_model(model, True, list(model.joint_names))
    s = SimulationSession(SimulationSettings(initial_base_pose=[0.0]))
    assert "parameter 'initial_base_pose' has 1 values" in s.set_model(model, True, list(model.joint_names))


def test_settings_problems_name_the_parameters():
    problems = SimulationSettings(publish_rate=2000.0, joints=['a', 'a'], kp=[1.0, 2.0, 3.0]).problems()
    assert problems == ["parameter 'publish_rate' (2000 Hz) must be <= physics_rate (1000 Hz): joint_states are "
                        'published after physics steps',
                        "parameter 'joints' names a joint more than once: ['a', 'a']",
                        "parameter 'kp' has 3 values; expected 1 or one per entry of 'joints' (2)"]
    assert SimulationSettings(publish_rate=300.0).pub_every == 3 and not SimulationSettings().problems()


class _V:
    """A geometry_msgs/Vector3 stand-in."""

    def __init__(self, x, y, z):
        self.x, self.y, self.z = x, y, z

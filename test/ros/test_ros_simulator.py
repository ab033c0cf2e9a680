"""simulator_node end to end: a separate node process, real DDS, this process as its peer.

Each test starts the simulator on the bundled Panda in a namespace of its
own, with its command topics made relative (so they are its own too), and
compares what it publishes with the simulator core (``simulate``), the
library (gravity torques, Jacobians, kinematics) or a closed form. With
``publish_clock`` the joint states are stamped with the simulated time,
which lets a test find the exact physics step of each message.
"""
import time

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import WrenchStamped
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import Trigger
from visualization_msgs.msg import MarkerArray

import robot_dynamics as rd
from robot_dynamics.simulation import simulate
from robot_dynamics_interfaces.srv import SetPayload, SetState

from rclpy.qos import QoSProfile, ReliabilityPolicy

from conftest import BEST_EFFORT, PANDA, set_paused, stamp_ns, stamp_s, wait_for
from test_ros_sim_units import composite_coms

MODEL = rd.load_urdf(str(PANDA))
NAMES = list(MODEL.joint_names)
Q0 = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])     # the Panda's "ready" pose
DT = 1e-3
NAN = float('nan')
# A deep queue: this process's Python executor falls behind now and then.
DEEP = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)


def sim_params(**extra):
    params = {'urdf_path': str(PANDA), 'initial_positions': Q0.tolist(), 'publish_rate': 250.0,
              'effort_commands_topic': 'effort_controller/commands', 'joint_commands_topic': 'joint_commands',
              'diagnostics_period': 0.2, 'marker_rate': 0.0}
    params.update(extra)
    return params


def start_sim(ros, start_node, **params):
    """A simulator_node on the Panda, ready (its last subscription exists)."""
    proc = start_node('simulator_node', sim_params(**params))
    ros.wait_for_subscriber(proc.topic('effort_controller/commands'), process=proc)
    return proc



def arrays(msgs, field):
    return np.array([getattr(m, field) for m in msgs])


def call(ros, proc, srv_type, name, request, idempotent=False):
    return ros.call(srv_type, proc.topic(name), request, idempotent=idempotent)



def collect_until(states, t_end, timeout=10.0):
    """Messages (arrival order) once one stamped >= t_end [s] has come."""
    assert states.wait_where(lambda m: stamp_s(m) >= t_end - 1e-9, timeout), 'no state stamped %.3f s' % t_end
    return list(states.messages)


def diag_values(diag, proc, predicate, timeout=5.0):
    """The simulator's diagnostic values (dict) of the first status that satisfies ``predicate``."""
    key = '%s: simulator' % proc.fqn.lstrip('/')
    found = {}

    def match(array):
        for s in array.status:
            if s.name == key:
                values = {kv.key: kv.value for kv in s.values}
                found['last'] = values
                if predicate(values):
                    return True
        return False
    assert diag.wait_where(match, timeout), 'diagnostics never satisfied the test: %s' % found.get('last')
    return found['last']


def effort_msg(values):
    return Float64MultiArray(data=[float(x) for x in values])


def publish_until_effort(ros, pub, msg, states, expected, timeout=5.0):
    """Publish ``msg`` until a joint state's effort field equals ``expected`` (model order)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pub.publish(msg)
        got = states.wait_where(lambda m: np.allclose(m.effort, expected, atol=1e-9, rtol=0), 0.1)
        if got is not None:
            return got
    raise AssertionError('the command never showed in joint_states.effort')


def test_zero_torque_fall_matches_the_core_and_states_come_at_the_rate(ros, start_node):
    proc = start_sim(ros, start_node, publish_clock=True)
    states = ros.subscribe(JointState, proc.topic('joint_states'), DEEP)
    clock = ros.subscribe(Clock, '/clock', BEST_EFFORT)
    assert states.wait(count=300, timeout=10), proc.read_log()
    msgs, arrivals = list(states.messages), np.array(states.times)
    assert all(list(m.name) == NAMES for m in msgs)
    assert all(len(m.position) == len(m.velocity) == len(m.effort) == 7 for m in msgs)
    # One message every 4 physics steps of 1 ms (publish_rate 250 Hz of simulated time);
    # a message this process missed leaves a gap of whole periods.
    t = np.array([stamp_s(m) for m in msgs])
    periods = np.diff(t) / (4 * DT)
    np.testing.assert_allclose(periods, np.round(periods), atol=1e-6)
    periods = np.round(periods)
    assert periods.min() == 1 and np.mean(periods == 1) > 0.9
    # Paced at real time: 250 messages a second, but for the longest gap between two arrivals (one stall
    # of the shared CI machine, 0.58 s once, left the window's rate at 159/s while the node kept its pace
    # before and after); with that gap, still over half.
    gaps = np.diff(arrivals)
    wall_rate = len(gaps) / gaps.sum()
    paced_rate = (len(gaps) - 1) / (gaps.sum() - gaps.max())
    assert 0.7 * 250 < paced_rate < 1.3 * 250, (paced_rate, wall_rate, gaps.max())
    assert 0.5 * 250 < wall_rate, (paced_rate, wall_rate, gaps.max())
    # The same fall as the core's simulate() from the same state, step for step.
    run = simulate(MODEL, Q0, duration=t[-1], dt=DT)
    k = np.round(t / DT).astype(int)
    np.testing.assert_allclose(arrays(msgs, 'position'), run.q[k], atol=1e-9)
    np.testing.assert_allclose(arrays(msgs, 'velocity'), run.qd[k], atol=1e-9)
    assert not np.any(arrays(msgs, 'effort'))                        # no command: the motors are off
    assert rd.potential_energy(MODEL, run.q[k[-1]]) < rd.potential_energy(MODEL, Q0) - 1.0   # it falls
    # /clock carries the simulated time.
    assert clock.wait(count=5)
    c = np.array([m.clock.sec + m.clock.nanosec * 1e-9 for m in list(clock.messages)])
    assert np.all(np.diff(c) >= 0) and c[-1] >= t[0]


def test_effort_commands_follow_joints_order_latest_wins(ros, start_node):
    order = NAMES[::-1]
    proc = start_sim(ros, start_node, joints=order, initial_positions=Q0[::-1].tolist(),
                     start_paused=True, publish_clock=True)
    states = ros.subscribe(JointState, proc.topic('joint_states'), DEEP)
    diag = ros.subscribe(DiagnosticArray, '/diagnostics')
    pub = ros.publisher(Float64MultiArray, proc.topic('effort_controller/commands'))
    g = rd.gravity_torques(MODEL, Q0)
    assert wait_for(lambda: pub.get_subscription_count() > 0, 5)
    for scale in (0.0, 2.0, -1.0, 0.5):                  # superseded while paused: never applied
        pub.publish(effort_msg(scale * g[::-1]))
    got = publish_until_effort(ros, pub, effort_msg(g[::-1]), states, g)
    np.testing.assert_allclose(got.position, Q0, atol=1e-12)
    set_paused(ros, proc, False)
    msgs = collect_until(states, 0.5)
    running = [m for m in msgs if stamp_s(m) > 0]
    assert len(running) > 50
    # g(q0) in `joints` order reaches the right joints: the arm holds its pose.
    np.testing.assert_allclose(arrays(running, 'position'), np.tile(Q0, (len(running), 1)), atol=1e-9)
    np.testing.assert_allclose(arrays(running, 'effort'), np.tile(g, (len(running), 1)), atol=1e-9)
    values = diag_values(diag, proc, lambda v: int(v['commands_superseded']) >= 4)
    assert int(values['effort_commands_in']) >= 5 and values['commands_rejected'] == '0'


def test_joint_state_commands_position_and_velocity_by_name(ros, start_node):
    # Without the URDF damping, which the servo does not compensate, the errors follow closed forms.
    proc = start_sim(ros, start_node, start_paused=True, publish_clock=True, joint_friction=False)
    states = ros.subscribe(JointState, proc.topic('joint_states'), DEEP)
    pub = ros.publisher(JointState, proc.topic('joint_commands'))
    step = np.array([0.1, 0.1, -0.1, 0.1, -0.1, 0.1])
    target = Q0[:6] + step
    v7 = 0.2
    order = [3, 0, 6, 1, 5, 2, 4]                          # any order, by name
    cmd = JointState(name=[NAMES[i] for i in order],
                     position=[float(target[i]) if i < 6 else NAN for i in order],
                     velocity=[NAN if i < 6 else v7 for i in order])
    assert wait_for(lambda: pub.get_subscription_count() > 0, 5)
    deadline = time.monotonic() + 5
    while not states.wait_where(lambda m: np.abs(m.effort).max() > 1e-3, 0.1):   # the servo engaged
        assert time.monotonic() < deadline, 'the joint command never took effect'
        pub.publish(cmd)
    set_paused(ros, proc, False)
    msgs = [m for m in collect_until(states, 1.0) if stamp_s(m) > 0]
    t = np.array([stamp_s(m) for m in msgs])
    q, qd = arrays(msgs, 'position'), arrays(msgs, 'velocity')
    # Position joints: e'' + 2 w e' + w^2 e = 0 (w = servo_bandwidth = 20 rad/s) from rest,
    # e(t) = e0 (1 + w t) exp(-w t). Velocity joint: e' + kv e = 0 with kv = 2 w. RK4 at 1 kHz.
    w = 20.0
    e = (target - q[:, :6]) / step
    closed = (1 + w * t) * np.exp(-w * t)
    np.testing.assert_allclose(e, np.tile(closed[:, None], (1, 6)), atol=1e-6)
    np.testing.assert_allclose(q[-1, :6], target, atol=1e-3)
    np.testing.assert_allclose(qd[:, 6], v7 * (1 - np.exp(-2 * w * t)), atol=1e-6)


def test_wrench_pushes_the_arm_along_jt_f(ros, start_node):
    proc = start_sim(ros, start_node, gravity=[0.0, 0.0, 0.0], publish_clock=True)
    states = ros.subscribe(JointState, proc.topic('joint_states'), DEEP)
    pub = ros.publisher(WrenchStamped, proc.topic('~/wrench'))
    diag = ros.subscribe(DiagnosticArray, '/diagnostics')
    f, n = np.array([0.5, 0.0, -0.25]), np.array([0.0, 0.02, 0.0])
    msg = WrenchStamped()
    msg.header.frame_id = 'panda_hand'                      # acts on panda_hand, in its frame
    msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z = f
    msg.wrench.torque.x, msg.wrench.torque.y, msg.wrench.torque.z = n
    assert wait_for(lambda: pub.get_subscription_count() > 0, 5)
    assert states.wait(count=5)
    np.testing.assert_allclose(states.last().position, Q0, atol=1e-12)   # zero gravity: at rest
    pub.publish(msg)
    moved = states.wait_where(lambda m: np.abs(np.array(m.position) - Q0).max() > 1e-3, 5)
    assert moved is not None, proc.read_log()
    R = rd.link_pose(MODEL, Q0, 'panda_hand')[:3, :3]
    tau = rd.jacobian(MODEL, Q0, 'panda_hand').T @ np.concatenate([R @ f, R @ n])   # J^T F, base frame
    qdd = np.linalg.solve(rd.mass_matrix(MODEL, Q0), tau)
    dq = np.array(moved.position) - Q0
    assert dq @ qdd / (np.linalg.norm(dq) * np.linalg.norm(qdd)) > 0.99
    # An all-zero wrench removes it: stopped, the arm then stays at rest.
    set_paused(ros, proc, True)
    msg.wrench.force.x = msg.wrench.force.y = msg.wrench.force.z = 0.0
    msg.wrench.torque.x = msg.wrench.torque.y = msg.wrench.torque.z = 0.0
    pub.publish(msg)
    diag_values(diag, proc, lambda v: v['wrenches_in'] == '2')
    req = SetState.Request()
    req.joint_state.name = NAMES
    req.joint_state.position = list(states.last().position)
    states.clear()
    res = call(ros, proc, SetState, '~/set_state', req)
    assert res.success, res.message
    rest = states.wait_where(lambda m: not any(m.velocity), 5)
    np.testing.assert_array_equal(rest.position, req.joint_state.position)
    set_paused(ros, proc, False)
    msgs = [m for m in collect_until(states, stamp_s(rest) + 0.2) if stamp_s(m) > stamp_s(rest)]
    assert len(msgs) > 10
    np.testing.assert_array_equal(arrays(msgs, 'velocity'), 0.0)
    np.testing.assert_array_equal(arrays(msgs, 'position'), np.tile(rest.position, (len(msgs), 1)))


def test_bad_messages_are_rejected_counted_and_change_nothing(ros, start_node):
    proc = start_sim(ros, start_node, publish_clock=True, start_paused=True)
    states = ros.subscribe(JointState, proc.topic('joint_states'), DEEP)
    diag = ros.subscribe(DiagnosticArray, '/diagnostics')
    effort = ros.publisher(Float64MultiArray, proc.topic('effort_controller/commands'))
    joint = ros.publisher(JointState, proc.topic('joint_commands'))
    wrench = ros.publisher(WrenchStamped, proc.topic('~/wrench'))
    for p in (effort, joint, wrench):
        assert wait_for(lambda: p.get_subscription_count() > 0, 5)
    joint.publish(JointState(name=NAMES, position=Q0.tolist()))   # servo at the ready pose
    diag_values(diag, proc, lambda v: v['joint_commands_in'] == '1')
    set_paused(ros, proc, False)
    collect_until(states, 0.2)

    def wrench_msg(frame, fx):
        w = WrenchStamped()
        w.header.frame_id = frame
        w.wrench.force.x = fx
        return w
    bad = [(effort, effort_msg(np.zeros(6))),                                        # length
           (effort, effort_msg([0.0, 1.0, NAN, 0, 0, 0, 0])),                       # NaN
           (effort, effort_msg(np.zeros(100_000))),                                  # huge
           (joint, JointState(name=NAMES[:2] + ['gripper'], position=[0.0] * 3)),   # unknown joint
           (joint, JointState(name=[NAMES[0]] * 2, position=[0.0] * 2)),            # duplicate
           (joint, JointState(name=NAMES[:1], position=[float('inf')])),             # infinite
           (joint, JointState(name=NAMES, position=[0.0] * 3)),                      # length
           (joint, JointState(name=['j%d' % i for i in range(10_000)], effort=[0.0] * 10_000)),   # huge
           (wrench, wrench_msg('no_such_link', 1.0)),                                # unknown link
           (wrench, wrench_msg('', 1.0)),                                            # no frame
           (wrench, wrench_msg('panda_hand', NAN))]                                  # NaN
    for pub, msg in bad:
        pub.publish(msg)
    values = diag_values(diag, proc, lambda v: int(v['commands_rejected']) >= len(bad), timeout=10)
    assert int(values['commands_rejected']) == len(bad) and values['last_rejection']
    assert proc.poll() is None
    t_bad = stamp_s(states.last())
    msgs = collect_until(states, t_bad + 0.3)
    q = arrays(msgs, 'position')
    assert np.all(np.isfinite(q)) and np.all(np.isfinite(arrays(msgs, 'effort')))
    np.testing.assert_allclose(q, np.tile(Q0, (len(q), 1)), atol=1e-9)   # the hold command is still in force
    # A good message after the bad ones is applied.
    effort.publish(effort_msg(np.full(7, 0.5)))
    assert states.wait_where(lambda m: np.allclose(m.effort, 0.5, atol=1e-12), 5)


def test_pause_set_state_and_reset_services(ros, start_node):
    proc = start_sim(ros, start_node)                              # publish_clock false: wall stamps
    states = ros.subscribe(JointState, proc.topic('joint_states'), DEEP)
    assert states.wait(count=5)
    assert abs(stamp_s(states.last()) - time.time()) < 2.0
    res = set_paused(ros, proc, True)
    assert 'paused' in res.message
    assert 'already paused' in set_paused(ros, proc, True).message
    time.sleep(0.1)
    states.clear()
    time.sleep(0.3)
    msgs = list(states.messages)
    assert len(msgs) > 20                                          # still published while paused
    assert np.ptp(arrays(msgs, 'position'), axis=0).max() == 0.0  # frozen
    assert stamp_s(msgs[-1]) > stamp_s(msgs[0])                          # wall stamps move on
    # set_state: named joints only, by name.
    req = SetState.Request()
    req.joint_state.name = [NAMES[3], NAMES[1]]
    req.joint_state.position = [-1.5, -0.3]
    req.joint_state.velocity = [0.0, 0.1]
    before = np.array(states.last().position)
    res = call(ros, proc, SetState, '~/set_state', req)
    assert res.success, res.message
    got = states.wait_where(lambda m: m.position[1] == -0.3, 5)
    expected = before.copy()
    expected[[3, 1]] = [-1.5, -0.3]
    np.testing.assert_array_equal(got.position, expected)
    assert got.velocity[1] == 0.1 and got.velocity[3] == 0.0
    for names, position, words in [(['gripper'], [0.0], "'gripper'"),
                                   ([NAMES[3]], [0.5], 'outside its limits')]:
        req.joint_state.name, req.joint_state.position, req.joint_state.velocity = names, position, []
        res = call(ros, proc, SetState, '~/set_state', req)
        assert not res.success and words in res.message, res.message
    # reset: the initial state, commands cleared.
    pub = ros.publisher(Float64MultiArray, proc.topic('effort_controller/commands'))
    assert wait_for(lambda: pub.get_subscription_count() > 0, 5)
    publish_until_effort(ros, pub, effort_msg(np.ones(7)), states, np.ones(7))
    res = call(ros, proc, Trigger, '~/reset', Trigger.Request())
    assert res.success, res.message
    got = states.wait_where(lambda m: np.array_equal(m.position, Q0) and not any(m.effort), 5)
    assert got is not None and not any(got.velocity)
    set_paused(ros, proc, False)
    assert states.wait_where(lambda m: np.abs(np.array(m.position) - Q0).max() > 1e-3, 5)   # falls again


def test_wall_stamps_are_the_times_the_states_were_due(ros, start_node):
    """Without publish_clock each state is stamped with the wall time its step was due at, not its
    publication: consecutive stamps differ by whole steps of 1 ms (to 1 us), however the states arrive
    (a late tick's catch-up batch comes at once); only a lag event (steps dropped) may break the grid."""
    proc = start_sim(ros, start_node, publish_rate=1000.0)           # a state every step
    states = ros.subscribe(JointState, proc.topic('joint_states'), DEEP)
    diag = ros.subscribe(DiagnosticArray, '/diagnostics')
    assert states.wait(count=600, timeout=20)
    msgs = list(states.messages)
    values = diag_values(diag, proc, lambda v: int(v['joint_states_published']) >= len(msgs))
    gaps = np.diff([stamp_ns(m) for m in msgs])
    steps = np.round(gaps / 1e6)
    off_grid = np.abs(gaps - steps * 1e6) > 1e3
    assert (steps >= 1).all(), gaps[steps < 1]
    assert off_grid.sum() <= int(values['lag_events']), gaps[off_grid]


def test_markers_and_clock_while_paused(ros, start_node):
    proc = start_sim(ros, start_node, start_paused=True, publish_clock=True, marker_rate=20.0)
    markers = ros.subscribe(MarkerArray, proc.topic('~/markers'))
    clock = ros.subscribe(Clock, '/clock', BEST_EFFORT)
    array = markers.wait(count=2, timeout=5)
    assert array is not None
    assert all(m.header.frame_id == MODEL.base_link for m in array.markers)
    spheres = {m.id: m for m in array.markers if m.ns == 'com'}
    boxes = {m.id: m for m in array.markers if m.ns == 'inertia'}
    expected = composite_coms(Q0)                               # {moving link: (mass, com in base)}
    assert len(spheres) == len(boxes) == len(expected)
    got = sorted([p.pose.position.x, p.pose.position.y, p.pose.position.z] for p in spheres.values())
    np.testing.assert_allclose(got, sorted(c.tolist() for _, c in expected.values()), atol=1e-9)
    frames = next(m for m in array.markers if m.ns == 'frames')
    assert len(frames.points) == 6 * len(MODEL.link_names)
    # Paused: the simulated time stands still on /clock.
    assert clock.wait(count=3)
    time.sleep(0.2)
    c = {m.clock.sec * 10**9 + m.clock.nanosec for m in list(clock.messages)}
    assert c == {0}
    # A payload is simulated: the last body's centre of mass moves to the composite with it.
    req = SetPayload.Request()
    req.payload.link = 'panda_hand'
    req.payload.inertia.m, req.payload.inertia.com.z = 2.0, 0.1
    res = call(ros, proc, SetPayload, '~/set_payload', req)
    assert res.success, res.message
    T = rd.link_pose(MODEL, Q0, 'panda_hand')
    m7, c7 = expected['panda_link7']
    c = (m7 * c7 + 2.0 * (T[:3, :3] @ [0.0, 0.0, 0.1] + T[:3, 3])) / (m7 + 2.0)

    def moved(array):
        for m in array.markers:
            p = m.pose.position
            if m.ns == 'com' and np.allclose([p.x, p.y, p.z], c, atol=1e-9):
                return True
        return False
    assert markers.wait_where(moved, 5) is not None


def test_command_timeout_zeroes_the_efforts(ros, start_node):
    proc = start_sim(ros, start_node, command_timeout=0.2, start_paused=True, publish_clock=True)
    states = ros.subscribe(JointState, proc.topic('joint_states'), DEEP)
    diag = ros.subscribe(DiagnosticArray, '/diagnostics')
    pub = ros.publisher(Float64MultiArray, proc.topic('effort_controller/commands'))
    g = rd.gravity_torques(MODEL, Q0)
    assert wait_for(lambda: pub.get_subscription_count() > 0, 5)
    publish_until_effort(ros, pub, effort_msg(g), states, g)    # accepted at t = 0 (paused)
    set_paused(ros, proc, False)
    msgs = [m for m in collect_until(states, 0.6) if stamp_s(m) > 0]
    t = np.array([stamp_s(m) for m in msgs])
    # The state at 0.2 s still reports g: the torque of the step that led to it.
    before, after = t < 0.2 + 1e-6, t > 0.2 + 1e-6
    assert before.sum() > 10 and after.sum() > 10
    np.testing.assert_allclose(arrays(msgs, 'effort')[before], np.tile(g, (before.sum(), 1)), atol=1e-9)
    np.testing.assert_allclose(arrays(msgs, 'position')[before], np.tile(Q0, (before.sum(), 1)), atol=1e-9)
    assert not np.any(arrays(msgs, 'effort')[after])            # limp after 0.2 s without commands
    assert np.abs(np.array(msgs[-1].position) - Q0).max() > 1e-2    # and falls
    diag_values(diag, proc, lambda v: v['command_timeouts'] == '1')


@pytest.mark.parametrize('params, words', [
    ({'publish_rate': 2000.0, 'joints': [NAMES[0], NAMES[0]]}, ["'publish_rate'", 'more than once']),
    ({'initial_positions': [0.0, -0.785, 0.0, 0.5, 0.0, 1.571, 0.785]}, ['panda_joint4', 'outside its limits']),
    ({'joints': NAMES[:6] + ['gripper_joint']}, ["'gripper_joint'", 'not in the model']),
])
def test_bad_parameters_stop_the_node_with_status_2(start_node, params, words):
    proc = start_node('simulator_node', sim_params(**params))
    assert proc.wait(timeout=120) == 2
    log = proc.read_log()
    for w in words:
        assert w in log, log

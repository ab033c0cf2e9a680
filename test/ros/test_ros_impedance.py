"""cartesian_impedance over DDS: simulator_node (the Panda, 1 kHz physics, RK4) + dynamics_node.

Both nodes run as separate processes in one namespace with their default, relative topic names:
the simulator publishes ``joint_states`` at 1 kHz (a torque-controlled arm's rate) and reads
``effort_controller/commands``, which dynamics_node publishes (``publish_command``). This process streams a PoseStamped target a few cm from the flange's
start pose on dynamics_node's ``~/target_pose`` and measures the flange (``rd.link_pose`` of
panda_link8 on the simulator's joint states, not the node's own figures): it reaches the target to
within 2 mm at rest. Then a stale, a NaN and a non-unit-quaternion target, each 5 cm away, are refused,
counted in /diagnostics, and the flange stays within 2 mm of the last valid target.

joint_impedance the same way on a JointState target stream: the joints come to rest at the target, and
what the node decides is checked per joint state, not how fast DDS delivers: every ``~/impedance_torque``
answers one joint state (its stamp; never two for one), is finite and within the effort limits, and,
once the arm moves towards the target, is the library's ``rd.JointImpedance`` torque at that state to
1e-9 N m, clamped to the effort limits (the torque-rate limit off here, so that every torque is the law's;
the limit is tested without DDS in test/control/test_control_impedance.py and
test/test_impedance_options.py).
"""
import time

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState

import robot_dynamics as rd
from robot_dynamics.model.configuration import matrix_quaternion

from conftest import PANDA, set_paused, wait_for

# Times DDS delivery and the nodes' real-time loops on a 2-core machine: one rerun, every assertion each time.
pytestmark = pytest.mark.flaky(reruns=1)

MODEL = rd.load_urdf(str(PANDA))
FLANGE = 'panda_link8'
Q0 = np.array([0.0, -0.3, 0.0, -2.0, 0.0, 1.8, 0.8])
OFFSET = np.array([0.03, -0.02, 0.03])       # [m] the target from the start pose
AT_REST = 2e-3                               # [m]
DEEP = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)


def flange(msg):
    """(position (3,) [m], quaternion (4,)) of the flange at the joint state ``msg`` (model order)."""
    T = rd.link_pose(MODEL, np.array(msg.position), FLANGE)
    return T[:3, 3], matrix_quaternion(T[:3, :3])


def pose(ros, position, quaternion, age=0.0, frame='panda_link0'):
    msg = PoseStamped()
    msg.header.frame_id = frame
    msg.header.stamp = (ros.node.get_clock().now() - rd_duration(age)).to_msg()
    p, o = msg.pose.position, msg.pose.orientation
    p.x, p.y, p.z = (float(x) for x in position)
    o.x, o.y, o.z, o.w = (float(x) for x in quaternion)
    return msg


def rd_duration(seconds):
    from rclpy.duration import Duration
    return Duration(nanoseconds=int(seconds * 1e9))


def errors(states, target, since):
    """Distances [m] of the flange from ``target`` in the joint states received after ``since`` (monotonic)."""
    q = [m.position for t, m in list(states.timed) if t > since]
    if not q:
        return []
    T = rd.link_pose(MODEL, np.array(q), FLANGE)                  # one batch: at 1 kHz, hundreds of states
    return list(np.linalg.norm(T[:, :3, 3] - target, axis=-1))


class Timed:
    """Messages with their arrival time (time.monotonic), the last ``keep``."""

    def __init__(self, keep=3000):
        self.timed, self.keep = [], keep

    def __call__(self, msg):
        self.timed.append((time.monotonic(), msg))
        del self.timed[:-self.keep]


def diag_values(ros, proc, predicate, timeout):
    diag = ros.subscribe(DiagnosticArray, '/diagnostics')
    found = {}

    def match(array):
        for s in array.status:
            if proc.name in s.name:
                values = {kv.key: kv.value for kv in s.values}
                found['last'] = values
                return predicate(values)
        return False
    ok = diag.wait_where(match, timeout=timeout)
    return ok is not None, found.get('last', {})


def stream_until_at_rest(publish, recent, bound, timeout=20.0, hold=1.5):
    """Call ``publish()`` every 20 ms until the errors of the last 0.5 s (``recent()``) have been under
    ``bound`` for ``hold`` seconds, or ``timeout`` seconds pass. Returns (the monotonic time they first
    were all under bound, or None; the last errors seen)."""
    deadline, near, last = time.monotonic() + timeout, None, []
    while time.monotonic() < deadline:
        publish()
        time.sleep(0.02)
        last = recent()
        if near is None and len(last) > 50 and max(last) < bound:
            near = time.monotonic()
        if near is not None and time.monotonic() > near + hold:
            break
    return near, last


def test_cartesian_impedance_follows_a_pose_target_and_refuses_bad_ones(ros, start_node):
    t_start = time.monotonic()
    ns = '/imp%d' % id(ros)
    sim = start_node('simulator_node', {
        'urdf_path': str(PANDA), 'initial_positions': Q0.tolist(), 'start_paused': True, 'physics_rate': 1000.0,
        'integrator': 'rk4', 'publish_rate': 1000.0, 'marker_rate': 0.0}, name='simulator', ns=ns)
    ros.wait_for_subscriber(sim.topic('effort_controller/commands'), process=sim)
    timed = Timed()
    ros.node.create_subscription(JointState, ns + '/joint_states', timed, DEEP)
    dyn = start_node('dynamics_node', {
        'urdf_path': str(PANDA), 'mode': 'cartesian_impedance', 'publish_command': True,
        'impedance_link': FLANGE, 'stiffness': [500.0, 500.0, 500.0, 30.0, 30.0, 30.0], 'nullspace_stiffness': 5.0,
        'joint_state_timeout': 0.5, 'target_timeout': 0.5, 'diagnostics_period': 0.2}, name='dynamics_node', ns=ns)
    ros.wait_for_subscriber(ns + '/joint_states', process=dyn)
    # While paused the simulator publishes the state; the command comes back through DDS: g(q) at the start pose.
    g = rd.gravity_torques(MODEL, Q0)
    assert wait_for(lambda: timed.timed and np.allclose(timed.timed[-1][1].effort, g, atol=1e-3), 60), \
        dyn.read_log()
    p0, quat0 = flange(timed.timed[-1][1])
    target = p0 + OFFSET
    set_paused(ros, sim, False)
    targets = ros.publisher(PoseStamped, dyn.topic('~/target_pose'))
    wait_for(lambda: targets.get_subscription_count() > 0, 10)

    # A stream of the target at 50 Hz: the flange comes within 2 mm, then 1.5 s more to rest.
    assert errors(timed, target, time.monotonic() - 0.5)[-1] > 0.9 * np.linalg.norm(OFFSET)      # it starts away
    near, recent = stream_until_at_rest(lambda: targets.publish(pose(ros, target, quat0)),
                                        lambda: errors(timed, target, time.monotonic() - 0.5), AT_REST)
    assert near is not None, ('the flange did not come within %.1f mm of the target: last 0.5 s %.2f-%.2f mm\n%s'
                              % (AT_REST * 1e3, 1e3 * min(recent or [0]), 1e3 * max(recent or [0]), dyn.read_log()))
    at_rest = errors(timed, target, time.monotonic() - 0.5)
    assert len(at_rest) > 50 and max(at_rest) < AT_REST, max(at_rest)
    print('\nat rest: the flange within %.4f mm of the target (the last 0.5 s of joint states, %.1f s after it '
          'came within 2 mm)' % (max(at_rest) * 1e3, 1.5))

    # Bad targets, 5 cm further: refused, counted, and the flange stays at the last valid target.
    far = target + [0.0, 0.05, 0.0]
    bad = [('stale', pose(ros, far, quat0, age=2.0), 'more than target_timeout'),
           ('nan', pose(ros, far * np.nan, quat0), 'non-finite pose'),
           ('non-unit', pose(ros, far, 1.1 * quat0), 'not a unit quaternion')]
    ok, before = diag_values(ros, dyn, lambda v: 'targets_rejected' in v, 5.0)
    assert ok, before
    rejected = int(before['targets_rejected'])
    for k, (what, msg, reason) in enumerate(bad, 1):
        since = time.monotonic()
        for _ in range(5):
            if what != 'stale':
                msg.header.stamp = ros.node.get_clock().now().to_msg()
            targets.publish(msg)
            time.sleep(0.05)
        ok, values = diag_values(ros, dyn, lambda v: int(v['targets_rejected']) >= rejected + 5 * k
                                 and reason in v['last_target_problem'], 5.0)
        assert ok, (what, values)
        time.sleep(0.5)
        moved = errors(timed, target, since)
        assert len(moved) > 50 and max(moved) < AT_REST, (what, max(moved or [0.0]))
    assert int(values['targets_in']) >= int(values['targets_rejected']) + 1
    print('after the bad targets: the flange within %.4f mm of the last valid target; dynamics_node\'s callback '
          '%s us on average' % (max(moved) * 1e3, values['callback_time_mean_us']))
    assert time.monotonic() - t_start < 90


def stamp_ns(msg):
    return msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec


def test_joint_impedance_at_1_khz_answers_each_joint_state_with_the_librarys_law(ros, start_node):
    ns = '/jimp%d' % id(ros)
    sim = start_node('simulator_node', {
        'urdf_path': str(PANDA), 'initial_positions': Q0.tolist(), 'start_paused': True, 'physics_rate': 1000.0,
        'integrator': 'rk4', 'publish_rate': 1000.0, 'marker_rate': 0.0}, name='simulator', ns=ns)
    ros.wait_for_subscriber(sim.topic('effort_controller/commands'), process=sim)
    states, torques = Timed(20000), Timed(20000)
    ros.node.create_subscription(JointState, ns + '/joint_states', states, DEEP)
    dyn = start_node('dynamics_node', {
        'urdf_path': str(PANDA), 'mode': 'joint_impedance', 'publish_command': True, 'stiffness': [STIFFNESS],
        'max_torque_rate': 0.0, 'joint_state_timeout': 0.5, 'target_timeout': 0.5, 'diagnostics_period': 0.2}, name='dynamics_node', ns=ns)
    ros.node.create_subscription(JointState, dyn.topic('~/impedance_torque'), torques, DEEP)
    ros.wait_for_subscriber(ns + '/joint_states', process=dyn)
    g = rd.gravity_torques(MODEL, Q0)
    assert wait_for(lambda: states.timed and np.allclose(states.timed[-1][1].effort, g, atol=1e-3), 60), \
        dyn.read_log()
    set_paused(ros, sim, False)
    targets = ros.publisher(JointState, dyn.topic('~/target_joints'))
    wait_for(lambda: targets.get_subscription_count() > 0, 10)

    # A stream of the joint target at 50 Hz: the joints come within 2 mrad, then 1.5 s more to rest.
    target = Q0 + JOINT_OFFSET
    msg = JointState(name=list(MODEL.joint_names), position=target.tolist())
    def publish():
        msg.header.stamp = ros.node.get_clock().now().to_msg()
        targets.publish(msg)

    near, recent = stream_until_at_rest(publish, lambda: joint_errors(states, target, time.monotonic() - 0.5),
                                        JOINT_AT_REST)
    assert near is not None, ('the joints did not come within %.1f mrad of the target: last 0.5 s %.2f-%.2f mrad'
                              '\n%s' % (JOINT_AT_REST * 1e3, 1e3 * min(recent or [0]), 1e3 * max(recent or [0]),
                                         dyn.read_log()))
    at_rest = time.monotonic() - 0.5
    assert max(joint_errors(states, target, at_rest)) < JOINT_AT_REST

    # Each torque answers one joint state (never two for one), finite, within the effort limits ...
    wait_for(lambda: False, 0.3)                                  # the last torques arrive
    by_stamp = {stamp_ns(m): m for _, m in states.timed}
    stamps = [stamp_ns(m) for _, m in torques.timed]
    assert len(stamps) > 500 and np.all(np.diff(stamps) > 0), 'a joint state answered twice or out of order'
    tau = np.array([m.effort for _, m in torques.timed])
    assert np.all(np.isfinite(tau)) and np.all(np.abs(tau) <= MODEL.effort_limit * (1 + 1e-12))
    assert all(list(m.name) == list(MODEL.joint_names) for _, m in torques.timed[-50:])
    # ... and, from the moment the arm moves (the node holds the target), the library's law at that state.
    law = rd.JointImpedance(MODEL, STIFFNESS, max_pose_error=0.3)
    matched = 0
    for t, m in torques.timed:
        state = by_stamp.get(stamp_ns(m))
        if state is not None and np.abs(np.array(state.position) - Q0).max() > 0.01:
            want = law.torque(np.array(state.position), np.array(state.velocity), target)
            want = np.clip(want, -MODEL.effort_limit, MODEL.effort_limit)         # the node's clamp (scale 1)
            np.testing.assert_allclose(m.effort, want, rtol=0, atol=1e-9)
            matched += 1
    assert matched > 500, matched
    print('\njoint_impedance at 1 kHz: %d torques, each for one joint state; at rest within %.4f mrad of the '
          'target; %d torques (in motion and at rest) equal to rd.JointImpedance at their state'
          % (len(stamps), 1e3 * max(joint_errors(states, target, at_rest)), matched))


STIFFNESS = 200.0                                                          # [N m/rad], every joint
JOINT_OFFSET = np.array([0.1, -0.1, 0.1, 0.1, -0.1, 0.1, 0.1])            # [rad] the target from the start
JOINT_AT_REST = 2e-3                                                       # [rad]


def joint_errors(states, target, since):
    """Largest joint errors [rad] from ``target`` in the joint states received after ``since`` (monotonic)."""
    return [float(np.abs(np.array(m.position) - target).max()) for t, m in list(states.timed) if t > since]

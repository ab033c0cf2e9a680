"""The momentum observer end to end: dynamics_node (and simulator_node's efforts) as
separate processes over DDS, this process as their peer.

What the observer must give follows from its sampled form
(robot_dynamics/identification/observer.py): for joint states whose efforts are
the torques that acted up to them (the node's convention, simulator_node's
efforts), ``tau_k = rnea(q_{k-1}, qd_{k-1}, qdd) - tau_ext`` with qdd the
semi-implicit Euler step from the previous sample, the residual obeys
``r_k = r_{k-1} + K dt (tau_ext - r_{k-1})`` exactly. So

- consistent states (tau_ext = 0) give r = 0 up to rounding (1e-9 N m here);
- a constant push from rest gives ``|r - tau_ext| <= |tau_ext| (1 - K dt)^n
  <= |tau_ext| exp(-K t)`` after t seconds, whatever the intervals (each
  ``K dt_k`` < 1): 2e-9 relative after 0.4 s at K = 50 1/s, so 1e-6 N m is
  rounding plus margin;
- the wrench ``pinv(J^T) r`` is then F within ``|pinv(J^T)| 1e-6`` (1e-4 N is
  ample for the Panda's J at these poses).

The states are published at a steady pace with stamps 1 ms apart (the node
takes dt from the stamps), reliable on both sides; the node's diagnostics
confirm it used every one. The outputs come to a FastPeer (EventsExecutor)
of this process; this process may still miss a few of them, so the checks
take what came (the collision events, few and latched, all come).
"""
import time

import numpy as np
import pytest
from geometry_msgs.msg import WrenchStamped
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

import robot_dynamics as rd
from robot_dynamics.simulation import simulate
from robot_dynamics_interfaces.msg import Collision
from robot_dynamics_interfaces.srv import SetPayload

from conftest import Collector, PANDA, RELIABLE, set_paused, stamp_ns, stamp_s, wait_for
from probes import Diagnostics, FastPeer

MODEL = rd.load_urdf(str(PANDA))
NAMES = list(MODEL.joint_names)
Q0 = np.array([0.1, -0.6, 0.2, -2.0, 0.3, 1.6, 0.7])
LINK = 'panda_link8'
F = np.array([2.0, -3.0, 6.0, 0.2, 0.1, -0.3])       # [fx fy fz nx ny nz] at the link origin, link axes
K = 50.0                                              # observer gain [1/s]
THRESHOLD = 1.0                                       # [N m]
DT_NS = 1_000_000
T0_NS = 1000 * 10**9                                  # stamp of sample 0
DEEP = QoSProfile(depth=1000, reliability=ReliabilityPolicy.RELIABLE)
EVENTS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL)


def push(model, q, f=F):
    """J_link^T f: the joint torque of f on the link, by rnea's f_ext convention (what it takes away)."""
    z = np.zeros(model.nq)
    return rd.gravity_torques(model, q) - rd.rnea(model, q, z, z, f_ext={LINK: f})



def joint_state(k, q, qd, effort):
    msg = JointState(name=NAMES, position=[float(x) for x in q], velocity=[float(x) for x in qd],
                     effort=[float(x) for x in effort])
    t = T0_NS + k * DT_NS
    msg.header.stamp.sec, msg.header.stamp.nanosec = t // 10**9, t % 10**9
    return msg


class Stream:
    """Publishes samples k = 0, 1, ... (stamp T0 + k ms) at a steady pace; counts the good ones."""

    def __init__(self, pub):
        self.pub, self.k, self.good = pub, 0, 0

    def send(self, q, qd, effort, good=True):
        self.pub.publish(joint_state(self.k, q, qd, effort))
        self.k += 1
        self.good += good
        time.sleep(0.002)
        return self.k - 1

    def send_raw(self, msg):
        t = T0_NS + self.k * DT_NS
        msg.header.stamp.sec, msg.header.stamp.nanosec = t // 10**9, t % 10**9
        self.pub.publish(msg)
        self.k += 1
        return self.k - 1


def outputs(collector, k_from, k_to=None):
    """Messages of ``collector`` whose stamps are samples k_from..k_to, by k."""
    k_to = 10**9 if k_to is None else k_to
    out = {}
    for m in list(collector.messages):
        k = (stamp_ns(m) - T0_NS) // DT_NS
        if k_from <= k <= k_to:
            out[k] = m
    return out


def wait_output(collector, k, timeout=10.0):
    got = collector.wait_where(lambda m: stamp_ns(m) == T0_NS + k * DT_NS, timeout)
    assert got is not None, 'no output for sample %d' % k
    return got


def euler_states(model, q0, n, dt=1e-3):
    """n samples of the arm under a PD law around a sine, by semi-implicit Euler of rd.aba
    from rest at q0: (q, qd, effort), effort the torque that acted up to the sample (at the
    first, g(q0): the arm rested before)."""
    q, qd = q0.copy(), np.zeros(model.nq)
    effort = rd.gravity_torques(model, q0)
    out = []
    for k in range(n):
        out.append((q.copy(), qd.copy(), effort))
        target = q0 + 0.15 * np.sin(2 * np.pi * 1.0 * k * dt + np.arange(model.nq))
        effort = rd.gravity_torques(model, q) + 40.0 * (target - q) - 4.0 * qd
        qd = qd + dt * rd.aba(model, q, qd, effort)
        q = q + dt * qd
    return out


def subscribe(peer, msg_type, topic, qos):
    collector = Collector()
    collector.subscription = peer.node.create_subscription(msg_type, topic, collector, qos)
    return collector


@pytest.fixture
def peer():
    p = FastPeer()
    yield p
    p.close()


def test_external_torque_wrench_collision_and_bad_states(ros, start_node, peer):
    proc = start_node('dynamics_node', {
        'urdf_path': str(PANDA), 'observer_gains': [K], 'collision_thresholds': [THRESHOLD],
        'external_wrench_link': LINK, 'joint_states_reliability': 'reliable', 'diagnostics_period': 0.2,
        'joint_state_timeout': 0.5})
    ros.wait_for_subscriber(proc.topic('joint_states'), process=proc)
    ext = subscribe(peer, JointState, proc.topic('~/external_torque'), DEEP)
    wrench = subscribe(peer, WrenchStamped, proc.topic('~/external_wrench'), DEEP)
    events = subscribe(peer, Collision, proc.topic('~/collision'), EVENTS)
    diag = Diagnostics(peer, proc.fqn)
    stream = Stream(peer.node.create_publisher(JointState, proc.topic('joint_states'), RELIABLE))
    z = np.zeros(7)
    g = rd.gravity_torques(MODEL, Q0)
    tau_ext = push(MODEL, Q0)
    assert np.abs(tau_ext).max() > 2 * THRESHOLD and np.abs(tau_ext).min() < THRESHOLD

    # 1. At rest, consistent: zero. (Published until the first output shows the connection.)
    deadline = time.monotonic() + 10
    while len(ext) == 0:
        assert time.monotonic() < deadline, proc.read_log()
        stream.send(Q0, z, g)
    for _ in range(50):
        stream.send(Q0, z, g)
    wait_output(ext, stream.k - 1)
    assert all(np.abs(m.effort).max() < 1e-9 for m in ext.messages)
    assert all(list(m.name) == NAMES for m in ext.messages)
    start = diag.stable()                               # what the node had used before the counted part
    assert start is not None, diag.get()
    used_before, sent_before = int(start['observer_samples']), stream.good

    # 2. Pushed at rest: r -> J^T F, the wrench -> F, one collision event.
    k_push = stream.k
    for _ in range(400):
        stream.send(Q0, z, g - tau_ext)
    last = wait_output(ext, stream.k - 1)
    np.testing.assert_allclose(last.effort, tau_ext, rtol=0, atol=1e-6)
    w = wait_output(wrench, stream.k - 1)
    assert w.header.frame_id == LINK
    got = [w.wrench.force.x, w.wrench.force.y, w.wrench.force.z, w.wrench.torque.x, w.wrench.torque.y,
           w.wrench.torque.z]
    np.testing.assert_allclose(got, F, rtol=0, atol=1e-4)
    rising = events.wait(count=1)
    assert rising is not None and rising.collision
    assert list(rising.name) == NAMES and np.allclose(rising.threshold, THRESHOLD)
    r = np.array(rising.external_torque)
    assert rising.joints_over == [NAMES[j] for j in np.flatnonzero(np.abs(r) > THRESHOLD)]
    assert set(rising.joints_over) <= {NAMES[j] for j in np.flatnonzero(np.abs(tau_ext) > THRESHOLD)}
    # It came when the filter crossed the threshold: |tau_ext|max (1 - exp(-K t)) = THRESHOLD.
    t_cross = -np.log(1 - THRESHOLD / np.abs(tau_ext).max()) / K
    t_event = (stamp_ns(rising) - (T0_NS + k_push * DT_NS)) * 1e-9
    assert abs(t_event - t_cross) < 0.003, (t_event, t_cross)
    time.sleep(0.3)
    assert len(events) == 1                                    # not every cycle

    # 3. A payload (a new model) restarts the observer: zero, the collision clears, and rises again.
    req = SetPayload.Request()
    req.payload.link, req.payload.inertia.m, req.payload.inertia.com.z = LINK, 0.8, 0.05
    res = ros.call(SetPayload, proc.topic('~/set_payload'), req)
    assert res.success, res.message
    loaded = MODEL.with_payload(LINK, 0.8, (0.0, 0.0, 0.05))
    g_loaded = rd.gravity_torques(loaded, Q0)
    k_reset = stream.k
    for _ in range(300):
        stream.send(Q0, z, g_loaded - tau_ext)
    last = wait_output(ext, stream.k - 1)
    np.testing.assert_allclose(last.effort, tau_ext, rtol=0, atol=1e-5)   # exp(-K 0.3 s) |tau_ext|
    assert events.wait(count=3) is not None
    assert [e.collision for e in list(events.messages)] == [True, False, True]
    cleared = events.messages[1]                               # at the first sample of the new model: r = 0
    assert stamp_ns(cleared) == T0_NS + k_reset * DT_NS and not np.any(cleared.external_torque)

    # 4. Bad states: no efforts, NaN, the wrong length. Counted, nothing published for them.
    no_effort = JointState(name=NAMES, position=list(Q0), velocity=[0.0] * 7)
    nan = JointState(name=NAMES, position=list(Q0), velocity=[0.0] * 7, effort=[float('nan')] + list(g_loaded[1:]))
    short = JointState(name=NAMES, position=list(Q0), velocity=[0.0] * 7, effort=list(g_loaded[:6]))
    bad = [stream.send_raw(m) for m in (no_effort, nan, short, no_effort)]

    # 5. The push ends; then the arm moves, consistent states: r -> 0 and stays 0, the collision clears.
    k_release = stream.k
    for _ in range(300):
        stream.send(Q0, z, g_loaded)
    k_move = stream.k
    for q, qd, effort in euler_states(loaded, Q0, 300):
        stream.send(q, qd, effort)
    wait_output(ext, stream.k - 1)
    assert proc.poll() is None
    assert not set(bad) & set(outputs(ext, bad[0], bad[-1]))
    moving = outputs(ext, k_move)
    assert len(moving) >= 50, len(moving)            # most of the 300 (this process may miss some)
    # Left from the push at k_move: |tau_ext| exp(-K 0.3 s) < 1e-6 N m.
    assert max(np.abs(m.effort).max() for m in moving.values()) < 2e-6
    assert all(np.all(np.isfinite(m.effort)) for m in list(ext.messages))
    assert events.wait(count=4) is not None and not events.messages[3].collision
    assert stamp_ns(events.messages[3]) > T0_NS + k_release * DT_NS

    values = diag.stable()
    assert values is not None, diag.get()
    # Every good sample sent after the connection was used (none lost, none skipped).
    assert int(values['observer_samples']) - used_before == stream.good - sent_before
    assert values['observer_skipped'] == '0'
    assert int(values['joint_states_without_effort']) == 2 and int(values['bad_efforts']) == 2
    assert values['collision'] == 'False' and int(values['collision_events']) == 2
    # Its cost per sample is measured (the callback time includes it).
    costs = [float(v['observer_time_mean_us']) for _, v in diag.history if 'observer_time_mean_us' in v]
    assert max(costs) > 0
    print('observer time per sample [us], per diagnostics period: %s' % ', '.join('%.0f' % c for c in costs if c))


@pytest.mark.parametrize('params, expected', [
        ({'observer_gains': [10.0] * 6 + [0.0], 'joints': NAMES}, "'observer_gains' mixes 0"),
        ({'observer_gains': [10.0, 20.0]}, "per-joint gains need the 'joints' parameter"),
        ({'observer_gains': [0.0], 'collision_thresholds': [1.0]}, "need the momentum observer"),
        ({'observer_gains': [10.0], 'collision_thresholds': [-1.0]}, "'collision_thresholds' must hold finite values > 0"),
        ({'observer_gains': [10.0], 'external_wrench_link': 'no_link'}, "'external_wrench_link' 'no_link' is not a link"),
        ({'observer_gains': [10.0], 'external_wrench_link': 'panda_link0'}, 'fixed to the base'),
        ({'observer_gains': [10.0] * 6, 'joints': NAMES[:6]}, "misses the model joint(s) panda_joint7"),
])
def test_observer_parameters_are_checked(params, expected):
    """configure() refuses them with a ParameterError naming the parameter (in this process: the
    node's run() turns that error into exit status 2, test_ros_dynamics_node.py checks it)."""
    import rclpy
    from rclpy.parameter import Parameter

    from robot_dynamics.errors import ParameterError
    from robot_dynamics.ros.dynamics_node import DynamicsNode

    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        overrides = [Parameter(k, value=v) for k, v in dict({'urdf_path': str(PANDA)}, **params).items()]
        node = DynamicsNode(context=context, parameter_overrides=overrides)
        with pytest.raises(ParameterError) as info:
            node.configure()
        assert expected in str(info.value)
        node.destroy_node()
    finally:
        rclpy.try_shutdown(context=context)


# --- simulator_node's efforts, and the loop they close ------------------------------------------

SIM_Q0 = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])     # the Panda's "ready" pose




def test_simulator_effort_is_the_torque_that_drove_the_physics(ros, start_node):
    """A command over joint 7's effort limit (12 N m) comes back clamped in joint_states.effort,
    and that effort, given to the core's simulate(), reproduces the published motion step by step:
    it is the torque the physics applied. The other joints get their command as it is."""
    proc = start_node('simulator_node', {
        'urdf_path': str(PANDA), 'initial_positions': SIM_Q0.tolist(), 'start_paused': True,
        'publish_clock': True, 'publish_rate': 1000.0, 'marker_rate': 0.0, 'diagnostics_period': 0.2})
    ros.wait_for_subscriber(proc.topic('effort_controller/commands'), process=proc)
    states = ros.subscribe(JointState, proc.topic('joint_states'), DEEP)
    pub = ros.publisher(Float64MultiArray, proc.topic('effort_controller/commands'))
    command = rd.gravity_torques(MODEL, SIM_Q0)
    command[3] += 5.0
    command[6] = 30.0
    applied = np.clip(command, -MODEL.effort_limit, MODEL.effort_limit)
    assert applied[6] == 12.0 and np.array_equal(applied[:6], command[:6])
    msg = Float64MultiArray(data=command.tolist())
    deadline = time.monotonic() + 10
    while not states.wait_where(lambda m: np.allclose(m.effort, applied, atol=1e-12, rtol=0), 0.1):
        assert time.monotonic() < deadline, 'the command never showed in joint_states.effort'
        pub.publish(msg)
    set_paused(ros, proc, False)
    assert states.wait_where(lambda m: stamp_s(m) >= 0.3 - 1e-9, timeout=20) is not None
    set_paused(ros, proc, True)
    run = [m for m in list(states.messages) if 0 < stamp_s(m) <= 0.3 + 1e-9]
    assert len(run) > 100                            # of 300 (this process may miss some)
    effort = np.array([m.effort for m in run])
    np.testing.assert_allclose(effort, np.tile(applied, (len(run), 1)), rtol=0, atol=1e-12)
    offline = simulate(MODEL, SIM_Q0, duration=0.3, tau=effort[0])
    k = np.round(np.array([stamp_s(m) for m in run]) / 1e-3).astype(int)
    np.testing.assert_allclose(np.array([m.position for m in run]), offline.q[k], rtol=0, atol=1e-9)
    assert abs(run[-1].position[6] - SIM_Q0[6]) > 0.1             # joint 7 turned, at its limit torque


def test_observer_on_the_simulator_finds_its_push(ros, start_node, peer):
    """simulator_node (RK4, URDF joint friction, its servo holding the ready pose from a position
    command) and dynamics_node's observer on its joint states; then a wrench on panda_link8 from
    the simulator's ~/wrench. The simulator's efforts are its motors' torques (the servo's), not
    what was commanded, and the observer needs no more. Its sampled form is exact for semi-implicit
    Euler with held torques, not for RK4 with a servo: the same run offline (rd.Simulator, the
    observer with torque_at='end') leaves 0.03 % of |J^T F|. Bounds: the external torque within
    5 % of |J^T F| at the state it belongs to and the wrench within 5 % of |F| (room for a state
    the node might lose, over which the observer holds the torque), below 1 % of |J^T F| before."""
    ns = '/obs_sim_%d' % time.monotonic_ns()
    sim = start_node('simulator_node', {
        'urdf_path': str(PANDA), 'initial_positions': SIM_Q0.tolist(), 'start_paused': True,
        'publish_clock': True, 'publish_rate': 1000.0, 'marker_rate': 0.0, 'real_time_factor': 0.5},
        name='simulator', ns=ns)
    dyn = start_node('dynamics_node', {
        'urdf_path': str(PANDA), 'use_sim_time': True, 'mode': 'gravity', 'observer_gains': [K],
        'external_wrench_link': LINK, 'observer_friction': True, 'joint_states_reliability': 'reliable',
        'joint_state_timeout': 0.5}, name='dynamics_node', ns=ns)
    ros.wait_for_subscriber(sim.topic('robot_joint_commands'), process=sim)
    ros.wait_for_subscriber(ns + '/joint_states', process=dyn)
    ext = subscribe(peer, JointState, ns + '/dynamics_node/external_torque', DEEP)
    wrench = subscribe(peer, WrenchStamped, ns + '/dynamics_node/external_wrench', DEEP)
    states = subscribe(peer, JointState, ns + '/joint_states', DEEP)
    command = ros.publisher(JointState, sim.topic('robot_joint_commands'))
    for c in (ext, wrench, states):                 # matched before the simulated time runs
        assert wait_for(lambda: c.subscription.get_publisher_count() > 0, 10)
    g = rd.gravity_torques(MODEL, SIM_Q0)
    # While paused the simulator repeats its state: once the servo holds q0, its effort is g(q0).
    deadline = time.monotonic() + 10
    while not states.wait_where(lambda m: np.allclose(m.effort, g, atol=1e-9, rtol=0), 0.1):
        assert time.monotonic() < deadline, 'the position command never took effect'
        command.publish(JointState(name=NAMES, position=SIM_Q0.tolist()))
    set_paused(ros, sim, False)
    assert ext.wait_where(lambda m: stamp_s(m) >= 0.3, timeout=20) is not None, dyn.read_log()
    f_push = np.array([4.0, -2.0, 3.0, 0.0, 0.3, 0.0])
    scale = np.abs(push(MODEL, SIM_Q0, f_push)).max()
    quiet = [m for m in list(ext.messages) if 0.1 < stamp_s(m) <= 0.3]
    assert len(quiet) > 20 and max(np.abs(m.effort).max() for m in quiet) < 0.01 * scale   # held, no push
    push_msg = WrenchStamped()
    push_msg.header.frame_id = LINK
    (push_msg.wrench.force.x, push_msg.wrench.force.y, push_msg.wrench.force.z,
     push_msg.wrench.torque.x, push_msg.wrench.torque.y, push_msg.wrench.torque.z) = f_push
    wpub = ros.publisher(WrenchStamped, sim.topic('~/wrench'))
    deadline = time.monotonic() + 5
    while not states.wait_where(lambda m: np.abs(np.array(m.velocity)).max() > 1e-3, 0.05):
        assert time.monotonic() < deadline, 'the push never moved the arm'
        wpub.publish(push_msg)
    t_push = stamp_s(states.wait_where(lambda m: np.abs(np.array(m.velocity)).max() > 1e-3, 0.1))
    assert ext.wait_where(lambda m: stamp_s(m) >= t_push + 0.5, timeout=20) is not None
    set_paused(ros, sim, True)
    # (this process takes three 1 kHz streams and misses many of their messages: it checks those that came)
    late = [m for m in list(ext.messages) if t_push + 0.2 < stamp_s(m) <= t_push + 0.5]
    assert len(late) > 10
    by_t = {round(stamp_s(m) * 1000): m for m in list(states.messages)}
    compared = 0
    for m in late:
        state = by_t.get(round(stamp_s(m) * 1000))            # the joint state the estimate is of
        if state is not None:
            expected = push(MODEL, np.array(state.position), f_push)
            np.testing.assert_allclose(m.effort, expected, rtol=0, atol=0.05 * np.abs(expected).max())
            compared += 1
    assert compared > 5
    ws = [w for w in list(wrench.messages) if t_push + 0.2 < stamp_s(w) <= t_push + 0.5]
    assert len(ws) > 10
    for w in ws:
        got = [w.wrench.force.x, w.wrench.force.y, w.wrench.force.z, w.wrench.torque.x, w.wrench.torque.y,
               w.wrench.torque.z]
        np.testing.assert_allclose(got, f_push, rtol=0, atol=0.05 * np.abs(f_push).max())


"""dynamics_node end to end: a separate node process, real DDS, this process as its peer.

Each test starts the node in a namespace of its own (so its joint_states,
robot_description and command topics are its own) and compares what it
publishes with the library's values for the same state.
"""
import re
import time

import numpy as np
import pytest
from builtin_interfaces.msg import Duration, Time
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rclpy.serialization import serialize_message
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

import robot_dynamics as rd
from robot_dynamics.ros.cdr import CDR_LE
from robot_dynamics_interfaces.srv import SetPayload

from conftest import BEST_EFFORT, LATCHED, PANDA, RELIABLE, UR5, wait_for
from test_ros_cdr import big_endian_joint_state

PANDA_MODEL = rd.load_urdf(str(PANDA))
NAMES = list(PANDA_MODEL.joint_names)
Q = np.array([0.1, -0.6, 0.2, -2.0, 0.3, 1.6, 0.7])
QD = np.array([0.5, -0.4, 0.3, 0.6, -0.2, 0.4, 0.9])
TOL = 1e-9


def joint_state(names, position, velocity=(), stamp=(12, 345)):
    msg = JointState()
    msg.header.stamp = Time(sec=stamp[0], nanosec=stamp[1])
    msg.name = list(names)
    msg.position = [float(x) for x in position]
    msg.velocity = [float(x) for x in velocity]
    return msg


def effort(msg):
    return np.array(msg.effort)


def by_name(msg, names):
    index = {n: i for i, n in enumerate(msg.name)}
    return np.array([msg.effort[index[n]] for n in names])


def start_panda(ros, start_node, **params):
    """A dynamics_node on the bundled Panda arm; returns (process, topic helper)."""
    base = {'urdf_path': str(PANDA)}
    base.update(params)
    proc = start_node('dynamics_node', base)
    ros.wait_for_subscriber(proc.topic('joint_states'), process=proc)
    return proc


def publish_until(pub, msg, collector, count=1, timeout=5.0):
    """Publish ``msg`` repeatedly until ``collector`` has ``count`` messages."""
    deadline = time.monotonic() + timeout
    while len(collector) < count and time.monotonic() < deadline:
        pub.publish(msg)
        time.sleep(0.02)
    return collector.last()


def test_torques_from_description_topic_match_the_library(ros, start_node):
    ns_desc = '/rd_desc_%d' % time.monotonic_ns()
    desc_pub = ros.publisher(String, ns_desc, LATCHED)
    desc_pub.publish(String(data=PANDA.read_text()))      # latched before the node exists
    proc = start_node('dynamics_node', {'robot_description_topic': ns_desc})
    ros.wait_for_subscriber(proc.topic('joint_states'), process=proc)
    grav = ros.subscribe(JointState, proc.topic('~/gravity_torque'))
    cor = ros.subscribe(JointState, proc.topic('~/coriolis_torque'))
    tot = ros.subscribe(JointState, proc.topic('~/compensation_torque'))
    pub = ros.publisher(JointState, proc.topic('joint_states'), RELIABLE)
    msg = joint_state(NAMES, Q, QD)
    publish_until(pub, msg, tot)
    assert grav.wait() and cor.wait() and tot.wait()
    g = rd.gravity_torques(PANDA_MODEL, Q)
    h = rd.nonlinear_effects(PANDA_MODEL, Q, QD)
    for got, want in ((grav.last(), g), (cor.last(), h - g), (tot.last(), h)):
        assert list(got.name) == NAMES
        np.testing.assert_allclose(effort(got), want, rtol=0, atol=TOL)
        assert (got.header.stamp.sec, got.header.stamp.nanosec) == (12, 345)


def test_reordered_partial_extra_joints_and_best_effort_publisher(ros, start_node):
    proc = start_panda(ros, start_node, mode='gravity')
    tot = ros.subscribe(JointState, proc.topic('~/compensation_torque'))
    pub = ros.publisher(JointState, proc.topic('joint_states'), BEST_EFFORT)
    wait_for(lambda: pub.get_subscription_count() > 0, 5)
    # The first four joints, reversed, with an unknown extra joint and no velocities.
    first = [3, 2, 1, 0]
    for _ in range(20):
        pub.publish(joint_state([NAMES[i] for i in first] + ['gripper_joint'],
                                [Q[i] for i in first] + [0.04]))
        time.sleep(0.01)
    time.sleep(0.3)
    assert len(tot) == 0, 'published before every model joint was known'
    # The rest, in another message (a second driver), reordered too, while the first driver goes on
    # (a position older than joint_timeout, here joint_state_timeout, gives no torque).
    rest = [6, 4, 5]
    msg = joint_state([NAMES[i] for i in rest], [Q[i] for i in rest])
    deadline = time.monotonic() + 5.0
    while len(tot) == 0 and time.monotonic() < deadline:
        pub.publish(joint_state([NAMES[i] for i in first] + ['gripper_joint'], [Q[i] for i in first] + [0.04]))
        pub.publish(msg)
        time.sleep(0.01)
    got = tot.last()
    assert got is not None, 'no torque from the two drivers\' messages'
    np.testing.assert_allclose(by_name(got, NAMES), rd.gravity_torques(PANDA_MODEL, Q), atol=TOL)


def test_velocities_default_to_zero_and_update_by_name(ros, start_node):
    proc = start_panda(ros, start_node, mode='gravity_coriolis')
    tot = ros.subscribe(JointState, proc.topic('~/compensation_torque'))
    pub = ros.publisher(JointState, proc.topic('joint_states'))
    got = publish_until(pub, joint_state(NAMES, Q), tot)            # no velocity array
    np.testing.assert_allclose(effort(got), rd.gravity_torques(PANDA_MODEL, Q), atol=TOL)
    # A partial update of joint 7 with a velocity: the others keep zero velocity.
    q2, qd2 = Q.copy(), np.zeros(7)
    q2[6], qd2[6] = 0.2, 1.5
    tot.clear()
    got = publish_until(pub, joint_state([NAMES[6]], [0.2], [1.5]), tot)
    np.testing.assert_allclose(effort(got), rd.nonlinear_effects(PANDA_MODEL, q2, qd2), atol=TOL)


def test_bad_messages_do_not_crash_and_are_counted(ros, start_node):
    proc = start_panda(ros, start_node, diagnostics_period=0.2)
    tot = ros.subscribe(JointState, proc.topic('~/compensation_torque'))
    diag = ros.subscribe(DiagnosticArray, '/diagnostics')
    pub = ros.publisher(JointState, proc.topic('joint_states'))
    publish_until(pub, joint_state(NAMES, Q, QD), tot)             # connection established
    tot.clear()
    bad = [joint_state(NAMES, list(Q[:6]) + [float('nan')]),           # non-finite
           joint_state(NAMES, Q[:5]),                                  # too few positions
           joint_state(NAMES, Q, QD[:3]),                              # velocity length
           joint_state(NAMES[:2] + NAMES[:1], Q[:3])]                  # duplicate name
    # The node reads the serialized bytes itself (robot_dynamics/ros/cdr.py): bytes from a raw DDS writer
    # that are not a JointState (truncated, garbage) are bad messages too.
    whole = serialize_message(joint_state(NAMES, Q, QD))
    bad += [whole[:40], whole[:len(whole) // 2], CDR_LE + bytes(range(60))]
    for msg in bad:
        pub.publish(msg)
        time.sleep(0.01)
    time.sleep(0.3)
    assert len(tot) == 0
    got = publish_until(pub, joint_state(NAMES, Q, QD), tot)
    assert got is not None and proc.poll() is None
    np.testing.assert_allclose(effort(got), rd.nonlinear_effects(PANDA_MODEL, Q, QD), atol=TOL)
    # A big-endian message (another host's rmw) is read, through rclpy.
    tot.clear()
    got = publish_until(pub, big_endian_joint_state(12, 346, '', NAMES, list(Q)), tot)
    assert got is not None and got.header.stamp.nanosec == 346
    np.testing.assert_allclose(effort(got), rd.gravity_torques(PANDA_MODEL, Q), atol=TOL)

    def counted(array):
        for s in array.status:
            if proc.name in s.name:
                values = {kv.key: kv.value for kv in s.values}
                return int(values.get('bad_messages', 0)) >= len(bad)
        return False
    if not diag.wait_where(counted, timeout=5):
        mine = [s for a in diag.messages for s in a.status if proc.name in s.name]
        raise AssertionError('bad messages not counted in diagnostics: %s' % (mine[-1:],))


def test_command_follows_the_joints_parameter_order(ros, start_node):
    order = [NAMES[i] for i in (6, 0, 5, 1, 4, 2, 3)]
    cmd_topic = '/rd_cmd_%d/commands' % time.monotonic_ns()
    proc = start_panda(ros, start_node, publish_command=True, command_topic=cmd_topic, joints=order)
    cmd = ros.subscribe(Float64MultiArray, cmd_topic, RELIABLE)
    pub = ros.publisher(JointState, proc.topic('joint_states'))
    got = publish_until(pub, joint_state(NAMES, Q, QD), cmd)
    h = rd.nonlinear_effects(PANDA_MODEL, Q, QD)
    want = [h[NAMES.index(n)] for n in order]
    np.testing.assert_allclose(np.array(got.data), want, atol=TOL)
    assert got.layout.dim[0].size == 7


def test_friction_mode_adds_urdf_friction(ros, start_node):
    proc = start_panda(ros, start_node, mode='gravity_coriolis_friction', friction_smoothing=0.0)
    tot = ros.subscribe(JointState, proc.topic('~/compensation_torque'))
    pub = ros.publisher(JointState, proc.topic('joint_states'))
    got = publish_until(pub, joint_state(NAMES, Q, QD), tot)
    want = rd.nonlinear_effects(PANDA_MODEL, Q, QD) + rd.friction_torques(PANDA_MODEL, QD)
    np.testing.assert_allclose(effort(got), want, atol=TOL)


def test_torques_are_clamped_to_the_scaled_effort_limit(ros, start_node):
    scale = 0.05
    cmd_topic = '/rd_clamp_%d/commands' % time.monotonic_ns()
    proc = start_panda(ros, start_node, effort_limit_scale=scale, publish_command=True,
                       command_topic=cmd_topic, diagnostics_period=0.2)
    tot = ros.subscribe(JointState, proc.topic('~/compensation_torque'))
    cmd = ros.subscribe(Float64MultiArray, cmd_topic)
    diag = ros.subscribe(DiagnosticArray, '/diagnostics')
    pub = ros.publisher(JointState, proc.topic('joint_states'))
    publish_until(pub, joint_state(NAMES, Q, 5 * QD), cmd)
    got = tot.wait()
    h = rd.nonlinear_effects(PANDA_MODEL, Q, 5 * QD)
    limit = PANDA_MODEL.effort_limit * scale
    assert np.any(np.abs(h) > limit), 'the test state must exceed the scaled limit'
    np.testing.assert_allclose(effort(got), np.clip(h, -limit, limit), atol=TOL)
    np.testing.assert_allclose(np.array(cmd.last().data), np.clip(h, -limit, limit), atol=TOL)

    def clamped(array):
        return any(proc.name in s.name and int({kv.key: kv.value for kv in s.values}
                                                .get('clamp_events', 0)) > 0 for s in array.status)
    assert diag.wait_where(clamped, timeout=5)


def test_payload_service_changes_torques_at_once(ros, start_node):
    proc = start_panda(ros, start_node, mode='gravity')
    tot = ros.subscribe(JointState, proc.topic('~/compensation_torque'))
    pub = ros.publisher(JointState, proc.topic('joint_states'))
    got = publish_until(pub, joint_state(NAMES, Q), tot)
    np.testing.assert_allclose(effort(got), rd.gravity_torques(PANDA_MODEL, Q), atol=TOL)

    req = SetPayload.Request()
    req.payload.link = 'panda_link8'
    req.payload.inertia.m = 2.5
    req.payload.inertia.com.z = 0.1
    req.payload.inertia.ixx = req.payload.inertia.iyy = 0.01
    req.payload.inertia.izz = 0.02
    res = ros.call(SetPayload, proc.topic('~/set_payload'), req)
    assert res.success, res.message
    assert res.total_payload_mass == pytest.approx(2.5)
    loaded = PANDA_MODEL.with_payload('panda_link8', 2.5, (0, 0, 0.1), np.diag([0.01, 0.01, 0.02]))
    tot.clear()
    got = publish_until(pub, joint_state(NAMES, Q), tot)
    np.testing.assert_allclose(effort(got), rd.gravity_torques(loaded, Q), atol=TOL)

    bad = SetPayload.Request()
    bad.payload.link = 'no_such_link'
    bad.payload.inertia.m = 1.0
    res = ros.call(SetPayload, proc.topic('~/set_payload'), bad)
    assert not res.success and 'no_such_link' in res.message and 'panda_link8' in res.message
    neg = SetPayload.Request()
    neg.payload.link = 'panda_link8'
    neg.payload.inertia.m = -1.0
    res = ros.call(SetPayload, proc.topic('~/set_payload'), neg)
    assert not res.success and 'mass' in res.message

    clear = SetPayload.Request(clear=True)
    res = ros.call(SetPayload, proc.topic('~/set_payload'), clear)
    assert res.success and res.total_payload_mass == 0.0
    tot.clear()
    got = publish_until(pub, joint_state(NAMES, Q), tot)
    np.testing.assert_allclose(effort(got), rd.gravity_torques(PANDA_MODEL, Q), atol=TOL)


@pytest.mark.parametrize('on_timeout', ['zero', 'hold', 'stop'])
def test_timeout_behaviour_happens_on_time(ros, start_node, on_timeout):
    timeout = 0.25
    cmd_topic = '/rd_to_%d/commands' % time.monotonic_ns()
    proc = start_panda(ros, start_node, publish_command=True, command_topic=cmd_topic,
                       joint_state_timeout=timeout, on_timeout=on_timeout, mode='gravity')
    cmd = ros.subscribe(Float64MultiArray, cmd_topic)
    tot = ros.subscribe(JointState, proc.topic('~/compensation_torque'))
    pub = ros.publisher(JointState, proc.topic('joint_states'))
    publish_until(pub, joint_state(NAMES, Q), cmd)
    for _ in range(30):                                      # 100 Hz stream, then silence
        pub.publish(joint_state(NAMES, Q))
        time.sleep(0.01)
    t_last = time.monotonic()
    n_tot = len(tot)
    time.sleep(timeout + 0.5)
    g = rd.gravity_torques(PANDA_MODEL, Q)
    with cmd._lock:
        after = [(t, m) for t, m in zip(cmd.times, cmd.messages) if t > t_last + 0.05]
    if on_timeout == 'zero':
        assert len(after) == 1, 'expected exactly one zero command, got %d' % len(after)
        t, m = after[0]
        assert np.all(np.array(m.data) == 0.0)
        assert timeout <= t - t_last + 0.02 and t - t_last < timeout + 0.15, t - t_last
    elif on_timeout == 'hold':
        assert len(after) >= 5, 'hold must keep commanding'
        assert all(np.allclose(m.data, g, atol=TOL) for _, m in after)
    else:
        assert after == []
    assert len(tot) <= n_tot + 1, 'compensation kept streaming after the timeout'
    # Fresh joint states: publishing resumes.
    tot.clear()
    assert publish_until(pub, joint_state(NAMES, Q), tot) is not None


def test_new_description_rebuilds_model_and_rechecks_joints(ros, start_node):
    topic = '/rd_desc2_%d' % time.monotonic_ns()
    desc_pub = ros.publisher(String, topic, LATCHED)
    desc_pub.publish(String(data=PANDA.read_text()))
    proc = start_node('dynamics_node', {'robot_description_topic': topic, 'mode': 'gravity'})
    ros.wait_for_subscriber(proc.topic('joint_states'), process=proc)
    tot = ros.subscribe(JointState, proc.topic('~/compensation_torque'))
    pub = ros.publisher(JointState, proc.topic('joint_states'))
    publish_until(pub, joint_state(NAMES, Q), tot)
    ur5 = rd.load_urdf(str(UR5))
    desc_pub.publish(String(data=UR5.read_text()))
    q = np.linspace(-0.5, 0.5, ur5.nq)
    want = rd.gravity_torques(ur5, q)
    got = None
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        pub.publish(joint_state(ur5.joint_names, q))
        time.sleep(0.02)
        last = tot.last()
        if last is not None and list(last.name) == list(ur5.joint_names):
            got = last
            break
    assert got is not None, 'no torques for the new robot'
    np.testing.assert_allclose(effort(got), want, atol=TOL)
    # A bad description keeps the previous model and reports it.
    desc_pub.publish(String(data='<robot name="broken"><link name="a"/>'))
    time.sleep(0.3)
    tot.clear()
    got = publish_until(pub, joint_state(ur5.joint_names, q), tot)
    np.testing.assert_allclose(effort(got), want, atol=TOL)
    assert proc.poll() is None


def test_new_description_that_misses_a_controller_joint_stops_commands(ros, start_node):
    topic = '/rd_desc3_%d' % time.monotonic_ns()
    cmd_topic = '/rd_cmd3_%d/commands' % time.monotonic_ns()
    desc_pub = ros.publisher(String, topic, LATCHED)
    desc_pub.publish(String(data=PANDA.read_text()))
    proc = start_node('dynamics_node', {'robot_description_topic': topic, 'joints': NAMES,
                                        'publish_command': True, 'command_topic': cmd_topic})
    ros.wait_for_subscriber(proc.topic('joint_states'), process=proc)
    cmd = ros.subscribe(Float64MultiArray, cmd_topic)
    pub = ros.publisher(JointState, proc.topic('joint_states'))
    assert publish_until(pub, joint_state(NAMES, Q), cmd) is not None
    desc_pub.publish(String(data=UR5.read_text()))      # has none of the panda joints
    ur5 = rd.load_urdf(str(UR5))
    time.sleep(0.5)
    cmd.clear()
    for _ in range(20):
        pub.publish(joint_state(ur5.joint_names, np.zeros(ur5.nq)))
        time.sleep(0.01)
    time.sleep(0.2)
    assert len(cmd) == 0
    assert 'does not fit the controller' in proc.read_log()


def test_feedforward_of_a_streamed_set_point(ros, start_node):
    proc = start_panda(ros, start_node, mode='feedforward')
    ff = ros.subscribe(JointState, proc.topic('~/feedforward_torque'))
    ref = ros.publisher(JointTrajectory, proc.topic('~/reference'))
    pub = ros.publisher(JointState, proc.topic('joint_states'))
    q_d, qd_d, qdd_d = Q + 0.1, QD, np.linspace(-1, 1, 7)
    order = [4, 0, 6, 2, 1, 3, 5]                      # reordered joint_names
    traj = JointTrajectory(joint_names=[NAMES[i] for i in order])
    traj.points = [JointTrajectoryPoint(positions=q_d[order].tolist(), velocities=qd_d[order].tolist(),
                                        accelerations=qdd_d[order].tolist())]
    wait_for(lambda: ref.get_subscription_count() > 0, 5)
    ref.publish(traj)
    time.sleep(0.2)
    got = publish_until(pub, joint_state(NAMES, Q, QD), ff)
    np.testing.assert_allclose(effort(got), rd.rnea(PANDA_MODEL, q_d, qd_d, qdd_d), atol=TOL)


def test_computed_torque_law(ros, start_node):
    kp, kd = 100.0, 20.0
    proc = start_panda(ros, start_node, mode='computed_torque', kp=[kp], kd=[kd])
    ct = ros.subscribe(JointState, proc.topic('~/computed_torque'))
    ff = ros.subscribe(JointState, proc.topic('~/feedforward_torque'))
    traj_pub = ros.publisher(JointTrajectory, proc.topic('~/trajectory'))
    pub = ros.publisher(JointState, proc.topic('joint_states'))
    # A finished trajectory (started 1 s after the epoch): it holds its last point at rest.
    q_end = Q + 0.05
    traj = JointTrajectory(joint_names=NAMES)
    traj.header.stamp = Time(sec=1)
    traj.points = [JointTrajectoryPoint(positions=Q.tolist(), time_from_start=Duration(sec=0)),
                   JointTrajectoryPoint(positions=q_end.tolist(), time_from_start=Duration(sec=1))]
    wait_for(lambda: traj_pub.get_subscription_count() > 0, 5)
    traj_pub.publish(traj)
    time.sleep(0.2)
    got = publish_until(pub, joint_state(NAMES, Q, QD), ct)
    zero = np.zeros(7)
    want = rd.rnea(PANDA_MODEL, Q, QD, kd * (zero - QD) + kp * (q_end - Q))
    np.testing.assert_allclose(effort(got), want, atol=1e-8)
    np.testing.assert_allclose(effort(ff.wait()), rd.gravity_torques(PANDA_MODEL, q_end), atol=TOL)


def test_joint_impedance_towards_a_target_by_name(ros, start_node):
    proc = start_panda(ros, start_node, mode='joint_impedance', stiffness=[80.0], max_pose_error=[0.05, 0.3])
    imp = ros.subscribe(JointState, proc.topic('~/impedance_torque'))
    targets = ros.publisher(JointState, proc.topic('~/target_joints'))
    pub = ros.publisher(JointState, proc.topic('joint_states'))
    law = rd.JointImpedance(PANDA_MODEL, [80.0] * 7, max_pose_error=0.3)
    got = publish_until(pub, joint_state(NAMES, Q, QD), imp)          # no target yet: the first state is held
    np.testing.assert_allclose(effort(got), law.torque(Q, QD, Q), atol=1e-8)
    wait_for(lambda: targets.get_subscription_count() > 0, 5)
    target = JointState(name=['panda_joint4', 'panda_joint2'], position=[Q[3] + 0.1, Q[1] - 0.2])
    target.header.stamp = ros.node.get_clock().now().to_msg()
    targets.publish(target)
    q_d = Q.copy()
    q_d[[3, 1]] += [0.1, -0.2]
    want = law.torque(Q, QD, q_d)
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline and not np.allclose(effort(imp.last()), want, atol=1e-8):
        pub.publish(joint_state(NAMES, Q, QD))
        time.sleep(0.02)
    np.testing.assert_allclose(effort(imp.last()), want, atol=1e-8)
    # A stale target (stamped 1 s ago, target_timeout 0.5 s) is refused: the torque stays the law's towards q_d.
    target.header.stamp = Time(sec=target.header.stamp.sec - 1, nanosec=target.header.stamp.nanosec)
    target.position = [0.0, 0.0]
    targets.publish(target)
    time.sleep(0.2)
    imp.clear()
    np.testing.assert_allclose(effort(publish_until(pub, joint_state(NAMES, Q, QD), imp)), want, atol=1e-8)
    assert 'more than target_timeout (0.500 s)' in proc.read_log()


def test_sim_time_drives_the_timeout(ros, start_node):
    timeout = 0.2
    cmd_topic = '/rd_sim_%d/commands' % time.monotonic_ns()
    proc = start_node('dynamics_node', {'urdf_path': str(PANDA), 'use_sim_time': True,
                                        'publish_command': True, 'command_topic': cmd_topic,
                                        'joint_state_timeout': timeout, 'mode': 'gravity'})
    ros.wait_for_subscriber(proc.topic('joint_states'), process=proc)
    clock = ros.publisher(Clock, '/clock')
    cmd = ros.subscribe(Float64MultiArray, cmd_topic)
    pub = ros.publisher(JointState, proc.topic('joint_states'))
    wait_for(lambda: clock.get_subscription_count() > 0, 10)
    sim = [1000.0]

    def tick(dt=0.01):
        sim[0] += dt
        s = int(sim[0])
        clock.publish(Clock(clock=Time(sec=s, nanosec=int((sim[0] - s) * 1e9))))

    for _ in range(5):
        tick()
        time.sleep(0.01)
    publish_until(pub, joint_state(NAMES, Q, stamp=(1000, 0)), cmd)
    # Wall time passes, simulated time stands still: no timeout.
    cmd.clear()
    time.sleep(3 * timeout)
    assert len(cmd) == 0
    # Simulated time passes the timeout: the zero command comes.
    for _ in range(40):
        tick(0.02)
        time.sleep(0.01)
    got = cmd.wait(timeout=3)
    assert got is not None and np.all(np.array(got.data) == 0.0)


def test_diagnostics_report_rate_and_model(ros, start_node):
    proc = start_panda(ros, start_node, diagnostics_period=0.25)
    diag = ros.subscribe(DiagnosticArray, '/diagnostics')
    pub = ros.publisher(JointState, proc.topic('joint_states'))
    tot = ros.subscribe(JointState, proc.topic('~/compensation_torque'))
    publish_until(pub, joint_state(NAMES, Q), tot)
    for _ in range(100):
        pub.publish(joint_state(NAMES, Q))
        time.sleep(0.005)

    def running(array):
        for s in array.status:
            if proc.name in s.name:
                v = {kv.key: kv.value for kv in s.values}
                return v.get('state') == 'running' and float(v['input_rate_hz']) > 20 \
                    and v['model_status'] == 'ok' and v['robot'] == 'panda'
        return False
    assert diag.wait_where(running, timeout=5)


@pytest.mark.parametrize('params, expected', [
    ({'joint_state_timeout': -1.0}, "parameter 'joint_state_timeout' must be > 0, got -1.0"),
    ({'max_state_age': -0.5}, "parameter 'max_state_age' must be >= 0, got -0.5"),
    ({'mode': 'antigravity'}, "parameter 'mode' must be one of gravity, gravity_coriolis"),
    ({'on_timeout': 'panic', 'effort_limit_scale': 2.0},
     "parameter 'effort_limit_scale' must be in (0, 1], got 2.0"),
    ({'joints': ['panda_joint1', 'gripper_joint']}, "'gripper_joint' not in the model"),
    ({'kp': [1.0, 2.0]}, "per-joint gains need the 'joints' parameter"),
    ({'urdf_path': '/no/such/file.urdf'}, "parameter 'urdf_path': cannot read '/no/such/file.urdf'"),
    ({'joint_state_timeout': 'soon'}, "parameter 'joint_state_timeout': expected a value of type float"),
    # A UR arm's driver publishes motor currents as efforts (profile ur): no observer on them.
    ({'joint_state_effort': 'motor_current', 'observer_gains': [50.0]},
     "need joint torques in the effort field of joint_states, and joint_state_effort is 'motor_current'"),
    ({'joint_state_effort': 'unknown', 'observer_gains': [50.0], 'collision_thresholds': [5.0]},
     "joint_state_effort is 'unknown'"),
    ({'joint_state_effort': 'amperes'}, "parameter 'joint_state_effort' must be one of joint_torque, motor_current"),
    ({'expected_joint_state_rate': -1.0}, "parameter 'expected_joint_state_rate' must be >= 0, got -1.0"),
    ({'controller_name': ''}, "parameter 'controller_name' must not be empty"),
    ({'mode': 'cartesian_impedance', 'stiffness': [100.0, 100.0]},
     "parameter 'stiffness' of mode cartesian_impedance must be 6 values [N/m x3, N m/rad x3] (or empty), got 2"),
    ({'mode': 'joint_impedance', 'max_pose_error': [0.05]}, "parameter 'max_pose_error' must be 2 values [m, rad]"),
])
def test_bad_parameters_stop_the_node_with_a_clear_message(start_node, params, expected):
    full = {'urdf_path': str(PANDA)}
    full.update(params)
    proc = start_node('dynamics_node', full)
    assert proc.wait(timeout=120) == 2
    log = proc.read_log()
    assert expected in log, log
    if 'on_timeout' in params:                      # every problem is listed, not only the first
        assert "parameter 'on_timeout' must be one of zero, hold, stop, got 'panic'" in log


def test_mode_changes_at_run_time_and_bad_values_are_refused(ros, start_node):
    from rcl_interfaces.msg import Parameter as ParameterMsg, ParameterType, ParameterValue
    from rcl_interfaces.srv import SetParameters

    proc = start_panda(ros, start_node)                       # gravity_coriolis
    tot = ros.subscribe(JointState, proc.topic('~/compensation_torque'))
    pub = ros.publisher(JointState, proc.topic('joint_states'))
    got = publish_until(pub, joint_state(NAMES, Q, QD), tot)
    np.testing.assert_allclose(effort(got), rd.nonlinear_effects(PANDA_MODEL, Q, QD), atol=TOL)

    def set_param(name, value):
        if isinstance(value, str):
            v = ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=value)
        else:
            v = ParameterValue(type=ParameterType.PARAMETER_DOUBLE, double_value=value)
        req = SetParameters.Request(parameters=[ParameterMsg(name=name, value=v)])
        return ros.call(SetParameters, proc.topic('~/set_parameters'), req).results[0]

    result = set_param('mode', 'gravity')
    assert result.successful, result.reason
    tot.clear()
    got = publish_until(pub, joint_state(NAMES, Q, QD), tot)
    np.testing.assert_allclose(effort(got), rd.gravity_torques(PANDA_MODEL, Q), atol=TOL)
    result = set_param('effort_limit_scale', 5.0)
    assert not result.successful and 'must be in (0, 1]' in result.reason
    result = set_param('joint_state_timeout', 1.0)
    assert not result.successful                              # read-only


@pytest.mark.parametrize('node', ['dynamics_node', 'dynamics_services'])
def test_a_floating_base_description_is_refused_at_start_up_saying_what_is_missing(start_node, tmp_path, node):
    """Without a base-state topic the nodes cannot know the base's pose and twist: dynamics_node
    says which parameter to set (test_ros_moving_base.py runs it with one), dynamics_services,
    which has no base-state input, points to it. simulator_node takes such a robot."""
    text = PANDA.read_text()
    root = rd.load_urdf(str(PANDA)).base_link
    floating = re.sub(r'(<robot name="[^"]*">)', r'\1<link name="world"/><joint name="base_free" type="floating">'
                      r'<parent link="world"/><child link="%s"/></joint>' % root, text, count=1)
    assert rd.load_urdf(floating).root_joint == 'floating'
    path = tmp_path / 'panda_floating.urdf'
    path.write_text(floating)
    proc = start_node(node, {'urdf_path': str(path)})
    assert proc.wait(timeout=120) == 2
    log = proc.read_log()
    for words in ("has a floating base", "'base_state_topic'", "nav_msgs/Odometry"):
        assert words in log, log
    if node == 'dynamics_node':
        assert "set the parameter 'base_state_topic'" in log and "child_frame_id 'panda_link0'" in log, log


def test_commands_to_a_topic_nobody_reads_are_warned_about_once(ros, start_node):
    """No controller subscribes to command_topic (not loaded, another namespace): after 1 s of commands the
    node warns once and its diagnostics say so; a subscriber ends the warning state."""
    proc = start_panda(ros, start_node, publish_command=True, diagnostics_period=0.2,
                       command_topic='nobody_reads_this/commands')
    diag = ros.subscribe(DiagnosticArray, '/diagnostics')
    pub = ros.publisher(JointState, proc.topic('joint_states'))
    tot = ros.subscribe(JointState, proc.topic('~/compensation_torque'))

    def status(array):
        for s in array.status:
            if proc.name in s.name:
                return s.level, s.message, {kv.key: kv.value for kv in s.values}
        return None

    def stream(seconds):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            pub.publish(joint_state(NAMES, Q))
            time.sleep(0.005)

    publish_until(pub, joint_state(NAMES, Q), tot)
    stream(0.5)
    assert 'nothing subscribes' not in proc.read_log(), 'warned before 1 s of unheard commands'
    stream(1.5)
    log = proc.read_log()
    assert log.count('nothing subscribes to it') == 1, log
    assert 'nobody_reads_this/commands' in log
    warned = diag.wait_where(lambda a: (status(a) or (0, '', {}))[1].startswith('commands go to'), timeout=5)
    assert warned is not None, 'no diagnostics warning'
    level, message, values = status(warned)
    assert level == DiagnosticStatus.WARN and values['command_subscribers'] == '0', (level, message, values)
    # A controller appears: the warning state ends.
    ros.subscribe(Float64MultiArray, proc.topic('nobody_reads_this/commands'))
    t0 = time.monotonic()
    cleared = None
    while cleared is None and time.monotonic() - t0 < 5:
        stream(0.2)
        cleared = next((a for a in list(diag.messages)[-3:] if (status(a) or (0, '', {}))[2].get(
            'command_subscribers') == '1' and status(a)[0] == DiagnosticStatus.OK), None)
    assert cleared is not None, 'the diagnostics did not clear with a subscriber:\n' + proc.read_log()

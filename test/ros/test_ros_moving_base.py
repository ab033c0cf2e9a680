"""Floating and planar bases over ROS: dynamics_node with a base-state topic, simulator_node's Odometry.

Separate node processes, real DDS, this process as their peer, on the toy
mobile manipulator of test/data (a floating base with a three-joint arm;
its planar variant):

- dynamics_node with ``base_state_topic`` (without it, it refuses such a
  robot: test_ros_dynamics_node.py): its torques are the library's joint part of
  ``gravity_torques`` / ``nonlinear_effects`` on the full state (1e-9);
  without a fresh base state it publishes no torque and its watchdog
  acts; a bad Odometry is counted and never gives a non-finite torque;
- simulator_node publishes the base pose and twist as nav_msgs/Odometry
  with joint_states: released with a twist in zero gravity, the pose moves
  as the twist says and the quaternion stays unit.
"""
import math
import threading
import time

import numpy as np
import pytest
from builtin_interfaces.msg import Time
from nav_msgs.msg import Odometry
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from std_srvs.srv import SetBool

import robot_dynamics as rd
from robot_dynamics.model.configuration import quaternion_matrix
from robot_dynamics_interfaces.srv import ForwardDynamics, GravityCompensation

from conftest import ROOT, odometry, stamp_ns, wait_for
from probes import Diagnostics

URDF_PATH = ROOT / 'test' / 'data' / 'mobile_manipulator.urdf'
FLOATING_URDF = URDF_PATH.read_text()
PLANAR_URDF = FLOATING_URDF.replace('type="floating"', 'type="planar"')
FLOATING = rd.load_urdf(FLOATING_URDF)
PLANAR = rd.load_urdf(PLANAR_URDF)
NAMES = list(FLOATING.joint_names)
Q = np.array([0.4, -0.7, 1.1])
QD = np.array([0.5, -0.3, 0.8])
TOL = 1e-9


def joint_state(position, velocity=()):
    msg = JointState()
    msg.header.stamp = Time(sec=7, nanosec=11)
    msg.name = NAMES
    msg.position = [float(x) for x in position]
    msg.velocity = [float(x) for x in velocity]
    return msg



def unit(x):
    x = np.asarray(x, dtype=float)
    return x / np.linalg.norm(x)


class Stream:
    """Publish one message at a fixed rate from the test node's executor (change it with ``msg``)."""

    def __init__(self, ros, pub, msg, period=0.02):
        self.ros, self.pub, self.msg = ros, pub, msg
        self.last = None                    # time.monotonic() of the last publication
        self._lock = threading.Lock()
        self.timer = ros.node.create_timer(period, self._tick)

    def _tick(self):
        with self._lock:
            self.pub.publish(self.msg)
            self.last = time.monotonic()

    def stop(self):
        with self._lock:
            self.timer.cancel()
        self.ros.node.destroy_timer(self.timer)
        return self.last


def stream_base_state(ros, pub, msg, diag, timeout=15.0):
    """A :class:`Stream` of the Odometry ``msg`` on ``pub``, returned once the node has taken one: its
    diagnostics count a base state more than before. Fails saying which link is missing (the stream's
    timer, the match with the node's subscription, or the delivery), so that joint states are only
    judged once the node can have a fresh base state."""
    before = diag.get()
    seen = int(before['base_states_in']) if before and 'base_states_in' in before else 0
    stream = Stream(ros, pub, msg)
    values = diag.wait(lambda v: int(v.get('base_states_in', 0)) > seen, timeout)
    assert values is not None, (
        'the node took no base state in %.0f s: the stream published %s, its publisher matched %d '
        'subscription(s); its last diagnostics: %s' % (timeout, 'last %.1f s ago' % (time.monotonic() - stream.last)
                                                       if stream.last else 'nothing',
                                                       pub.get_subscription_count(), diag.get()))
    return stream


def publish_until(pub, msg, collector, count=1, timeout=5.0, period=0.01):
    deadline = time.monotonic() + timeout
    while len(collector) < count and time.monotonic() < deadline:
        pub.publish(msg)
        time.sleep(period)
    return collector.last()


def library_torques(model, q, v):
    r = model.root_nv
    g = rd.gravity_torques(model, q)
    h = rd.nonlinear_effects(model, q, v)
    return g[r:], (h - g)[r:], h[r:]


def check_torques(collectors, model, q, v):
    for got, want in zip(collectors, library_torques(model, q, v)):
        msg = got.last()
        assert list(msg.name) == NAMES
        np.testing.assert_allclose(np.array(msg.effort), want, rtol=0, atol=TOL)
        assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (7, 11)


def start_dynamics(ros, start_node, urdf, **params):
    full = {'urdf_path': str(urdf), 'base_state_topic': 'odom', 'diagnostics_period': 0.2}
    full.update(params)
    proc = start_node.with_services(full)     # the read-only services: dynamics_services beside it
    ros.wait_for_subscriber(proc.topic('joint_states'), process=proc)
    outputs = [ros.subscribe(JointState, proc.topic('~/%s_torque' % k))
               for k in ('gravity', 'coriolis', 'compensation')]
    return proc, outputs


def matched(*publishers, timeout=10.0):
    """Wait until each new publisher has matched the node's subscription: a
    message published before DDS discovery matched it is lost (a CI run at
    00d1be8 lost all 30 base-less joint states this way on a loaded machine)."""
    assert wait_for(lambda: all(p.get_subscription_count() > 0 for p in publishers), timeout, 0.02), \
        'the node did not match %s within %.0f s' % ([p.topic_name for p in publishers], timeout)


# --- dynamics_node ----------------------------------------------------------------------------------
# The base state is fresh for 0.3 s and streamed from this process's executor every 20 ms: a CI run at
# 7abeb37 (2026-11-28) saw the service find it stale under load, once in ten runs. One rerun, every
# assertion each time.
@pytest.mark.flaky(reruns=1)
def test_dynamics_node_on_a_floating_base_matches_the_library_and_never_uses_a_stale_base(ros, start_node):
    timeout = 0.3
    cmd_topic = '/rd_mb_%d/commands' % time.monotonic_ns()
    proc, outputs = start_dynamics(ros, start_node, URDF_PATH, joint_state_timeout=timeout,
                                   publish_command=True, command_topic=cmd_topic)
    grav, cor, tot = outputs
    cmd = ros.subscribe(Float64MultiArray, cmd_topic)
    diag = Diagnostics(ros, proc.fqn)
    js_pub = ros.publisher(JointState, proc.topic('joint_states'))
    odom_pub = ros.publisher(Odometry, proc.topic('odom'))
    matched(js_pub, odom_pub)
    js = joint_state(Q, QD)

    # Joint states without a base state: no torque, and diagnostics say what is missing. The joint
    # states stream until the diagnostics count them (a CI run at bebeac4 saw 30 states, then 10 s
    # of silence, and no count: on a loaded machine a matched subscription may still miss a burst).
    def counted():
        js_pub.publish(js)
        time.sleep(0.01)
        return diag.wait(lambda v: int(v.get('joint_states_without_base_state', 0)) > 0, timeout=0.0)
    values = wait_for(counted, 20, 0.0)
    assert len(tot) == 0
    assert values is not None and 'no base state on %s yet' % proc.topic('odom') in values['_message'], values

    # A tilted, moving base: the library's joint part on the full state.
    position, quat = np.array([0.5, -1.0, 0.3]), unit([0.1, -0.2, 0.3, 0.9])
    linear, angular = np.array([0.4, -0.1, 0.05]), np.array([0.2, -0.3, 0.6])
    stream = stream_base_state(ros, odom_pub, odometry(position, quat, linear, angular), diag)
    assert publish_until(js_pub, js, tot) is not None
    for c in outputs:
        c.wait()
    check_torques(outputs, FLOATING, np.r_[position, quat, Q], np.r_[linear, angular, QD])
    assert not np.allclose(tot.last().effort, library_torques(FLOATING, np.r_[0, 0, 0, 0, 0, 0, 1, Q],
                                                              np.r_[np.zeros(6), QD])[2], atol=1e-3)

    # A quaternion off unit norm by 0.5 %: normalised.
    quat2 = unit([-0.3, 0.1, 0.2, 0.8])
    stream.msg = odometry(position, 1.005 * quat2, linear, angular)
    time.sleep(0.1)
    tot.clear()
    publish_until(js_pub, js, tot, count=3)
    np.testing.assert_allclose(np.array(tot.last().effort),
                               library_torques(FLOATING, np.r_[position, quat2, Q], np.r_[linear, angular, QD])[2],
                               rtol=0, atol=TOL)

    # Service: the base state of the topic, the base's acceleration zero.
    res = ros.call(GravityCompensation, proc.topic('~/gravity_compensation'),
                   GravityCompensation.Request(joint_state=joint_state(Q)))
    assert res.success, res.message
    np.testing.assert_allclose(res.torques.effort, rd.gravity_torques(FLOATING, np.r_[position, quat2, Q])[6:],
                               rtol=0, atol=TOL)
    res = ros.call(ForwardDynamics, proc.topic('~/forward_dynamics'), ForwardDynamics.Request())
    assert not res.success and 'contact wrenches on the base' in res.message, res.message

    # Bad base states, each counted; the last good one is used while fresh, nothing non-finite comes out.
    before = diag.wait(lambda v: int(v['base_states_in']) > 0)
    t_last_good = stream.stop()
    bad = [odometry((math.nan, 0, 0), quat2, linear, angular),
           odometry(position, (0, 0, 0, 0), linear, angular),
           odometry(position, 1.5 * quat2, linear, angular),
           odometry(position, quat2, (0, math.inf, 0), angular),
           odometry(position, quat2, linear, angular, child='base_footprint')]
    for msg in bad:
        odom_pub.publish(msg)
        js_pub.publish(js)
        time.sleep(0.01)
    values = diag.wait(lambda v: int(v['base_states_rejected']) >= int(before['base_states_rejected']) + len(bad))
    assert values is not None, diag.get()
    assert int(values['bad_messages']) >= len(bad)
    assert "child_frame_id is 'base_footprint'; expected 'base_link'" in values['last_base_state_problem']

    # Stale: joint states keep coming, torques stop within joint_state_timeout of the last good base
    # state, and the watchdog sends its zero command (on_timeout: zero) after as long again.
    deadline = time.monotonic() + 1.2
    while time.monotonic() < deadline:
        js_pub.publish(js)
        time.sleep(0.01)
    with tot._lock:
        late = [t for t in tot.times if t > t_last_good + timeout + 0.1]
        assert all(np.all(np.isfinite(m.effort)) for m in tot.messages)
    assert late == [], 'torques %.3f s after the last good base state' % (late[0] - t_last_good)
    with cmd._lock:
        zeros = [m for t, m in zip(cmd.times, cmd.messages) if t > t_last_good and not np.any(m.data)]
        assert all(np.all(np.isfinite(m.data)) for m in cmd.messages)
    assert len(zeros) == 1, 'expected one zero command after the timeout, got %d' % len(zeros)
    values = diag.wait(lambda v: v['state'] in ('timed out', 'waiting for the base state'))
    assert values is not None and int(values['joint_states_without_base_state']) > 50, values

    # The base state resumes: so do the torques.
    stream = stream_base_state(ros, odom_pub, odometry(position, quat2, linear, angular), diag)
    tot.clear()
    assert publish_until(js_pub, js, tot) is not None
    check_torques(outputs, FLOATING, np.r_[position, quat2, Q], np.r_[linear, angular, QD])
    stream.stop()
    assert proc.poll() is None and 'Traceback' not in proc.read_log()


def test_dynamics_node_on_a_planar_base_uses_x_y_yaw_and_refuses_a_tilted_pose(ros, start_node, tmp_path):
    path = tmp_path / 'planar_manipulator.urdf'
    path.write_text(PLANAR_URDF)
    proc, outputs = start_dynamics(ros, start_node, path, joint_state_timeout=0.5)
    tot = outputs[2]
    diag = Diagnostics(ros, proc.fqn)
    js_pub = ros.publisher(JointState, proc.topic('joint_states'))
    odom_pub = ros.publisher(Odometry, proc.topic('odom'))
    matched(js_pub, odom_pub)
    yaw = 2.2
    stream = stream_base_state(ros, odom_pub, odometry((1.0, 2.0, 0.0), (0, 0, math.sin(yaw / 2),
                                                                           math.cos(yaw / 2)),
                                                       (0.3, -0.2, 0.0), (0.0, 0.0, 0.7)), diag)
    js = joint_state(Q, QD)
    assert publish_until(js_pub, js, tot) is not None
    for c in outputs:
        c.wait()
    check_torques(outputs, PLANAR, np.r_[1.0, 2.0, yaw, Q], np.r_[0.3, -0.2, 0.7, QD])
    stream.stop()
    tilted = odometry((1.0, 2.0, 0.0), unit([0.1, 0, 0, 1]), (0, 0, 0), (0, 0, 0))
    for _ in range(3):
        odom_pub.publish(tilted)
        time.sleep(0.02)
    values = diag.wait(lambda v: int(v['base_states_rejected']) >= 3)
    assert values is not None, diag.get()
    assert 'not in the plane of the planar base' in values['last_base_state_problem'], values
    assert proc.poll() is None and 'Traceback' not in proc.read_log()


# --- simulator_node -----------------------------------------------------------------------------------
def rotation_vector(R):
    """Axis * angle of a rotation matrix (angle < pi)."""
    angle = math.acos(max(-1.0, min(1.0, (np.trace(R) - 1) / 2)))
    w = np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
    return w * (0.5 if angle < 1e-9 else angle / (2 * math.sin(angle)))


def pose_twist(msg):
    p, o = msg.pose.pose.position, msg.pose.pose.orientation
    t = msg.twist.twist
    return (np.array([p.x, p.y, p.z]), np.array([o.x, o.y, o.z, o.w]),
            np.array([t.linear.x, t.linear.y, t.linear.z]), np.array([t.angular.x, t.angular.y, t.angular.z]))



@pytest.mark.parametrize('root', ['floating', 'planar'])
def test_simulator_publishes_the_base_as_odometry_moving_with_its_twist(ros, start_node, tmp_path, root):
    path = tmp_path / ('%s_manipulator.urdf' % root)
    path.write_text(FLOATING_URDF if root == 'floating' else PLANAR_URDF)
    if root == 'floating':
        pose, twist = [0.1, -0.2, 0.5, 0.0, 0.0, math.sin(0.2), math.cos(0.2)], [0.3, 0.0, 0.1, 0.1, 0.0, 0.5]
        q0, quat0 = np.array(pose[:3]), np.array(pose[3:])
    else:
        pose, twist = [0.1, -0.2, 0.4], [0.3, 0.0, 0.5]
        q0, quat0 = np.array([0.1, -0.2, 0.0]), np.array([0.0, 0.0, math.sin(0.2), math.cos(0.2)])
    proc = start_node('simulator_node', {
        'urdf_path': str(path), 'gravity': [0.0, 0.0, 0.0], 'physics_rate': 200.0, 'publish_rate': 50.0,
        'publish_clock': True, 'start_paused': True, 'initial_base_pose': pose, 'initial_base_twist': twist,
        'initial_positions': [0.3, -0.5, 0.9], 'marker_rate': 0.0})
    ros.wait_for_subscriber(proc.topic('effort_controller/commands'), process=proc)
    odom = ros.subscribe(Odometry, proc.topic('odom'))
    states = ros.subscribe(JointState, proc.topic('joint_states'))

    # Paused: the initial state, as the parameters give it.
    first = odom.wait(timeout=10)
    assert first is not None, proc.read_log()
    assert first.header.frame_id == 'odom' and first.child_frame_id == 'base_link'
    p, quat, lin, ang = pose_twist(first)
    np.testing.assert_allclose(p, q0, atol=1e-12)
    np.testing.assert_allclose(quat, quat0, atol=1e-12)
    want_lin = twist[:3] if root == 'floating' else [twist[0], twist[1], 0.0]
    want_ang = twist[3:] if root == 'floating' else [0.0, 0.0, twist[2]]
    np.testing.assert_allclose(np.r_[lin, ang], np.r_[want_lin, want_ang], atol=1e-12)
    js = states.wait(timeout=5)
    assert list(js.name) == NAMES
    np.testing.assert_allclose(js.position, [0.3, -0.5, 0.9], atol=1e-12)

    # Released: one second of simulated time.
    res = ros.call(SetBool, proc.topic('~/pause'), SetBool.Request(data=False), idempotent=True)
    assert res.success, res.message
    odom.clear()
    states.clear()
    assert wait_for(lambda: len(odom) >= 50, 20), 'only %d Odometry messages' % len(odom)
    with odom._lock:
        msgs = list(odom.messages)
    with states._lock:
        js_stamps = {stamp_ns(m) for m in states.messages}
    assert sum(stamp_ns(m) in js_stamps for m in msgs) >= len(msgs) - 2     # the same stamps as joint_states
    samples = [(stamp_ns(m) * 1e-9,) + pose_twist(m) for m in msgs]
    for t, p, quat, lin, ang in samples:
        assert abs(np.linalg.norm(quat) - 1) < 1e-9
        if root == 'planar':
            assert p[2] == 0.0 and quat[0] == quat[1] == 0.0 and lin[2] == ang[0] == ang[1] == 0.0
    pairs = 0
    for (t0, p0, q0_, l0, a0), (t1, p1, q1_, l1, a1) in zip(samples, samples[1:]):
        dt = t1 - t0
        if not 0 < dt < 0.05:
            continue
        R0, R1 = quaternion_matrix(q0_), quaternion_matrix(q1_)
        # The pose moves as the twist says (trapezoidal rule: O(dt^2) with dt = 0.02 s).
        np.testing.assert_allclose((p1 - p0) / dt, (R0 @ l0 + R1 @ l1) / 2, atol=5e-3)
        np.testing.assert_allclose(rotation_vector(R0.T @ R1) / dt, (a0 + a1) / 2, atol=5e-3)
        pairs += 1
    assert pairs >= 40
    travelled = np.linalg.norm(samples[-1][1] - samples[0][1])
    assert travelled > 0.25 * (samples[-1][0] - samples[0][0]), travelled
    assert proc.poll() is None and 'Traceback' not in proc.read_log()

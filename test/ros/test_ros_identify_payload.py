"""dynamics_node ~/identify_payload end to end: a separate node process, real DDS.

The joint states are those of a Panda carrying a known payload on panda_link8:
positions and velocities of a pose or a motion, efforts from
``rd.rnea(PANDA.with_payload(...), q, qd, qdd)``. The node's model is the bare
Panda. Exact data, so the bounds of the issue (mass within 1 %, centre of mass
within 5 mm) leave room only for what the node does to the data: resting-sample
selection, resampling, and accelerations from a 10 Hz zero-phase filter.
"""
import time

import numpy as np
from sensor_msgs.msg import JointState

import robot_dynamics as rd
from robot_dynamics_interfaces.srv import IdentifyPayload

from conftest import PANDA, RELIABLE, wait_for

MODEL = rd.load_urdf(str(PANDA))
NAMES = list(MODEL.joint_names)
LINK = 'panda_link8'
MASS, COM = 1.8, np.array([0.015, -0.01, 0.07])
INERTIA = np.array([[0.006, 0.0005, 0.0], [0.0005, 0.007, 0.0], [0.0, 0.0, 0.004]])
LOADED = MODEL.with_payload(LINK, MASS, COM, INERTIA)
Q = np.array([0.1, -0.6, 0.2, -2.0, 0.3, 1.6, 0.7])


def state(q, qd, effort, t_ns=None):
    msg = JointState(name=NAMES, position=[float(x) for x in q], velocity=[float(x) for x in qd],
                     effort=[float(x) for x in effort])
    t_ns = time.time_ns() if t_ns is None else t_ns
    msg.header.stamp.sec, msg.header.stamp.nanosec = t_ns // 10**9, t_ns % 10**9
    return msg


def call_async(ros, proc, request):
    client = ros.node.create_client(IdentifyPayload, proc.topic('~/identify_payload'))
    assert client.wait_for_service(timeout_sec=10)
    return client.call_async(request)


def result(future, timeout=30.0):
    assert wait_for(future.done, timeout), 'no answer from ~/identify_payload'
    return future.result()


def start(ros, start_node, **params):
    # diagnostic_torque_rate -1: every joint state's ~/gravity_torque (the test counts them)
    proc = start_node('dynamics_node', dict({'urdf_path': str(PANDA), 'mode': 'gravity',
                                             'diagnostic_torque_rate': -1.0}, **params))
    ros.wait_for_subscriber(proc.topic('joint_states'), process=proc)
    return proc


def test_static_poses_collected_while_the_torques_go_on(ros, start_node):
    proc = start(ros, start_node)
    grav = ros.subscribe(JointState, proc.topic('~/gravity_torque'))
    pub = ros.publisher(JointState, proc.topic('joint_states'), RELIABLE)
    assert wait_for(lambda: pub.get_subscription_count() > 0, 10)
    poses = Q + np.random.default_rng(7).uniform(-0.5, 0.5, (10, 7))
    z = np.zeros(7)
    future = call_async(ros, proc, IdentifyPayload.Request(link=LINK, duration=1.5, static_poses=True))
    t_call = time.monotonic()
    n_grav = len(grav)
    k = 0
    while not future.done() and time.monotonic() - t_call < 10:
        q = poses[(k // 20) % len(poses)]                    # 20 states per pose, 200 Hz
        pub.publish(state(q, z, rd.gravity_torques(LOADED, q)))
        k += 1
        time.sleep(0.005)
        if k == 40:
            # A second request while the first collects: refused at once, not queued behind it.
            busy = call_async(ros, proc, IdentifyPayload.Request(link=LINK, duration=1.0, static_poses=True))
        if k == 100:
            got = result(busy, 0.5)
            assert not got.success and 'running already' in got.message
            assert not future.done()
    res = result(future)
    assert res.success, res.message
    # The torque loop went on while the node collected: ~one gravity torque per state.
    assert len(grav) - n_grav > 0.5 * k
    assert abs(res.mass - MASS) < 0.01 * MASS, res.mass
    assert np.linalg.norm([res.com.x - COM[0], res.com.y - COM[1], res.com.z - COM[2]]) < 0.005
    assert not np.any(res.inertia) and not res.applied
    assert res.samples_used >= 100 and list(res.name) == NAMES
    assert 0 < res.mass_std < 0.01 * MASS and max(res.residual_rms) < 1e-3
    assert 'payload on' in res.message and str(res.samples_used) in res.message


def smooth_motion(t):
    """q, qd, qdd (N, 7) of a few sines per joint around Q: every wrist axis turns."""
    w = 2 * np.pi * np.array([0.3, 0.4, 0.5, 0.35, 0.6, 0.45, 0.55])
    a = np.array([0.3, 0.3, 0.3, 0.3, 0.5, 0.5, 0.6])
    phase = np.outer(t, w) + np.arange(7)
    return Q + a * np.sin(phase), a * w * np.cos(phase), -a * w ** 2 * np.sin(phase)


def test_motion_samples_identify_and_apply_the_payload(ros, start_node):
    proc = start(ros, start_node)
    t = np.arange(0.0, 4.0, 0.005)
    q, qd, qdd = smooth_motion(t)
    tau = rd.rnea(LOADED, q, qd, qdd)
    samples = [state(q[k], qd[k], tau[k], t_ns=100 * 10**9 + int(round(t[k] * 1e9))) for k in range(len(t))]
    res = result(call_async(ros, proc, IdentifyPayload.Request(link=LINK, samples=samples, apply=True)))
    assert res.success, res.message
    com = np.array([res.com.x, res.com.y, res.com.z])
    assert abs(res.mass - MASS) < 0.01 * MASS, res.mass
    assert np.linalg.norm(com - COM) < 0.005, com
    inertia = np.array(res.inertia).reshape(3, 3)
    assert np.any(inertia) and np.all(np.isfinite(res.inertia_std))
    assert res.applied and res.samples_used == len(t)
    # The node's gravity torque now holds the arm with the payload it found: the library's
    # value for the identified payload, close to the true payload's.
    grav = ros.subscribe(JointState, proc.topic('~/gravity_torque'))
    pub = ros.publisher(JointState, proc.topic('joint_states'), RELIABLE)
    assert wait_for(lambda: pub.get_subscription_count() > 0, 10)
    deadline = time.monotonic() + 5
    while not len(grav) and time.monotonic() < deadline:
        pub.publish(state(Q, np.zeros(7), np.zeros(7)))
        time.sleep(0.02)
    got = np.array(grav.wait().effort)
    found = MODEL.with_payload(LINK, res.mass, com, 0.5 * (inertia + inertia.T))
    np.testing.assert_allclose(got, rd.gravity_torques(found, Q), rtol=0, atol=1e-9)
    payload_part = rd.gravity_torques(LOADED, Q) - rd.gravity_torques(MODEL, Q)
    assert np.abs(payload_part).max() > 1.0
    np.testing.assert_allclose(got, rd.gravity_torques(LOADED, Q), rtol=0, atol=0.03 * np.abs(payload_part).max())


def test_bad_requests_are_answered_at_once(ros, start_node):
    proc = start(ros, start_node)
    t = np.arange(0.0, 1.0, 0.01)
    q, qd, qdd = smooth_motion(t)
    moving = [state(q[k], qd[k], rd.rnea(LOADED, q[k], qd[k], qdd[k])) for k in range(len(t))]
    no_effort = [JointState(name=NAMES, position=list(Q), velocity=[0.0] * 7)] * 5
    cases = [
        (dict(link='gripper', duration=1.0), ["unknown link 'gripper'", 'panda_link8']),
        (dict(link='panda_link0', duration=1.0), ['fixed to the base']),
        (dict(link=LINK), ['no data']),
        (dict(link=LINK, duration=1000.0), ['identify_max_duration (60 s)']),
        (dict(link=LINK, samples=moving, static_poses=True, apply=True), ['0 of 100 samples are at rest']),
        (dict(link=LINK, samples=no_effort), ['samples[0] has no efforts']),
    ]
    for args, words in cases:
        t0 = time.monotonic()
        res = result(call_async(ros, proc, IdentifyPayload.Request(**args)), 10)
        assert not res.success and not res.applied and time.monotonic() - t0 < 10, args
        for w in words:
            assert w in res.message, res.message
    assert proc.poll() is None


def test_collecting_motor_currents_is_refused_and_given_torque_samples_are_not(ros, start_node):
    """joint_state_effort motor_current (the UR profile: its driver's efforts are motor currents): a
    collection from joint states is refused with the reason; samples with joint torques are still fitted."""
    proc = start(ros, start_node, joint_state_effort='motor_current')
    res = result(call_async(ros, proc, IdentifyPayload.Request(link=LINK, duration=1.0)), 10)
    assert not res.success and not res.applied
    assert "joint_state_effort is 'motor_current'" in res.message and 'samples' in res.message, res.message
    t = np.arange(0.0, 1.0, 0.01)
    q, qd, qdd = smooth_motion(t)
    samples = [state(q[k], qd[k], rd.rnea(LOADED, q[k], qd[k], qdd[k])) for k in range(len(t))]
    res = result(call_async(ros, proc, IdentifyPayload.Request(link=LINK, samples=samples)), 30)
    assert res.success, res.message
    assert proc.poll() is None

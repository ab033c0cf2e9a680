"""max_state_age over DDS: a joint state too old (by its stamp) when dynamics_node takes it gives no torque.

A state can wait in a queue: in the middleware (docs/NODES.md, "A stopped
process on the same host": up to 1 s) or in the node's own subscription
after a pause. With ``max_state_age`` the node judges each state by its
header stamp on its clock (here the system clock, which this process shares
with it) and refuses one older than the limit, one stamped further ahead,
and an unstamped one: no torque, no command, counted as
``joint_states_too_old`` and warned with the reason; with only such states
the watchdog's ``on_timeout`` follows, and a young state resumes the torques.
Off (the default), the same old states give their torques.
"""
import re
import time

import numpy as np
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

import robot_dynamics as rd

from conftest import PANDA, RELIABLE
from probes import Diagnostics

MODEL = rd.load_urdf(str(PANDA))
NAMES = list(MODEL.joint_names)
Q = np.array([0.1, -0.6, 0.2, -2.0, 0.3, 1.6, 0.7])
MAX_AGE = 0.2           # [s]
TIMEOUT = 0.1           # joint_state_timeout [s]
RATE = 100.0            # [Hz]


def state(offset, tag):
    """The Panda at Q stamped ``offset`` seconds from now (None: no stamp), frame_id ``tag``."""
    msg = JointState(name=NAMES, position=Q.tolist())
    if offset is not None:
        msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(time.time_ns() + int(offset * 1e9), 10**9)
    msg.header.frame_id = tag
    return msg


def stream(pub, offset, tag, duration):
    """Publish fresh copies of state(offset, tag) at RATE for ``duration`` seconds; how many."""
    n, end = 0, time.monotonic() + duration
    while time.monotonic() < end:
        pub.publish(state(offset, tag))
        n += 1
        time.sleep(1.0 / RATE)
    return n


def start(ros, start_node, max_state_age):
    proc = start_node('dynamics_node', {
        'urdf_path': str(PANDA), 'mode': 'gravity', 'publish_command': True, 'max_state_age': max_state_age,
        'joint_state_timeout': TIMEOUT, 'on_timeout': 'zero', 'diagnostics_period': 0.2,
        'joint_states_reliability': 'reliable'}, name='dynamics_node')
    ros.wait_for_subscriber(proc.topic('joint_states'), process=proc)
    return (proc, ros.subscribe(JointState, proc.topic('~/compensation_torque')),
            ros.subscribe(Float64MultiArray, proc.topic('effort_controller/commands')),
            ros.publisher(JointState, proc.topic('joint_states'), RELIABLE))


def test_states_older_ahead_or_unstamped_give_no_torque(ros, start_node):
    proc, tot, cmd, pub = start(ros, start_node, MAX_AGE)
    diag = Diagnostics(ros, proc.fqn)
    want = rd.gravity_torques(MODEL, Q)
    deadline = time.monotonic() + 30
    while len(tot) < 20:
        assert time.monotonic() < deadline, 'no torque for states stamped now:\n' + proc.read_log()
        stream(pub, 0.0, 'young', 0.1)
    assert all(np.allclose(m.effort, want, rtol=0, atol=1e-9) for m in list(tot.messages))
    sent = 0
    for offset, tag, reason in ((-2 * MAX_AGE, 'old', r'stamped 0\.4\d\d s ago, more than max_state_age \(0\.200 s\)'),
                                (2 * MAX_AGE, 'ahead', r'stamped 0\.\d{3} s ahead of this node\'s clock, more than '
                                                       r'max_state_age \(0\.200 s\): are the clocks synchronised\?'),
                                (None, 'unstamped', r'it has no stamp \(max_state_age needs stamped joint states\)')):
        time.sleep(0.3)                  # the watchdog's zero of the previous phase has come
        tot.clear()
        cmd.clear()
        sent += stream(pub, offset, tag, 1.1)   # > 1 s: each reason gets its own (throttled) warning
        time.sleep(0.2)
        assert len(tot) == 0, '%s states gave %d torques' % (tag, len(tot))
        commands = [np.array(m.data) for m in list(cmd.messages)]
        assert len(commands) <= 1 and all(not np.any(c) for c in commands), (tag, commands)
        assert re.search('no torque for this joint state: ' + reason, proc.read_log()), (tag, proc.read_log())
    values = diag.wait(lambda v: int(v['joint_states_too_old']) >= sent)
    assert values is not None and int(values['joint_states_too_old']) == sent, (sent, diag.get())
    assert values['max_state_age_ms'] == '200.0'
    assert 'no joint_states for' in proc.read_log()          # on_timeout zero came
    # Young states again: the torques resume.
    tot.clear()
    deadline = time.monotonic() + 5
    while len(tot) < 5:
        assert time.monotonic() < deadline, 'no torque after young states came back:\n' + proc.read_log()
        stream(pub, 0.0, 'young again', 0.05)
    assert all(m.header.frame_id == 'young again' and np.allclose(m.effort, want, rtol=0, atol=1e-9)
               for m in list(tot.messages))
    print('\nmax_state_age 0.2 s: %d states stamped 0.4 s ago, 0.4 s ahead or not at all gave no torque; '
          'young ones did before and after' % sent)


def test_off_by_default_old_states_give_torques(ros, start_node):
    proc, tot, cmd, pub = start(ros, start_node, 0.0)
    deadline = time.monotonic() + 30
    while len(tot) < 20:
        assert time.monotonic() < deadline, 'no torque for old states with max_state_age off:\n' + proc.read_log()
        stream(pub, -10.0, 'old', 0.1)
    assert all(m.header.frame_id == 'old' for m in list(tot.messages))
    assert Diagnostics(ros, proc.fqn).wait(lambda v: v['max_state_age_ms'] == 'off'
                                           and int(v['joint_states_too_old']) == 0) is not None

"""dynamics_lifecycle_node through its lifecycle services over DDS (separate processes).

A 200 Hz joint-state publisher (joint_state_publisher.py) streams the whole time;
this process drives the node with ``~/change_state`` and reads ``~/get_state``:
no command while unconfigured or inactive, commands while active, exactly one
zero command on deactivate; cleanup and configure again; a URDF that cannot be
parsed fails configure with a message naming it, and the node stays unconfigured.
"""
import sys
import time

import numpy as np
import pytest
from lifecycle_msgs.msg import State, Transition
from lifecycle_msgs.srv import ChangeState, GetState
from std_msgs.msg import Float64MultiArray

from conftest import PANDA, ROOT, wait_for

NAMES = ['panda_joint%d' % k for k in range(1, 8)]
Q = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]
QUIET = 0.4                  # [s] a stretch in which no command may come


def start(ros, start_node, urdf, executor='events'):
    proc = start_node('lifecycle_node', {'urdf_path': str(urdf), 'mode': 'gravity', 'publish_command': True,
                                         'joint_state_timeout': 0.2, 'on_timeout': 'zero'},
                      env={'ROBOT_DYNAMICS_EXECUTOR': executor})
    ros.wait_for_service(proc.topic('~/change_state'), process=proc)
    return proc


def state(ros, proc):
    return ros.call(GetState, proc.topic('~/get_state'), GetState.Request()).current_state


def change(ros, proc, transition):
    """The success of a ~/change_state call (not resent: a transition is not idempotent)."""
    req = ChangeState.Request(transition=Transition(id=transition))
    return ros.call(ChangeState, proc.topic('~/change_state'), req, timeout=120.0, idempotent=False).success


def after(collector, t0):
    with collector._lock:
        return [(t, np.array(m.data)) for t, m in zip(collector.times, collector.messages) if t > t0]


@pytest.mark.parametrize('executor', ['events', 'single'])
def test_commands_only_while_active_and_one_zero_on_deactivate(ros, start_node, executor):
    """With either executor the node can spin (ROBOT_DYNAMICS_EXECUTOR, robot_dynamics.ros.model_node)."""
    proc = start(ros, start_node, PANDA, executor)
    commands = ros.subscribe(Float64MultiArray, proc.topic('effort_controller/commands'))
    start_node.command([sys.executable, str(ROOT / 'test' / 'ros' / 'joint_state_publisher.py'),
                        '--topic', proc.topic('joint_states'), '--tag', 'p', '--names', ','.join(NAMES),
                        '--q=' + ','.join(repr(x) for x in Q), '--rate', '200'],
                       'publisher_%d' % time.monotonic_ns())
    s = state(ros, proc)
    assert s.id == State.PRIMARY_STATE_UNCONFIGURED, 'expected unconfigured at start, got %s' % s.label
    time.sleep(QUIET)
    assert len(commands) == 0, 'unconfigured, yet %d commands' % len(commands)

    for cycle in range(2):                       # the second time after cleanup: configure again
        assert change(ros, proc, Transition.TRANSITION_CONFIGURE), 'configure failed:\n' + proc.read_log()
        assert state(ros, proc).id == State.PRIMARY_STATE_INACTIVE
        t = time.monotonic()
        time.sleep(QUIET)
        assert not after(commands, t), 'inactive, yet commands came (cycle %d)' % cycle

        assert change(ros, proc, Transition.TRANSITION_ACTIVATE), proc.read_log()
        assert state(ros, proc).id == State.PRIMARY_STATE_ACTIVE
        t = time.monotonic()
        assert wait_for(lambda: len(after(commands, t)) >= 20, 5), 'active, no commands:\n' + proc.read_log()
        assert all(np.any(d) for _, d in after(commands, t)), 'a zero command while active (gravity is not zero)'

        t = time.monotonic()
        assert change(ros, proc, Transition.TRANSITION_DEACTIVATE), proc.read_log()
        t_done = time.monotonic()
        time.sleep(QUIET)
        got = after(commands, t)
        zeros = [k for k, (_, d) in enumerate(got) if not np.any(d)]
        assert len(zeros) == 1, 'expected one zero command on deactivate, got %d of %d commands' % (
            len(zeros), len(got))
        assert zeros[0] == len(got) - 1, 'commands after the zero command: %d' % (len(got) - 1 - zeros[0])
        assert got[-1][0] <= t_done + 0.1, 'the zero command came %.3f s after the answer' % (got[-1][0] - t_done)
        assert state(ros, proc).id == State.PRIMARY_STATE_INACTIVE

        assert change(ros, proc, Transition.TRANSITION_CLEANUP), proc.read_log()
        assert state(ros, proc).id == State.PRIMARY_STATE_UNCONFIGURED
    assert proc.poll() is None, proc.read_log()
    spinning = 'spinning in %s' % {'events': 'EventsExecutor', 'single': 'SingleThreadedExecutor'}[executor]
    assert spinning in proc.read_log(), proc.read_log()


def test_configure_with_a_bad_urdf_fails_and_stays_unconfigured(ros, start_node, tmp_path):
    bad = tmp_path / 'broken.urdf'
    bad.write_text('<robot name="broken"><link name="a"></robot>')
    proc = start(ros, start_node, bad)
    assert not change(ros, proc, Transition.TRANSITION_CONFIGURE), 'configure with a broken URDF succeeded'
    s = state(ros, proc)
    assert s.id == State.PRIMARY_STATE_UNCONFIGURED, 'expected unconfigured after the failure, got %s' % s.label
    log = proc.read_log()
    assert 'configure failed' in log and 'broken' in log, 'no error naming the URDF:\n' + log
    assert proc.poll() is None, log


def test_parameters_are_read_only_while_configured_and_undeclared_by_cleanup(ros, start_node):
    """rclpy's public undeclare_parameter refuses a parameter flagged read-only, so the lifecycle node declares them
    without the flag and refuses a change itself; cleanup undeclares them all, and configure declares them again
    from the command line's values."""
    from rcl_interfaces.msg import Parameter as ParameterMsg, ParameterType, ParameterValue
    from rcl_interfaces.srv import ListParameters, SetParameters

    def set_param(name, value):
        value = ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=value)
        req = SetParameters.Request(parameters=[ParameterMsg(name=name, value=value)])
        return ros.call(SetParameters, proc.topic('~/set_parameters'), req).results[0]

    def declared():
        return set(ros.call(ListParameters, proc.topic('~/list_parameters'), ListParameters.Request()).result.names)

    proc = start(ros, start_node, PANDA)
    assert 'urdf_path' not in declared() and 'mode' not in declared(), 'parameters declared before configure'
    for cycle in range(2):
        assert change(ros, proc, Transition.TRANSITION_CONFIGURE), proc.read_log()
        assert {'urdf_path', 'mode', 'joints', 'command_topic'} <= declared()
        refused = set_param('command_topic', 'elsewhere')
        assert not refused.successful and 'read-only' in refused.reason, refused.reason
        accepted = set_param('mode', 'gravity_coriolis')        # a dynamic one
        assert accepted.successful, accepted.reason
        assert change(ros, proc, Transition.TRANSITION_CLEANUP), proc.read_log()
        left = declared() & {'urdf_path', 'mode', 'joints', 'command_topic', 'observer_gains'}
        assert not left, 'still declared after cleanup (cycle %d): %s' % (cycle, sorted(left))
    assert proc.poll() is None, proc.read_log()

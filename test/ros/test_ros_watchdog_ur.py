"""UR: the driver's controller_stopper does not hand the arm a torque controller that nobody feeds.

Universal_Robots_ROS2_Driver, branch jazzy: ``controller_stopper`` (ur_robot_driver/src/controller_stopper.cpp)
listens to ``io_and_status_controller/robot_program_running``. When the robot program stops it deactivates
every active controller that is not in its ``consistent_controllers`` parameter and remembers them; when
the program runs again it activates the remembered ones (STRICT), whoever fed them. ur_control.launch.py
(same branch) sets ``consistent_controllers`` to :data:`LAUNCH_CONSISTENT`, not a launch argument, so
``forward_effort_controller`` is one of the controllers it stops and restarts.

The stand-in manager (test/ros/controller_manager_standin.py ``--program-topic``) acts as that stopper
beside the manager, with the UR profile's controller (config/robots/ur.yaml). The sequence: commands
flow, the program stops, the commands stop (dynamics_node died meanwhile), the program runs again. A gap over
``command_timeout`` in the flowing commands (a loaded 2-core machine) makes the watchdog deactivate the controller
before the stopper, rightly: that attempt is made again (:func:`program_stops`).

- The recommended configuration, command_watchdog kept running for as long as the driver: the stopper's
  activation is undone within ``command_timeout`` + 50 ms (the stand-in's times).
- The alternative, ``forward_effort_controller`` added to the stopper's ``consistent_controllers`` (a copy
  of ur_control.launch.py): the stopper neither stops nor restarts it; the watchdog deactivated it when
  the commands stopped, and it stays inactive after the program runs again, the watchdog gone.
- Neither (the launch file's list, the watchdog stopped with dynamics_node): the stopper activates it and
  it stays active. This is the case the two configurations avoid, and it shows the test can fail.
"""
import signal
import sys
import time

import pytest
import yaml
from std_msgs.msg import Bool, Float64MultiArray

import watchdog_log
from conftest import ROOT, wait_for
from controller_manager_standin import RecordReader

PROFILE = yaml.safe_load((ROOT / 'config' / 'robots' / 'ur.yaml').read_text())
CONTROLLER = PROFILE['controller']['name']               # forward_effort_controller
TOPIC = PROFILE['controller']['command_topic']           # forward_effort_controller/commands
PROGRAM = 'io_and_status_controller/robot_program_running'
#: ur_control.launch.py, branch jazzy: controller_stopper_node's consistent_controllers.
LAUNCH_CONSISTENT = ['io_and_status_controller', 'force_torque_sensor_broadcaster', 'joint_state_broadcaster',
                     'speed_scaling_state_broadcaster', 'tcp_pose_broadcaster', 'ur_configuration_controller',
                     'gravity_update_controller']
TIMEOUT = 0.1
STANDIN = str(ROOT / 'test' / 'ros' / 'controller_manager_standin.py')

CASES = {  # name: (consistent_controllers, the watchdog still runs when the program runs again)
    'watchdog-kept-running': (LAUNCH_CONSISTENT, True),
    'effort-controller-consistent': (LAUNCH_CONSISTENT + [CONTROLLER], False),
    'neither': (LAUNCH_CONSISTENT, False),
}


def changes(record, since):
    """The stand-in's state changes of CONTROLLER after ``since``: [(t, state, by)]."""
    record.update()
    return [(e['t'], e['state'], e['by']) for e in record.of('state')
            if e['controller'] == CONTROLLER and e['t'] > since]


def program_stops(ros, start_node, tmp_path, consistent):
    """Stand-in manager (the stopper with ``consistent``) and watchdog in a fresh namespace; 0.5 s of commands,
    then the program stops and the commands stop, and the watchdog decides: (manager, record, watchdog, program
    publisher).

    The stream must flow without a gap over TIMEOUT for the states before the program runs again to be exact: a
    gap the watchdog measured (a loaded 2-core machine) made it deactivate the controller rightly, before the
    stopper. Such an attempt is made again from a fresh manager and watchdog, at most watchdog_log.ATTEMPTS times;
    a deactivation the watchdog did not decide on such a gap fails."""
    for attempt in range(watchdog_log.ATTEMPTS):
        ns = '/ur%d' % (time.monotonic_ns() % 10**9)
        record = RecordReader(tmp_path / ('manager_%d.jsonl' % attempt))
        manager = start_node.command(
            [sys.executable, STANDIN, '--record', record.path, '--controller', CONTROLLER, '--controller',
             'joint_state_broadcaster', '--command-topic', TOPIC, '--program-topic', PROGRAM,
             '--consistent', ','.join(consistent), '--ros-args', '-r', '__ns:=' + ns,
             '-r', '__node:=controller_manager'], 'controller_manager', ns)
        # The recommended watchdog for UR, as docs/ROBOTS.md gives it: the profile's topic and controller.
        guard = start_node('command_watchdog', {'command_topic': TOPIC, 'controller_name': CONTROLLER,
                                                'command_timeout': TIMEOUT}, name='command_watchdog', ns=ns)
        ros.wait_for_subscriber(ns + '/' + TOPIC, process=guard)
        ros.wait_for_subscriber(ns + '/' + PROGRAM, process=manager)
        commands = ros.publisher(Float64MultiArray, ns + '/' + TOPIC)
        program = ros.publisher(Bool, ns + '/' + PROGRAM)
        assert wait_for(lambda: ros.node.count_subscribers(ns + '/' + TOPIC) >= 2, 10.0)

        end = time.monotonic() + 0.5                   # dynamics_node feeds the controller ...
        while time.monotonic() < end:
            commands.publish(Float64MultiArray(data=[0.1] * 6))
            time.sleep(0.002)
        program.publish(Bool(data=False))              # ... the program stops ...
        assert wait_for(lambda: (record.update(), record.of('program'))[1], 5.0), manager.read_log()
        time.sleep(0.5)                                # ... dynamics_node is gone: no command since
        assert 'no command on' in guard.read_log(), guard.log_tail(10)
        assert wait_for(lambda: 'deactivated by' in guard.read_log() or 'NOT deactivated' in guard.read_log(), 5.0)
        off = [t for t, state, by in changes(record, 0.0) if (state, by) == ('inactive', 'switch_controller')]
        if not watchdog_log.voided(len(off), guard.read_log(), ns + '/' + TOPIC, TIMEOUT):   # record, then log
            return manager, record, guard, program
        guard.stop()
        manager.stop()
    raise AssertionError('in each of %d streams the watchdog saw a gap over %.3f s (a deactivation it was right to '
                         'decide while the commands flowed)' % (watchdog_log.ATTEMPTS, TIMEOUT))


@pytest.mark.parametrize('case', sorted(CASES))
def test_a_program_run_again_after_dynamics_node_died(ros, start_node, tmp_path, case):
    consistent, watchdog_runs = CASES[case]
    manager, record, guard, program = program_stops(ros, start_node, tmp_path, consistent)
    if not watchdog_runs:
        guard.send_signal(signal.SIGTERM)
        guard.wait(10.0)
    before = changes(record, 0.0)
    if CONTROLLER in consistent:                       # the stopper left it alone; the watchdog deactivated it
        assert [(s, by) for _, s, by in before] == [('inactive', 'switch_controller')], before
    else:                                              # the stopper deactivated it; the watchdog had nothing to do
        assert [(s, by) for _, s, by in before] == [('inactive', 'controller_stopper')], before

    ran = time.monotonic()
    program.publish(Bool(data=True))                   # the program runs again
    assert wait_for(lambda: (record.update(), len(record.of('program')) == 2)[1], 5.0), manager.read_log()
    time.sleep(1.0)
    after = changes(record, ran)
    record.update()
    jsb = [e for e in record.of('state') if e['controller'] == 'joint_state_broadcaster']
    assert not jsb, 'the stopper touched a consistent controller: %s' % jsb
    if case == 'neither':                              # handed over, nobody feeding it
        assert [(s, by) for _, s, by in after] == [('active', 'controller_stopper')], after
        return
    if case == 'effort-controller-consistent':
        assert after == [], 'the controller changed after the program ran again: %s' % after
        return
    assert [(s, by) for _, s, by in after] == [('active', 'controller_stopper'), ('inactive', 'switch_controller')], \
        after
    held = after[1][0] - after[0][0]
    print('UR, watchdog kept running: the stopper\'s activation undone after %.1f ms' % (1e3 * held))
    assert held <= TIMEOUT + 0.05, held
    assert 'became active' in guard.read_log()

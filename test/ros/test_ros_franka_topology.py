"""robot:=franka next to franka.launch.py's topology: the node reads the broadcaster, not the 30 Hz relay.

franka.launch.py (franka_ros2, jazzy) remaps joint_state_broadcaster's
topic to ``franka/joint_states`` (1 kHz, the controller_manager's rate) and
runs a joint_state_publisher that republishes it on ``joint_states`` at
``joint_state_rate`` (30 Hz by default), stamped with its own now() and
repeating its last values after the broadcaster stops. Stood in here, in a
namespace of this test's own: test/ros/joint_state_publisher.py at 1 kHz on
``franka/joint_states`` (the broadcaster) and test/ros/joint_state_relay.py
at 30 Hz on ``joint_states`` (the relay). dynamics_node is the one
gravity_compensation.launch.py describes for ``robot:=franka`` (evaluated
against the launch stand-ins and run as `ros2 launch` would run it, pushed
into the namespace), on the Panda URDF with its joint names.

With the profile's topic the commands come at the broadcaster's rate and the
watchdog's stop (joint_state_timeout 0.1 s, on_timeout zero: one zero
command, then none) comes 0.1 s after the broadcaster falls silent. With
the relay's topic (``joint_states_topic:=joint_states``, what the profile
subscribed to before) the commands come at 30 Hz, never stop while the relay
repeats itself, and the node warns that its joint states come at less than
half of the profile's rate.
"""
import signal
import sys
import time

import numpy as np
import pytest
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray

import launch_standins as L
from conftest import BEST_EFFORT, PANDA, ROOT, wait_for

# Counts a 1 kHz stream in this process on a 2-core machine: one rerun, every assertion each time.
pytestmark = pytest.mark.flaky(reruns=1)

ARM = ['panda_joint%d' % k for k in range(1, 8)]
Q = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]
BROADCASTER_HZ = 1000.0       # franka_ros2's controller_manager update_rate
RELAY_HZ = 30.0               # franka.launch.py's joint_state_rate default
WINDOW = 2.0                  # [s] over which the command rate is counted
TIMEOUT = 0.1                 # [s] joint_state_timeout (config/gravity_compensation.yaml)
SLACK = 0.1                   # [s] DDS delivery and scheduling on a busy 2-core machine
DEEP = QoSProfile(depth=5000, reliability=ReliabilityPolicy.RELIABLE)


@pytest.fixture
def standins(monkeypatch):
    L.install(monkeypatch)


def start_topology(ros, start_node, tmp_path, joint_states_topic):
    """The broadcaster, the relay and dynamics_node of robot:=franka in a fresh namespace; (ns, broadcaster,
    node process, commands, broadcaster's messages as this process receives them)."""
    ns = '/franka_%d' % (time.monotonic_ns() % 10**9)
    script = ROOT / 'test' / 'ros'
    broadcaster = start_node.command(
        [sys.executable, str(script / 'joint_state_publisher.py'), '--topic', ns + '/franka/joint_states',
         '--tag', 'jsb', '--names', ','.join(ARM), '--q=' + ','.join(map(repr, Q)), '--rate', str(BROADCASTER_HZ)],
        'broadcaster_%d' % time.monotonic_ns())
    start_node.command(
        [sys.executable, str(script / 'joint_state_relay.py'), '--source', ns + '/franka/joint_states',
         '--topic', ns + '/joint_states', '--names', ','.join(ARM), '--rate', str(RELAY_HZ)],
        'relay_%d' % time.monotonic_ns())
    arguments = {'robot': 'franka', 'urdf': str(PANDA), 'joints': ','.join(ARM), 'own_controller': 'false'}
    if joint_states_topic:
        arguments['joint_states_topic'] = joint_states_topic
    shares = {'robot_dynamics': str(ROOT)}
    _, nodes, context = L.evaluate(ROOT / 'launch' / 'gravity_compensation.launch.py', arguments, shares)
    node = next(n for n in nodes if n.kwargs['executable'] == 'dynamics_node')
    cmd = L.node_command(node, context, L.console_scripts(ROOT / 'setup.py'), tmp_path) + ['-r', '__ns:=' + ns]
    proc = start_node.command(cmd, 'dynamics_node_%d' % time.monotonic_ns())
    commands = ros.subscribe(Float64MultiArray, ns + '/effort_controller/commands', DEEP)
    heard = ros.subscribe(JointState, ns + '/franka/joint_states', BEST_EFFORT)
    assert commands.wait(count=50, timeout=60) is not None, 'no commands:\n' + proc.read_log()
    return ns, broadcaster, proc, commands, heard


def command_rate(commands):
    """Commands per second [Hz] that reached this process over WINDOW s from now."""
    start = len(commands)
    t0 = time.monotonic()
    time.sleep(WINDOW)
    return (len(commands) - start) / (time.monotonic() - t0)


def silence(broadcaster, commands, heard):
    """Silence the broadcaster (alive, no message); (the last command's arrival after the broadcaster's last
    message reached this process [s] or None if commands still come 1 s later, commands in that second)."""
    broadcaster.send_signal(signal.SIGUSR2)
    t_stop = time.monotonic()
    time.sleep(1.0)
    with commands._lock:
        after = [t for t in commands.times if t > t_stop]
    with heard._lock:
        t_last = max(heard.times)
    if after and after[-1] > time.monotonic() - 0.5:
        return None, len(after)
    return (max(after) if after else t_stop) - t_last, len(after)


def test_franka_profile_reads_the_broadcaster_at_its_rate_and_stops_with_it(ros, start_node, tmp_path, standins):
    ns, broadcaster, proc, commands, heard = start_topology(ros, start_node, tmp_path, '')
    ros.wait_for_publisher(ns + '/effort_controller/commands')
    rate = command_rate(commands)
    late, n_after = silence(broadcaster, commands, heard)
    print('\nrobot:=franka: commands at %.0f Hz (broadcaster %g Hz, relay %g Hz); last command %s after the '
          "broadcaster's last message" % (rate, BROADCASTER_HZ, RELAY_HZ,
                                          'never (still coming)' if late is None else '%.1f ms' % (late * 1e3)))
    assert rate > 0.8 * BROADCASTER_HZ, 'commands at %.0f Hz: the node does not read the broadcaster:\n%s' % (
        rate, proc.read_log())
    assert late is not None, ('commands still came 1 s after the broadcaster fell silent (%d): the node reads the '
                              'relay' % n_after)
    assert TIMEOUT - 0.02 <= late <= TIMEOUT + SLACK, (
        "the watchdog's stop came %.1f ms after the broadcaster's last message; expected joint_state_timeout "
        '(%.0f ms)' % (late * 1e3, TIMEOUT * 1e3))
    log = proc.read_log()
    assert 'no joint_states for' in log, log
    assert 'less than half' not in log, log


def test_the_relay_gives_30_hz_hides_a_silent_broadcaster_and_is_warned_about(ros, start_node, tmp_path, standins):
    """What the franka profile did before it named the broadcaster's topic, and what the node now says of it."""
    diagnostics = ros.subscribe(DiagnosticArray, '/diagnostics')
    ns, broadcaster, proc, commands, heard = start_topology(ros, start_node, tmp_path, 'joint_states')
    rate = command_rate(commands)
    late, n_after = silence(broadcaster, commands, heard)
    print('\nrobot:=franka on the relay: commands at %.1f Hz; %d commands in the second after the broadcaster '
          'fell silent' % (rate, n_after))
    assert abs(rate - RELAY_HZ) < 0.3 * RELAY_HZ, 'commands at %.1f Hz, expected the relay\'s %g Hz' % (rate, RELAY_HZ)
    assert late is None and n_after >= 0.5 * RELAY_HZ, 'the relay kept publishing: the node should not have stopped'
    assert wait_for(lambda: 'less than half' in proc.read_log(), timeout=5), (
        'no warning about the slow joint states:\n' + proc.read_log())
    log = proc.read_log()
    assert log.count('less than half') == 1, 'the warning must come once:\n' + log
    assert 'franka/joint_states at 30 Hz' in log

    def slow(array):
        for status in array.status:
            values = {kv.key: kv.value for kv in status.values}
            if status.name.startswith(ns.lstrip('/') + '/dynamics_node'):
                return values.get('joint_state_rate_low') == 'True' and status.level == DiagnosticStatus.WARN
        return False
    assert diagnostics.wait_where(slow, timeout=5) is not None, 'the diagnostics do not report the slow joint states'

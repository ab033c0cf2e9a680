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

Everything is measured by the processes that do it, not by this one's
reception (a 1 kHz stream into the test process lagged by up to a second on
a loaded CI machine): the command rate from the node's own count
(``commands_out`` of its /diagnostics, between two of its stamped reports),
the stop from the node's log line (``no joint_states for ...``, stamped with
the wall clock) after the broadcaster's last message (its stamp, which the
broadcaster prints when it falls silent).
"""
import re
import signal
import sys
import time

import pytest
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus

import launch_standins as L
from conftest import PANDA, ROOT, wait_for

# Times a 1 kHz stream on a 2-core machine: one rerun, every assertion each time.
pytestmark = pytest.mark.flaky(reruns=1)

ARM = ['panda_joint%d' % k for k in range(1, 8)]
Q = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]
BROADCASTER_HZ = 1000.0       # franka_ros2's controller_manager update_rate
RELAY_HZ = 30.0               # franka.launch.py's joint_state_rate default
TIMEOUT = 0.1                 # [s] joint_state_timeout (config/gravity_compensation.yaml)
SLACK = 0.1                   # [s] scheduling on a busy 2-core machine
ZERO_LOG = re.compile(r'\[ERROR\] \[(\d+\.\d+)\] \[[^\]]*\]: no joint_states for')


@pytest.fixture
def standins(monkeypatch):
    L.install(monkeypatch)


class Topology:
    """The broadcaster, the relay and dynamics_node of robot:=franka in a fresh namespace, and the node's
    diagnostics."""

    def __init__(self, ros, start_node, tmp_path, joint_states_topic):
        self.ns = '/franka_%d' % (time.monotonic_ns() % 10**9)
        script = ROOT / 'test' / 'ros'
        self.diagnostics = ros.subscribe(DiagnosticArray, '/diagnostics')
        self.broadcaster = start_node.command(
            [sys.executable, str(script / 'joint_state_publisher.py'), '--topic', self.ns + '/franka/joint_states',
             '--tag', 'jsb', '--names', ','.join(ARM), '--q=' + ','.join(map(repr, Q)),
             '--rate', str(BROADCASTER_HZ)], 'broadcaster_%d' % time.monotonic_ns())
        start_node.command(
            [sys.executable, str(script / 'joint_state_relay.py'), '--source', self.ns + '/franka/joint_states',
             '--topic', self.ns + '/joint_states', '--names', ','.join(ARM), '--rate', str(RELAY_HZ)],
            'relay_%d' % time.monotonic_ns())
        arguments = {'robot': 'franka', 'urdf': str(PANDA), 'joints': ','.join(ARM), 'own_controller': 'false',
                     'command_watchdog': 'false'}
        if joint_states_topic:
            arguments['joint_states_topic'] = joint_states_topic
        _, nodes, context = L.evaluate(ROOT / 'launch' / 'gravity_compensation.launch.py', arguments,
                                       {'robot_dynamics': str(ROOT)})
        node = next(n for n in nodes if n.kwargs['executable'] == 'dynamics_node')
        cmd = L.node_command(node, context, L.console_scripts(ROOT / 'setup.py'), tmp_path)
        self.node = start_node.command(cmd + ['-r', '__ns:=' + self.ns], 'dynamics_node_%d' % time.monotonic_ns())
        assert wait_for(lambda: self.count() >= 50, 60), 'no commands:\n' + self.node.read_log()

    def reports(self):
        """The node's diagnostics so far: [(stamp [s], level, values)]."""
        name = self.ns.lstrip('/') + '/dynamics_node'
        return [(a.header.stamp.sec + 1e-9 * a.header.stamp.nanosec, s.level, {kv.key: kv.value for kv in s.values})
                for a in list(self.diagnostics.messages) for s in a.status if s.name.startswith(name)]

    def count(self):
        """The node's commands_out in its latest report (0 before any)."""
        reports = self.reports()
        return int(reports[-1][2]['commands_out']) if reports else 0

    def command_rate(self, periods=2):
        """Commands per second [Hz] by the node's own count over ``periods`` diagnostics periods from now."""
        first = len(self.reports())
        assert wait_for(lambda: len(self.reports()) >= first + periods + 1, 10 + 2 * periods), 'no diagnostics'
        (t0, _, a), (t1, _, b) = self.reports()[first], self.reports()[first + periods]
        return (int(b['commands_out']) - int(a['commands_out'])) / (t1 - t0)

    def silence(self):
        """Silence the broadcaster (alive, no message); (the node's 'no joint_states' log time after the
        broadcaster's last message [s], or None if there is none; the commands the node sent between its first
        two diagnostics reports that come more than 1 s after the silence)."""
        self.broadcaster.send_signal(signal.SIGUSR2)
        assert wait_for(lambda: 'silent after message' in self.broadcaster.read_log(), 5), 'broadcaster not silent'
        time.sleep(1.0)
        first = len(self.reports())
        assert wait_for(lambda: len(self.reports()) >= first + 2, 10), 'no diagnostics'
        a, b = self.reports()[first:first + 2]
        last = float(re.search(r'stamped (\d+\.\d+) s', self.broadcaster.read_log()).group(1))
        stops = [float(t) for t in ZERO_LOG.findall(self.node.read_log()) if float(t) > last]
        return (stops[0] - last if stops else None), int(b[2]['commands_out']) - int(a[2]['commands_out'])


def test_franka_profile_reads_the_broadcaster_at_its_rate_and_stops_with_it(ros, start_node, tmp_path, standins):
    topology = Topology(ros, start_node, tmp_path, '')
    rate = topology.command_rate()
    late, after = topology.silence()
    print('\nrobot:=franka: commands at %.0f Hz by the node\'s count (broadcaster %g Hz, relay %g Hz); its '
          "watchdog's stop %s after the broadcaster's last message; %d commands after it"
          % (rate, BROADCASTER_HZ, RELAY_HZ, 'never' if late is None else '%.1f ms' % (late * 1e3), after))
    log = topology.node.read_log()
    assert rate > 0.8 * BROADCASTER_HZ, 'commands at %.0f Hz: the node does not read the broadcaster:\n%s' % (
        rate, log)
    assert late is not None, 'no watchdog stop after the broadcaster fell silent: the node reads the relay\n' + log
    assert TIMEOUT - 0.01 <= late <= TIMEOUT + SLACK, (
        "the watchdog's stop came %.1f ms after the broadcaster's last message; expected joint_state_timeout "
        '(%.0f ms)' % (late * 1e3, TIMEOUT * 1e3))
    assert after == 0, '%d commands after the stop' % after
    assert 'less than half' not in log, log


def test_the_relay_gives_30_hz_hides_a_silent_broadcaster_and_is_warned_about(ros, start_node, tmp_path, standins):
    """What the franka profile did before it named the broadcaster's topic, and what the node now says of it."""
    topology = Topology(ros, start_node, tmp_path, 'joint_states')
    rate = topology.command_rate()
    late, after = topology.silence()
    print('\nrobot:=franka on the relay: commands at %.1f Hz by the node\'s count; %d commands in a '
          'diagnostics period more than 1 s after the broadcaster fell silent' % (rate, after))
    assert abs(rate - RELAY_HZ) < 0.3 * RELAY_HZ, 'commands at %.1f Hz, expected the relay\'s %g Hz' % (rate, RELAY_HZ)
    assert late is None and after >= 0.5 * RELAY_HZ, 'the relay kept publishing: the node should not have stopped'
    log = topology.node.read_log()
    assert log.count('less than half') == 1, 'the warning must come once:\n' + log
    assert 'franka/joint_states at 30 Hz' in log
    low = [r for r in topology.reports() if r[2].get('joint_state_rate_low') == 'True']
    assert low and all(level == DiagnosticStatus.WARN for _, level, _ in low), (
        'the diagnostics do not report the slow joint states')

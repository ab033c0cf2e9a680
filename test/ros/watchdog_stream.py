"""dynamics_node's stale-state watchdog under a 1 kHz joint-state stream that goes bad without a break: one run of
the scenario (:func:`run`), what the node's log says of it, and its timing figures (:func:`figures`), for
test/ros/test_ros_watchdog_timing.py (the watchdog's decisions) and bench/watchdog_timing.py (its timing).

Real DDS, separate processes: dynamics_node (:data:`PARAMS`: gravity_coriolis on the bundled Panda, command on,
``joint_state_timeout`` 0.1 s, so a watchdog period of 10 ms, ``on_timeout: hold``, diagnostics every 0.5 s; in
the executor ``ROBOT_DYNAMICS_EXECUTOR`` names), a 1 kHz joint-state publisher (joint_state_publisher.py,
:func:`publisher_argv`) and the caller's process, which listens (:class:`Listener`):

1. usable joint states for ``stream_seconds`` (each gives a command and torques): the node's diagnostics per
   period say how often the watchdog ran and the longest wall time between two of its calls;
2. SIGUSR1: the publisher's states come on at 1 kHz with NaN positions (read, rejected: no sign of life for the
   watchdog). The node logs the timeout and how long it went without a usable state, then, ``on_timeout: hold``,
   sends its last command again at each call. The listener takes the node's commands and compensation torques
   (the input's header: its stamp and ``frame_id`` ``'<tag>:<message number>'``) from just before the switch
   until the timeout is logged, the held command has come and ``hold_seconds`` more have passed.

Log lines (each with the wall time rclpy's logger stamps it with):

- ``[ERROR] [<t>] [...]: no joint_states for <silence> s (joint_state_timeout <timeout> s; ...``: a timeout
  (robot_dynamics/ros/dynamics_watchdog.py);
- ``[INFO] [<t>] [...]: joint_states resumed: publishing again``: the next torque after one;
- the publisher's ``NaN from message <k>, wall time <t> s``: the switch.
"""
import re
import signal
import sys
import threading
import time

import numpy as np

from node_process import PACKAGE_ROOT, wait_until
from peer import Peer

PANDA = PACKAGE_ROOT / 'urdf' / 'panda_arm.urdf'
PUBLISHER = PACKAGE_ROOT / 'test' / 'ros' / 'joint_state_publisher.py'
Q = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]
RATE = 1000.0              # [Hz] of the joint-state stream
TIMEOUT = 0.1              # joint_state_timeout [s]
PERIOD = TIMEOUT / 10.0    # the watchdog's period [s]
DIAG_PERIOD = 0.5          # [s]
TAG = 'p'                  # the publisher's frame_id prefix
PARAMS = {'urdf_path': str(PANDA), 'mode': 'gravity_coriolis', 'publish_command': True,
          'joint_state_timeout': TIMEOUT, 'on_timeout': 'hold', 'diagnostics_period': DIAG_PERIOD}
#: [s] the longest wait for anything of the scenario to happen (a loaded 2-core machine)
PATIENCE = 60.0

TIMEOUT_LINE = re.compile(r'\[ERROR\] \[([0-9.]+)\] \[[^\]\n]*\]: no joint_states for ([0-9.]+) s '
                          r'\(joint_state_timeout ([0-9.]+) s')
RESUMED_LINE = re.compile(r'\[INFO\] \[([0-9.]+)\] \[[^\]\n]*\]: joint_states resumed: publishing again')
SWITCH_LINE = re.compile(r'NaN from message ([0-9]+), wall time ([0-9.]+) s')


def publisher_argv(topic, names):
    """The command line of the 1 kHz publisher of joints ``names`` at :data:`Q` on ``topic``."""
    return [sys.executable, str(PUBLISHER), '--topic', topic, '--tag', TAG, '--names', ','.join(names),
            '--q=' + ','.join(repr(x) for x in Q), '--rate', str(RATE)]


def lines(log):
    """The complete lines of ``log`` (a line being written is left out)."""
    return [line for line in log.splitlines(keepends=True) if line.endswith('\n')]


def events(log):
    """The watchdog's timeouts and resumptions in dynamics_node's ``log``, in order: [('timeout', wall time [s],
    silence [s], timeout [s])] and [('resumed', wall time [s], None, None)]."""
    found = []
    for line in lines(log):
        timeout, resumed = TIMEOUT_LINE.search(line), RESUMED_LINE.search(line)
        if timeout:
            found.append(('timeout', float(timeout.group(1)), float(timeout.group(2)), float(timeout.group(3))))
        elif resumed:
            found.append(('resumed', float(resumed.group(1)), None, None))
    return found


def switch(publisher_log):
    """(number of the first NaN message, wall time [s] of the switch) from the publisher's log, or None."""
    found = SWITCH_LINE.search(publisher_log)
    return (int(found.group(1)), float(found.group(2))) if found else None


def message_number(frame_id):
    """The publisher's number of the joint state whose header is ``frame_id`` ('<tag>:<k>')."""
    tag, _, k = frame_id.partition(':')
    assert tag == TAG and k.isdigit(), 'frame_id %r is not the publisher\'s %r:<k>' % (frame_id, TAG)
    return int(k)


class Heard:
    """What one topic brought, in arrival order: ``times`` (time.monotonic()) and ``messages``, thread-safe."""

    def __init__(self, convert=None):
        self.convert = convert or (lambda msg: msg)
        self.times, self.messages = [], []
        self._lock = threading.Lock()

    def __call__(self, msg):
        value = self.convert(msg)
        if value is None:
            return
        with self._lock:
            self.times.append(time.monotonic())
            self.messages.append(value)

    def snapshot(self):
        """(times, messages) so far, copies."""
        with self._lock:
            return list(self.times), list(self.messages)

    def __len__(self):
        with self._lock:
            return len(self.messages)


def diagnostics_of(fqn):
    """A converter for :class:`Heard` of /diagnostics: the values of ``fqn``'s status as a dict (with
    ``_stamp``, the array's stamp [s] on the node's clock: when its diagnostics timer ran), else None."""
    name = '%s: dynamics' % fqn.lstrip('/')

    def values(array):
        for status in array.status:
            if status.name == name:
                found = {kv.key: kv.value for kv in status.values}
                found['_stamp'] = array.header.stamp.sec + 1e-9 * array.header.stamp.nanosec
                return found
        return None
    return values


class Listener(Peer):
    """The caller's listening node (:class:`peer.Peer`, ``name``): it takes 1 kHz of commands and torques."""

    def hear(self, msg_type, topic, convert=None, depth=100):
        """A :class:`Heard` of ``topic`` (reliable, the last ``depth`` kept)."""
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        heard = Heard(convert)
        heard.subscription = self.node.create_subscription(
            msg_type, topic, heard, QoSProfile(depth=depth, reliability=ReliabilityPolicy.RELIABLE))
        return heard

    def forget(self, *heard):
        """Destroy the subscriptions of ``heard`` (what they brought stays)."""
        for h in heard:
            self.node.destroy_subscription(h.subscription)


class Run:
    """What one run of the scenario gave (see the module doc): ``stream`` and ``after`` (the diagnostics values of
    the periods of phase 1 and from the switch on), ``cpu`` (the node's CPU share of one core in phase 1),
    ``commands`` ([(time.monotonic() of arrival, data tuple)] from just before the switch), ``t_switch``
    (time.monotonic() of the signal), ``log`` and ``publisher_log`` (read at the end); and the :class:`Heard`
    ``torques`` (the compensation torques, sensor_msgs/JointState, from just before the switch) and
    ``diagnostics``, still subscribed (:meth:`Listener.forget` them)."""

    def __init__(self, **fields):
        self.__dict__.update(fields)

    @property
    def events(self):
        return events(self.log)

    @property
    def switch(self):
        return switch(self.publisher_log)


def _held_since_timeout(node, commands, holds):
    """True once ``node`` has logged a timeout with no resumption after it and the last ``holds`` commands
    ``commands`` (a :class:`Heard`) brought are one and the same."""
    said = events(node.read_log())
    if not said or said[-1][0] != 'timeout':
        return False
    _, data = commands.snapshot()
    return len(data) >= holds and len(set(data[-holds:])) == 1


def run(listener, node, publisher, *, stream_seconds, hold_seconds, holds=3, min_rate=1.0):
    """One run of the scenario with the started ``node`` (dynamics_node with :data:`PARAMS`) and ``publisher``
    (:func:`publisher_argv`; node_process.NodeProcess both), heard by ``listener`` (a :class:`Listener`): phase 1
    for ``stream_seconds`` [s] from the first diagnostics period with ``input_rate_hz`` >= ``min_rate`` [Hz],
    then the switch, and ``hold_seconds`` [s] after the node has logged a timeout with no resumption after it
    and ``holds`` equal commands in a row have come (again if its log said more meanwhile). Returns a
    :class:`Run`.

    Raises node_process.NodeTimeout if a step does not come within :data:`PATIENCE`, NodeExited if a process
    ended."""
    from diagnostic_msgs.msg import DiagnosticArray
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray
    procs = [node, publisher]
    diag = listener.hear(DiagnosticArray, '/diagnostics', diagnostics_of(node.fqn))
    wait_until(lambda: any(float(v['input_rate_hz']) >= min_rate for v in diag.snapshot()[1]), PATIENCE,
               'a diagnostics period with joint states at >= %g Hz' % min_rate, processes=procs)
    n0 = len(diag)
    cpu0, t0 = node.cpu_seconds(), time.monotonic()
    time.sleep(stream_seconds)
    cpu = (node.cpu_seconds() - cpu0) / (time.monotonic() - t0)
    stream = diag.snapshot()[1][n0:]

    commands = listener.hear(Float64MultiArray, node.topic('effort_controller/commands'), lambda m: tuple(m.data))
    torques = listener.hear(JointState, node.topic('~/compensation_torque'))
    wait_until(lambda: len(commands) >= 100 and len(torques) >= 1, PATIENCE,
               'the commands and torques of the stream', processes=procs)
    n1 = len(diag)
    t_switch = time.monotonic()
    publisher.send_signal(signal.SIGUSR1)
    # Usable states the node read late (a loaded machine) may end a timeout that came before them: the run ends
    # when its log said nothing new for hold_seconds after the hold began.
    deadline = time.monotonic() + PATIENCE
    while True:
        wait_until(lambda: _held_since_timeout(node, commands, holds), deadline - time.monotonic(),
                   'the timeout after the switch and %d equal commands in a row' % holds, processes=procs)
        said = events(node.read_log())
        time.sleep(hold_seconds)
        if events(node.read_log()) == said:
            break
    times, data = commands.snapshot()
    listener.forget(commands)
    return Run(stream=stream, after=diag.snapshot()[1][n1:], cpu=cpu, commands=list(zip(times, data)),
               torques=torques, t_switch=t_switch, log=node.read_log(), publisher_log=publisher.read_log(),
               diagnostics=diag)


def joint_names():
    """The Panda's joints, in the order of the node's command (its model's)."""
    import robot_dynamics as rd
    return list(rd.load_urdf(str(PANDA)).joint_names)


def effort_in(msg, names):
    """The efforts of the JointState ``msg`` in the order of ``names`` (a tuple)."""
    where = {name: k for k, name in enumerate(msg.name)}
    return tuple(msg.effort[where[name]] for name in names)


def hold_times(result):
    """Arrival times (time.monotonic()) of the held command's repetitions: the commands from the second
    occurrence of the last command on (the first is the stream's own)."""
    held = result.commands[-1][1]
    first = next(k for k, (_, data) in enumerate(result.commands) if data == held)
    return np.array([t for t, _ in result.commands[first + 1:]])


def figures(result):
    """The timing figures of a :class:`Run` (a dict, times in ms): what bench/watchdog_timing.py reports. The
    watchdog's calls and longest intervals are those of the periods streamed at more than 80 % of :data:`RATE`;
    the diagnostics intervals are between the stamps of phase 1's reports (when the node's timer ran); the hold's
    times are the arrivals of the held command here."""
    streaming = [v for v in result.stream if float(v['input_rate_hz']) > 0.8 * RATE]
    stamps = np.diff([v['_stamp'] for v in result.stream])
    said = result.events
    timeouts = [e for e in said if e[0] == 'timeout']
    final = timeouts[-1] if said and said[-1][0] == 'timeout' else None
    switched = result.switch
    held = hold_times(result)
    intervals = np.diff(held)

    def ms(x, digits=1):
        return None if x is None else round(float(x) * 1e3, digits)
    return {
        'stream_input_rate_hz': [round(float(v['input_rate_hz'])) for v in streaming],
        'stream_node_cpu_share': round(result.cpu, 3),
        'stream_diagnostics_interval_ms': [ms(x) for x in stamps],
        'stream_watchdog_calls_per_period': [int(v['watchdog_calls_last_period']) for v in streaming],
        'stream_watchdog_interval_max_ms': [float(v['watchdog_interval_max_ms']) for v in streaming],
        'nan_stream_input_rate_hz': [round(float(v['input_rate_hz'])) for v in result.after[1:]],
        'nan_stream_watchdog_interval_max_ms': [float(v['watchdog_interval_max_ms']) for v in result.after[1:]],
        'timeouts_while_usable_states_came': len(timeouts) - (final is not None),      # each one resumed
        'timeout_noticed_after_ms': ms(final[2]) if final else None,
        'timeout_logged_after_switch_ms': ms(final[1] - switched[1]) if final and switched else None,
        'first_hold_command_after_switch_ms': ms(held[0] - result.t_switch) if held.size else None,
        'hold_commands': int(held.size),
        'hold_commands_per_s': round((held.size - 1) / (held[-1] - held[0]), 1) if held.size > 1 else None,
        'hold_interval_median_ms': ms(np.median(intervals), 2) if intervals.size else None,
        'hold_interval_p99_ms': ms(np.percentile(intervals, 99), 2) if intervals.size else None,
        'hold_interval_max_ms': ms(intervals.max(), 2) if intervals.size else None,
    }

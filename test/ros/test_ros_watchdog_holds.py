"""command_watchdog holds the line: while no command comes, the effort controller stays inactive.

Against test/ros/controller_manager_standin.py, which serves the Jazzy ``switch_controller`` and publishes
``~/activity`` as the Jazzy controller_manager does, and records with CLOCK_MONOTONIC (the same clock in
every process) every command, request and state change. The times asserted are the stand-in's: the
decision and its effect are where the manager is, not where this test process happens to hear of them.

- The manager refuses the deactivation twice (``ok = false``, as Jazzy's does when the hardware rejects the
  switch), then accepts: the controller is inactive within ``command_timeout`` + 0.5 s of the last command.
- The manager keeps refusing: the watchdog escalates (FATAL in its log, ERROR on /diagnostics) and keeps
  trying until it succeeds, then the status drops to WARN.
- A manager without ``~/activity`` (before ros2_control 4.28.0): the deactivation still goes out, and the
  watchdog says that an activation would go unseen.
- The manager activates the controller again by itself while no command comes, ten times (as UR's
  controller_stopper does when the robot program runs again): each time it is inactive again within
  ``command_timeout`` + 50 ms of the activation.
"""
import statistics
import sys
import time

from std_msgs.msg import Float64MultiArray

import watchdog_log
from conftest import ROOT, wait_for
from controller_manager_standin import RecordReader
from probes import Diagnostics

TIMEOUT = 0.1                 # command_timeout [s]
CONTROLLER = 'effort_controller'
TOPIC = 'effort_controller/commands'
STANDIN = str(ROOT / 'test' / 'ros' / 'controller_manager_standin.py')
_count = iter(range(1000))


def start_manager(start_node, tmp_path, ns, *extra):
    """The stand-in manager in ``ns`` with CONTROLLER active and ``extra`` options; (process, RecordReader)."""
    record = tmp_path / ('manager_%d.jsonl' % next(_count))
    proc = start_node.command([sys.executable, STANDIN, '--record', record, '--controller', CONTROLLER,
                               '--command-topic', TOPIC, *extra, '--ros-args', '-r', '__ns:=' + ns,
                               '-r', '__node:=controller_manager'], 'controller_manager', ns)
    return proc, RecordReader(record)


def commands_stop(ros, start_node, tmp_path, ns, *extra, seconds=0.5, probe=None):
    """Stand-in, watchdog and a command stream from this process that stops after ``seconds``: (manager, record,
    watchdog, time.monotonic() of the last command the manager received, of its publication here, what ``probe``
    (a function of the namespace, called first) gave); ``watchdog.namespace`` is the namespace.

    A stream the watchdog saw with a gap over TIMEOUT (a loaded 2-core machine) made it deactivate the controller
    rightly, which voids the exact deactivations, refusals and times after the last command: the stream is run
    again from a fresh stand-in and watchdog (namespace ``ns_<attempt>``), at most watchdog_log.ATTEMPTS times."""
    for attempt in range(watchdog_log.ATTEMPTS):
        where = ns if attempt == 0 else '%s_%d' % (ns, attempt)
        probed = probe(where) if probe else None
        manager, record = start_manager(start_node, tmp_path, where, *extra)
        guard = start_node('command_watchdog', {'command_timeout': TIMEOUT}, name='command_watchdog', ns=where)
        topic = where + '/' + TOPIC
        ros.wait_for_subscriber(topic, process=guard)
        ros.wait_for_service(where + '/controller_manager/switch_controller', process=manager)
        pub = ros.publisher(Float64MultiArray, topic)
        assert wait_for(lambda: ros.node.count_subscribers(topic) >= 2, 10.0)
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            sent = time.monotonic()                             # before the publication: before any receipt
            pub.publish(Float64MultiArray(data=[1.0, -2.0]))
            time.sleep(0.002)
        assert wait_for(lambda: (record.update(), record.of('command'))[1], 5.0), manager.read_log()
        time.sleep(0.3)
        assert wait_for(lambda: watchdog_log.tripped(guard.read_log()), 5.0), guard.log_tail(20)
        if not watchdog_log.voided(len(states(record, 'inactive')), guard.read_log(), topic, TIMEOUT):
            record.update()
            return manager, record, guard, record.of('command')[-1]['t'], sent, probed
        guard.stop()
        manager.stop()
    raise AssertionError('in each of %d streams the watchdog saw a gap over %.3f s (a deactivation it was right to '
                         'decide while the commands flowed)' % (watchdog_log.ATTEMPTS, TIMEOUT))


def states(record, state, by=None):
    """Times of the stand-in's changes of CONTROLLER to ``state`` (made by ``by``, if given)."""
    record.update()
    return [e['t'] for e in record.of('state')
            if e['controller'] == CONTROLLER and e['state'] == state and (by is None or e['by'] == by)]


def test_a_refused_deactivation_is_retried_until_the_manager_switches(ros, start_node, tmp_path):
    ns = '/wr%d_%d' % (time.monotonic_ns() % 10**9, next(_count))
    manager, record, guard, last, sent, _ = commands_stop(ros, start_node, tmp_path, ns, '--refuse', '2')
    off = wait_for(lambda: states(record, 'inactive'), 5.0, 0.01)
    assert off, 'the controller is still active:\n' + guard.log_tail(20)
    switches = record.of('switch')
    print('refused twice: requests at +%s ms after the last command, inactive at +%.1f ms'
          % (', '.join('%.1f' % (1e3 * (s['t'] - last)) for s in switches), 1e3 * (off[0] - last)))
    assert [s['ok'] for s in switches[:3]] == [False, False, True], switches
    assert all(s['deactivate'] == [CONTROLLER] and s['strictness'] == 1 for s in switches[:3])
    assert off[0] - last <= TIMEOUT + 0.5, 'inactive %.3f s after the last command' % (off[0] - last)
    assert switches[0]['t'] - sent >= TIMEOUT - 0.005          # it waited for the timeout first
    assert wait_for(lambda: CONTROLLER + ' deactivated by' in guard.read_log(), 5.0), guard.log_tail(20)
    log = guard.read_log()
    assert log.count('NOT deactivated by') == 2 and 'prepare command mode switch was rejected' in log
    assert 'trying again in 0.050 s' in log and 'trying again in 0.100 s' in log
    assert 'could NOT be deactivated' not in log                # two failures do not escalate
    assert len(states(record, 'inactive')) == 1


def test_the_watchdog_escalates_while_the_manager_refuses_and_goes_on_trying(ros, start_node, tmp_path):
    ns = '/we%d_%d' % (time.monotonic_ns() % 10**9, next(_count))
    manager, record, guard, last, _, diag = commands_stop(
        ros, start_node, tmp_path, ns, '--refuse', '4',
        probe=lambda where: Diagnostics(ros, where.lstrip('/') + '/command_watchdog', CONTROLLER))
    off = wait_for(lambda: states(record, 'inactive'), 5.0, 0.01)
    assert off, 'the controller is still active:\n' + guard.log_tail(20)
    assert [s['ok'] for s in record.of('switch')[:5]] == [False] * 4 + [True]
    # 50 + 100 + 200 + 400 ms of backoff after the timeout, plus the round trips
    assert TIMEOUT + 0.75 <= off[0] - last <= TIMEOUT + 1.5, off[0] - last
    assert wait_for(lambda: CONTROLLER + ' deactivated by' in guard.read_log(), 5.0), guard.log_tail(20)
    log = guard.read_log()
    assert log.count('could NOT be deactivated: 3 failures in a row') == 1, log
    assert '[FATAL]' in log
    levels = [v['_level'] for _, v in diag.history]
    assert b'\x02' in levels, [(v['_level'], v['_message']) for _, v in diag.history]
    assert diag.wait(lambda v: v['_level'] == b'\x01' and 'inactive' in v['_message'], 5.0), diag.get()
    assert diag.get()['refused_or_failed'] == '4' and diag.get()['deactivation_requests'] == '5'


def test_a_controller_activated_again_while_no_command_comes_is_deactivated_again(ros, start_node, tmp_path):
    ns = '/wa%d_%d' % (time.monotonic_ns() % 10**9, next(_count))
    manager, record, guard, last, sent, _ = commands_stop(ros, start_node, tmp_path, ns, '--reactivate', '10',
                                                          '--reactivate-after', '0.3')
    assert wait_for(lambda: len(states(record, 'active', 'standin')) == 10 and
                    len(states(record, 'inactive')) == 11, 20.0, 0.05), guard.log_tail(30)
    time.sleep(0.5)
    record.update()
    on = states(record, 'active', 'standin')
    off = states(record, 'inactive')
    assert len(on) == 10 and len(off) == 11 and record.of('state')[-1]['state'] == 'inactive'
    requests = [s['t'] for s in record.of('switch') if s['deactivate'] == [CONTROLLER]]
    held = [next(t for t in off if t > t_on) - t_on for t_on in on]
    asked = [next(t for t in requests if t > t_on) - t_on for t_on in on]
    print('activated again 10 times: inactive again after %s ms (median %.1f); requests received after %s ms'
          % (', '.join('%.1f' % (1e3 * h) for h in held), 1e3 * statistics.median(held),
             ', '.join('%.1f' % (1e3 * a) for a in asked)))
    assert max(held) <= TIMEOUT + 0.05, held
    assert off[0] - sent >= TIMEOUT - 0.005                     # the first: the timeout's
    log = guard.read_log()
    assert log.count('became active at %s/controller_manager/activity while no command comes'
                     % guard.namespace) == 10, log
    assert 'The manager does not say who activated it' in log
    assert 'activation number 10 while the commands are absent' in log


def test_a_manager_without_activity_still_gets_the_deactivation_and_the_log_says_what_is_missing(
        ros, start_node, tmp_path):
    ns = '/wn%d_%d' % (time.monotonic_ns() % 10**9, next(_count))
    manager, record, guard, last, sent, _ = commands_stop(ros, start_node, tmp_path, ns, '--no-activity')
    off = wait_for(lambda: states(record, 'inactive'), 5.0, 0.01)
    assert off and off[0] - sent >= TIMEOUT - 0.005 and off[0] - last <= TIMEOUT + 0.05, (
        off, last, sent, guard.log_tail(20))
    assert wait_for(lambda: CONTROLLER + ' deactivated by' in guard.read_log(), 5.0), guard.log_tail(20)
    assert ('no state of %s heard from %s/controller_manager/activity: an activation while no command comes '
            'would go unseen' % (CONTROLLER, guard.namespace)) in guard.read_log()

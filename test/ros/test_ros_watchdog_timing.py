"""dynamics_node's watchdog decides on usable joint states while they stream at 1 kHz, and holds the last command.

The stale-state watchdog is a timer (period ``joint_state_timeout / 10``, here 10 ms) in the executor the node
spins in; it runs once per executor (``ROBOT_DYNAMICS_EXECUTOR``). Real DDS, separate processes: dynamics_node, a
1 kHz joint-state publisher (joint_state_publisher.py) and this process (test/ros/watchdog_stream.py, the scenario
bench/watchdog_timing.py times).

1. Usable joint states at 1 kHz: the watchdog runs, and every timeout it decides (a loaded 2-core machine can
   starve the node or the publisher past the 0.1 s timeout) is one its log justifies: a silence of at least the
   timeout, the next torque resumes.
2. The publisher goes wrong without a break in the stream (SIGUSR1): NaN positions, read and rejected, no sign
   of life. The watchdog times out, never early: the silence the node logs is at least ``joint_state_timeout``
   and no longer than the time since the stamp of the last state it turned into a torque (its compensation
   torque, heard here, carries that state's header). With ``on_timeout: hold`` it then sends that state's
   command again, exactly, and nothing else: one command per watchdog call (the node's own counts).

Every assertion is a decision of the node and holds however slowly the machine runs: each wait is for the next
thing the node does, up to a minute. How fast it decides (watchdog calls per period, the longest interval, the
timeout noticed after, the hold's intervals) is measured by bench/watchdog_timing.py, with the targets this test
asserted before (docs/PERFORMANCE.md, 'dynamics_node's watchdog under a 1 kHz stream').
"""
import math
import os
import time

import pytest

from robot_dynamics.ros.model_node import EXECUTORS

import watchdog_stream as S
from node_process import READY_TIMEOUT, NodeTimeout, wait_until

STREAM_SECONDS = 4.0       # phase 1
HOLDS = 3                  # equal commands in a row after the timeout before the run ends


def judge_events(said, log):
    """The watchdog's timeouts in ``log`` (``said``: watchdog_stream.events) alternate with resumptions and end
    with the timeout of the NaN stream; each on a silence it measured of at least the timeout. Returns it."""
    kinds = [kind for kind, _, _, _ in said]
    assert kinds and kinds == ['timeout', 'resumed'] * (len(kinds) // 2) + ['timeout'], (
        'the watchdog\'s timeouts and resumptions %s: expected timeout (resumed, timeout)* and a last timeout:\n%s'
        % (kinds, log))
    for kind, at, silence, timeout in said:
        if kind == 'timeout':
            assert timeout == S.TIMEOUT, 'the node times out at %s s, not %s s:\n%s' % (timeout, S.TIMEOUT, log)
            assert silence >= S.TIMEOUT, (
                'a timeout at wall time %.6f on a silence of %.3f s, under joint_state_timeout %.3f s:\n%s'
                % (at, silence, S.TIMEOUT, log))
    return said[-1]


def last_torque(result, held, names):
    """The last compensation torque heard, once its effort is the held command (None if it never is)."""
    def found():
        _, messages = result.torques.snapshot()
        return bool(messages) and S.effort_in(messages[-1], names) == held
    try:
        wait_until(found, S.PATIENCE, 'the torque of the held command')
    except NodeTimeout:
        return None
    return result.torques.snapshot()[1][-1]


def hold_periods(diagnostics, timeouts):
    """[(commands sent, watchdog calls)] of the diagnostics periods that began after the last timeout (the
    report before them already counts ``timeouts``): the hold's periods."""
    _, reports = diagnostics.snapshot()
    return [(int(now['commands_out']) - int(before['commands_out']), int(now['watchdog_calls_last_period']))
            for before, now in zip(reports, reports[1:]) if int(before['timeouts']) == timeouts]


@pytest.mark.parametrize('executor', sorted(EXECUTORS))
def test_watchdog_decides_on_usable_states_while_joint_states_stream_at_1khz(start_node, executor):
    names = S.joint_names()
    proc = start_node('dynamics_node', S.PARAMS, env={'ROBOT_DYNAMICS_EXECUTOR': executor})
    listener = S.Listener('rd_watchdog_%d' % os.getpid())
    try:
        wait_until(lambda: 'spinning in %s' % EXECUTORS[executor] in proc.read_log()
                   and listener.node.count_subscribers(proc.topic('joint_states')) > 0,
                   READY_TIMEOUT, 'dynamics_node spinning in %s' % EXECUTORS[executor], processes=[proc])
        publisher = start_node.command(S.publisher_argv(proc.topic('joint_states'), names),
                                       'publisher_%d' % time.monotonic_ns())
        result = S.run(listener, proc, publisher, stream_seconds=STREAM_SECONDS, hold_seconds=0.2, holds=HOLDS)
        said = result.events
        final = judge_events(said, result.log)
        switched = result.switch
        assert switched is not None, publisher.read_log()
        nan_from, _ = switched

        # 1. The watchdog ran while usable states came, every 10 ms by its own account; nothing was rejected.
        streaming = [v for v in result.stream if float(v['input_rate_hz']) > 0]
        assert streaming and sum(int(v['watchdog_calls_last_period']) for v in streaming) > 0, result.stream
        assert {v['watchdog_period_ms'] for v in result.stream} == {'%.1f' % (S.PERIOD * 1e3)}, result.stream
        assert all(v['bad_messages'] == '0' and v['non_finite_torques'] == '0' for v in result.stream), result.stream

        # 2. The hold: the last command, exactly, and nothing else after it.
        held = result.commands[-1][1]
        assert all(math.isfinite(x) for x in held), held
        first = next(k for k, (_, data) in enumerate(result.commands) if data == held)
        others = [data for _, data in result.commands[first:] if data != held]
        assert not others, 'commands other than the held one after it: %s' % others[:3]
        # ... the command of the last state the node turned into a torque, a usable one (a NaN gives none) ...
        torque = last_torque(result, held, names)
        _, torques = result.torques.snapshot()
        assert torque is not None, (
            'the held command %s is not the last compensation torque heard, %s' % (held, torques[-1] if torques else
                                                                                  None))
        numbers = [S.message_number(m.header.frame_id) for m in torques]
        assert max(numbers) < nan_from, 'torques of NaN states (from message %d on): %s' % (nan_from, numbers[-5:])
        # ... and the timeout came no earlier than the silence it logged: the node read that state no earlier than
        # its stamp, so its silence at the timeout is at most the time since that stamp (the log gives 1 ms).
        _, logged_at, silence, _ = final
        stamp = torque.header.stamp.sec + 1e-9 * torque.header.stamp.nanosec
        assert logged_at - silence >= stamp - 1e-3, (
            'the node logged %.3f s without a usable state at wall time %.6f, but the last one it turned into a '
            'torque (message %d) was stamped %.6f: %.3f s before\n%s'
            % (silence, logged_at, numbers[-1], stamp, logged_at - stamp, result.log))

        # 3. Its own counts: every timeout of the log, NaN states rejected, one held command per watchdog call.
        timeouts = sum(1 for kind, _, _, _ in said if kind == 'timeout')
        wait_until(lambda: len(hold_periods(result.diagnostics, timeouts)) >= 2, S.PATIENCE,
                   'two diagnostics periods after the timeout', processes=[proc])
        _, reports = result.diagnostics.snapshot()
        assert int(reports[-1]['timeouts']) == timeouts, (reports[-1]['timeouts'], said)
        assert int(reports[-1]['bad_messages']) > 0 and reports[-1]['non_finite_torques'] == '0', reports[-1]
        periods = hold_periods(result.diagnostics, timeouts)
        assert all(sent == calls for sent, calls in periods), (
            '(commands sent, watchdog calls) of the periods of the hold: %s' % periods)
        print('\n%s: %d streaming periods, %d timeout(s) resumed while usable states came; the NaN stream\'s '
              'timeout after %.3f s of silence; %d held commands heard, %s (sent, calls) per period of the hold'
              % (EXECUTORS[executor], len(streaming), timeouts - 1, silence, len(result.commands) - first, periods))
    finally:
        listener.close()

"""How fast dynamics_node's watchdog decides while joint states stream at 1 kHz, per executor.

Usage (from the checkout, after scripts/setup-venv.sh; ROS_DOMAIN_ID of your own):
    .venv/bin/python bench/watchdog_timing.py [--repeats 5] [--executors events,single] [--stream 4] [--hold 3]
                                              [--json]

The scenario of test/ros/watchdog_stream.py, which test/ros/test_ros_watchdog_timing.py runs for the
watchdog's decisions: dynamics_node (gravity_coriolis on the bundled Panda, command on, joint_state_timeout
0.1 s, so a watchdog timer of 10 ms, on_timeout hold, diagnostics every 0.5 s) in the executor under test
(``ROBOT_DYNAMICS_EXECUTOR``), a 1 kHz joint-state publisher (test/ros/joint_state_publisher.py) and this
process, which listens. Usable joint states for ``--stream`` s, then NaN positions without a break in the
stream (no sign of life): the node times out and sends its last command again at each watchdog call, heard
here for ``--hold`` s more.

Each repeat runs every executor once, each with a fresh node and publisher (the order alternates between
repeats). Prints each run's figures, then per executor their medians over the repeats and the targets, the
bounds the test asserted before it asserted decisions only (judged on the medians):

- periods streamed at > 800 Hz >= stream / 0.5 s - 2;
- watchdog calls per 0.5 s period, the fewest of a run, >= 40 (80 % of its 50 periods);
- the longest interval between two watchdog calls (its own clock) <= 100 ms (the timeout);
- the diagnostics reports (their stamps: when the node's timer ran) within 50 ms (5 watchdog periods) of 0.5 s;
- the timeout noticed (the silence the node logs) within 100-150 ms (the timeout + 5 watchdog periods);
- the held command heard at >= 80 per s, its intervals (arrivals here): median 10 +- 1 ms, p99 <= 40 ms,
  max <= 100 ms;
- the default executor also keeps up with the stream: no timeout while usable states came, and the timeout's
  log line within 200 ms (twice the timeout) of the publisher's switch (both wall clocks of this machine).

Exits 1 if a target is missed. ``--json`` also prints every run's figures as JSON.
"""
import argparse
import json
import os
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))                    # this checkout's robot_dynamics, installed or not
sys.path.insert(1, str(ROOT / 'test' / 'ros'))   # the scenario and the tests' node-process harness
import node_process  # noqa: E402
import watchdog_stream as S  # noqa: E402
from robot_dynamics.ros.spin import DEFAULT_EXECUTOR, EXECUTORS  # noqa: E402

NS = '/wdt%d' % os.getpid()


def measure(listener, executor, k, stream, hold):
    """One run of the scenario in ``executor`` ('events', 'single'): its figures (watchdog_stream.figures)."""
    name = 'dynamics_node_%d' % k
    node = node_process.start_node('dynamics_node', S.PARAMS, name=name, namespace=NS,
                                   env={'ROBOT_DYNAMICS_EXECUTOR': executor})
    publisher = None
    try:
        node.wait_until(lambda: 'spinning in %s' % EXECUTORS[executor] in node.read_log()
                        and listener.node.count_subscribers(node.topic('joint_states')) > 0,
                        node_process.READY_TIMEOUT, '%s spinning in %s' % (name, EXECUTORS[executor]))
        publisher = node_process.start_node(S.publisher_argv(node.topic('joint_states'), S.joint_names()),
                                            name='publisher_%d' % k)
        result = S.run(listener, node, publisher, stream_seconds=stream, hold_seconds=hold, min_rate=0.8 * S.RATE)
        listener.forget(result.torques, result.diagnostics)
        return dict(S.figures(result), executor=EXECUTORS[executor])
    finally:
        node_process.stop_all([p for p in (publisher, node) if p is not None])


def summary(run):
    """The run's figures a target is on (None where the run has none)."""
    calls, gaps = run['stream_watchdog_calls_per_period'], run['stream_watchdog_interval_max_ms']
    diag = run['stream_diagnostics_interval_ms']
    return {
        'periods_streamed': len(calls),
        'watchdog_calls_fewest': min(calls) if calls else None,
        'watchdog_interval_max_ms': max(gaps) if gaps else None,
        'diagnostics_off_0.5s_max_ms': round(max(abs(d - S.DIAG_PERIOD * 1e3) for d in diag), 1) if diag else None,
        'timeout_noticed_after_ms': run['timeout_noticed_after_ms'],
        'timeouts_while_usable_states_came': run['timeouts_while_usable_states_came'],
        'timeout_logged_after_switch_ms': run['timeout_logged_after_switch_ms'],
        'hold_commands_per_s': run['hold_commands_per_s'],
        'hold_interval_median_ms': run['hold_interval_median_ms'],
        'hold_interval_p99_ms': run['hold_interval_p99_ms'],
        'hold_interval_max_ms': run['hold_interval_max_ms'],
        'node_cpu_share': run['stream_node_cpu_share'],
    }


def targets(executor, stream):
    """{figure: (test of its median, text)} for ``executor``."""
    period_ms, timeout_ms = S.PERIOD * 1e3, S.TIMEOUT * 1e3
    found = {
        'periods_streamed': (lambda x: x >= stream / S.DIAG_PERIOD - 2, '>= %g' % (stream / S.DIAG_PERIOD - 2)),
        'watchdog_calls_fewest': (lambda x: x >= 0.8 * S.DIAG_PERIOD / S.PERIOD,
                                  '>= %g' % (0.8 * S.DIAG_PERIOD / S.PERIOD)),
        'watchdog_interval_max_ms': (lambda x: x <= timeout_ms, '<= %g' % timeout_ms),
        'diagnostics_off_0.5s_max_ms': (lambda x: x <= 5 * period_ms, '<= %g' % (5 * period_ms)),
        'timeout_noticed_after_ms': (lambda x: timeout_ms <= x <= timeout_ms + 5 * period_ms,
                                     '%g-%g' % (timeout_ms, timeout_ms + 5 * period_ms)),
        'hold_commands_per_s': (lambda x: x >= 0.8 / S.PERIOD, '>= %g' % (0.8 / S.PERIOD)),
        'hold_interval_median_ms': (lambda x: abs(x - period_ms) <= 0.1 * period_ms,
                                    '%g +- %g' % (period_ms, 0.1 * period_ms)),
        'hold_interval_p99_ms': (lambda x: x <= 4 * period_ms, '<= %g' % (4 * period_ms)),
        'hold_interval_max_ms': (lambda x: x <= timeout_ms, '<= %g' % timeout_ms),
    }
    if executor == DEFAULT_EXECUTOR:
        found['timeouts_while_usable_states_came'] = (lambda x: x == 0, '0')
        found['timeout_logged_after_switch_ms'] = (lambda x: x <= 2 * timeout_ms, '<= %g' % (2 * timeout_ms))
    return found


def report(executor, runs, stream):
    """Print the medians of ``runs`` (their summaries) for ``executor`` and its targets; True if all are met."""
    print('\n%s, median of %d run(s):' % (EXECUTORS[executor], len(runs)))
    wanted = targets(executor, stream)
    ok = True
    for key in runs[0]:
        values = [r[key] for r in runs]
        median = None if any(v is None for v in values) else float(np.median(values))
        test, text = wanted.get(key, (None, None))
        met = None if test is None else median is not None and test(median)
        ok = ok and met is not False
        print('  %-36s %10s   runs: %s%s' % (key, 'none' if median is None else '%g' % round(median, 2),
                                              ' / '.join(str(v) for v in values),
                                              '' if met is None else '   target %s: %s' % (text, 'MET' if met
                                                                                           else 'MISSED')))
    return ok


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--repeats', type=int, default=5, help='runs per executor; the targets are on the '
                                                               'medians (5)')
    parser.add_argument('--executors', default=','.join(sorted(EXECUTORS)),
                        help='comma-separated, of %s (all)' % ', '.join(sorted(EXECUTORS)))
    parser.add_argument('--stream', type=float, default=4.0, help='seconds of usable joint states (4)')
    parser.add_argument('--hold', type=float, default=3.0, help='seconds of the hold heard (3)')
    parser.add_argument('--json', action='store_true', help='also print every run\'s figures as JSON')
    args = parser.parse_args(argv)
    executors = args.executors.split(',')
    if args.repeats < 1 or not executors or any(e not in EXECUTORS for e in executors):
        parser.error('expected --repeats >= 1 and --executors of %s, got %d and %r'
                     % (', '.join(sorted(EXECUTORS)), args.repeats, args.executors))
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    os.environ.setdefault('ROS_DOMAIN_ID', str(os.getpid() % 101 + 1))
    print('load average before: %s' % ' '.join('%.2f' % x for x in os.getloadavg()), flush=True)
    listener = S.Listener('rd_watchdog_bench_%d' % os.getpid())
    runs = {e: [] for e in executors}
    try:
        k = 0
        for repeat in range(args.repeats):
            for executor in executors if repeat % 2 == 0 else executors[::-1]:
                k += 1
                figures = measure(listener, executor, k, args.stream, args.hold)
                runs[executor].append(figures)
                print('run %d, %s: %s' % (repeat + 1, EXECUTORS[executor], json.dumps(summary(figures))),
                      flush=True)
    finally:
        listener.close()
    print('load average after: %s' % ' '.join('%.2f' % x for x in os.getloadavg()))
    ok = all([report(e, [summary(f) for f in runs[e]], args.stream) for e in executors])
    if args.json:
        print(json.dumps(runs, indent=2))
    print('\ntargets (the bounds test_ros_watchdog_timing asserted before, on the medians): %s'
          % ('MET' if ok else 'MISSED'))
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())

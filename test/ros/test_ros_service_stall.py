"""No service request delays a torque: dynamics_node's commands keep coming at 1 kHz while large and
malformed requests are made.

Separate processes, real DDS: dynamics_node on the Panda, a 1 kHz joint-state
publisher (joint_state_publisher.py), a client that calls the services
(service_flood.py: a 100,000-point ~/fill_trajectory_efforts request, a
malformed trajectory, a valid 1,000-point one, a 100,000-name joint state, 100,000
accelerations, a 5,000-sample identification, a mass matrix, a ~/retime_trajectory
of 20 waypoints on 10,000 grid points, one of 1,001 waypoints (over the limit), a
100,000-point ~/check_trajectory; twice), and this
process, which takes the command stream and the node's /diagnostics. When the
node served the read-only services itself, a 100,000-point request stopped the
commands for seconds (rclpy converted it in the torque loop's thread). Now
dynamics_services, another process, serves them under the node's names, at a
lower CPU priority (nice 10), started as the launch files start it
(robot_dynamics/ros/query_services.py); only ~/identify_payload is the torque
node's own, answered from a thread of its own with rclpy's public API
(robot_dynamics/ros/service_thread.py).

"No gap" is measured where the commands are made: the node's own counters say
that every joint state that reached it during the requests got its command
(messages_in and messages_out grow alike, and commands_out with them; the
watchdog's held commands, if the stream itself paused, come on top), and its
per-period largest input latency (the joint state's stamp to the start of its
torque) says how late any of them came out. This process's view of the command stream (largest gap
between arrivals) is printed, not asserted: it also counts delays that are
neither the node's nor the requests' (gaps of 99-335 ms were seen before any
request was made: DDS discovery of the service client's new participant
held the joint states back, ros2/rmw_fastrtps#741; docs/NODES.md), which is
why the client waits 1 s after its services are matched before it asks.
"""
import json
import sys
import time

import numpy as np
import pytest
from std_msgs.msg import Float64MultiArray

import robot_dynamics as rd

from conftest import PANDA, ROOT, wait_for
from probes import Diagnostics

# Times DDS delivery on a 2-core machine: one rerun, every assertion each time.
pytestmark = pytest.mark.flaky(reruns=1)

NAMES = list(rd.load_urdf(str(PANDA)).joint_names)
Q = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785]
RATE = 1000.0              # [Hz] of the joint-state stream
# [s] the largest input latency allowed during the requests (the node's, stamp to torque): half of
# joint_state_timeout (0.1 s), so no request comes near setting off the watchdog. Measured on the 2-core
# development machine: 4.6-7.5 ms in five runs, 5.5-12.6 ms in three with two busy loops on both cores (the
# 20 MB DDS transfers and this test's processes compete for the two cores); without the fix a request held
# every command for 8,005 ms.
MAX_LATENCY = 0.050
LIMIT = 1000               # max_request_points
DIAG_PERIOD = 0.1          # [s] of the node's /diagnostics: its largest input latency per period
SETTLE = 1.0               # [s] from the client's 'ready' to its first request (service_flood.py --settle)


def test_large_and_malformed_requests_do_not_delay_the_commands(ros, start_node):
    # As the launch files start them: dynamics_services beside the torque node, serving the read-only services
    # under the torque node's names from a process of its own (robot_dynamics/ros/query_services.py).
    proc = start_node.with_services({'urdf_path': str(PANDA), 'mode': 'gravity_coriolis', 'publish_command': True,
                                     'joint_state_timeout': 0.1, 'on_timeout': 'hold',
                                     'max_request_points': LIMIT, 'diagnostics_period': DIAG_PERIOD})
    diag = Diagnostics(ros, proc.fqn)
    ros.wait_for_subscriber(proc.topic('joint_states'), process=proc)
    commands = ros.subscribe(Float64MultiArray, proc.topic('effort_controller/commands'))
    start_node.command([sys.executable, str(ROOT / 'test' / 'ros' / 'joint_state_publisher.py'),
                        '--topic', proc.topic('joint_states'), '--tag', 'p', '--names', ','.join(NAMES),
                        '--q=' + ','.join(repr(x) for x in Q), '--rate', str(RATE)],
                       'publisher_%d' % time.monotonic_ns())
    assert commands.wait(count=500, timeout=30) is not None, 'no command stream:\n' + proc.read_log()
    flood = start_node.command([sys.executable, str(ROOT / 'test' / 'ros' / 'service_flood.py'),
                                '--node', proc.fqn, '--names', ','.join(NAMES), '--rounds', '2', '--timeout', '60',
                                '--settle', str(SETTLE)],
                               'service_flood_%d' % time.monotonic_ns())
    t_build = time.monotonic()              # the client builds its requests: the same load, no request yet
    assert wait_for(lambda: 'ready' in flood.read_log().split(), 60, 0.05), flood.read_log()
    # The client's discovery (a new participant and its service endpoints) is over; its first request
    # comes SETTLE s after 'ready'. Discovery itself was seen to hold joint states back for 100-335 ms just
    # before 'ready', with no request made yet: the 'before' figures below include it.
    time.sleep(SETTLE - 0.3)
    t0 = time.monotonic()
    at_start = diag.get()
    assert at_start is not None, "no diagnostics from the node"
    with commands._lock:
        before = np.diff([t for t in commands.times if t_build <= t <= t0])
    assert wait_for(lambda: flood.poll() is not None, 120, 0.05), 'the client did not finish:\n' + flood.read_log()
    t1 = time.monotonic()
    n_diag = diag.count
    assert wait_for(lambda: diag.count >= n_diag + 2, 10), 'no diagnostics after the flood'
    with diag._lock:
        during = [v for t, v in diag.history if t0 < t]
        latency_before = [float(v['input_latency_max_ms']) for t, v in diag.history if t_build < t <= t0]
    latency = max(float(v['input_latency_max_ms']) for v in during)
    n_in = int(during[-1]['messages_in']) - int(at_start['messages_in'])
    n_out = int(during[-1]['messages_out']) - int(at_start['messages_out'])
    n_cmd = int(during[-1]['commands_out']) - int(at_start['commands_out'])
    n_timeouts = int(during[-1]['timeouts']) - int(at_start['timeouts'])
    answers = [json.loads(line) for line in flood.read_log().splitlines() if line.startswith('{')]
    with commands._lock:
        times = np.array([t for t in commands.times if t0 <= t <= t1])
    gaps = np.diff(times)
    k = int(np.argmax(gaps))
    print('\nservice flood: %.2f s, %d commands (%.0f/s), largest gap %.1f ms (at %.2f s), p99.9 %.2f ms; '
          'before the requests (%.2f s): largest gap %.1f ms; answers: %s'
          % (t1 - t0, times.size, times.size / (t1 - t0), gaps[k] * 1e3, times[k] - t0,
             np.percentile(gaps, 99.9) * 1e3, t0 - t_build, before.max() * 1e3 if before.size else float('nan'),
             ', '.join('%s %.3f s' % (a['kind'], a['seconds']) for a in answers)))
    node_rate = n_in / (during[-1]['_stamp'] - at_start['_stamp'])     # [1/s] over the node's own stamps
    print('node side: %d joint states in (%.0f/s), %d commands out, largest input latency per %.1f s period %s ms'
          % (n_in, node_rate, n_cmd, DIAG_PERIOD, [round(float(v['input_latency_max_ms']), 1) for v in during])
          + ' (%d answered, %d timeouts of the stream); before the requests: largest input latency %.1f ms'
          % (n_out, n_timeouts, max(latency_before, default=float('nan'))))
    assert proc.poll() is None, 'dynamics_node died:\n' + proc.read_log()

    # Every request got its answer: the oversized ones a refusal naming the limit and their size.
    by_kind = {}
    for a in answers:
        by_kind.setdefault(a['kind'], []).append(a)
    assert len(answers) == 20 and all(len(v) == 2 for v in by_kind.values()), answers
    unanswered = [a['kind'] for a in answers if a['success'] is None]
    assert not unanswered, 'no answer to: %s' % unanswered
    # The read-only services answer from dynamics_services (another process): the large trajectory is computed
    # there; identify_payload is the torque node's own and refuses samples over max_request_points.
    expected = {
        'trajectory of 100,000 points': (True, ['100000 points']),
        'trajectory with 3 positions for 7 names': (False, ['3 values', '7']),
        'trajectory of 1,000 points': (True, ['1000 points']),
        'joint state of 100,000 names': (False, ['missing joint(s)', 'panda_joint1']),
        '100,000 accelerations': (False, ['acceleration has 100000 values']),
        'identification of 5,000 samples': (False, ['5000 joint states', 'max_request_points (%d)' % LIMIT]),
        'mass matrix': (True, ['ok']),
        'retiming of 20 waypoints': (True, ['20 waypoints', '10000 points']),
        'retiming of 1,001 waypoints': (False, ['1001 points, more than 1000']),
        'check of 100,000 points': (True, ['worst: effort of', ': feasible']),
    }
    for kind, (success, words) in expected.items():
        for a in by_kind[kind]:
            assert a['success'] is success and all(w in a['message'] for w in words), (
                '%s: expected success %s and a message with %s; got %s' % (kind, success, words, a))
    # Every joint state that reached the node was answered, none later than MAX_LATENCY, and the node took
    # the stream at its rate: messages_in over the node's own stamped reports (this process's arrivals are
    # printed above, not asserted: on the loaded CI machine this receiver saw 229 commands/s while the node
    # answered 2,300 of 2,300 states; its own scheduling is not the node's).
    assert n_in > 0 and n_out == n_in and n_cmd >= n_out, (
        '%d joint states reached the node, %d were answered, %d commands came out' % (n_in, n_out, n_cmd))
    assert latency <= MAX_LATENCY * 1e3, 'a command came %.1f ms after its joint state; at most %.0f ms' % (
        latency, MAX_LATENCY * 1e3)
    assert node_rate >= 0.5 * RATE, 'the node took joint states at %.0f/s; the stream is at %.0f/s' % (
        node_rate, RATE)
